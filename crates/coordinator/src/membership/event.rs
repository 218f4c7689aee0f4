//! What the membership reports: events, the generation, the fencing token and metrics.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::KafkaError;
use bytes::Bytes;

use super::action::{Api, FatalError};
use super::protocol::{AssignContext, AssignError, GroupMember};

/// A generation of the group as this member joined it. Never exists without a member id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The generation id the coordinator gave.
    pub generation_id: i32,
    /// This member's id in it.
    pub member_id: String,
    /// The protocol the group selected.
    pub protocol_name: String,
    /// The leader's member id.
    pub leader_id: String,
}

impl Generation {
    /// Whether this member leads the generation.
    pub fn is_leader(&self) -> bool {
        self.leader_id == self.member_id
    }

    /// The fencing token of this generation.
    pub fn token(&self) -> FencingToken {
        FencingToken::new(self.generation_id, self.member_id.as_str())
    }
}

/// `(generation id, member id)`: proof of membership to hand to user code and to stores that
/// reject writes from older generations. A newer generation of the same member supersedes an
/// older one.
///
/// The one fencing token of kroupier: leader election hands it to its leader, and the worker
/// (`kroupier_worker::FencingToken` is this type) hands it to each task. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FencingToken {
    /// The generation id (grows with every rebalance).
    pub generation_id: i32,
    /// The member id the coordinator gave.
    pub member_id: Arc<str>,
}

impl FencingToken {
    /// A token for `generation_id` and `member_id`.
    pub fn new(generation_id: i32, member_id: impl Into<Arc<str>>) -> Self {
        FencingToken {
            generation_id,
            member_id: member_id.into(),
        }
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "generation {} of member {}",
            self.generation_id, self.member_id
        )
    }
}

/// A fencing token with the instant until which this member may act on it.
///
/// `valid_until` is the self-fencing deadline: the send time of the last heartbeat (or join or
/// sync) that succeeded, plus the session timeout, minus the margin. A newer success extends it
/// with a new `Lease` from `Membership::lease`; a reset or loss
/// ends it at once (the membership then returns `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The token.
    pub token: FencingToken,
    /// The last instant at which the token is still valid (exclusive).
    pub valid_until: Instant,
}

impl Lease {
    /// Whether the token is still valid at `now`.
    pub fn is_valid(&self, now: Instant) -> bool {
        now < self.valid_until
    }
}

/// The coordinator broker of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    /// Its broker id.
    pub node_id: i32,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
}

/// Why a generation was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// Self-fenced: no heartbeat succeeded before the deadline.
    HeartbeatTimeout {
        /// The deadline that passed.
        deadline: Instant,
    },
    /// Self-fenced: a rebalance this member kept its work through (its JoinGroup or SyncGroup
    /// not yet answered) lasted so long that the broker may remove it by its rebalance or
    /// pending-sync timeout, although heartbeats still succeed.
    RebalanceTimeout {
        /// The deadline that passed (the earliest removal minus the margin).
        deadline: Instant,
    },
    /// The coordinator said the generation or the member id is gone.
    Reset {
        /// The API whose response said so.
        api: Api,
        /// The error it returned.
        error: KafkaError,
    },
    /// The member stopped on a fatal error (including fencing of its instance id).
    Fatal(FatalError),
}

impl LostReason {
    /// For a self-fencing loss: the deadline that passed. The broker cannot hand the work to
    /// anyone else before `deadline + margin`, which is the time left to stop it. `None` for a
    /// loss the broker reported, after which the work may already be elsewhere.
    pub fn fence_deadline(&self) -> Option<Instant> {
        match self {
            LostReason::HeartbeatTimeout { deadline }
            | LostReason::RebalanceTimeout { deadline } => Some(*deadline),
            LostReason::Reset { .. } | LostReason::Fatal(_) => None,
        }
    }
}

