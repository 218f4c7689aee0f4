//! The compressed envelope around a large message (spec: `docs/protocol.md`, "Compressed
//! envelope").
//!
//! Kafka stores every member's metadata and every assignment of a group in one record of
//! `__consumer_offsets`, which a stock broker caps at 1 MiB. Task sets are small already (a
//! varint gap per numbered id), but at a million tasks even one byte per task and message is
//! too much; a group's task sets are also very regular (ranges, strides, shared prefixes),
//! which is what deflate removes. So a message of version 3 or above may travel deflated:
//!
//! ```text
//! envelope =
//!   marker: int16              // -1: older decoders refuse a negative version cleanly
//!   plain_length: uvarint      // the plain message's length, at most 64 MiB
//!   deflated: the rest         // raw deflate (RFC 1951) of the plain message
//! ```
//!
//! A writer uses the envelope only for a reader that said it reads it (metadata or an
//! assignment of version 3 or above) and only when it is shorter than the plain message.

use std::borrow::Cow;

use kroupier_coordinator::codec::{MAX_DECODED_BYTES, Reader, Writer};

use super::DecodeError;

/// The version field of a compressed envelope.
pub(crate) const MARKER: i16 = -1;

/// The lowest plain version an envelope may carry: readers of older versions never get one.
pub(crate) const FIRST_VERSION: i16 = 3;

/// Plain messages shorter than this are sent as they are: deflate's framing would outweigh
/// what it saves, and small messages stay readable in a hex dump.
const COMPRESS_FROM: usize = 512;

/// Deflate level 6 (zlib's default): a million-task group compresses in tens of milliseconds.
const LEVEL: u8 = 6;

/// Wraps `plain` (a message of version [`FIRST_VERSION`] or above) in an envelope when that
/// is shorter; otherwise returns it unchanged.
pub(crate) fn wrap(plain: Vec<u8>) -> Vec<u8> {
    if plain.len() < COMPRESS_FROM {
        return plain;
    }
    let deflated = miniz_oxide::deflate::compress_to_vec(&plain, LEVEL);
    let mut w = Writer::new();
    w.i16(MARKER);
    w.uvarint(plain.len() as u64);
    let mut wrapped = w.finish();
    wrapped.extend_from_slice(&deflated);
    if wrapped.len() < plain.len() {
        wrapped
    } else {
        plain
    }
}

/// The plain message in `bytes`: `bytes` itself unless it is an envelope, which is inflated
/// (at most 64 MiB) and checked to hold a plain message of version [`FIRST_VERSION`] or above.
pub(crate) fn unwrap(bytes: &[u8]) -> Result<Cow<'_, [u8]>, DecodeError> {
    if bytes.len() < 2 || i16::from_be_bytes([bytes[0], bytes[1]]) != MARKER {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut r = Reader::new(bytes);
    r.i16("envelope.marker")?;
    let length = r.uvarint("envelope.plain_length")?;
    let length = usize::try_from(length)
        .ok()
        .filter(|&n| n <= MAX_DECODED_BYTES)
        .ok_or_else(|| r.invalid("envelope.plain_length", "longer than 64 MiB"))?;
    let deflated = &bytes[bytes.len() - r.remaining()..];
    let plain =
        miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, length).map_err(|_| {
            r.invalid(
                "envelope.deflated",
                "not deflate data of the length announced",
            )
        })?;
    if plain.len() != length {
        return Err(r.invalid(
            "envelope.deflated",
            "inflates to another length than announced",
        ));
    }
    let version = plain
        .get(..2)
        .map(|v| i16::from_be_bytes([v[0], v[1]]))
        .unwrap_or(i16::MIN);
    if version < FIRST_VERSION {
        return Err(r.invalid(
            "envelope.deflated",
            "holds no plain message of version 3 or above",
        ));
    }
    Ok(Cow::Owned(plain))
}

/// Whether `bytes` (a message as it arrived) says its sender reads envelopes: an envelope, or
/// a plain message of version [`FIRST_VERSION`] or above.
pub(crate) fn sender_reads_envelopes(bytes: &[u8]) -> bool {
    bytes
        .get(..2)
        .map(|v| i16::from_be_bytes([v[0], v[1]]))
        .is_some_and(|version| version == MARKER || version >= FIRST_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(len: usize) -> Vec<u8> {
        let mut bytes = vec![0, 3];
        bytes.extend((0..len).map(|i| (i % 7) as u8));
        bytes
    }

    #[test]
    fn small_messages_stay_plain() {
        let small = plain(100);
        assert_eq!(wrap(small.clone()), small);
        assert_eq!(unwrap(&small).unwrap().as_ref(), &small[..]);
    }

    #[test]
    fn regular_messages_shrink_and_come_back() {
        let message = plain(100_000);
        let wrapped = wrap(message.clone());
        assert!(wrapped.len() < 1_000, "{} bytes", wrapped.len());
        assert_eq!(&wrapped[..2], &MARKER.to_be_bytes());
        assert!(sender_reads_envelopes(&wrapped));
        assert_eq!(unwrap(&wrapped).unwrap().as_ref(), &message[..]);
    }

    #[test]
    fn incompressible_messages_stay_plain() {
        let mut message = vec![0, 3];
        let mut x: u32 = 0x1234_5678;
        for _ in 0..4_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            message.push(x as u8);
        }
        assert_eq!(wrap(message.clone()), message);
    }

    fn envelope(length: u64, deflated: &[u8]) -> Vec<u8> {
        let mut w = Writer::new();
        w.i16(MARKER);
        w.uvarint(length);
        let mut bytes = w.finish();
        bytes.extend_from_slice(deflated);
        bytes
    }

    #[test]
    fn lying_lengths_and_bombs_are_refused() {
        let message = plain(10_000);
        let deflated = miniz_oxide::deflate::compress_to_vec(&message, LEVEL);
        // Announced shorter than it inflates: the limit stops the inflate.
        assert!(unwrap(&envelope(5_000, &deflated)).is_err());
        // Announced longer: refused after inflating.
        assert!(unwrap(&envelope(20_000, &deflated)).is_err());
        // More than 64 MiB announced: refused before inflating.
        assert!(unwrap(&envelope(MAX_DECODED_BYTES as u64 + 1, &deflated)).is_err());
        // A bomb: 100 MiB of zeros announced as 1 KiB.
        let bomb = miniz_oxide::deflate::compress_to_vec(&vec![0; 100 << 20], LEVEL);
        assert!(unwrap(&envelope(1_024, &bomb)).is_err());
        // Not deflate at all.
        assert!(unwrap(&envelope(10, &[0xff; 10])).is_err());
    }

    #[test]
    fn an_envelope_never_carries_an_old_version_or_another_envelope() {
        for inner in [vec![0, 2, 1, 2, 3], MARKER.to_be_bytes().to_vec(), vec![]] {
            let deflated = miniz_oxide::deflate::compress_to_vec(&inner, LEVEL);
            let error = unwrap(&envelope(inner.len() as u64, &deflated)).unwrap_err();
            assert!(error.to_string().contains("envelope"), "{error}");
        }
    }

    #[test]
    fn version_two_senders_do_not_read_envelopes() {
        assert!(!sender_reads_envelopes(&[0, 2, 9]));
        assert!(!sender_reads_envelopes(&[]));
        assert!(sender_reads_envelopes(&[0, 3]));
    }
}
