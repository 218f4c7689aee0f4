//! [`Writer`]: appends the primitives [`Reader`](super::Reader) reads.

/// Appends to a payload.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty payload.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// A boolean as one byte.
    pub fn bool(&mut self, value: bool) {
        self.buf.push(u8::from(value));
    }

    /// A big-endian `i16`.
    pub fn i16(&mut self, value: i16) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    /// A big-endian `i32`.
    pub fn i32(&mut self, value: i32) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    /// A big-endian `u64`.
    pub fn u64(&mut self, value: u64) {
        self.buf.extend_from_slice(&value.to_be_bytes());
    }

    /// Unsigned LEB128.
    pub fn uvarint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    /// Bytes with a varint length.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.uvarint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// A string with a varint length.
    pub fn string(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// An optional string: length + 1, or 0 for `None`.
    pub fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            None => self.uvarint(0),
            Some(s) => {
                self.uvarint(s.len() as u64 + 1);
                self.buf.extend_from_slice(s.as_bytes());
            }
        }
    }
}
