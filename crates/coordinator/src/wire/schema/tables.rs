//! The tables: one per message kroupier sends or serves, after Kafka 4.1's message specs.
//!
//! Comments give each message's valid and flexible versions as the specs state them.

use super::{Field, I8, I16, I32, I64, Kind, Schema, UUID, between, field, since, tagged};

const STR: Kind = Kind::String;
const BYTES: Kind = Kind::Bytes;
const STRINGS: Kind = Kind::Array(&Kind::String);
const INT32S: Kind = Kind::Array(&I32);

// RequestHeader: versions 1-2 (header v0 is gone), flexible 2+.
pub(super) const REQUEST_HEADER: Schema = Schema {
    name: "RequestHeader",
    versions: between(1, 2),
    flexible_from: 2,
    fields: &[
        field("RequestApiKey", since(0), I16),
        field("RequestApiVersion", since(0), I16),
        field("CorrelationId", since(0), I32),
        field("ClientId", since(1), Kind::ClassicString),
    ],
};

// ResponseHeader: versions 0-1, flexible 1+.
pub(super) const RESPONSE_HEADER: Schema = Schema {
    name: "ResponseHeader",
    versions: between(0, 1),
    flexible_from: 1,
    fields: &[field("CorrelationId", since(0), I32)],
};

// ApiVersions (18): 0-4, flexible 3+.
pub(super) const API_VERSIONS_REQUEST: Schema = Schema {
    name: "ApiVersionsRequest",
    versions: between(0, 4),
    flexible_from: 3,
    fields: &[
        field("ClientSoftwareName", since(3), STR),
        field("ClientSoftwareVersion", since(3), STR),
    ],
};

const API_VERSION: [Field; 3] = [
    field("ApiKey", since(0), I16),
    field("MinVersion", since(0), I16),
    field("MaxVersion", since(0), I16),
];
const SUPPORTED_FEATURE: [Field; 3] = [
    field("Name", since(3), STR),
    field("MinVersion", since(3), I16),
    field("MaxVersion", since(3), I16),
];
const FINALIZED_FEATURE: [Field; 3] = [
    field("Name", since(3), STR),
    field("MaxVersionLevel", since(3), I16),
    field("MinVersionLevel", since(3), I16),
];

pub(super) const API_VERSIONS_RESPONSE: Schema = Schema {
    name: "ApiVersionsResponse",
    versions: between(0, 4),
    flexible_from: 3,
    fields: &[
        field("ErrorCode", since(0), I16),
        field(
            "ApiKeys",
            since(0),
            Kind::Array(&Kind::Struct(&API_VERSION)),
        ),
        field("ThrottleTimeMs", since(1), I32),
        tagged(
            "SupportedFeatures",
            since(3),
            0,
            Kind::Array(&Kind::Struct(&SUPPORTED_FEATURE)),
        ),
        tagged("FinalizedFeaturesEpoch", since(3), 1, I64),
        tagged(
            "FinalizedFeatures",
            since(3),
            2,
            Kind::Array(&Kind::Struct(&FINALIZED_FEATURE)),
        ),
        tagged("ZkMigrationReady", since(3), 3, I8),
    ],
};

// Metadata (3): 0-13, flexible 9+.
const METADATA_REQUEST_TOPIC: [Field; 2] = [
    field("TopicId", since(10), UUID),
    field("Name", since(0), STR),
];

pub(super) const METADATA_REQUEST: Schema = Schema {
    name: "MetadataRequest",
    versions: between(0, 13),
    flexible_from: 9,
    fields: &[
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&METADATA_REQUEST_TOPIC)),
        ),
        field("AllowAutoTopicCreation", since(4), I8),
        field("IncludeClusterAuthorizedOperations", between(8, 10), I8),
        field("IncludeTopicAuthorizedOperations", since(8), I8),
    ],
};

const METADATA_BROKER: [Field; 4] = [
    field("NodeId", since(0), I32),
    field("Host", since(0), STR),
    field("Port", since(0), I32),
    field("Rack", since(1), STR),
];
const METADATA_PARTITION: [Field; 7] = [
    field("ErrorCode", since(0), I16),
    field("PartitionIndex", since(0), I32),
    field("LeaderId", since(0), I32),
    field("LeaderEpoch", since(7), I32),
    field("ReplicaNodes", since(0), INT32S),
    field("IsrNodes", since(0), INT32S),
    field("OfflineReplicas", since(5), INT32S),
];
const METADATA_TOPIC: [Field; 6] = [
    field("ErrorCode", since(0), I16),
    field("Name", since(0), STR),
    field("TopicId", since(10), UUID),
    field("IsInternal", since(1), I8),
    field(
        "Partitions",
        since(0),
        Kind::Array(&Kind::Struct(&METADATA_PARTITION)),
    ),
    field("TopicAuthorizedOperations", since(8), I32),
];

