//! Kafka framing and guarded decoding, for both ends of a connection.
//!
//! A Kafka frame is a 4-byte big-endian length followed by that many bytes: a header (whose
//! version follows the API and its version; ApiVersions responses always use header v0), then
//! the message body. kroupier's client encodes requests and decodes responses; kroupier's
//! embedded coordinator decodes requests and encodes responses. Both go through this module.
//!
//! # Why a guard
//! kafka-protocol 0.18 reserves memory for whatever array count a frame claims, so a 25-byte
//! frame claiming `i32::MAX` elements aborts the process. Every decode here first walks the
//! frame along a static table of the message's schema (fields by version, flexible versions
//! with compact lengths and tagged fields, nullable lengths) and rejects any length that runs
//! past the end of the frame. Only then does kafka-protocol decode it. Trailing bytes are an
//! error too. The messages covered are the requests and responses of ApiVersions, Metadata,
//! FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups and ListGroups,
//! and of the log APIs Produce, Fetch, ListOffsets, CreateTopics and DescribeConfigs, and of the
//! transaction APIs InitProducerId, AddPartitionsToTxn and EndTxn (which only kroupier's clients
//! send: `decode_request` refuses them as unsupported), in every version kafka-protocol knows
//! (Kafka 4.1's schemas). A record batch set (Produce's and Fetch's
//! `records`) is walked as one length-prefixed blob; its own format is checked where it is
//! decoded (the log client guards kafka-protocol's `records` decoder).
//!
//! The round trip of one Heartbeat, client to broker and back, and a hostile frame, are in
//! `tests/mod.rs` (`a_heartbeat_round_trip_and_a_hostile_frame`).

mod broker;
mod error;
mod guard;
mod message;
mod schema;
#[cfg(test)]
mod tests;

use tokio_util::codec::LengthDelimitedCodec;

pub use broker::{RequestBody, decode_request, encode_response};
pub use error::{Problem, WireError};
pub use message::{
    WireRequest, WireResponse, decode_response, encode_request, peek_correlation_id,
};
#[cfg(test)]
pub(crate) use schema::TRANSACTION_APIS;
pub use schema::{LOG_APIS, SUPPORTED_APIS};

/// The versions of `api_key` kroupier can encode and decode (kafka-protocol 0.18, Kafka 4.1's
/// schemas), or `None` for an API kroupier does not speak.
pub fn versions(
    api_key: kafka_protocol::messages::ApiKey,
) -> Option<std::ops::RangeInclusive<i16>> {
    schema::body(api_key, schema::Direction::Request).map(|s| s.versions.min..=s.versions.max)
}

/// The default cap on a request frame a broker accepts: 1 MiB. Group requests are small; a
/// JoinGroup carries one member's metadata.
pub const DEFAULT_MAX_REQUEST_FRAME: usize = 1 << 20;

/// The default cap on a response frame a client accepts: 64 MiB. A JoinGroup response to the
/// leader or a DescribeGroups response carries every member's metadata and assignment.
pub const DEFAULT_MAX_RESPONSE_FRAME: usize = 64 << 20;

/// The codec for Kafka frames: a 4-byte big-endian length that does not count itself, and a
/// cap on the frame length (frames over it are an error, read or written).
///
/// Decoded frames and frames to encode exclude the length prefix, which is what
/// [`encode_request`], [`decode_response`], [`decode_request`] and [`encode_response`] use.
pub fn frame_codec(max_frame_length: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .big_endian()
        .max_frame_length(max_frame_length)
        .new_codec()
}
