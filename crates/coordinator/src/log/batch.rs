//! Record batches: [`LogRecord`]s into one v2 batch for Produce, and the `records` of a Fetch
//! answer back into [`ReadRecord`]s. Both go through kafka-protocol's `records` module; this file
//! only frames batches and guards the decoder.
//!
//! Why a guard: kafka-protocol's batch decoder reserves room for the record count a batch header
//! claims, and for the header count each record claims, so a count of `i32::MAX` in a corrupt
//! batch would abort the process. Each batch is cut out by its length prefix, its header read
//! with kafka-protocol's `decode_batch_info`, and its records walked (lengths and the header
//! count only, as the wire guard walks a frame) before kafka-protocol decodes it: every count
//! must fit in the bytes that are left. A batch cut off at the end of a
//! Fetch answer (Kafka may send one when the answer reaches its size limit) is left for the next
//! read, as Kafka's consumers do.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Record,
    RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::{Cause, LogError, LogRecord, ReadRecord};

/// Base offset (8 bytes) and batch length (4): what precedes the length-counted part.
const FRAMING: usize = 12;
/// Where a v2 batch keeps its magic byte (the format version).
const MAGIC_AT: usize = 16;
/// Where a v2 batch keeps its last offset delta (after the partition leader epoch, magic, CRC
/// and attributes).
const LAST_OFFSET_DELTA_AT: usize = 23;
/// The size of a v2 batch header, records excluded.
const HEADER: usize = 61;

/// Who writes a batch: nobody in particular (a plain producer), or a transactional producer
/// with its id, epoch and the batch's first sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// No producer id, no sequence: a plain, non-idempotent producer.
    Plain,
    /// A transactional (and so idempotent) producer.
    Transactional {
        /// The producer id InitProducerId gave.
        producer_id: i64,
        /// Its epoch.
        epoch: i16,
        /// The sequence number of the batch's first record in its partition.
        sequence: i32,
    },
}

/// One uncompressed v2 batch holding `records`, offsets 0.. relative to the batch, stamped
/// `timestamp_ms`, written by `writer`.
pub(super) fn encode(
    records: &[LogRecord],
    timestamp_ms: i64,
    writer: Writer,
) -> Result<Bytes, LogError> {
    let (transactional, producer_id, producer_epoch, base_sequence) = match writer {
        // -1: "no sequence".
        Writer::Plain => (false, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, -1),
        Writer::Transactional {
            producer_id,
            epoch,
            sequence,
        } => (true, producer_id, epoch, sequence),
    };
    let records: Vec<Record> = records
        .iter()
        .zip(0i64..)
        .map(|(r, offset)| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset,
            // The encoder keeps records in one batch while offset − sequence is constant, and
            // writes the first record's sequence as the batch's.
            sequence: base_sequence.wrapping_add(offset as i32),
            timestamp: timestamp_ms,
            key: Some(r.key.clone()),
            value: r.value.clone(),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).map_err(|e| {
        LogError::from(Cause::Corrupt(format!(
            "could not encode a record batch: {e}"
        )))
    })?;
    Ok(buf.freeze())
}

/// What the batches of one Fetch answer hold.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Decoded {
    /// The data records at `from` or later, in offset order.
    pub(super) records: Vec<ReadRecord>,
    /// The offset after the last complete batch, or `None` when there was none. A batch's
    /// end counts even when compaction emptied it or it is a transaction marker, so the next
    /// read does not ask for it again.
    pub(super) next_offset: Option<i64>,
}

/// An aborted transaction a read-committed Fetch answer lists: the records of `producer_id`
/// in transactional batches from `first_offset` up to its next transaction marker are not
/// to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Aborted {
    pub(super) producer_id: i64,
    pub(super) first_offset: i64,
}

