//! Commands and the transitions they share with the response handlers.

use std::time::Instant;

use tracing::{debug, error, info, warn};

use super::action::FatalError;
use super::config::ConfigError;
use super::event::{Generation, LostReason, MemberEvent};
use super::io::LeaveGroup;
use super::machine::{
    CommandError, CoordinatorState, HeartbeatState, JoinGate, Membership, Phase, SyncRequest,
    validate_protocols,
};
use super::protocol::{AssignError, MemberAssignment, ProtocolMetadata};

impl Membership {
    // ----- (C) commands -----

    /// Rejoin the group (KIP-800: `reason` goes into JoinGroup). From a stable generation this
    /// emits [`MemberEvent::Revoked`] first; during a join, the member rejoins once it completes.
    /// After [`leave`](Self::leave) it joins again as a new member. No effect once fatal.
    pub(crate) fn request_rejoin(&mut self, now: Instant, reason: impl Into<String>) {
        self.rejoin(now, reason.into());
    }

    /// Leave the group: LeaveGroup for a dynamic member (or a static one if configured) whose
    /// coordinator is known, then [`MemberEvent::Left`]. Stop the work before calling this.
    pub(crate) fn leave(&mut self, now: Instant, reason: impl Into<String>) {
        let _ = now;
        if matches!(
            self.phase,
            Phase::Leaving { .. } | Phase::Left | Phase::Fatal(_)
        ) {
            return;
        }
        let member_id = self.member_id().to_owned();
        let may_leave =
            self.config.group_instance_id.is_none() || self.config.leave_group_on_close_static;
        let known = matches!(self.coordinator, CoordinatorState::Known(_));
        self.heartbeat = HeartbeatState::default();
        self.pending_rejoin = None;
        self.join_gate = None;
        if !member_id.is_empty() && may_leave && known {
            self.phase = Phase::Leaving {
                leave: LeaveGroup {
                    group_id: self.config.group_id.clone(),
                    member_id,
                    group_instance_id: self.config.group_instance_id.clone(),
                    reason: reason.into(),
                },
                tag: None,
            };
        } else {
            self.phase = Phase::Left;
            self.events.push_back(MemberEvent::Left);
        }
    }

    /// The leader's assignment for `generation_id`, computed outside from
    /// `Membership::poll_assignment_request`. Heartbeats ran meanwhile; SyncGroup goes out next.
    pub(crate) fn set_assignment(
        &mut self,
        generation_id: i32,
        assignments: Vec<MemberAssignment>,
    ) -> Result<(), CommandError> {
        match std::mem::replace(&mut self.phase, Phase::Left) {
            Phase::AwaitingAssignment { generation }
                if generation.generation_id == generation_id =>
            {
                self.phase = Phase::Syncing {
                    generation,
                    assignments,
                    request: SyncRequest::Pending {
                        retry_at: None,
                        attempts: 0,
                    },
                };
                Ok(())
            }
            other => {
                self.phase = other;
                Err(CommandError::StaleAssignment { generation_id })
            }
        }
    }

    /// The leader's assignment for `generation_id` failed with `error`: reports
    /// [`MemberEvent::AssignmentFailed`] and rejoins, so the group tries again.
    pub(crate) fn assignment_failed(
        &mut self,
        now: Instant,
        generation_id: i32,
        error: AssignError,
    ) {
        let reason = format!("the leader's assignment failed: {error}");
        self.events.push_back(MemberEvent::AssignmentFailed {
            generation: generation_id,
            error,
        });
        self.request_rejoin(now, reason);
    }

    /// The user's work of `generation_id`, revoked with [`MemberEvent::Revoked`], has stopped: the
    /// join gate opens and the JoinGroup goes out at the next
    /// [`poll_request`](Self::poll_request). An acknowledgement for another generation, or
    /// when no gate is closed, is ignored. See `await_revocation` of the config.
    pub(crate) fn revocation_done(&mut self, now: Instant, generation_id: i32) {
        let _ = now;
        match self.join_gate {
            Some(gate) if gate.generation_id == generation_id => {
                info!(
                    group = %self.config.group_id,
                    generation = generation_id,
                    "revocation done; rejoining"
                );
                self.join_gate = None;
            }
            _ => debug!(
                generation = generation_id,
                "revocation ack without a held join"
            ),
        }
    }

