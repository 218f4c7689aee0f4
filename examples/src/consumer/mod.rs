//! # A Kafka consumer-group member on kroupier
//!
//! Kafka's `KafkaConsumer` is built on the same group protocol as kroupier (its
//! `ConsumerCoordinator` extends `AbstractCoordinator`). This module speaks its member
//! protocol — protocol type `consumer`, `ConsumerProtocol` subscriptions and assignments of
//! versions 0 to 3 — through kroupier's generic coordinator, so a kroupier process can share a
//! consumer group with Java consumers, lead it or follow it, and show up in
//! `kafka-consumer-groups --describe`.
//!
//! - [`wire`]: the subscription and assignment payloads, as Java writes and reads them.
//! - [`range`] and [`sticky`]: the `range` (eager) and `cooperative-sticky` assignors, pure
//!   and deterministic, with the checks their plans must pass in [`assignor`].
//! - [`ConsumerProtocol`]: the [`GroupProtocol`](kroupier::protocol::GroupProtocol)
//!   that offers them, computes the leader's plan over partition counts set from a Metadata
//!   request ([`partition_counts`]), and reports every change of ownership.
//!
//! The cooperative protocol is the interesting part: a member keeps its partitions through a
//! rebalance, gives up those its new assignment leaves out, and then rejoins (the caller does
//! that on an [`Ownership`] with revoked partitions), so that the leader can hand them to
//! another member in the next generation. A partition therefore never has two owners in one
//! generation, whichever side — Rust or Java — leads.
//!
//! # Examples
//!
//! ```
//! use std::collections::BTreeMap;
//! use kroupier_examples::consumer::assignor::MemberSubscription;
//! use kroupier_examples::consumer::range;
//!
//! let member = |id: &str| MemberSubscription {
//!     member_id: id.into(),
//!     group_instance_id: None,
//!     topics: ["orders".to_owned()].into(),
//!     owned: Default::default(),
//!     generation: None,
//! };
//! let plan = range::assign(&[member("a"), member("b")], &BTreeMap::from([("orders".to_owned(), 3)]));
//! assert_eq!(plan["a"].len(), 2);
//! assert_eq!(plan["b"].len(), 1);
//! ```

pub mod assignor;
mod failover;
mod metadata;
mod protocol;
pub mod range;
pub mod sticky;
pub mod wire;

pub use metadata::partition_counts;
pub use protocol::{Assignor, CONSUMER_PROTOCOL_TYPE, ConsumerProtocol, Ownership};