pub(super) const METADATA_RESPONSE: Schema = Schema {
    name: "MetadataResponse",
    versions: between(0, 13),
    flexible_from: 9,
    fields: &[
        field("ThrottleTimeMs", since(3), I32),
        field(
            "Brokers",
            since(0),
            Kind::Array(&Kind::Struct(&METADATA_BROKER)),
        ),
        field("ClusterId", since(2), STR),
        field("ControllerId", since(1), I32),
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&METADATA_TOPIC)),
        ),
        field("ClusterAuthorizedOperations", between(8, 10), I32),
        field("ErrorCode", since(13), I16),
    ],
};

// FindCoordinator (10): 0-6, flexible 3+; v4 replaced `Key` by the batched `CoordinatorKeys`.
pub(super) const FIND_COORDINATOR_REQUEST: Schema = Schema {
    name: "FindCoordinatorRequest",
    versions: between(0, 6),
    flexible_from: 3,
    fields: &[
        field("Key", between(0, 3), STR),
        field("KeyType", since(1), I8),
        field("CoordinatorKeys", since(4), STRINGS),
    ],
};

const COORDINATOR: [Field; 6] = [
    field("Key", since(4), STR),
    field("NodeId", since(4), I32),
    field("Host", since(4), STR),
    field("Port", since(4), I32),
    field("ErrorCode", since(4), I16),
    field("ErrorMessage", since(4), STR),
];

pub(super) const FIND_COORDINATOR_RESPONSE: Schema = Schema {
    name: "FindCoordinatorResponse",
    versions: between(0, 6),
    flexible_from: 3,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", between(0, 3), I16),
        field("ErrorMessage", between(1, 3), STR),
        field("NodeId", between(0, 3), I32),
        field("Host", between(0, 3), STR),
        field("Port", between(0, 3), I32),
        field(
            "Coordinators",
            since(4),
            Kind::Array(&Kind::Struct(&COORDINATOR)),
        ),
    ],
};

// JoinGroup (11): 0-9, flexible 6+.
const JOIN_GROUP_PROTOCOL: [Field; 2] = [
    field("Name", since(0), STR),
    field("Metadata", since(0), BYTES),
];

pub(super) const JOIN_GROUP_REQUEST: Schema = Schema {
    name: "JoinGroupRequest",
    versions: between(0, 9),
    flexible_from: 6,
    fields: &[
        field("GroupId", since(0), STR),
        field("SessionTimeoutMs", since(0), I32),
        field("RebalanceTimeoutMs", since(1), I32),
        field("MemberId", since(0), STR),
        field("GroupInstanceId", since(5), STR),
        field("ProtocolType", since(0), STR),
        field(
            "Protocols",
            since(0),
            Kind::Array(&Kind::Struct(&JOIN_GROUP_PROTOCOL)),
        ),
        field("Reason", since(8), STR),
    ],
};

const JOIN_GROUP_MEMBER: [Field; 3] = [
    field("MemberId", since(0), STR),
    field("GroupInstanceId", since(5), STR),
    field("Metadata", since(0), BYTES),
];

pub(super) const JOIN_GROUP_RESPONSE: Schema = Schema {
    name: "JoinGroupResponse",
    versions: between(0, 9),
    flexible_from: 6,
    fields: &[
        field("ThrottleTimeMs", since(2), I32),
        field("ErrorCode", since(0), I16),
        field("GenerationId", since(0), I32),
        field("ProtocolType", since(7), STR),
        field("ProtocolName", since(0), STR),
        field("Leader", since(0), STR),
        field("SkipAssignment", since(9), I8),
        field("MemberId", since(0), STR),
        field(
            "Members",
            since(0),
            Kind::Array(&Kind::Struct(&JOIN_GROUP_MEMBER)),
        ),
    ],
};

// SyncGroup (14): 0-5, flexible 4+.
const SYNC_GROUP_ASSIGNMENT: [Field; 2] = [
    field("MemberId", since(0), STR),
    field("Assignment", since(0), BYTES),
];