/// A change in the member's life, in the order the member saw it: the one event type that
/// leaves the membership. The sans-IO machine emits it (`Membership::poll_event`), the driver
/// delivers every one, in order, to each stream of
/// [`MemberHandle::events`](crate::driver::MemberHandle::events) (none is dropped: the owner
/// of a protocol acts on assignment, revocation and loss from this stream alone).
///
/// A protocol never hears of these through its [`GroupProtocol`](super::GroupProtocol): it
/// only offers metadata and assigns. Whoever owns it reads the stream and updates it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MemberEvent {
    /// The group coordinator is (now) this broker; group requests go there.
    CoordinatorChanged(Coordinator),
    /// JoinGroup succeeded: this member is in `generation` (its assignment follows).
    Joined {
        /// The new generation (with whether this member leads it).
        generation: Generation,
    },
    /// SyncGroup succeeded: this member's assignment for `generation`.
    Assigned {
        /// The generation; its [`token`](Generation::token) is the fencing token.
        generation: Generation,
        /// The assignment bytes (empty if the leader gave none).
        assignment: Bytes,
        /// The self-fencing deadline at the assignment (the lease's `valid_until`); later
        /// heartbeats extend it (see the member's status).
        valid_until: Instant,
        /// Where the rebalance's time went, as this member saw it.
        times: RebalanceTimes,
    },
    /// A rebalance starts while `generation` was stable (or the member is about to leave):
    /// its assignment is no longer final; the token stays valid while heartbeats succeed. With
    /// the join gate (`MembershipConfig::await_revocation`) the member rejoins only once
    /// `MemberHandle::revocations_done(generation)` says the revoked work stopped, or at the
    /// bound.
    Revoked {
        /// The generation being rebalanced.
        generation: Generation,
        /// Why (KIP-800).
        reason: String,
    },
    /// The generation is gone without a rebalance (self-fenced, or reset by the coordinator):
    /// stop all its work now, someone else may own it already.
    Lost {
        /// The generation lost (`None` if the member had none).
        generation: Option<Generation>,
        /// Why; [`LostReason::fence_deadline`] says how long is left to stop.
        reason: LostReason,
    },
    /// The leader's assignment failed (the protocol's `assign` returned an error); the member
    /// rejoins.
    AssignmentFailed {
        /// The generation it was for.
        generation: i32,
        /// The protocol's error.
        error: AssignError,
    },
    /// FENCED_INSTANCE_ID: another process joined with this `group.instance.id`. Terminal.
    Fenced {
        /// The instance id.
        group_instance_id: Option<String>,
    },
    /// A fatal error stopped the member. Terminal.
    Fatal(FatalError),
    /// The member left the group (after LeaveGroup, or without it for a static member).
    /// Terminal.
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

/// This member leads `context.generation_id` and must compute the assignment: the driver runs
/// the protocol's `assign(&context, &members)` off the heartbeat path, then calls
/// [`Membership::set_assignment`](super::Membership::set_assignment). Internal between the
/// machine and its driver (`Membership::poll_assignment_request`), never an event of the
/// member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssignmentRequest {
    /// The generation, the leader's (this member's) id and the selected protocol.
    pub(crate) context: AssignContext,
    /// Every member with its metadata, sorted by member id.
    pub(crate) members: Vec<GroupMember>,
}

/// Counters like Kafka's coordinator metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Rebalances that completed (SyncGroup succeeded).
    pub rebalances_total: u64,
    /// Rebalances that failed (an error reset the join or sync).
    pub rebalances_failed: u64,
    /// How long the last completed rebalance took, from its start to SyncGroup success.
    pub last_rebalance_latency: Option<Duration>,
    /// How long the last successful JoinGroup took, from its send to its answer (Kafka's
    /// `join-time`): mostly the coordinator waiting for every member to rejoin.
    pub last_join_time: Option<Duration>,
    /// How long the last successful SyncGroup took, from its send to its answer (Kafka's
    /// `sync-time`): for a follower, mostly the wait for the leader's assignment.
    pub last_sync_time: Option<Duration>,
    /// When the last heartbeat succeeded (response time).
    pub last_heartbeat_success_at: Option<Instant>,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// Heartbeats that failed (error or no response).
    pub heartbeats_failed: u64,
}

impl Metrics {
    /// Age of the last successful heartbeat at `now` (Kafka's last-heartbeat-seconds-ago).
    pub fn last_heartbeat_age(&self, now: Instant) -> Option<Duration> {
        self.last_heartbeat_success_at
            .map(|at| now.saturating_duration_since(at))
    }
}
