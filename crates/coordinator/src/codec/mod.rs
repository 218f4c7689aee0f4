//! # The versioned payload codec
//!
//! What kroupier puts in JoinGroup member metadata and in SyncGroup assignments — the leader
//! election's payloads and the worker's (`kroupier_worker::protocol`) — is written by one
//! [`Writer`] and read by one [`Reader`], and one [`DecodeError`] says what is wrong with a
//! payload. `docs/protocol.md` is the spec of the worker's messages.
//!
//! - **Versioned.** A payload starts with an `int16` version. A decoder that meets a newer
//!   version than it knows reads the fields it knows and skips the rest, so new versions may only
//!   append fields (Kafka's consumer and Connect protocols work the same way); bytes after a
//!   payload of a version it knows completely are an error ([`Reader::end`]). [`Versioned`]
//!   does this for a payload type.
//! - **Never trusts a count.** Every read checks the bytes left first; a count is refused when
//!   the rest of the payload cannot hold that many items ([`Reader::count`]); a string is at
//!   most [`MAX_STRING`] bytes; one payload may expand to at most [`MAX_DECODED_BYTES`] of
//!   decoded strings ([`Reader::charge`]). Malformed bytes give an error naming the field and
//!   the offset, never a panic.
//! - **Primitives:** big-endian integers, one-byte booleans, unsigned LEB128 varints, strings
//!   and bytes with a varint length, nullable strings with length + 1 (0 for null).
//!
//! `tests.rs`'s `versioned_round_trip_and_forward_compatibility` shows a type written and read
//! back across versions.

mod reader;
mod writer;

pub use reader::Reader;
pub use writer::Writer;

/// Longest string (and byte string) accepted, as Kafka's `STRING`: 32,767 bytes.
pub const MAX_STRING: usize = i16::MAX as usize;

/// Most bytes of decoded strings one payload may produce. Compact encodings expand the input;
/// this bounds what a hostile payload can make the decoder allocate.
pub const MAX_DECODED_BYTES: usize = 64 << 20;

/// Why a payload from the group could not be decoded. The member that sent it runs an
/// incompatible or broken kroupier build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The message ends before a field does.
    #[error(
        "kroupier message truncated at byte {offset} reading `{field}` ({needed} more bytes \
         needed); the sender wrote a cut or corrupt message: check its kroupier version"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: usize,
    },
    /// A field holds an impossible value.
    #[error(
        "invalid kroupier message at byte {offset}, field `{field}`: {reason}; the sender runs \
         an incompatible or broken kroupier build"
    )]
    Invalid {
        /// The field being read.
        field: &'static str,
        /// Where the reader stood.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A negative version: not a kroupier message.
    #[error("kroupier message version {0} is negative; the group holds a non-kroupier member")]
    NegativeVersion(i16),
    /// Bytes follow a message of a version this build knows completely.
    #[error(
        "{count} unexpected bytes after a complete kroupier message of version {version}; the \
         sender is broken"
    )]
    TrailingBytes {
        /// The message's version.
        version: i16,
        /// How many bytes follow it.
        count: usize,
    },
    /// Decoding would produce more than the allowed amount of data.
    #[error("kroupier message expands past {limit} bytes at `{field}`; refused")]
    TooLarge {
        /// The field being read.
        field: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// A payload a protocol carries in member metadata or in an assignment: an `int16` version,
/// then the body.
pub trait Versioned: Sized {
    /// The newest version this build writes and fully understands.
    const VERSION: i16;

    /// Writes the body of [`Self::VERSION`].
    fn encode_body(&self, writer: &mut Writer);

    /// Reads a body of `version` (never newer than [`Self::VERSION`]); fields a newer version
    /// appended are skipped by [`decode`](Self::decode).
    fn decode_body(version: i16, reader: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// The version prefix and the body.
    fn encode(&self) -> bytes::Bytes {
        let mut writer = Writer::new();
        writer.i16(Self::VERSION);
        self.encode_body(&mut writer);
        writer.finish().into()
    }

    /// Decodes `bytes`: a newer version is read as [`Self::VERSION`]; bytes after a version
    /// this build knows completely are an error.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(bytes);
        let sent = reader.version()?;
        let value = Self::decode_body(sent.min(Self::VERSION), &mut reader)?;
        reader.end(sent, Self::VERSION)?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests;