pub(super) const SYNC_GROUP_REQUEST: Schema = Schema {
    name: "SyncGroupRequest",
    versions: between(0, 5),
    flexible_from: 4,
    fields: &[
        field("GroupId", since(0), STR),
        field("GenerationId", since(0), I32),
        field("MemberId", since(0), STR),
        field("GroupInstanceId", since(3), STR),
        field("ProtocolType", since(5), STR),
        field("ProtocolName", since(5), STR),
        field(
            "Assignments",
            since(0),
            Kind::Array(&Kind::Struct(&SYNC_GROUP_ASSIGNMENT)),
        ),
    ],
};

pub(super) const SYNC_GROUP_RESPONSE: Schema = Schema {
    name: "SyncGroupResponse",
    versions: between(0, 5),
    flexible_from: 4,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", since(0), I16),
        field("ProtocolType", since(5), STR),
        field("ProtocolName", since(5), STR),
        field("Assignment", since(0), BYTES),
    ],
};

// Heartbeat (12): 0-4, flexible 4+.
pub(super) const HEARTBEAT_REQUEST: Schema = Schema {
    name: "HeartbeatRequest",
    versions: between(0, 4),
    flexible_from: 4,
    fields: &[
        field("GroupId", since(0), STR),
        field("GenerationId", since(0), I32),
        field("MemberId", since(0), STR),
        field("GroupInstanceId", since(3), STR),
    ],
};

pub(super) const HEARTBEAT_RESPONSE: Schema = Schema {
    name: "HeartbeatResponse",
    versions: between(0, 4),
    flexible_from: 4,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", since(0), I16),
    ],
};

// LeaveGroup (13): 0-5, flexible 4+; v3 replaced `MemberId` by the batched `Members`.
const MEMBER_IDENTITY: [Field; 3] = [
    field("MemberId", since(3), STR),
    field("GroupInstanceId", since(3), STR),
    field("Reason", since(5), STR),
];

pub(super) const LEAVE_GROUP_REQUEST: Schema = Schema {
    name: "LeaveGroupRequest",
    versions: between(0, 5),
    flexible_from: 4,
    fields: &[
        field("GroupId", since(0), STR),
        field("MemberId", between(0, 2), STR),
        field(
            "Members",
            since(3),
            Kind::Array(&Kind::Struct(&MEMBER_IDENTITY)),
        ),
    ],
};

const MEMBER_RESPONSE: [Field; 3] = [
    field("MemberId", since(3), STR),
    field("GroupInstanceId", since(3), STR),
    field("ErrorCode", since(3), I16),
];

pub(super) const LEAVE_GROUP_RESPONSE: Schema = Schema {
    name: "LeaveGroupResponse",
    versions: between(0, 5),
    flexible_from: 4,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", since(0), I16),
        field(
            "Members",
            since(3),
            Kind::Array(&Kind::Struct(&MEMBER_RESPONSE)),
        ),
    ],
};

// DescribeGroups (15): 0-6, flexible 5+.
pub(super) const DESCRIBE_GROUPS_REQUEST: Schema = Schema {
    name: "DescribeGroupsRequest",
    versions: between(0, 6),
    flexible_from: 5,
    fields: &[
        field("Groups", since(0), STRINGS),
        field("IncludeAuthorizedOperations", since(3), I8),
    ],
};

const DESCRIBED_GROUP_MEMBER: [Field; 6] = [
    field("MemberId", since(0), STR),
    field("GroupInstanceId", since(4), STR),
    field("ClientId", since(0), STR),
    field("ClientHost", since(0), STR),
    field("MemberMetadata", since(0), BYTES),
    field("MemberAssignment", since(0), BYTES),
];
const DESCRIBED_GROUP: [Field; 8] = [
    field("ErrorCode", since(0), I16),
    field("ErrorMessage", since(6), STR),
    field("GroupId", since(0), STR),
    field("GroupState", since(0), STR),
    field("ProtocolType", since(0), STR),
    field("ProtocolData", since(0), STR),
    field(
        "Members",
        since(0),
        Kind::Array(&Kind::Struct(&DESCRIBED_GROUP_MEMBER)),
    ),
    field("AuthorizedOperations", since(3), I32),
];

pub(super) const DESCRIBE_GROUPS_RESPONSE: Schema = Schema {
    name: "DescribeGroupsResponse",
    versions: between(0, 6),
    flexible_from: 5,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field(
            "Groups",
            since(0),
            Kind::Array(&Kind::Struct(&DESCRIBED_GROUP)),
        ),
    ],
};

