//! Errors of the wire layer: framing, the pre-decode guard, and kafka-protocol's own decode and
//! encode errors, each with the API, version and position it concerns.

use kafka_protocol::messages::ApiKey;

/// What went wrong while reading or writing one Kafka frame.
///
/// Every variant means the frame is unusable. On a connection, a frame the peer sent that fails
/// to decode leaves the byte stream in an unknown state: close the connection and reconnect.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The frame is shorter than the fixed part of a request or response header.
    #[error(
        "frame of {len} bytes is shorter than a Kafka {what} header ({min} bytes); the peer does \
         not speak the Kafka protocol or the stream is corrupt: close the connection"
    )]
    ShortFrame {
        /// `"request"` or `"response"`.
        what: &'static str,
        /// The frame's length.
        len: usize,
        /// The least a header needs.
        min: usize,
    },
    /// The request names an API key Kafka does not define.
    #[error(
        "unknown Kafka API key {api_key}; the peer does not speak the Kafka protocol: close the \
         connection"
    )]
    UnknownApiKey {
        /// The key read from the frame.
        api_key: i16,
    },
    /// The request names a Kafka API that kroupier neither sends nor serves.
    #[error(
        "{api_key:?} (key {}) is not one of the Kafka APIs kroupier speaks; answer it as \
         unsupported or close the connection",
        *api_key as i16
    )]
    UnsupportedApi {
        /// The API.
        api_key: ApiKey,
        /// The correlation id of the request, so a broker can still answer it.
        correlation_id: i32,
    },
    /// The API version is outside what kroupier (kafka-protocol 0.18, Kafka 4.1 schemas) knows.
    #[error(
        "{api_key:?} v{version} is outside the supported versions {min}..={max}; negotiate the \
         version with ApiVersions first"
    )]
    UnsupportedVersion {
        /// The API.
        api_key: ApiKey,
        /// The version asked for.
        version: i16,
        /// The lowest version kroupier knows.
        min: i16,
        /// The highest version kroupier knows.
        max: i16,
        /// The correlation id of the request, so a broker can answer UNSUPPORTED_VERSION.
        correlation_id: i32,
    },
    /// The guard found the frame malformed before any decoding: a length runs past the end,
    /// a varint is too long, or the frame ends early.
    #[error(
        "malformed {message} v{version}: field `{field}` at byte {offset}: {problem}; the peer \
         sent a corrupt or hostile frame: close the connection"
    )]
    Malformed {
        /// The message (`"JoinGroupRequest"`, `"RequestHeader"`, ...).
        message: &'static str,
        /// The version it was read at.
        version: i16,
        /// The field being read.
        field: &'static str,
        /// The byte offset in the frame (after the length prefix).
        offset: usize,
        /// What is wrong there.
        problem: Problem,
    },
    /// Bytes remain after the message ended.
    #[error(
        "{trailing} bytes remain after {message} v{version}; the peer and kroupier disagree on \
         the schema: close the connection"
    )]
    TrailingBytes {
        /// The message.
        message: &'static str,
        /// The version it was read at.
        version: i16,
        /// How many bytes were left.
        trailing: usize,
    },
    /// The frame passed the guard but kafka-protocol refused it (for example invalid UTF-8 or a
    /// null where the schema allows none).
    #[error("kafka-protocol could not decode {message} v{version}: {reason}; close the connection")]
    Decode {
        /// The message.
        message: &'static str,
        /// The version it was read at.
        version: i16,
        /// kafka-protocol's explanation.
        reason: String,
    },
    /// kafka-protocol could not encode a message, usually because a field is set that the chosen
    /// version does not carry (e.g. `group_instance_id` below JoinGroup v5).
    #[error(
        "could not encode {message} v{version}: {reason}; clear the fields this version does not \
         carry or negotiate a higher version"
    )]
    Encode {
        /// The message.
        message: &'static str,
        /// The version it was written at.
        version: i16,
        /// kafka-protocol's explanation.
        reason: String,
    },
}

/// What the guard found wrong at one position of a frame.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A length or element count is larger than the bytes left in the frame.
    #[error("length {claimed} exceeds the {remaining} bytes left")]
    LengthExceedsRemaining {
        /// The length the frame claims.
        claimed: u64,
        /// The bytes left after the length prefix.
        remaining: usize,
    },
    /// A length is negative and not the null marker -1.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// The frame ends in the middle of a fixed-size field.
    #[error("frame ends early: {needed} bytes needed, {remaining} left")]
    Truncated {
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// An unsigned varint runs over 5 bytes or over 32 bits.
    #[error("unsigned varint longer than 32 bits")]
    VarintTooLong,
    /// A known tagged field's content does not fill exactly the size its header declares.
    #[error("tagged field {tag} declares {declared} bytes but its content takes {used}")]
    TaggedFieldSize {
        /// The tag.
        tag: u32,
        /// The declared size.
        declared: usize,
        /// The bytes its schema consumed.
        used: usize,
    },
}
