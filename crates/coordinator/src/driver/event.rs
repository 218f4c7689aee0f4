//! What a driven member tells its users: a stream of events and a watched status.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::membership::{
    AssignError, Coordinator, FatalError, FencingToken, Generation, Lease, LostReason, MemberState,
    Metrics,
};

/// A change in the member's life, in the order the member saw it.
///
/// Delivered through a `tokio::sync::broadcast` channel (see
/// [`MemberHandle::events`](super::MemberHandle::events)): a subscriber that falls more than
/// `event_capacity` events behind misses some and should read the
/// [`MemberStatus`] instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MemberEvent {
    /// The group's coordinator is (now) this broker.
    CoordinatorChanged {
        /// The broker's node id.
        node_id: i32,
        /// Its `host:port`.
        addr: String,
    },
    /// JoinGroup succeeded: this member is in a new generation.
    Joined {
        /// The generation id.
        generation: i32,
        /// This member's id in it.
        member_id: String,
        /// Whether this member leads it (and computes the assignment).
        leader: bool,
    },
    /// SyncGroup succeeded: this member's assignment for the generation. The protocol's
    /// `on_assigned` has run.
    Assigned {
        /// The fencing token of the generation.
        token: FencingToken,
        /// The assignment bytes (empty if the leader gave none).
        assignment: Bytes,
        /// Where the rebalance's time went, as this member saw it.
        times: RebalanceTimes,
    },
    /// A rebalance started while the generation was stable (or the member is about to leave):
    /// its assignment is no longer final. The protocol's `on_revoked` has run.
    Revoked {
        /// The generation being rebalanced.
        generation: i32,
        /// Why (KIP-800).
        reason: String,
    },
    /// The generation is gone without a rebalance (self-fenced or reset): stop all its work
    /// now. The protocol's `on_lost` has run.
    Lost {
        /// The generation lost.
        generation: Option<i32>,
        /// Why.
        reason: LostReason,
    },
    /// The leader's assignment failed; the member rejoins.
    AssignmentFailed {
        /// The generation it was for.
        generation: i32,
        /// The protocol's error.
        error: AssignError,
    },
    /// Another process joined with this `group.instance.id`. Terminal.
    Fenced {
        /// The instance id.
        group_instance_id: Option<String>,
    },
    /// The member stopped on a fatal error. Terminal.
    Fatal {
        /// The error, saying what to change.
        error: FatalError,
    },
    /// The member left the group. Terminal.
    Left,
}

/// Where a completed rebalance's time went, as one member saw it: the protocol's waits
/// (JoinGroup and SyncGroup, Kafka's `join-time` and `sync-time`) and the leader's own work
/// (computing the assignment), so that a slow rebalance can be told apart from a slow member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RebalanceTimes {
    /// From the rebalance's start (this member's rejoin, or its first JoinGroup) to the
    /// SyncGroup answer that ended it.
    pub rebalance: Option<Duration>,
    /// The JoinGroup that succeeded, from its send to its answer: the coordinator waits for
    /// every member to rejoin (or for the rebalance timeout) before it answers.
    pub join: Option<Duration>,
    /// The leader only: how long the protocol's `assign` took (on the blocking pool).
    pub assign: Option<Duration>,
    /// The SyncGroup, from its send to its answer: a follower's includes the wait for the
    /// leader's assignment.
    pub sync: Option<Duration>,
}

/// A snapshot of the member, published after every step of its driver (see
/// [`MemberHandle::status`](super::MemberHandle::status)).
#[derive(Debug, Clone, PartialEq)]
pub struct MemberStatus {
    /// The membership's state.
    pub state: MemberState,
    /// The generation the member is in (also while it rejoins from it).
    pub generation: Option<Generation>,
    /// The assignment of the stable generation.
    pub assignment: Option<Bytes>,
    /// The fencing token with its self-fencing deadline.
    pub lease: Option<Lease>,
    /// The coordinator, if known.
    pub coordinator: Option<Coordinator>,
    /// Counters like Kafka's coordinator metrics.
    pub metrics: Metrics,
    /// While the join gate holds the JoinGroup: the generation whose revocation awaits
    /// [`MemberHandle::revocations_done`](super::MemberHandle::revocations_done).
    pub join_held: Option<i32>,
    /// While no request of the member has reached a broker for a few seconds (3 s): why, and
    /// what to check — the text of the WARN line the member logs then (again every 30 s while
    /// it lasts). `None` once a broker answers.
    pub unreachable: Option<String>,
    /// Whether the driver has returned (left, fenced or fatal). A driver future that was
    /// dropped cannot say so; [`MemberHandle::stopped`](super::MemberHandle::stopped) notices
    /// both.
    pub stopped: bool,
}

impl MemberStatus {
    pub(crate) fn initial() -> Self {
        Self {
            state: MemberState::FindingCoordinator,
            generation: None,
            assignment: None,
            lease: None,
            coordinator: None,
            metrics: Metrics::default(),
            join_held: None,
            unreachable: None,
            stopped: false,
        }
    }

    /// Whether this member leads its current generation.
    pub fn is_leader(&self) -> bool {
        self.generation.as_ref().is_some_and(Generation::is_leader)
    }

    /// Whether `token` is the current generation's and its lease is still valid at `now`.
    pub fn is_token_valid(&self, token: &FencingToken, now: Instant) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|lease| &lease.token == token && lease.is_valid(now))
    }

    /// Age of the last successful heartbeat at `now` (Kafka's `last-heartbeat-seconds-ago`).
    pub fn last_heartbeat_age(&self, now: Instant) -> Option<Duration> {
        self.metrics.last_heartbeat_age(now)
    }
}