// ListGroups (16): 0-5, flexible 3+.
pub(super) const LIST_GROUPS_REQUEST: Schema = Schema {
    name: "ListGroupsRequest",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field("StatesFilter", since(4), STRINGS),
        field("TypesFilter", since(5), STRINGS),
    ],
};

const LISTED_GROUP: [Field; 4] = [
    field("GroupId", since(0), STR),
    field("ProtocolType", since(0), STR),
    field("GroupState", since(4), STR),
    field("GroupType", since(5), STR),
];

pub(super) const LIST_GROUPS_RESPONSE: Schema = Schema {
    name: "ListGroupsResponse",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", since(0), I16),
        field(
            "Groups",
            since(0),
            Kind::Array(&Kind::Struct(&LISTED_GROUP)),
        ),
    ],
};

// SaslHandshake (17): 0-1, never flexible. Sent only by the client's security layer.
pub(super) const SASL_HANDSHAKE_REQUEST: Schema = Schema {
    name: "SaslHandshakeRequest",
    versions: between(0, 1),
    flexible_from: i16::MAX,
    fields: &[field("Mechanism", since(0), STR)],
};

pub(super) const SASL_HANDSHAKE_RESPONSE: Schema = Schema {
    name: "SaslHandshakeResponse",
    versions: between(0, 1),
    flexible_from: i16::MAX,
    fields: &[
        field("ErrorCode", since(0), I16),
        field("Mechanisms", since(0), STRINGS),
    ],
};

// SaslAuthenticate (36): 0-2, flexible 2+.
pub(super) const SASL_AUTHENTICATE_REQUEST: Schema = Schema {
    name: "SaslAuthenticateRequest",
    versions: between(0, 2),
    flexible_from: 2,
    fields: &[field("AuthBytes", since(0), BYTES)],
};

pub(super) const SASL_AUTHENTICATE_RESPONSE: Schema = Schema {
    name: "SaslAuthenticateResponse",
    versions: between(0, 2),
    flexible_from: 2,
    fields: &[
        field("ErrorCode", since(0), I16),
        field("ErrorMessage", since(0), STR),
        field("AuthBytes", since(0), BYTES),
        field("SessionLifetimeMs", since(1), I64),
    ],
};

// The log APIs: a client for one compacted topic sends these, and the embedded coordinator
// serves them. `records` fields are nullable bytes (a v2 record batch set, walked as one blob).
const LEADER_ID_AND_EPOCH: [Field; 2] = [
    field("LeaderId", since(0), I32),
    field("LeaderEpoch", since(0), I32),
];
const NODE_ENDPOINT: [Field; 4] = [
    field("NodeId", since(0), I32),
    field("Host", since(0), STR),
    field("Port", since(0), I32),
    field("Rack", since(0), STR),
];

// Produce (0): 3-13, flexible 9+; v13 names topics by id instead of by name.
const PARTITION_PRODUCE_DATA: [Field; 2] = [
    field("Index", since(0), I32),
    field("Records", since(0), BYTES),
];
const TOPIC_PRODUCE_DATA: [Field; 3] = [
    field("Name", between(0, 12), STR),
    field("TopicId", since(13), UUID),
    field(
        "PartitionData",
        since(0),
        Kind::Array(&Kind::Struct(&PARTITION_PRODUCE_DATA)),
    ),
];

pub(super) const PRODUCE_REQUEST: Schema = Schema {
    name: "ProduceRequest",
    versions: between(3, 13),
    flexible_from: 9,
    fields: &[
        field("TransactionalId", since(3), STR),
        field("Acks", since(0), I16),
        field("TimeoutMs", since(0), I32),
        field(
            "TopicData",
            since(0),
            Kind::Array(&Kind::Struct(&TOPIC_PRODUCE_DATA)),
        ),
    ],
};

