//! Kafka's v2 record batch, as far as a broker that stores batches whole needs it: the header
//! fields that say how many offsets a batch takes, the checks that it is intact, and the one
//! rewrite a leader makes (the base offset).
//!
//! A v2 batch starts with a 61-byte header (Kafka's `DefaultRecordBatch`):
//!
//! ```text
//! 0  baseOffset int64          ← the only bytes rewritten here; outside the CRC
//! 8  batchLength int32         (bytes after this field)
//! 12 partitionLeaderEpoch int32
//! 16 magic int8                (2)
//! 17 crc uint32                (CRC-32C of bytes 21..end)
//! 21 attributes int16          (compression, timestamp type, transactional, control)
//! 23 lastOffsetDelta int32
//! 27 baseTimestamp int64
//! 35 maxTimestamp int64
//! 43 producerId int64
//! 51 producerEpoch int16
//! 53 baseSequence int32
//! 57 recordCount int32
//! 61 records...
//! ```
//!
//! The records themselves are never decoded: they stay as the producer wrote them (compressed
//! or not), so a consumer reads back exactly what was sent.

use bytes::{Bytes, BytesMut};

/// Bytes of the batch header, up to the first record.
pub(crate) const HEADER_LEN: usize = 61;
/// Bytes before `batchLength`'s count starts: baseOffset and batchLength.
const LOG_OVERHEAD: usize = 12;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const RECORD_COUNT_AT: usize = 57;
/// Attribute bit of a transactional batch.
const TRANSACTIONAL: i16 = 1 << 4;
/// Attribute bit of a control batch (transaction markers).
const CONTROL: i16 = 1 << 5;

/// One intact v2 batch (checked by [`Batch::parse`]); its header says the offsets it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Batch {
    /// The whole batch, header first.
    pub(crate) bytes: Bytes,
}

/// Why a batch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BatchError {
    /// Truncated, lengths that do not add up, a bad magic or a bad CRC (CORRUPT_MESSAGE).
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// A well-formed batch this broker does not take (INVALID_RECORD).
    #[error("record batch refused: {0}")]
    Refused(String),
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(eight)
}

