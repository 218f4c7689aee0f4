//! Guarded primitives of the kroupier wire format: big-endian integers, unsigned varints,
//! length-prefixed strings. Every read checks the remaining bytes first; every count is checked
//! against the bytes left before anything is allocated.

use super::DecodeError;

/// Longest task id (and any string) accepted, as Kafka's `STRING`: 32767 bytes.
pub(crate) const MAX_STRING: usize = i16::MAX as usize;

/// Most bytes of decoded strings one message may produce. Front and numeric coding expand the
/// input; this bounds what a hostile message can make the decoder allocate.
pub(crate) const MAX_DECODED_BYTES: usize = 64 << 20;

/// Reads a message front to back.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    decoded: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            decoded: 0,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn invalid(&self, field: &'static str, reason: impl Into<String>) -> DecodeError {
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

    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array(field)?))
    }

    /// Unsigned LEB128, at most 10 bytes, no overflow.
    pub(crate) fn uvarint(&mut self, field: &'static str) -> Result<u64, DecodeError> {
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
    /// of the message cannot hold that many, so no caller allocates for items that are not there.
    pub(crate) fn count(
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

    /// Length-prefixed raw bytes.
    pub(crate) fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.count(field, 1)?;
        if len > MAX_STRING {
            return Err(self.invalid(field, format!("length {len} exceeds {MAX_STRING}")));
        }
        self.take(field, len)
    }

    /// Length-prefixed UTF-8.
    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let bytes = self.bytes(field)?;
        self.charge(field, bytes.len())?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.invalid(field, "not UTF-8"))
    }

    /// Length-prefixed UTF-8 where length 0 means null and n+1 means n bytes.
    pub(crate) fn nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, DecodeError> {
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

    /// Counts `n` bytes of decoded output against [`MAX_DECODED_BYTES`].
    pub(crate) fn charge(&mut self, field: &'static str, n: usize) -> Result<(), DecodeError> {
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

/// Appends to a message.
#[derive(Default)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.buf
    }

    pub(crate) fn i16(&mut self, value: i16) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn i32(&mut self, value: i32) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    pub(crate) fn uvarint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.uvarint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    pub(crate) fn string(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub(crate) fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            None => self.uvarint(0),
            Some(s) => {
                self.uvarint(s.len() as u64 + 1);
                self.buf.extend_from_slice(s.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut w = Writer::new();
            w.uvarint(value);
            let bytes = w.finish();
            let mut r = Reader::new(&bytes);
            assert_eq!(r.uvarint("v"), Ok(value));
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn overlong_and_overflowing_varints_are_refused() {
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(matches!(
            Reader::new(&overflow).uvarint("v"),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            Reader::new(&[0x80, 0x80]).uvarint("v"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn counts_larger_than_the_message_are_refused() {
        let mut w = Writer::new();
        w.uvarint(1 << 40);
        let bytes = w.finish();
        assert!(matches!(
            Reader::new(&bytes).count("tasks", 1),
            Err(DecodeError::Invalid { field: "tasks", .. })
        ));
    }
}