const BATCH_INDEX_AND_ERROR_MESSAGE: [Field; 2] = [
    field("BatchIndex", since(8), I32),
    field("BatchIndexErrorMessage", since(8), STR),
];
const PARTITION_PRODUCE_RESPONSE: [Field; 8] = [
    field("Index", since(0), I32),
    field("ErrorCode", since(0), I16),
    field("BaseOffset", since(0), I64),
    field("LogAppendTimeMs", since(2), I64),
    field("LogStartOffset", since(5), I64),
    field(
        "RecordErrors",
        since(8),
        Kind::Array(&Kind::Struct(&BATCH_INDEX_AND_ERROR_MESSAGE)),
    ),
    field("ErrorMessage", since(8), STR),
    tagged(
        "CurrentLeader",
        since(10),
        0,
        Kind::Struct(&LEADER_ID_AND_EPOCH),
    ),
];
const TOPIC_PRODUCE_RESPONSE: [Field; 3] = [
    field("Name", between(0, 12), STR),
    field("TopicId", since(13), UUID),
    field(
        "PartitionResponses",
        since(0),
        Kind::Array(&Kind::Struct(&PARTITION_PRODUCE_RESPONSE)),
    ),
];

pub(super) const PRODUCE_RESPONSE: Schema = Schema {
    name: "ProduceResponse",
    versions: between(3, 13),
    flexible_from: 9,
    fields: &[
        field(
            "Responses",
            since(0),
            Kind::Array(&Kind::Struct(&TOPIC_PRODUCE_RESPONSE)),
        ),
        field("ThrottleTimeMs", since(1), I32),
        tagged(
            "NodeEndpoints",
            since(10),
            0,
            Kind::Array(&Kind::Struct(&NODE_ENDPOINT)),
        ),
    ],
};

// Fetch (1): 4-18, flexible 12+; v13 names topics by id instead of by name, v15 moves the
// replica id into the tagged ReplicaState.
const FETCH_PARTITION: [Field; 8] = [
    field("Partition", since(0), I32),
    field("CurrentLeaderEpoch", since(9), I32),
    field("FetchOffset", since(0), I64),
    field("LastFetchedEpoch", since(12), I32),
    field("LogStartOffset", since(5), I64),
    field("PartitionMaxBytes", since(0), I32),
    tagged("ReplicaDirectoryId", since(17), 0, UUID),
    tagged("HighWatermark", since(18), 1, I64),
];
const FETCH_TOPIC: [Field; 3] = [
    field("Topic", between(0, 12), STR),
    field("TopicId", since(13), UUID),
    field(
        "Partitions",
        since(0),
        Kind::Array(&Kind::Struct(&FETCH_PARTITION)),
    ),
];
const FORGOTTEN_TOPIC: [Field; 3] = [
    field("Topic", between(7, 12), STR),
    field("TopicId", since(13), UUID),
    field("Partitions", since(7), INT32S),
];
const REPLICA_STATE: [Field; 2] = [
    field("ReplicaId", since(15), I32),
    field("ReplicaEpoch", since(15), I64),
];

pub(super) const FETCH_REQUEST: Schema = Schema {
    name: "FetchRequest",
    versions: between(4, 18),
    flexible_from: 12,
    fields: &[
        tagged("ClusterId", since(12), 0, STR),
        field("ReplicaId", between(0, 14), I32),
        tagged("ReplicaState", since(15), 1, Kind::Struct(&REPLICA_STATE)),
        field("MaxWaitMs", since(0), I32),
        field("MinBytes", since(0), I32),
        field("MaxBytes", since(3), I32),
        field("IsolationLevel", since(4), I8),
        field("SessionId", since(7), I32),
        field("SessionEpoch", since(7), I32),
        field("Topics", since(0), Kind::Array(&Kind::Struct(&FETCH_TOPIC))),
        field(
            "ForgottenTopicsData",
            since(7),
            Kind::Array(&Kind::Struct(&FORGOTTEN_TOPIC)),
        ),
        field("RackId", since(11), STR),
    ],
};

const ABORTED_TRANSACTION: [Field; 2] = [
    field("ProducerId", since(4), I64),
    field("FirstOffset", since(4), I64),
];
const EPOCH_END_OFFSET: [Field; 2] = [
    field("Epoch", since(12), I32),
    field("EndOffset", since(12), I64),
];
const SNAPSHOT_ID: [Field; 2] = [
    field("EndOffset", since(0), I64),
    field("Epoch", since(0), I32),
];
const FETCH_PARTITION_DATA: [Field; 11] = [
    field("PartitionIndex", since(0), I32),
    field("ErrorCode", since(0), I16),
    field("HighWatermark", since(0), I64),
    field("LastStableOffset", since(4), I64),
    field("LogStartOffset", since(5), I64),
    tagged(
        "DivergingEpoch",
        since(12),
        0,
        Kind::Struct(&EPOCH_END_OFFSET),
    ),
    tagged(
        "CurrentLeader",
        since(12),
        1,
        Kind::Struct(&LEADER_ID_AND_EPOCH),
    ),
    tagged("SnapshotId", since(12), 2, Kind::Struct(&SNAPSHOT_ID)),
    field(
        "AbortedTransactions",
        since(4),
        Kind::Array(&Kind::Struct(&ABORTED_TRANSACTION)),
    ),
    field("PreferredReadReplica", since(11), I32),
    field("Records", since(0), BYTES),
];
const FETCHABLE_TOPIC_RESPONSE: [Field; 3] = [
    field("Topic", between(0, 12), STR),
    field("TopicId", since(13), UUID),
    field(
        "Partitions",
        since(0),
        Kind::Array(&Kind::Struct(&FETCH_PARTITION_DATA)),
    ),
];

