//! Errors of a [`TopicLog`](super::TopicLog): each names the topic, and when an operator can fix
//! it, the ACL or setting to change.

use kafka_protocol::messages::ApiKey;

use crate::connection::ConnectionError;

/// Why a log operation failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The principal may not do `operation` on the topic (TOPIC_AUTHORIZATION_FAILED or
    /// CLUSTER_AUTHORIZATION_FAILED). Not retried: an ACL must change first.
    #[error("not authorized to {operation} topic `{topic}`: {hint}")]
    NotAuthorized {
        /// The topic.
        topic: String,
        /// `"create"`, `"read"` or `"write"`.
        operation: &'static str,
        /// The ACL to grant, or what to do instead.
        hint: String,
    },
    /// The topic does not exist and was opened with `create = false`.
    #[error(
        "topic `{topic}` does not exist; create it with one partition and \
         cleanup.policy=compact (kafka-topics.sh --create --topic {topic} --partitions 1 \
         --config cleanup.policy=compact), or open it with create = true"
    )]
    Missing {
        /// The topic.
        topic: String,
    },
    /// A record batch is larger than the topic accepts (MESSAGE_TOO_LARGE or
    /// RECORD_LIST_TOO_LARGE, or refused before sending when the limit is known).
    #[error(
        "a record batch of {bytes} bytes is over the topic's limit{}: append smaller values \
         or fewer records at once, or raise the topic's max.message.bytes",
        limit(*max)
    )]
    RecordTooLarge {
        /// The size of the encoded batch.
        bytes: usize,
        /// The topic's `max.message.bytes`, or 0 when the broker did not say.
        max: usize,
    },
    /// The broker answered with an error that retrying did not or cannot fix.
    #[error("{api:?} failed with error code {code}: {message}")]
    Kafka {
        /// The API that failed.
        api: ApiKey,
        /// Kafka's error code.
        code: i16,
        /// The topic, Kafka's name for the error, the broker's message and what to do.
        message: String,
    },
    /// No broker connection could be made or kept within the retry time, or the broker does
    /// not offer an API the log needs.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
    /// The broker sent records kroupier cannot read (a corrupt or compressed batch).
    #[error("unreadable records: {0}")]
    Corrupt(String),
}

/// " of N bytes (max.message.bytes)", or without the number when it is not known.
fn limit(max: usize) -> String {
    if max > 0 {
        format!(" of {max} bytes (max.message.bytes)")
    } else {
        " (max.message.bytes)".to_owned()
    }
}
