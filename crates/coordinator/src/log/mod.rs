//! A single-partition Kafka topic as a log: create it compacted if missing, append records,
//! read them back from an offset (long polling at the end), and ask for the end offset.
//!
//! kroupier keeps small, keyed state in such topics (a task store, checkpoints): the latest
//! record per key is the state, a tombstone (a record without a value) deletes a key, and
//! compaction keeps the topic as small as the state. Partition 0 is the log; a topic with more
//! partitions works, the others are not used.
//!
//! [`TopicLog`](crate::log::TopicLog) speaks Metadata, CreateTopics, Produce, Fetch and
//! ListOffsets over the crate's [`Cluster`](crate::connection::Cluster), so TLS, SASL, bootstrap
//! failover and version negotiation are the same as for group membership. Records travel as v2
//! record batches (Kafka 0.11 and later), uncompressed, built and read with kafka-protocol's
//! `records` module.
//!
//! # Guarantees
//! - [`append`](crate::log::TopicLog::append) writes with `acks=-1`: once it returns, every
//!   in-sync replica has the records. The records of one call land in one batch, at
//!   consecutive offsets, or not at all. An append retried after a lost answer may land twice:
//!   the second copy then also wins over what another writer appended in between.
//! - [`read`](crate::log::TopicLog::read) returns records in offset order, up to the high
//!   watermark (what every in-sync replica has), so what it returns is never rolled back.
//! - Transient errors (a leader moving, a topic just created, a broker restarting) are retried
//!   with the cluster's retry backoff, within the cluster's `coordinator_lookup_timeout`
//!   (default 30 s), looking the partition leader up again each time. Errors an operator must
//!   fix (an ACL, a size limit) fail at once and say what to change.
//!
//! # Examples
//! ```no_run
//! # async fn example() -> Result<(), kroupier_coordinator::log::LogError> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bytes::Bytes;
//! use kroupier_coordinator::connection::{Cluster, ClusterConfig};
//! use kroupier_coordinator::log::{LogRecord, TopicLog, TopicSpec};
//!
//! let cluster = Arc::new(Cluster::new(ClusterConfig::new("127.0.0.1:9092"))?);
//! let log = TopicLog::open(cluster, TopicSpec::new("kroupier-tasks-my-group"), true).await?;
//! let first = log
//!     .append(vec![
//!         LogRecord::new("task-1", Bytes::from_static(b"{}")),
//!         LogRecord::tombstone("task-2"),
//!     ])
//!     .await?;
//! let batch = log.read(first, Duration::from_millis(500)).await?;
//! assert_eq!(batch.records[0].offset, first);
//! # Ok(()) }
//! ```

mod batch;
mod error;
mod topic;
mod transaction;

#[cfg(test)]
mod tests;

use bytes::Bytes;

pub(crate) use error::Cause;
pub use error::{LogError, LogErrorKind};
pub use topic::TopicLog;
pub use transaction::{Transaction, TransactionError, TransactionErrorKind, TransactionalProducer};

/// One record to append: value `None` is a tombstone (deletes the key after compaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// The key. Compacted topics refuse records without one; an empty key is a key.
    pub key: Bytes,
    /// The value, or `None` for a tombstone.
    pub value: Option<Bytes>,
}

impl LogRecord {
    /// A record setting `key` to `value`.
    pub fn new(key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        Self {
            key: key.into(),
            value: Some(value.into()),
        }
    }

    /// A tombstone for `key`.
    pub fn tombstone(key: impl Into<Bytes>) -> Self {
        Self {
            key: key.into(),
            value: None,
        }
    }
}

/// One record read back, with its offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The record's offset in partition 0.
    pub offset: i64,
    /// The key (empty if the record had none).
    pub key: Bytes,
    /// The value, or `None` for a tombstone.
    pub value: Option<Bytes>,
}

/// What one [`read`](crate::log::TopicLog::read) returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBatch {
    /// The records at the offset asked for or later, in offset order (possibly none).
    pub records: Vec<ReadRecord>,
    /// Where the next read starts: after the last batch read (past the last record returned,
    /// and past offsets compaction removed); the offset asked for when nothing was read; the
    /// log start offset when the offset asked for no longer exists.
    pub next_offset: i64,
    /// The high watermark when the broker answered: the offset the next record will get.
    /// `next_offset == end_offset` means everything written so far has been read.
    pub end_offset: i64,
}

/// How to create the topic when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    /// The topic's name: at most 249 characters of `[a-zA-Z0-9._-]`.
    pub name: String,
    /// Its replication factor; `None` takes the broker's `default.replication.factor`
    /// (Kafka 2.4 and later).
    pub replication_factor: Option<i16>,
}

impl TopicSpec {
    /// A topic named `name` with the broker's default replication factor.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            replication_factor: None,
        }
    }

    /// The same topic with replication factor `factor`.
    pub fn with_replication_factor(mut self, factor: i16) -> Self {
        self.replication_factor = Some(factor);
        self
    }
}