pub(super) const FETCH_RESPONSE: Schema = Schema {
    name: "FetchResponse",
    versions: between(4, 18),
    flexible_from: 12,
    fields: &[
        field("ThrottleTimeMs", since(1), I32),
        field("ErrorCode", since(7), I16),
        field("SessionId", since(7), I32),
        field(
            "Responses",
            since(0),
            Kind::Array(&Kind::Struct(&FETCHABLE_TOPIC_RESPONSE)),
        ),
        tagged(
            "NodeEndpoints",
            since(16),
            0,
            Kind::Array(&Kind::Struct(&NODE_ENDPOINT)),
        ),
    ],
};

// ListOffsets (2): 1-10, flexible 6+ (v0 and its multi-offset answer are gone).
const LIST_OFFSETS_PARTITION: [Field; 3] = [
    field("PartitionIndex", since(0), I32),
    field("CurrentLeaderEpoch", since(4), I32),
    field("Timestamp", since(0), I64),
];
const LIST_OFFSETS_TOPIC: [Field; 2] = [
    field("Name", since(0), STR),
    field(
        "Partitions",
        since(0),
        Kind::Array(&Kind::Struct(&LIST_OFFSETS_PARTITION)),
    ),
];

pub(super) const LIST_OFFSETS_REQUEST: Schema = Schema {
    name: "ListOffsetsRequest",
    versions: between(1, 10),
    flexible_from: 6,
    fields: &[
        field("ReplicaId", since(0), I32),
        field("IsolationLevel", since(2), I8),
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&LIST_OFFSETS_TOPIC)),
        ),
        field("TimeoutMs", since(10), I32),
    ],
};

const LIST_OFFSETS_PARTITION_RESPONSE: [Field; 5] = [
    field("PartitionIndex", since(0), I32),
    field("ErrorCode", since(0), I16),
    field("Timestamp", since(1), I64),
    field("Offset", since(1), I64),
    field("LeaderEpoch", since(4), I32),
];
const LIST_OFFSETS_TOPIC_RESPONSE: [Field; 2] = [
    field("Name", since(0), STR),
    field(
        "Partitions",
        since(0),
        Kind::Array(&Kind::Struct(&LIST_OFFSETS_PARTITION_RESPONSE)),
    ),
];

pub(super) const LIST_OFFSETS_RESPONSE: Schema = Schema {
    name: "ListOffsetsResponse",
    versions: between(1, 10),
    flexible_from: 6,
    fields: &[
        field("ThrottleTimeMs", since(2), I32),
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&LIST_OFFSETS_TOPIC_RESPONSE)),
        ),
    ],
};

// CreateTopics (19): 2-7, flexible 5+.
const CREATABLE_REPLICA_ASSIGNMENT: [Field; 2] = [
    field("PartitionIndex", since(0), I32),
    field("BrokerIds", since(0), INT32S),
];
const CREATABLE_TOPIC_CONFIG: [Field; 2] =
    [field("Name", since(0), STR), field("Value", since(0), STR)];
const CREATABLE_TOPIC: [Field; 5] = [
    field("Name", since(0), STR),
    field("NumPartitions", since(0), I32),
    field("ReplicationFactor", since(0), I16),
    field(
        "Assignments",
        since(0),
        Kind::Array(&Kind::Struct(&CREATABLE_REPLICA_ASSIGNMENT)),
    ),
    field(
        "Configs",
        since(0),
        Kind::Array(&Kind::Struct(&CREATABLE_TOPIC_CONFIG)),
    ),
];

