//! # The classic group state machine, sans-IO
//!
//! [`GroupCoordinator`] keeps every classic group by id and applies Apache Kafka's classic-group
//! rules: the protocol vote, MEMBER_ID_REQUIRED (KIP-394), static members (KIP-345), the initial
//! rebalance delay, join and sync deadlines from rebalance timeouts, session expiry, leader
//! re-election, empty assignments for members the leader left out, and the deletion of groups
//! that stay empty.
//!
//! It does no IO and reads no clock: every input carries `now`, JoinGroup and SyncGroup answers
//! that must wait for the rebalance come out of [`GroupCoordinator::poll_output`] tagged with the
//! [`ReplyId`] of their request, and [`GroupCoordinator::poll_timeout`] says when to call
//! [`GroupCoordinator::handle_timeout`] next. Tests drive it on virtual time.
//!
//! # Where it follows Kafka, and where it cannot
//! The rules are those of Kafka 4.x's `GroupMetadataManager` for classic groups. A static
//! member that restarts (same `group.instance.id`, new member id) while the group is Stable
//! replaces its old id without a rebalance as long as the protocol vote would not change, as
//! Kafka does; a restarted static leader is told to skip the assignment (KIP-814). Differences,
//! all in corners a correct client never reaches:
//! - a tie in the protocol vote goes to the name that sorts first (Kafka: hash-map order);
//! - when a leader leaves, the member whose id sorts first leads (Kafka: hash-map order);
//! - a second JoinGroup or SyncGroup parked by the same member answers the first with
//!   REBALANCE_IN_PROGRESS (Kafka never answers it; its client has already given up on it);
//! - there are no offsets and no DeleteGroups: a group is `Dead` only in that it does not exist.
//!   An empty group is deleted once it has been empty for
//!   [`GroupConfig::empty_group_retention`] (Kafka deletes an empty group without offsets at its
//!   next cleanup pass); DescribeGroups then answers as for an unknown group;
//! - a JoinGroup that would create a group beyond [`GroupConfig::max_groups`] is refused with
//!   POLICY_VIOLATION (Kafka has no cap on groups; the code is not retriable, so a client stops
//!   with an error rather than retry forever);
//! - a rebalance timeout above [`GroupConfig::max_rebalance_timeout`] is refused with
//!   INVALID_SESSION_TIMEOUT (Kafka bounds only the session timeout).
//!
//! The first test in `tests/mod.rs` walks one member through its first join.

mod classic;
mod config;
mod coordinator;
mod describe;
mod join;
mod member;
mod rebalance;
mod sync;
mod types;

#[cfg(test)]
mod tests;

pub(crate) use config::{GroupConfig, GroupConfigError};
pub(crate) use coordinator::GroupCoordinator;
#[cfg(any(test, feature = "testing"))]
pub use types::MemberDescription;
#[cfg_attr(not(any(test, feature = "testing")), allow(unreachable_pub))]
pub use types::{GroupDescription, GroupState};
pub(crate) use types::{
    GroupListing, Heartbeat, JoinGroup, JoinGroupResult, LeaveGroup, LeaveGroupResult,
    LeavingMember, MemberAssignment, Output, Protocol, ReplyId, SyncGroup, SyncGroupResult,
};
