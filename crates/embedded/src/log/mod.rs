//! # Topics: what the task store and checkpoints need from a broker
//!
//! Topics that clients create with CreateTopics, each with one partition led by this node,
//! kept in memory or, with a data directory, in files that survive a restart.
//!
//! - [`batch`]: Kafka's v2 record batch header: checks (magic 2, CRC-32C, lengths) and the base
//!   offset rewrite. Batches are stored as the producer sent them, records never decoded.
//! - [`partition`]: one partition's batches in offset order, reads by offset.
//! - [`frame`]: the on-disk framing (length, CRC-32C, payload) and recovery of a torn tail.
//! - [`catalogue`]: the topic catalogue entries.
//! - [`spec`]: CreateTopics' checks (names, one partition, one replica, configs).
//! - [`topics`]: the store every connection shares.
//!
//! What is not here: compaction and retention (a compacted topic keeps every record, tombstones
//! included, and reads return them all; readers that fold by key see the same result), more
//! than one partition, replication, transactions and idempotent-producer deduplication.

pub(crate) mod batch;
pub(crate) mod catalogue;
pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod partition;
pub(crate) mod spec;
pub(crate) mod topics;

#[cfg(test)]
mod tests;

pub(crate) use error::LogError;
pub(crate) use spec::NewTopic;
pub(crate) use topics::{Limits, TopicInfo, TopicRef, Topics};
