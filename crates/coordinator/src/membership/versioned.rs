//! Versioned, forward-compatible payloads for member metadata and assignments.
//!
//! Layout: an `i16` big-endian version, then the body. A decoder that meets a *newer* version
//! than it knows decodes the body as the newest version it knows and ignores trailing bytes,
//! so new versions may only append fields (Kafka's consumer and Connect protocols work the same
//! way). [`BodyReader`] and [`BodyWriter`] encode Kafka-style primitives with bounds checks, so
//! a short or hostile payload is an error, never a panic.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use thiserror::Error;

/// A payload a protocol carries in member metadata or in an assignment.
pub trait Versioned: Sized {
    /// The newest version this build writes and fully understands.
    const VERSION: i16;

    /// Writes the body of [`Self::VERSION`].
    fn encode_body(&self, writer: &mut BodyWriter);

    /// Reads a body of `version` (never newer than [`Self::VERSION`]); must ignore trailing bytes.
    fn decode_body(version: i16, reader: &mut BodyReader<'_>) -> Result<Self, DecodeError>;

    /// The version prefix and the body.
    fn encode(&self) -> Bytes {
        let mut writer = BodyWriter::default();
        writer.buf.put_i16(Self::VERSION);
        self.encode_body(&mut writer);
        writer.buf.freeze()
    }

    /// Decodes `bytes`; a newer version is read as [`Self::VERSION`].
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = BodyReader { buf: bytes };
        let version = reader.i16()?;
        if version < 0 {
            return Err(DecodeError::NegativeVersion(version));
        }
        Self::decode_body(version.min(Self::VERSION), &mut reader)
    }
}

/// A payload that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The payload ends before a field.
    #[error("payload truncated: {needed} more bytes needed; the sender wrote a broken payload")]
    Truncated {
        /// Bytes missing.
        needed: usize,
    },
    /// The version prefix is negative.
    #[error("negative payload version {0}: not a versioned payload")]
    NegativeVersion(i16),
    /// A string is not UTF-8.
    #[error("a string field is not UTF-8")]
    InvalidUtf8,
    /// A length prefix is negative where null is not allowed.
    #[error("invalid length {0}")]
    InvalidLength(i32),
}

/// Writes Kafka-style primitives (big-endian; strings and bytes with length prefixes).
#[derive(Debug, Default)]
pub struct BodyWriter {
    buf: BytesMut,
}

impl BodyWriter {
    /// Writes a boolean as one byte.
    pub fn bool(&mut self, value: bool) {
        self.buf.put_u8(u8::from(value));
    }
    /// Writes an `i16`.
    pub fn i16(&mut self, value: i16) {
        self.buf.put_i16(value);
    }
    /// Writes an `i32`.
    pub fn i32(&mut self, value: i32) {
        self.buf.put_i32(value);
    }
    /// Writes an `i64`.
    pub fn i64(&mut self, value: i64) {
        self.buf.put_i64(value);
    }
    /// Writes bytes with an `i32` length prefix (lengths above `i32::MAX` are cut there).
    pub fn bytes(&mut self, value: &[u8]) {
        let len = value.len().min(i32::MAX as usize);
        self.buf.put_i32(len as i32);
        self.buf.put_slice(&value[..len]);
    }
    /// Writes a string with an `i32` length prefix.
    pub fn string(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }
    /// Writes an optional string; `None` is length −1.
    pub fn nullable_string(&mut self, value: Option<&str>) {
        match value {
            Some(s) => self.string(s),
            None => self.buf.put_i32(-1),
        }
    }
}

/// Reads what [`BodyWriter`] writes, checking every length against the remaining bytes.
#[derive(Debug)]
pub struct BodyReader<'a> {
    buf: &'a [u8],
}

impl<'a> BodyReader<'a> {
    /// A reader over a body (without the version prefix).
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }
    fn need(&self, n: usize) -> Result<(), DecodeError> {
        if self.buf.remaining() < n {
            Err(DecodeError::Truncated {
                needed: n - self.buf.remaining(),
            })
        } else {
            Ok(())
        }
    }
    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.remaining()
    }
    /// Reads a boolean (any non-zero byte is true).
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8() != 0)
    }
    /// Reads an `i16`.
    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        self.need(2)?;
        Ok(self.buf.get_i16())
    }
    /// Reads an `i32`.
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }
    /// Reads an `i64`.
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }
    /// Reads length-prefixed bytes; `None` for length −1.
    pub fn nullable_bytes(&mut self) -> Result<Option<&'a [u8]>, DecodeError> {
        let len = self.i32()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| DecodeError::InvalidLength(len))?;
        self.need(len)?;
        let (head, tail) = self.buf.split_at(len);
        self.buf = tail;
        Ok(Some(head))
    }
    /// Reads length-prefixed bytes (null is an error).
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        self.nullable_bytes()?.ok_or(DecodeError::InvalidLength(-1))
    }
    /// Reads an optional string.
    pub fn nullable_string(&mut self) -> Result<Option<String>, DecodeError> {
        match self.nullable_bytes()? {
            None => Ok(None),
            Some(b) => std::str::from_utf8(b)
                .map(|s| Some(s.to_owned()))
                .map_err(|_| DecodeError::InvalidUtf8),
        }
    }
    /// Reads a string (null is an error).
    pub fn string(&mut self) -> Result<String, DecodeError> {
        self.nullable_string()?
            .ok_or(DecodeError::InvalidLength(-1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct V1 {
        name: String,
        weight: i32,
    }
    impl Versioned for V1 {
        const VERSION: i16 = 1;
        fn encode_body(&self, w: &mut BodyWriter) {
            w.string(&self.name);
            w.i32(self.weight);
        }
        fn decode_body(version: i16, r: &mut BodyReader<'_>) -> Result<Self, DecodeError> {
            let name = r.string()?;
            let weight = if version >= 1 { r.i32()? } else { 1 };
            Ok(Self { name, weight })
        }
    }

    #[test]
    fn round_trip_and_forward_compatibility() {
        let v = V1 {
            name: "a".into(),
            weight: 7,
        };
        assert_eq!(V1::decode(&v.encode()).unwrap(), v);
        // Version 5 with an extra trailing field reads as version 1.
        let mut w = BodyWriter::default();
        w.i16(5);
        w.string("b");
        w.i32(3);
        w.i64(99);
        let bytes = w.buf.freeze();
        assert_eq!(
            V1::decode(&bytes).unwrap(),
            V1 {
                name: "b".into(),
                weight: 3
            }
        );
        // Version 0 has no weight.
        let mut w = BodyWriter::default();
        w.i16(0);
        w.string("c");
        assert_eq!(V1::decode(&w.buf.freeze()).unwrap().weight, 1);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(matches!(
            V1::decode(&[]),
            Err(DecodeError::Truncated { .. })
        ));
        assert_eq!(
            V1::decode(&[0xff, 0xff]),
            Err(DecodeError::NegativeVersion(-1))
        );
        // Claims a 2 GB string.
        assert!(matches!(
            V1::decode(&[0, 1, 0x7f, 0xff, 0xff, 0xff, b'x']),
            Err(DecodeError::Truncated { .. })
        ));
        assert_eq!(
            V1::decode(&[0, 1, 0xff, 0xff, 0xff, 0xfe]),
            Err(DecodeError::InvalidLength(-2))
        );
        assert_eq!(
            V1::decode(&[0, 1, 0, 0, 0, 1, 0xff, 0, 0, 0, 1]),
            Err(DecodeError::InvalidUtf8)
        );
    }
}