    /// Replace this member's protocol metadata. If it changed while the member is in or joining
    /// a group, rejoin so the leader sees it (a follower-initiated rebalance).
    pub(crate) fn update_metadata(
        &mut self,
        now: Instant,
        protocols: Vec<ProtocolMetadata>,
    ) -> Result<(), ConfigError> {
        validate_protocols(&self.protocol_type, &protocols)?;
        if protocols != self.protocols {
            self.protocols = protocols;
            // Unjoined uses the new metadata at its next JoinGroup; Leaving, Left and Fatal
            // do not join.
            if matches!(
                self.phase,
                Phase::Joining { .. }
                    | Phase::AwaitingAssignment { .. }
                    | Phase::Syncing { .. }
                    | Phase::Stable { .. }
            ) {
                self.rejoin(now, "member metadata changed".to_owned());
            }
        }
        Ok(())
    }

    #[cfg(test)]
    /// Replace this member's protocol metadata for the *next* JoinGroup without rebalancing.
    pub(crate) fn set_metadata(
        &mut self,
        protocols: Vec<ProtocolMetadata>,
    ) -> Result<(), ConfigError> {
        validate_protocols(&self.protocol_type, &protocols)?;
        self.protocols = protocols;
        Ok(())
    }

    // ----- transitions shared with handle.rs -----

    /// Enter `Unjoined` (starting the rebalance clock if it is not running).
    pub(crate) fn enter_unjoined(
        &mut self,
        now: Instant,
        member_id: String,
        held: Option<Generation>,
        reason: String,
        retry_at: Option<Instant>,
        attempts: u32,
    ) {
        self.rebalance_started_at.get_or_insert(now);
        self.phase = Phase::Unjoined {
            member_id,
            held,
            reason,
            retry_at,
            attempts,
        };
    }

    /// An orderly rejoin: the generation is kept until the new one forms.
    pub(crate) fn rejoin(&mut self, now: Instant, reason: String) {
        info!(group = %self.config.group_id, %reason, "rejoin requested");
        match std::mem::replace(&mut self.phase, Phase::Left) {
            Phase::Stable { generation, .. } => {
                self.events.push_back(MemberEvent::Revoked {
                    generation: generation.clone(),
                    reason: reason.clone(),
                });
                if self.config.await_revocation {
                    self.join_gate = Some(JoinGate {
                        generation_id: generation.generation_id,
                        until: self.join_gate_until(now),
                    });
                }
                let member_id = generation.member_id.clone();
                self.enter_unjoined(now, member_id, Some(generation), reason, None, 0);
            }
            Phase::AwaitingAssignment { generation } | Phase::Syncing { generation, .. } => {
                let member_id = generation.member_id.clone();
                self.enter_unjoined(now, member_id, Some(generation), reason, None, 0);
            }
            Phase::Unjoined {
                member_id,
                held,
                retry_at,
                attempts,
                ..
            } => {
                self.phase = Phase::Unjoined {
                    member_id,
                    held,
                    reason,
                    retry_at,
                    attempts,
                };
            }
            joining @ Phase::Joining { .. } => {
                self.phase = joining;
                self.pending_rejoin = Some(reason);
            }
            Phase::Left => self.enter_unjoined(now, String::new(), None, reason, None, 0),
            other @ (Phase::Leaving { .. } | Phase::Fatal(_)) => self.phase = other,
        }
    }

    /// The generation is gone without a rebalance: report it lost and stop its heartbeats.
    pub(crate) fn lose(&mut self, generation: Option<Generation>, reason: LostReason) {
        self.heartbeat = HeartbeatState::default();
        // Lost work needs no orderly revocation: rejoin as soon as possible.
        self.join_gate = None;
        if generation.is_some() {
            self.events
                .push_back(MemberEvent::Lost { generation, reason });
        }
    }

    /// Stop for good on `error`.
    pub(crate) fn fail(&mut self, error: FatalError) {
        error!(group = %self.config.group_id, %error, "member stopped");
        let generation = self.generation().cloned();
        self.lose(generation, LostReason::Fatal(error.clone()));
        if self.rebalance_started_at.take().is_some() {
            self.metrics.rebalances_failed += 1;
        }
        if error == FatalError::FencedInstanceId {
            self.events.push_back(MemberEvent::Fenced {
                group_instance_id: self.config.group_instance_id.clone(),
            });
        } else {
            self.events.push_back(MemberEvent::Fatal(error.clone()));
        }
        self.pending_rejoin = None;
        self.phase = Phase::Fatal(error);
    }