/// Decodes the complete batches of `records` (a Fetch answer's `records` field), keeping the
/// records at offset `from` or later, and leaving out the records of the `aborted`
/// transactions (a read-committed Fetch's list; empty for read-uncommitted), as Kafka's
/// consumer does: a producer's batches are skipped from its aborted transaction's first
/// offset to its next transaction marker, which is that transaction's abort marker.
pub(super) fn decode(
    topic: &str,
    mut records: Bytes,
    from: i64,
    aborted: &[Aborted],
) -> Result<Decoded, LogError> {
    let corrupt = |what: String| LogError::from(Cause::Corrupt(format!("topic `{topic}`: {what}")));
    let mut out = Decoded::default();
    let mut pending: Vec<Aborted> = aborted.to_vec();
    pending.sort_by_key(|a| std::cmp::Reverse(a.first_offset));
    let mut aborting: std::collections::HashSet<i64> = std::collections::HashSet::new();
    while let Some(framing) = records.first_chunk::<FRAMING>() {
        let base_offset = i64::from_be_bytes(framing[..8].try_into().expect("8 bytes"));
        let length = i32::from_be_bytes(framing[8..].try_into().expect("4 bytes"));
        let Ok(length) = usize::try_from(length) else {
            return Err(corrupt(format!(
                "batch at offset {base_offset} has length {length}"
            )));
        };
        if FRAMING + length > records.len() {
            break; // cut off at the end of the answer: read again from its start
        }
        let batch = records.split_to(FRAMING + length);
        if batch.len() < HEADER {
            return Err(corrupt(format!(
                "batch at offset {base_offset} is {} bytes, shorter than a batch header",
                batch.len()
            )));
        }
        if batch[MAGIC_AT] != 2 {
            return Err(corrupt(format!(
                "batch at offset {base_offset} is in message format v{}; kroupier reads v2 \
                 (Kafka 0.11 and later)",
                batch[MAGIC_AT]
            )));
        }
        let delta = i32::from_be_bytes(
            batch[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
                .try_into()
                .expect("4 bytes"),
        );
        let info = RecordBatchDecoder::decode_batch_info(&mut batch.clone())
            .map_err(|e| corrupt(format!("batch at offset {base_offset}: {e}")))?;
        let [info] = info.as_slice() else {
            return Err(corrupt(format!(
                "batch at offset {base_offset} does not read as one batch"
            )));
        };
        let end = base_offset
            .saturating_add(i64::from(delta))
            .saturating_add(1);
        out.next_offset = Some(out.next_offset.map_or(end, |n| n.max(end)));
        while pending.last().is_some_and(|a| a.first_offset < end) {
            aborting.extend(pending.pop().map(|a| a.producer_id));
        }
        if info.control {
            // A transaction marker, not data; it ends its producer's aborted transaction.
            aborting.remove(&info.producer_id);
            continue;
        }
        if info.transactional && aborting.contains(&info.producer_id) {
            continue; // part of an aborted transaction
        }
        if info.compression != Compression::None {
            return Err(corrupt(format!(
                "batch at offset {base_offset} is compressed ({:?}); kroupier reads \
                 uncompressed batches: set the topic's compression.type to producer or \
                 uncompressed",
                info.compression
            )));
        }
        check_records(&batch[HEADER..], info.record_count)
            .map_err(|e| corrupt(format!("batch at offset {base_offset}: {e}")))?;
        let set = RecordBatchDecoder::decode(&mut batch.clone())
            .map_err(|e| corrupt(format!("batch at offset {base_offset}: {e}")))?;
        out.records.extend(
            set.records
                .into_iter()
                .filter(|r| r.offset >= from)
                .map(|r| ReadRecord {
                    offset: r.offset,
                    key: r.key.unwrap_or_default(),
                    value: r.value,
                }),
        );
    }
    Ok(out)
}

/// Walks the `count` records of an uncompressed v2 batch (`records` = the bytes after the batch
/// header): each record's length must fit in what is left, and its header count in what is
/// left of the record. Reads only lengths and counts; kafka-protocol decodes the records.
fn check_records(records: &[u8], count: i32) -> Result<(), String> {
    let count = usize::try_from(count).map_err(|_| format!("record count {count}"))?;
    if count > records.len() {
        return Err(format!(
            "{count} records claimed in {} bytes",
            records.len()
        ));
    }
    let mut rest = records;
    for i in 0..count {
        let length = varint(&mut rest).ok_or_else(|| format!("record {i}: bad length"))?;
        let record = usize::try_from(length)
            .ok()
            .and_then(|n| rest.get(..n))
            .ok_or_else(|| format!("record {i}: length {length} past the end of the batch"))?;
        rest = &rest[record.len()..];
        let mut body = record
            .get(1..)
            .ok_or_else(|| format!("record {i} is empty"))?;
        // Timestamp delta and offset delta, then the key and the value (-1 = null).
        for field in ["timestamp delta", "offset delta"] {
            varint(&mut body).ok_or_else(|| format!("record {i}: bad {field}"))?;
        }
        for field in ["key", "value"] {
            let len = varint(&mut body).ok_or_else(|| format!("record {i}: bad {field} length"))?;
            if len >= 0 {
                body = usize::try_from(len)
                    .ok()
                    .and_then(|n| body.get(n..))
                    .ok_or_else(|| format!("record {i}: {field} of {len} bytes past its end"))?;
            }
        }
        let headers = varint(&mut body).ok_or_else(|| format!("record {i}: bad header count"))?;
        if usize::try_from(headers).map_or(true, |n| n > body.len()) {
            return Err(format!(
                "record {i} claims {headers} headers in {} bytes",
                body.len()
            ));
        }
    }
    Ok(())
}

/// A zigzag varint (Kafka's record fields) of at most 10 bytes, advancing `buf`.
fn varint(buf: &mut &[u8]) -> Option<i64> {
    let mut raw: u64 = 0;
    for i in 0..10 {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        raw |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Some((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    None
}