pub(super) const CREATE_TOPICS_REQUEST: Schema = Schema {
    name: "CreateTopicsRequest",
    versions: between(2, 7),
    flexible_from: 5,
    fields: &[
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&CREATABLE_TOPIC)),
        ),
        field("TimeoutMs", since(0), I32),
        field("ValidateOnly", since(1), I8),
    ],
};

const CREATABLE_TOPIC_CONFIGS: [Field; 5] = [
    field("Name", since(5), STR),
    field("Value", since(5), STR),
    field("ReadOnly", since(5), I8),
    field("ConfigSource", since(5), I8),
    field("IsSensitive", since(5), I8),
];
const CREATABLE_TOPIC_RESULT: [Field; 8] = [
    field("Name", since(0), STR),
    field("TopicId", since(7), UUID),
    field("ErrorCode", since(0), I16),
    field("ErrorMessage", since(1), STR),
    tagged("TopicConfigErrorCode", since(5), 0, I16),
    field("NumPartitions", since(5), I32),
    field("ReplicationFactor", since(5), I16),
    field(
        "Configs",
        since(5),
        Kind::Array(&Kind::Struct(&CREATABLE_TOPIC_CONFIGS)),
    ),
];

pub(super) const CREATE_TOPICS_RESPONSE: Schema = Schema {
    name: "CreateTopicsResponse",
    versions: between(2, 7),
    flexible_from: 5,
    fields: &[
        field("ThrottleTimeMs", since(2), I32),
        field(
            "Topics",
            since(0),
            Kind::Array(&Kind::Struct(&CREATABLE_TOPIC_RESULT)),
        ),
    ],
};

// DescribeConfigs (32): 1-4, flexible 4+. A log reads its topic's cleanup.policy and
// max.message.bytes with it, where the broker offers it.
const DESCRIBE_CONFIGS_RESOURCE: [Field; 3] = [
    field("ResourceType", since(0), I8),
    field("ResourceName", since(0), STR),
    field("ConfigurationKeys", since(0), STRINGS),
];

pub(super) const DESCRIBE_CONFIGS_REQUEST: Schema = Schema {
    name: "DescribeConfigsRequest",
    versions: between(1, 4),
    flexible_from: 4,
    fields: &[
        field(
            "Resources",
            since(0),
            Kind::Array(&Kind::Struct(&DESCRIBE_CONFIGS_RESOURCE)),
        ),
        field("IncludeSynonyms", since(1), I8),
        field("IncludeDocumentation", since(3), I8),
    ],
};

const DESCRIBE_CONFIGS_SYNONYM: [Field; 3] = [
    field("Name", since(1), STR),
    field("Value", since(1), STR),
    field("Source", since(1), I8),
];
const DESCRIBE_CONFIGS_RESOURCE_RESULT: [Field; 8] = [
    field("Name", since(0), STR),
    field("Value", since(0), STR),
    field("ReadOnly", since(0), I8),
    field("ConfigSource", since(1), I8),
    field("IsSensitive", since(0), I8),
    field(
        "Synonyms",
        since(1),
        Kind::Array(&Kind::Struct(&DESCRIBE_CONFIGS_SYNONYM)),
    ),
    field("ConfigType", since(3), I8),
    field("Documentation", since(3), STR),
];
const DESCRIBE_CONFIGS_RESULT: [Field; 5] = [
    field("ErrorCode", since(0), I16),
    field("ErrorMessage", since(0), STR),
    field("ResourceType", since(0), I8),
    field("ResourceName", since(0), STR),
    field(
        "Configs",
        since(0),
        Kind::Array(&Kind::Struct(&DESCRIBE_CONFIGS_RESOURCE_RESULT)),
    ),
];

pub(super) const DESCRIBE_CONFIGS_RESPONSE: Schema = Schema {
    name: "DescribeConfigsResponse",
    versions: between(1, 4),
    flexible_from: 4,
    fields: &[
        field("ThrottleTimeMs", since(0), I32),
        field(
            "Results",
            since(0),
            Kind::Array(&Kind::Struct(&DESCRIBE_CONFIGS_RESULT)),
        ),
    ],
};

// The transaction APIs: a transactional producer sends these (to its transaction coordinator);
// the embedded coordinator serves none of them.

