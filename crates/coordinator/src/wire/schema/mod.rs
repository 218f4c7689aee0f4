//! Kafka message schemas as small static tables, for the pre-decode guard.
//!
//! Each table lists a message's fields in wire order with the versions that carry them, after
//! Kafka's message JSON specs (`clients/src/main/resources/common/message/*.json`, Kafka 4.1, the
//! schemas kafka-protocol 0.18 is generated from). A table records only what the guard needs to
//! find every length prefix: the field's kind, its versions, and for tagged fields the tag.
//! Nullability is left to kafka-protocol: the guard accepts the null marker wherever a length
//! may appear, and kafka-protocol rejects a null where the schema allows none, with an error.

mod consumer;
mod tables;

use kafka_protocol::messages::ApiKey;

/// An inclusive range of versions; `max == i16::MAX` means "and later".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions {
    pub(crate) min: i16,
    pub(crate) max: i16,
}

impl Versions {
    /// Whether `version` is in the range.
    pub(crate) const fn contains(self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }
}

/// Versions `min` and later (`"min+"` in Kafka's specs).
pub(crate) const fn since(min: i16) -> Versions {
    Versions { min, max: i16::MAX }
}

/// Versions `min..=max` (`"min-max"` in Kafka's specs).
pub(crate) const fn between(min: i16, max: i16) -> Versions {
    Versions { min, max }
}

/// How a field is laid out on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A fixed-size field of this many bytes (int8/bool 1, int16 2, int32 4, int64 8, uuid 16).
    Fixed(usize),
    /// A string: int16 length (-1 = null) or, in flexible versions, a compact length.
    String,
    /// A string that keeps the int16 length even in flexible versions (`"flexibleVersions":
    /// "none"`, the request header's `ClientId`).
    ClassicString,
    /// Bytes: int32 length (-1 = null) or, in flexible versions, a compact length.
    Bytes,
    /// An array: int32 count (-1 = null) or, in flexible versions, a compact count.
    Array(&'static Kind),
    /// A struct (an array element): its fields, then in flexible versions its tagged fields.
    Struct(&'static [Field]),
}

/// `int8` and `bool`.
pub(crate) const I8: Kind = Kind::Fixed(1);
/// `int16`.
pub(crate) const I16: Kind = Kind::Fixed(2);
/// `int32`.
pub(crate) const I32: Kind = Kind::Fixed(4);
/// `int64`.
pub(crate) const I64: Kind = Kind::Fixed(8);
/// `uuid`.
pub(crate) const UUID: Kind = Kind::Fixed(16);

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// The field's name in Kafka's spec.
    pub(crate) name: &'static str,
    /// The versions that carry it.
    pub(crate) versions: Versions,
    /// Its layout.
    pub(crate) kind: Kind,
    /// `Some(tag)` for a tagged field, which lives in the tagged-field section instead.
    pub(crate) tag: Option<u32>,
}

/// A field present in `versions`.
pub(crate) const fn field(name: &'static str, versions: Versions, kind: Kind) -> Field {
    Field {
        name,
        versions,
        kind,
        tag: None,
    }
}

/// A tagged field present in `versions` under `tag`.
pub(crate) const fn tagged(name: &'static str, versions: Versions, tag: u32, kind: Kind) -> Field {
    Field {
        name,
        versions,
        kind,
        tag: Some(tag),
    }
}

/// A whole message: its versions, the first flexible version, and its top-level fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema {
    /// The message's name in Kafka's spec.
    pub(crate) name: &'static str,
    /// The versions kroupier knows (kafka-protocol 0.18).
    pub(crate) versions: Versions,
    /// The first flexible version (compact lengths, tagged fields); `i16::MAX` for none.
    pub(crate) flexible_from: i16,
    /// The fields in wire order.
    pub(crate) fields: &'static [Field],
}

impl Schema {
    /// Whether `version` uses the flexible encoding.
    pub(crate) const fn is_flexible(&self, version: i16) -> bool {
        version >= self.flexible_from
    }
}

/// Request or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// A client's request.
    Request,
    /// A broker's response.
    Response,
}

