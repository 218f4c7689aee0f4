//! The member's timers beside its phase: the heartbeat (in flight, next, failures, and the send
//! times self-fencing and the removal bounds measure from) and the join gate.

use std::time::Instant;

use super::io::RequestTag;

/// The join gate: the JoinGroup after the revocation of `generation_id` waits for
/// [`Membership::revocation_done`] or `until`, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JoinGate {
    pub(crate) generation_id: i32,
    pub(crate) until: Instant,
}

#[derive(Debug)]
pub(crate) struct HeartbeatInFlight {
    pub(crate) tag: RequestTag,
    pub(crate) sent_at: Instant,
    pub(crate) generation_id: i32,
}

#[derive(Debug, Default)]
pub(crate) struct HeartbeatState {
    pub(crate) next_at: Option<Instant>,
    pub(crate) in_flight: Option<HeartbeatInFlight>,
    pub(crate) failures: u32,
    /// Send time of the last request that proved membership in the current generation.
    pub(crate) last_success_sent_at: Option<Instant>,
    /// Send time of the last request answered while the group was *not* preparing a
    /// rebalance (a heartbeat answered NONE, the SyncGroup that delivered the assignment): the
    /// broker's next rebalance starts after it, so its deadlines are measured from no earlier.
    pub(crate) last_settled_sent_at: Option<Instant>,
    /// Send time of the last heartbeat answered REBALANCE_IN_PROGRESS: the join the member is
    /// in completed after it.
    pub(crate) last_preparing_sent_at: Option<Instant>,
    /// After a JoinGroup that kept a generation's work running: the latest instant at which
    /// the broker may still count this member if its SyncGroup never arrives (Kafka's
    /// pending-sync timeout), minus the margin. Cleared when SyncGroup succeeds.
    pub(crate) sync_bound: Option<Instant>,
    /// The broker formed a newer generation while a JoinGroup is in flight: heartbeats for the
    /// held one stop (they can only fail) and its lease runs out unless the join completes.
    pub(crate) superseded: bool,
}