// InitProducerId (22): 0-6, flexible 2+. v6 (KIP-939's two-phase commit: the request's
// `Enable2Pc` and `KeepPreparedTxn`) is unstable in Kafka 4.1, and kafka-protocol 0.18 leaves it
// out of the request (0-5) but not of the response (0-6, with the `OngoingTxn` fields).
pub(super) const INIT_PRODUCER_ID_REQUEST: Schema = Schema {
    name: "InitProducerIdRequest",
    versions: between(0, 5),
    flexible_from: 2,
    fields: &[
        field("TransactionalId", since(0), STR),
        field("TransactionTimeoutMs", since(0), I32),
        field("ProducerId", since(3), I64),
        field("ProducerEpoch", since(3), I16),
    ],
};

pub(super) const INIT_PRODUCER_ID_RESPONSE: Schema = Schema {
    name: "InitProducerIdResponse",
    versions: between(0, 6),
    flexible_from: 2,
    fields: &[
        field("ThrottleTimeMs", since(0), I32),
        field("ErrorCode", since(0), I16),
        field("ProducerId", since(0), I64),
        field("ProducerEpoch", since(0), I16),
        field("OngoingTxnProducerId", since(6), I64),
        field("OngoingTxnProducerEpoch", since(6), I16),
    ],
};

// AddPartitionsToTxn (24): 0-5, flexible 3+; v4 batches transactions (`Transactions`, with
// `VerifyOnly`) and is for brokers only: a producer sends v0-3 and their `V3AndBelow` fields.
const ADD_PARTITIONS_TO_TXN_TOPIC: [Field; 2] = [
    field("Name", since(0), STR),
    field("Partitions", since(0), INT32S),
];
const ADD_PARTITIONS_TO_TXN_TRANSACTION: [Field; 5] = [
    field("TransactionalId", since(4), STR),
    field("ProducerId", since(4), I64),
    field("ProducerEpoch", since(4), I16),
    field("VerifyOnly", since(4), I8),
    field(
        "Topics",
        since(4),
        Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_TOPIC)),
    ),
];

pub(super) const ADD_PARTITIONS_TO_TXN_REQUEST: Schema = Schema {
    name: "AddPartitionsToTxnRequest",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field(
            "Transactions",
            since(4),
            Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_TRANSACTION)),
        ),
        field("V3AndBelowTransactionalId", between(0, 3), STR),
        field("V3AndBelowProducerId", between(0, 3), I64),
        field("V3AndBelowProducerEpoch", between(0, 3), I16),
        field(
            "V3AndBelowTopics",
            between(0, 3),
            Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_TOPIC)),
        ),
    ],
};

const ADD_PARTITIONS_TO_TXN_PARTITION_RESULT: [Field; 2] = [
    field("PartitionIndex", since(0), I32),
    field("PartitionErrorCode", since(0), I16),
];
const ADD_PARTITIONS_TO_TXN_TOPIC_RESULT: [Field; 2] = [
    field("Name", since(0), STR),
    field(
        "ResultsByPartition",
        since(0),
        Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_PARTITION_RESULT)),
    ),
];
const ADD_PARTITIONS_TO_TXN_RESULT: [Field; 2] = [
    field("TransactionalId", since(4), STR),
    field(
        "TopicResults",
        since(4),
        Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_TOPIC_RESULT)),
    ),
];

pub(super) const ADD_PARTITIONS_TO_TXN_RESPONSE: Schema = Schema {
    name: "AddPartitionsToTxnResponse",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field("ThrottleTimeMs", since(0), I32),
        field("ErrorCode", since(4), I16),
        field(
            "ResultsByTransaction",
            since(4),
            Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_RESULT)),
        ),
        field(
            "ResultsByTopicV3AndBelow",
            between(0, 3),
            Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TO_TXN_TOPIC_RESULT)),
        ),
    ],
};

// EndTxn (26): 0-5, flexible 3+; v5 (KIP-890's epoch bump) answers with the producer id and
// epoch to use next.
pub(super) const END_TXN_REQUEST: Schema = Schema {
    name: "EndTxnRequest",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field("TransactionalId", since(0), STR),
        field("ProducerId", since(0), I64),
        field("ProducerEpoch", since(0), I16),
        field("Committed", since(0), I8),
    ],
};

pub(super) const END_TXN_RESPONSE: Schema = Schema {
    name: "EndTxnResponse",
    versions: between(0, 5),
    flexible_from: 3,
    fields: &[
        field("ThrottleTimeMs", since(0), I32),
        field("ErrorCode", since(0), I16),
        field("ProducerId", since(5), I64),
        field("ProducerEpoch", since(5), I16),
    ],
};
