//! Errors of a [`TopicLog`](super::TopicLog): each names the topic, and when an operator can fix
//! it, the ACL or setting to change.

use kafka_protocol::messages::ApiKey;

use crate::connection::ConnectionError;

/// Why a log operation failed. Its message names the topic and, when an operator can fix it,
/// the ACL or setting to change; [`kind`](Self::kind) sorts it for code.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct LogError(Cause);

/// What kind of [`LogError`] happened.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogErrorKind {
    /// The principal may not create, read or write the topic: an ACL must change first.
    NotAuthorized,
    /// The topic does not exist and was opened without creating it.
    Missing,
    /// A record batch is larger than the topic accepts.
    RecordTooLarge,
    /// The broker answered with an error that retrying did not or cannot fix.
    Kafka,
    /// No broker connection could be made or kept, or the broker lacks an API the log needs.
    Connection,
    /// The broker sent records kroupier cannot read.
    Corrupt,
}

impl LogError {
    /// What kind of error this is.
    pub fn kind(&self) -> LogErrorKind {
        use LogErrorKind as Kind;
        match &self.0 {
            Cause::NotAuthorized { .. } => Kind::NotAuthorized,
            Cause::Missing { .. } => Kind::Missing,
            Cause::RecordTooLarge { .. } => Kind::RecordTooLarge,
            Cause::Kafka { .. } => Kind::Kafka,
            Cause::Connection(_) => Kind::Connection,
            Cause::Corrupt(_) => Kind::Corrupt,
        }
    }

    /// The topic a [`Missing`](LogErrorKind::Missing) or
    /// [`NotAuthorized`](LogErrorKind::NotAuthorized) error names.
    pub fn topic(&self) -> Option<&str> {
        match &self.0 {
            Cause::Missing { topic } | Cause::NotAuthorized { topic, .. } => Some(topic),
            _ => None,
        }
    }

    /// Kafka's error code and the broker's explanation (the topic, Kafka's name for the
    /// error, the broker's message and what to do) of a [`Kafka`](LogErrorKind::Kafka) error.
    pub fn kafka(&self) -> Option<(i16, &str)> {
        match &self.0 {
            Cause::Kafka { code, message, .. } => Some((*code, message)),
            _ => None,
        }
    }

    /// The size of the refused batch and the topic's `max.message.bytes` (0 when the broker
    /// did not say) of a [`RecordTooLarge`](LogErrorKind::RecordTooLarge) error.
    pub fn record_too_large(&self) -> Option<(usize, usize)> {
        match &self.0 {
            Cause::RecordTooLarge { bytes, max } => Some((*bytes, *max)),
            _ => None,
        }
    }

    /// The error's parts, for the tests.
    #[cfg(test)]
    pub(crate) fn cause(&self) -> &Cause {
        &self.0
    }

    /// The error's parts, by value.
    pub(crate) fn into_cause(self) -> Cause {
        self.0
    }
}

impl From<Cause> for LogError {
    fn from(cause: Cause) -> Self {
        Self(cause)
    }
}

impl From<ConnectionError> for LogError {
    fn from(error: ConnectionError) -> Self {
        Self(Cause::Connection(error))
    }
}

/// The error's parts, as its message names them.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Cause {
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
    Connection(ConnectionError),
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
