//! The schema of ConsumerGroupDescribe (69), the KIP-848 `consumer` group protocol's describe,
//! after Kafka 4.1's `ConsumerGroupDescribe{Request,Response}.json`: only the observer sends it,
//! to show a group that DescribeGroups (classic groups only) answers as `Dead`.

use super::{Field, I8, I32, Kind, Schema, UUID, between, field, since};

const STR: Kind = Kind::String;
const STRINGS: Kind = Kind::Array(&Kind::String);
const INT32S: Kind = Kind::Array(&I32);

// ConsumerGroupDescribe (69): 0-1, flexible 0+.
pub(super) const CONSUMER_GROUP_DESCRIBE_REQUEST: Schema = Schema {
    name: "ConsumerGroupDescribeRequest",
    versions: between(0, 1),
    flexible_from: 0,
    fields: &[
        field("GroupIds", since(0), STRINGS),
        field("IncludeAuthorizedOperations", since(0), I8),
    ],
};

const TOPIC_PARTITIONS: [Field; 3] = [
    field("TopicId", since(0), UUID),
    field("TopicName", since(0), STR),
    field("Partitions", since(0), INT32S),
];
const ASSIGNMENT: [Field; 1] = [field(
    "TopicPartitions",
    since(0),
    Kind::Array(&Kind::Struct(&TOPIC_PARTITIONS)),
)];
const MEMBER: [Field; 11] = [
    field("MemberId", since(0), STR),
    field("InstanceId", since(0), STR),
    field("RackId", since(0), STR),
    field("MemberEpoch", since(0), I32),
    field("ClientId", since(0), STR),
    field("ClientHost", since(0), STR),
    field("SubscribedTopicNames", since(0), STRINGS),
    field("SubscribedTopicRegex", since(0), STR),
    field("Assignment", since(0), Kind::Struct(&ASSIGNMENT)),
    field("TargetAssignment", since(0), Kind::Struct(&ASSIGNMENT)),
    field("MemberType", since(1), I8),
];
const DESCRIBED_GROUP: [Field; 9] = [
    field("ErrorCode", since(0), super::I16),
    field("ErrorMessage", since(0), STR),
    field("GroupId", since(0), STR),
    field("GroupState", since(0), STR),
    field("GroupEpoch", since(0), I32),
    field("AssignmentEpoch", since(0), I32),
    field("AssignorName", since(0), STR),
    field("Members", since(0), Kind::Array(&Kind::Struct(&MEMBER))),
    field("AuthorizedOperations", since(0), I32),
];

pub(super) const CONSUMER_GROUP_DESCRIBE_RESPONSE: Schema = Schema {
    name: "ConsumerGroupDescribeResponse",
    versions: between(0, 1),
    flexible_from: 0,
    fields: &[
        field("ThrottleTimeMs", since(0), I32),
        field(
            "Groups",
            since(0),
            Kind::Array(&Kind::Struct(&DESCRIBED_GROUP)),
        ),
    ],
};
