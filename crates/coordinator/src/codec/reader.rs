//! [`Reader`]: reads a payload front to back, guarding every count and length.

use super::{DecodeError, MAX_DECODED_BYTES, MAX_STRING};

/// Reads a payload front to back. Every read names its field, for the error.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    decoded: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            decoded: 0,
        }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An [`DecodeError::Invalid`] for `field` at the current offset.
    pub fn invalid(&self, field: &'static str, reason: impl Into<String>) -> DecodeError {
        DecodeError::Invalid {
            field,
            offset: self.pos,
            reason: reason.into(),
        }
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                field,
                offset: self.pos,
                needed: n,
            });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(field, N)?);
        Ok(out)
    }

    /// The payload's `int16` version; a negative one is not a kroupier payload.
    pub fn version(&mut self) -> Result<i16, DecodeError> {
        let version = self.i16("version")?;
        if version < 0 {
            return Err(DecodeError::NegativeVersion(version));
        }
        Ok(version)
    }

    /// Ends a payload the sender wrote as version `sent`: refuses bytes left over when this
    /// build knows `sent` completely (`sent <= newest`); a newer version's appended fields are
    /// skipped.
    pub fn end(&self, sent: i16, newest: i16) -> Result<(), DecodeError> {
        if sent <= newest && self.remaining() > 0 {
            return Err(DecodeError::TrailingBytes {
                version: sent,
                count: self.remaining(),
            });
        }
        Ok(())
    }

    /// A boolean: one byte, any non-zero value is true.
    pub fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        Ok(self.array::<1>(field)? != [0])
    }

    /// A big-endian `i16`.
    pub fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    /// A big-endian `i32`.
    pub fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    /// A big-endian `u64`.
    pub fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array(field)?))
    }

    /// Unsigned LEB128, at most 10 bytes, no overflow.
    pub fn uvarint(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let [byte] = self.array::<1>(field)?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.invalid(field, "varint overflows 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.invalid(field, "varint longer than 10 bytes"))
    }

    /// A count of items that take at least `min_bytes_each` bytes each; refused when the rest
    /// of the payload cannot hold that many, so no caller allocates for items that are not there.
    pub fn count(
        &mut self,
        field: &'static str,
        min_bytes_each: usize,
    ) -> Result<usize, DecodeError> {
        let count = self.uvarint(field)?;
        let fits = usize::try_from(count)
            .ok()
            .filter(|&n| n.saturating_mul(min_bytes_each.max(1)) <= self.remaining());
        fits.ok_or_else(|| {
            self.invalid(
                field,
                format!("count {count} exceeds the {} bytes left", self.remaining()),
            )
        })
    }

    /// Length-prefixed raw bytes, at most [`MAX_STRING`].
    pub fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.count(field, 1)?;
        if len > MAX_STRING {
            return Err(self.invalid(field, format!("length {len} exceeds {MAX_STRING}")));
        }
        self.take(field, len)
    }

    /// Length-prefixed UTF-8, charged against the decode budget.
    pub fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let bytes = self.bytes(field)?;
        self.charge(field, bytes.len())?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.invalid(field, "not UTF-8"))
    }

    /// Length-prefixed UTF-8 where length 0 means null and n+1 means n bytes.
    pub fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, DecodeError> {
        let len = self.uvarint(field)?;
        if len == 0 {
            return Ok(None);
        }
        let len = usize::try_from(len - 1)
            .ok()
            .filter(|&n| n <= MAX_STRING)
            .ok_or_else(|| self.invalid(field, "length too large"))?;
        let bytes = self.take(field, len)?;
        self.charge(field, len)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| self.invalid(field, "not UTF-8"))
    }

    /// Counts `n` bytes of decoded output against [`MAX_DECODED_BYTES`]; a decoder that
    /// expands its input (front coding, numbered ids) charges what it produces.
    pub fn charge(&mut self, field: &'static str, n: usize) -> Result<(), DecodeError> {
        self.decoded = self.decoded.saturating_add(n);
        if self.decoded > MAX_DECODED_BYTES {
            return Err(DecodeError::TooLarge {
                field,
                limit: MAX_DECODED_BYTES,
            });
        }
        Ok(())
    }
}
