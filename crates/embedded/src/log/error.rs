//! What the topic store refuses, and the Kafka error code each refusal is answered with.

use kafka_protocol::error::ResponseError;

/// Why a topic operation failed; [`LogError::code`] is the one table from refusal to Kafka
/// error code, and the message (`Display`) goes to clients in the error message field where
/// the API version has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LogError {
    /// No topic of that name.
    #[error("topic {0} does not exist; create it first (CreateTopics)")]
    UnknownTopic(String),
    /// No topic of that id.
    #[error("no topic has id {0}")]
    UnknownTopicId(String),
    /// The topic exists but not the partition (only partition 0 does).
    #[error("topic {topic} has only partition 0, not {partition}")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
    },
    /// A damaged batch: truncated, wrong magic, bad CRC.
    #[error("{0}")]
    Corrupt(String),
    /// A well-formed batch this coordinator does not take.
    #[error("{0}")]
    InvalidRecord(String),
    /// A batch over the topic's `max.message.bytes`.
    #[error(
        "a record batch of {bytes} bytes is over max.message.bytes ({max}); send smaller \
         batches or raise the topic's max.message.bytes"
    )]
    TooLarge {
        /// The batch's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A read outside `[log start, end]`.
    #[error("offset {offset} is outside the log [{log_start}, {end}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The log start offset.
        log_start: i64,
        /// The end offset.
        end: i64,
    },
    /// The data directory failed a write.
    #[error("storage error: {0}")]
    Storage(String),
    /// CreateTopics for a name that exists.
    #[error("topic {0} already exists")]
    TopicExists(String),
    /// CreateTopics over the topic limit.
    #[error(
        "the embedded kroupier coordinator holds at most {max} topics, and none can be deleted; \
         raise its max_topics (kroupier coordinator --max-topics)"
    )]
    TooManyTopics {
        /// The limit.
        max: usize,
    },
    /// A name Kafka does not allow.
    #[error("{0}")]
    InvalidTopic(String),
    /// A partition count other than one.
    #[error("{0}")]
    InvalidPartitions(String),
    /// A replication factor other than one.
    #[error("{0}")]
    InvalidReplicationFactor(String),
    /// A manual assignment naming other brokers or partitions.
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    /// A topic config value that cannot work.
    #[error("{0}")]
    InvalidConfig(String),
    /// A request Kafka would refuse as malformed.
    #[error("{0}")]
    InvalidRequest(String),
}

impl LogError {
    /// The Kafka error code clients receive.
    pub(crate) fn code(&self) -> ResponseError {
        match self {
            Self::UnknownTopic(_) | Self::UnknownPartition { .. } => {
                ResponseError::UnknownTopicOrPartition
            }
            Self::UnknownTopicId(_) => ResponseError::UnknownTopicId,
            Self::Corrupt(_) => ResponseError::CorruptMessage,
            Self::InvalidRecord(_) => ResponseError::InvalidRecord,
            Self::TooLarge { .. } => ResponseError::MessageTooLarge,
            Self::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
            Self::Storage(_) => ResponseError::KafkaStorageError,
            Self::TopicExists(_) => ResponseError::TopicAlreadyExists,
            Self::TooManyTopics { .. } => ResponseError::PolicyViolation,
            Self::InvalidTopic(_) => ResponseError::InvalidTopicException,
            Self::InvalidPartitions(_) => ResponseError::InvalidPartitions,
            Self::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
            Self::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
            Self::InvalidConfig(_) => ResponseError::InvalidConfig,
            Self::InvalidRequest(_) => ResponseError::InvalidRequest,
        }
    }
}