    /// Self-fence if the deadline has passed.
    pub(crate) fn check_fence(&mut self, now: Instant) {
        let Some(deadline) = self.fence_deadline() else {
            return;
        };
        if now < deadline {
            return;
        }
        let generation = self.generation().cloned();
        let rebalance_bound = self.removal_bound() == Some(deadline);
        let reason = if rebalance_bound {
            warn!(
                group = %self.config.group_id,
                generation = generation.as_ref().map(|g| g.generation_id),
                "self-fenced: the rebalance lasted so long that the broker may remove this member"
            );
            LostReason::RebalanceTimeout { deadline }
        } else {
            warn!(
                group = %self.config.group_id,
                generation = generation.as_ref().map(|g| g.generation_id),
                "self-fenced: no heartbeat succeeded before the deadline"
            );
            LostReason::HeartbeatTimeout { deadline }
        };
        self.lose(generation, reason);
        // A JoinGroup in flight stays in flight: it will form a new generation.
        if self.drop_held_generation_of_join(None) {
            return;
        }
        let reason = if rebalance_bound {
            "the rebalance outlasted the rebalance timeout"
        } else {
            "session lost: no heartbeat succeeded before the self-fencing deadline"
        };
        match std::mem::replace(&mut self.phase, Phase::Left) {
            Phase::Unjoined {
                member_id,
                retry_at,
                attempts,
                ..
            } => {
                self.phase = Phase::Unjoined {
                    member_id,
                    held: None,
                    reason: reason.to_owned(),
                    retry_at,
                    attempts,
                };
                // Heartbeats succeed after a rebalance bound: the coordinator is fine.
                if !rebalance_bound {
                    self.mark_coordinator_unknown();
                }
            }
            Phase::AwaitingAssignment { generation }
            | Phase::Syncing { generation, .. }
            | Phase::Stable { generation, .. } => {
                self.enter_unjoined(now, generation.member_id, None, reason.to_owned(), None, 0);
                // Like Kafka after a session timeout without heartbeat: reconnect. (A SyncGroup
                // unanswered past its bound also says the connection is not to be trusted.)
                self.mark_coordinator_unknown();
            }
            other @ (Phase::Joining { .. }
            | Phase::Leaving { .. }
            | Phase::Left
            | Phase::Fatal(_)) => self.phase = other,
        }
    }

    /// While a JoinGroup is in flight, forget the generation held until it forms a new one
    /// (and take `member_id` if given) without disturbing the join. Returns whether the member
    /// was joining; otherwise nothing changes.
    pub(crate) fn drop_held_generation_of_join(&mut self, member_id: Option<String>) -> bool {
        let Phase::Joining {
            held,
            member_id: current,
            ..
        } = &mut self.phase
        else {
            return false;
        };
        *held = None;
        if let Some(id) = member_id {
            *current = id;
        }
        true
    }

    /// Forget the coordinator: requests in flight to it are void; a join or sync restarts
    /// after rediscovery, a stable member keeps heartbeating its generation.
    pub(crate) fn mark_coordinator_unknown(&mut self) {
        if matches!(self.coordinator, CoordinatorState::Known(_)) {
            self.coordinator = CoordinatorState::Unknown {
                retry_at: None,
                attempts: 0,
            };
        }
        self.heartbeat.in_flight = None;
        match std::mem::replace(&mut self.phase, Phase::Left) {
            Phase::Joining {
                member_id,
                held,
                reason,
                attempts,
                ..
            } => {
                self.phase = Phase::Unjoined {
                    member_id,
                    held,
                    reason,
                    retry_at: None,
                    attempts,
                };
            }
            Phase::Syncing {
                generation,
                request: SyncRequest::InFlight { .. },
                ..
            } => {
                self.phase = Phase::Unjoined {
                    member_id: generation.member_id.clone(),
                    held: Some(generation),
                    reason: "coordinator lost during SyncGroup".to_owned(),
                    retry_at: None,
                    attempts: 0,
                };
            }
            Phase::Leaving { tag: Some(_), .. } | Phase::Leaving { tag: None, .. } => {
                self.events.push_back(MemberEvent::Left);
            }
            other => self.phase = other,
        }
    }
}