/// The schema of `api_key`'s request or response body, or `None` if kroupier does not speak it.
pub(crate) fn body(api_key: ApiKey, direction: Direction) -> Option<&'static Schema> {
    use tables::*;
    let (request, response) = match api_key {
        ApiKey::ApiVersions => (&API_VERSIONS_REQUEST, &API_VERSIONS_RESPONSE),
        ApiKey::Metadata => (&METADATA_REQUEST, &METADATA_RESPONSE),
        ApiKey::FindCoordinator => (&FIND_COORDINATOR_REQUEST, &FIND_COORDINATOR_RESPONSE),
        ApiKey::JoinGroup => (&JOIN_GROUP_REQUEST, &JOIN_GROUP_RESPONSE),
        ApiKey::SyncGroup => (&SYNC_GROUP_REQUEST, &SYNC_GROUP_RESPONSE),
        ApiKey::Heartbeat => (&HEARTBEAT_REQUEST, &HEARTBEAT_RESPONSE),
        ApiKey::LeaveGroup => (&LEAVE_GROUP_REQUEST, &LEAVE_GROUP_RESPONSE),
        ApiKey::DescribeGroups => (&DESCRIBE_GROUPS_REQUEST, &DESCRIBE_GROUPS_RESPONSE),
        ApiKey::ListGroups => (&LIST_GROUPS_REQUEST, &LIST_GROUPS_RESPONSE),
        ApiKey::SaslHandshake => (&SASL_HANDSHAKE_REQUEST, &SASL_HANDSHAKE_RESPONSE),
        ApiKey::SaslAuthenticate => (&SASL_AUTHENTICATE_REQUEST, &SASL_AUTHENTICATE_RESPONSE),
        ApiKey::Produce => (&PRODUCE_REQUEST, &PRODUCE_RESPONSE),
        ApiKey::Fetch => (&FETCH_REQUEST, &FETCH_RESPONSE),
        ApiKey::ListOffsets => (&LIST_OFFSETS_REQUEST, &LIST_OFFSETS_RESPONSE),
        ApiKey::CreateTopics => (&CREATE_TOPICS_REQUEST, &CREATE_TOPICS_RESPONSE),
        ApiKey::DescribeConfigs => (&DESCRIBE_CONFIGS_REQUEST, &DESCRIBE_CONFIGS_RESPONSE),
        ApiKey::InitProducerId => (&INIT_PRODUCER_ID_REQUEST, &INIT_PRODUCER_ID_RESPONSE),
        ApiKey::AddPartitionsToTxn => (
            &ADD_PARTITIONS_TO_TXN_REQUEST,
            &ADD_PARTITIONS_TO_TXN_RESPONSE,
        ),
        ApiKey::EndTxn => (&END_TXN_REQUEST, &END_TXN_RESPONSE),
        ApiKey::ConsumerGroupDescribe => (
            &consumer::CONSUMER_GROUP_DESCRIBE_REQUEST,
            &consumer::CONSUMER_GROUP_DESCRIBE_RESPONSE,
        ),
        _ => return None,
    };
    Some(match direction {
        Direction::Request => request,
        Direction::Response => response,
    })
}

/// The request header (versions 1 and 2; `client_id` stays a classic nullable string in v2).
pub(crate) const REQUEST_HEADER: Schema = tables::REQUEST_HEADER;

/// The response header (versions 0 and 1).
pub(crate) const RESPONSE_HEADER: Schema = tables::RESPONSE_HEADER;

/// The group APIs kroupier sends and serves, in API key order. The client also sends
/// SaslHandshake and SaslAuthenticate when SASL is configured; the embedded coordinator serves
/// neither.
pub const SUPPORTED_APIS: [ApiKey; 9] = [
    ApiKey::Metadata,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::ApiVersions,
];

/// The APIs of a single-partition compacted topic used as a log (the task store and the
/// checkpoints), in API key order: what a log client sends and what an embedded coordinator
/// serves to host such topics. A log also sends DescribeConfigs, where the broker offers it, to
/// learn its topic's `cleanup.policy` and `max.message.bytes`; it does without.
pub const LOG_APIS: [ApiKey; 4] = [
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::CreateTopics,
];

/// The APIs of Kafka's transactions that a transactional producer sends (InitProducerId,
/// AddPartitionsToTxn, EndTxn), in API key order; the embedded coordinator serves none of them.
/// A producer sends AddPartitionsToTxn v0-3 only: v4 and later are for brokers.
#[cfg(test)]
pub(crate) const TRANSACTION_APIS: [ApiKey; 3] = [
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::EndTxn,
];
