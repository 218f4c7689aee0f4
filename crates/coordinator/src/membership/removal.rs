//! The bounds Kafka's rebalance deadlines put on a member's lease.
//!
//! A member's heartbeats only prove that the broker counts it *now*. Kafka's group coordinator
//! also removes a member while its heartbeats succeed (`kafka-group-protocol` reference, and
//! Kafka's `GroupMetadataManager`):
//!
//! - **join timeout**: a rebalance completes at most `rebalance_timeout` after it started; a
//!   dynamic member whose JoinGroup has not arrived by then is removed (a static one stays, and
//!   is removed by the pending-sync timeout of the generation formed without it);
//! - **pending-sync timeout**: a member that has not sent SyncGroup `rebalance_timeout` after
//!   the join completed is removed, even once the group is stable.
//!
//! Heartbeats answered REBALANCE_IN_PROGRESS during the join, and NONE during the sync, keep
//! the session alive but say nothing about these deadlines. So while a member keeps running a
//! generation's work through a rebalance, its lease also ends `margin` before the earliest
//! instant either deadline could pass, measured from what the member saw:
//!
//! - the rebalance started after the broker answered the member's last *settled* request (a
//!   heartbeat answered NONE, or the SyncGroup that delivered the assignment), so not before
//!   that request's send time;
//! - the join completed after the member's JoinGroup was sent and after every heartbeat the
//!   broker answered REBALANCE_IN_PROGRESS was sent.
//!
//! A JoinGroup or SyncGroup response that arrives before the bound replaces it (the broker
//! restarts every session when the join completes, and the sync ends the pending-sync timer).
//! The bound costs nothing in a healthy group: it only bites when a rebalance lasts about the
//! whole rebalance timeout, which is when Kafka removes someone. The join gate
//! ([`MembershipConfig::revocation_bound`](super::MembershipConfig::revocation_bound)) is
//! measured from the same start, so a revocation never holds the JoinGroup past it.

use std::time::{Duration, Instant};

use super::machine::{Membership, Phase};

impl Membership {
    /// The earliest instant, minus the self-fencing margin, at which the broker may remove this
    /// member for a rebalance it is in the middle of; `None` outside a rebalance.
    pub(crate) fn removal_bound(&self) -> Option<Instant> {
        let margin = self.config.effective_self_fence_margin();
        match &self.phase {
            Phase::Unjoined { held: Some(_), .. } | Phase::Joining { held: Some(_), .. } => {
                let started = self.heartbeat.last_settled_sent_at?;
                Some(started + self.join_removal_after() - margin)
            }
            Phase::AwaitingAssignment { .. } | Phase::Syncing { .. } => self.heartbeat.sync_bound,
            _ => None,
        }
    }

    /// How long after a rebalance starts a member that has not rejoined may be removed: the
    /// rebalance timeout for a dynamic member; for a static one, which Kafka keeps through the
    /// join, the join plus its pending-sync timeout.
    fn join_removal_after(&self) -> Duration {
        let timeout = self.config.rebalance_timeout;
        match self.config.group_instance_id {
            Some(_) => timeout * 2,
            None => timeout,
        }
    }

    /// The instant the join gate opens at the latest for a revocation seen at `now`:
    /// `rebalance_timeout − margin` after the rebalance started, which is not before the send
    /// time of the last settled request.
    pub(crate) fn join_gate_until(&self, now: Instant) -> Instant {
        let started = self
            .heartbeat
            .last_settled_sent_at
            .map_or(now, |t| t.min(now));
        started + self.config.revocation_bound()
    }

    /// A JoinGroup sent at `sent_at` completed while the member kept a generation's work
    /// running (`kept_work`): until SyncGroup succeeds, the lease also ends `margin` before the
    /// pending-sync timeout could remove the member.
    pub(crate) fn arm_sync_bound(&mut self, sent_at: Instant, kept_work: bool) {
        let completed_after = self
            .heartbeat
            .last_preparing_sent_at
            .map_or(sent_at, |t| t.max(sent_at));
        self.heartbeat.last_preparing_sent_at = None;
        self.heartbeat.superseded = false;
        self.heartbeat.sync_bound = kept_work.then(|| {
            completed_after + self.config.rebalance_timeout
                - self.config.effective_self_fence_margin()
        });
    }

    /// A request sent at `sent_at` was answered while the group was settled (not preparing a
    /// rebalance).
    pub(crate) fn settled_at(&mut self, sent_at: Instant) {
        let latest = self
            .heartbeat
            .last_settled_sent_at
            .map_or(sent_at, |t| t.max(sent_at));
        self.heartbeat.last_settled_sent_at = Some(latest);
    }
}