impl Batch {
    /// Checks that `bytes` is exactly one intact v2 batch: the length field matches, magic is 2,
    /// the CRC-32C matches, and the record count agrees with the last offset delta.
    ///
    /// # Errors
    /// [`BatchError::Corrupt`] for anything that does not hold.
    pub(crate) fn parse(bytes: Bytes) -> Result<Self, BatchError> {
        let corrupt = |why: String| Err(BatchError::Corrupt(why));
        if bytes.len() < HEADER_LEN {
            return corrupt(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte v2 batch header",
                bytes.len()
            ));
        }
        let magic = bytes[MAGIC_AT];
        if magic != 2 {
            return corrupt(format!(
                "magic {magic}; only v2 record batches (magic 2) are accepted"
            ));
        }
        let length = i32_at(&bytes, 8);
        let expected = bytes.len() - LOG_OVERHEAD;
        if usize::try_from(length).ok() != Some(expected) {
            return corrupt(format!(
                "batchLength says {length} bytes but {expected} follow it"
            ));
        }
        let stored = u32::from_be_bytes([
            bytes[CRC_AT],
            bytes[CRC_AT + 1],
            bytes[CRC_AT + 2],
            bytes[CRC_AT + 3],
        ]);
        let computed = crc32c::crc32c(&bytes[ATTRIBUTES_AT..]);
        if stored != computed {
            return corrupt(format!(
                "CRC-32C {stored:#010x} does not match the batch's {computed:#010x}"
            ));
        }
        let count = i32_at(&bytes, RECORD_COUNT_AT);
        let delta = i32_at(&bytes, LAST_OFFSET_DELTA_AT);
        if count <= 0 || delta != count - 1 {
            return corrupt(format!(
                "{count} records but a last offset delta of {delta}"
            ));
        }
        Ok(Self { bytes })
    }

    /// Splits a Produce partition's `records` into batches; exactly one is required, as Kafka
    /// requires of Produce v3+.
    ///
    /// # Errors
    /// [`BatchError::Corrupt`] for a damaged batch or bytes that are not whole batches,
    /// [`BatchError::Refused`] for more than one batch or a transactional or control batch.
    pub(crate) fn from_produce(records: Bytes) -> Result<Self, BatchError> {
        if records.len() < LOG_OVERHEAD {
            return Err(BatchError::Corrupt(format!(
                "{} bytes of records, not even a batch header",
                records.len()
            )));
        }
        let length = i32_at(&records, 8);
        let Some(end) = usize::try_from(length)
            .ok()
            .and_then(|l| l.checked_add(LOG_OVERHEAD))
            .filter(|end| *end <= records.len())
        else {
            return Err(BatchError::Corrupt(format!(
                "batchLength {length} runs past the {} bytes sent",
                records.len()
            )));
        };
        if end != records.len() {
            return Err(BatchError::Refused(
                "a Produce (v3+) partition must carry exactly one record batch".to_string(),
            ));
        }
        let batch = Self::parse(records)?;
        let attributes = batch.attributes();
        if attributes & (TRANSACTIONAL | CONTROL) != 0 {
            return Err(BatchError::Refused(
                "transactional and control batches are not supported by the embedded coordinator"
                    .to_string(),
            ));
        }
        Ok(batch)
    }

    /// The offset of its first record.
    pub(crate) fn base_offset(&self) -> i64 {
        i64_at(&self.bytes, 0)
    }

    /// The offset of its last record.
    pub(crate) fn last_offset(&self) -> i64 {
        self.base_offset() + i64::from(i32_at(&self.bytes, LAST_OFFSET_DELTA_AT))
    }

    /// Its size in bytes, header included (what `max.message.bytes` limits).
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    fn attributes(&self) -> i16 {
        i16_at(&self.bytes, ATTRIBUTES_AT)
    }

    /// The same batch starting at `base_offset`: bytes 0..8 rewritten, everything else (CRC
    /// included, which does not cover them) as sent.
    pub(crate) fn with_base_offset(&self, base_offset: i64) -> Self {
        let mut bytes = BytesMut::from(&self.bytes[..]);
        bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
        Self {
            bytes: bytes.freeze(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    /// A v2 batch of `values` (keys "k0", "k1", ...), encoded by kafka-protocol as a client does.
    pub(crate) fn encode(values: &[Option<&str>]) -> Bytes {
        let records: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, value)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i64::try_from(i).unwrap_or_default(),
                sequence: i32::try_from(i).unwrap_or_default(),
                timestamp: 1_700_000_000_000,
                key: Some(Bytes::from(format!("k{i}"))),
                value: value.map(|v| Bytes::from(v.to_string())),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .expect("encode");
        buf.freeze()
    }

    #[test]
    fn a_client_batch_parses_and_takes_one_offset_per_record() {
        let batch = Batch::from_produce(encode(&[Some("a"), None, Some("c")])).expect("valid");
        assert_eq!(batch.base_offset(), 0);
        assert_eq!(batch.last_offset(), 2);
    }

    #[test]
    fn rewriting_the_base_offset_keeps_the_crc_valid_and_the_records() {
        let sent = encode(&[Some("a"), Some("b")]);
        let batch = Batch::from_produce(sent.clone()).expect("valid");
        let moved = batch.with_base_offset(40);
        assert_eq!(moved.base_offset(), 40);
        assert_eq!(moved.last_offset(), 41);
        assert_eq!(&moved.bytes[8..], &sent[8..]);
        let again = Batch::parse(moved.bytes.clone()).expect("still intact");
        let mut buf = again.bytes.clone();
        let decoded =
            kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).expect("decode");
        let offsets: Vec<i64> = decoded.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![40, 41]);
    }

    #[test]
    fn a_flipped_bit_is_a_crc_mismatch() {
        let mut bytes = BytesMut::from(&encode(&[Some("hello")])[..]);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let error = Batch::from_produce(bytes.freeze()).expect_err("corrupt");
        assert!(
            matches!(&error, BatchError::Corrupt(why) if why.contains("CRC-32C")),
            "{error}"
        );
    }

    #[test]
    fn old_magic_truncation_and_two_batches_are_refused() {
        let good = encode(&[Some("x")]);
        let mut old = BytesMut::from(&good[..]);
        old[MAGIC_AT] = 1;
        assert!(matches!(
            Batch::from_produce(old.freeze()),
            Err(BatchError::Corrupt(why)) if why.contains("magic 1")
        ));
        assert!(matches!(
            Batch::from_produce(good.slice(..good.len() - 1)),
            Err(BatchError::Corrupt(_))
        ));
        assert!(matches!(
            Batch::from_produce(good.slice(..20)),
            Err(BatchError::Corrupt(_))
        ));
        let mut two = BytesMut::from(&good[..]);
        two.extend_from_slice(&good);
        assert!(matches!(
            Batch::from_produce(two.freeze()),
            Err(BatchError::Refused(_))
        ));
    }

    #[test]
    fn a_transactional_batch_is_refused() {
        let mut bytes = BytesMut::from(&encode(&[Some("x")])[..]);
        let attributes = i16_at(&bytes, ATTRIBUTES_AT) | TRANSACTIONAL;
        bytes[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
        let crc = crc32c::crc32c(&bytes[ATTRIBUTES_AT..]);
        bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            Batch::from_produce(bytes.freeze()),
            Err(BatchError::Refused(why)) if why.contains("transactional")
        ));
    }
}
