//! Inputs of the membership: responses, request failures, disconnects and timeouts.

use std::time::Instant;

use kafka_protocol::error::{ParseResponseErrorCode, ResponseError};
use kafka_protocol::messages::{
    FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse,
};
use tracing::{debug, info, warn};

use super::action::{Api, ErrorAction, FatalError, RetryBackoff, action_for};
use super::event::{
    AssignmentRequest, Coordinator, Generation, LostReason, MemberEvent, RebalanceTimes,
};
use super::io::{RequestTag, Response};
use super::machine::{CoordinatorState, Membership, Phase, SyncRequest};
use super::protocol::{AssignContext, GroupMember};

impl Membership {
    /// A response arrived for the request tagged `tag`. Responses to requests the member no
    /// longer waits for (stale tags, earlier generations) are ignored.
    pub(crate) fn handle_response(&mut self, now: Instant, tag: RequestTag, response: Response) {
        self.check_fence(now);
        match response {
            Response::FindCoordinator(r) => self.on_find_coordinator(now, tag, r),
            Response::JoinGroup(r) => self.on_join_group(now, tag, r),
            Response::SyncGroup(r) => self.on_sync_group(now, tag, r),
            Response::Heartbeat(r) => self.on_heartbeat(now, tag, r),
            Response::LeaveGroup(r) => self.on_leave_group(tag, r),
        }
    }

    /// A request failed on an error no retry can fix (see
    /// [`ConnectionError::is_fatal`](crate::connection::ConnectionError::is_fatal)): a TLS or
    /// SASL failure. The member stops with [`FatalError::Security`].
    pub(crate) fn handle_fatal_failure(&mut self, now: Instant, detail: String) {
        self.check_fence(now);
        if !matches!(self.phase, Phase::Fatal(_)) {
            self.fail(FatalError::Security { detail });
        }
    }

    /// The request tagged `tag` got no response (timeout, connection error). For group
    /// requests this means the coordinator is unreachable: it is rediscovered.
    pub(crate) fn handle_request_failed(&mut self, now: Instant, tag: RequestTag) {
        self.check_fence(now);
        if let CoordinatorState::Finding { tag: t, attempts } = self.coordinator
            && t == tag
        {
            self.retry_find_coordinator(now, attempts);
            return;
        }
        if self
            .heartbeat
            .in_flight
            .as_ref()
            .is_some_and(|h| h.tag == tag)
        {
            self.metrics.heartbeats_failed += 1;
            self.mark_coordinator_unknown();
            return;
        }
        let group_request = match &self.phase {
            Phase::Joining { tag: t, .. } => *t == tag,
            Phase::Syncing {
                request: SyncRequest::InFlight { tag: t, .. },
                ..
            } => *t == tag,
            Phase::Leaving { tag: t, .. } => *t == Some(tag),
            _ => false,
        };
        if group_request {
            self.mark_coordinator_unknown();
        }
    }

    #[cfg(test)]
    /// The connection to the coordinator broke: every request in flight to it is void.
    pub(crate) fn handle_disconnect(&mut self, now: Instant) {
        self.check_fence(now);
        if !matches!(self.coordinator, CoordinatorState::Finding { .. }) {
            self.mark_coordinator_unknown();
        }
    }

    /// Time passed: self-fence if the deadline passed. Call at [`poll_timeout`](Self::poll_timeout),
    /// then drain [`poll_request`](Self::poll_request) and [`poll_event`](Self::poll_event).
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.check_fence(now);
    }

    fn retry_find_coordinator(&mut self, now: Instant, attempts: u32) {
        let attempts = attempts + 1;
        self.coordinator = CoordinatorState::Unknown {
            retry_at: Some(now + self.backoff(RetryBackoff::Exponential, attempts)),
            attempts,
        };
    }

    fn on_find_coordinator(&mut self, now: Instant, tag: RequestTag, r: FindCoordinatorResponse) {
        let CoordinatorState::Finding { tag: t, attempts } = self.coordinator else {
            return;
        };
        if t != tag {
            return;
        }
        // v4+ answers in `coordinators`, older versions at the top level.
        let (error_code, node_id, host, port) = match r
            .coordinators
            .iter()
            .find(|c| c.key.as_str() == self.config.group_id)
            .or(r.coordinators.first())
        {
            Some(c) => (c.error_code, c.node_id.0, c.host.to_string(), c.port),
            None => (r.error_code, r.node_id.0, r.host.to_string(), r.port),
        };
        let error = match error_code.err() {
            None if node_id < 0 || host.is_empty() => Some(ResponseError::CoordinatorNotAvailable),
            other => other,
        };
        match error.map(|e| action_for(Api::FindCoordinator, e)) {
            None => {
                let coordinator = Coordinator {
                    node_id,
                    host,
                    port,
                };
                self.coordinator = CoordinatorState::Known(coordinator.clone());
                self.events
                    .push_back(MemberEvent::CoordinatorChanged(coordinator));
            }
            Some(ErrorAction::Fatal(e)) => self.fail(e),
            Some(action) => {
                debug!(?action, "FindCoordinator failed; retrying");
                self.retry_find_coordinator(now, attempts);
            }
        }
    }

    fn on_join_group(&mut self, now: Instant, tag: RequestTag, r: JoinGroupResponse) {
        let Phase::Joining { tag: t, .. } = &self.phase else {
            return;
        };
        if *t != tag {
            return;
        }
        let Phase::Joining {
            member_id,
            held,
            reason,
            sent_at,
            attempts,
            ..
        } = std::mem::replace(&mut self.phase, Phase::Left)
        else {
            return;
        };
        let Some(error) = r.error_code.err() else {
            return self.on_joined(now, sent_at, held, r);
        };
        match action_for(Api::JoinGroup, error) {
            ErrorAction::RejoinWithAssignedMemberId => {
                if r.member_id.is_empty() {
                    self.phase = Phase::Unjoined {
                        member_id,
                        held,
                        reason,
                        retry_at: None,
                        attempts,
                    };
                    return self.fail(FatalError::InvalidResponse {
                        api: Api::JoinGroup,
                        detail: "MEMBER_ID_REQUIRED without a member id",
                    });
                }
                let reset = LostReason::Reset {
                    api: Api::JoinGroup,
                    error: error.into(),
                };
                self.lose(held, reset);
                self.enter_unjoined(now, r.member_id.to_string(), None, reason, None, 0);
            }
            ErrorAction::ResetMemberIdAndRejoin | ErrorAction::ResetGenerationAndRejoin => {
                self.metrics.rebalances_failed += 1;
                let keep_id = error == ResponseError::IllegalGeneration;
                self.lose(
                    held,
                    LostReason::Reset {
                        api: Api::JoinGroup,
                        error: error.into(),
                    },
                );
                let member_id = if keep_id { member_id } else { String::new() };
                self.enter_unjoined(now, member_id, None, reason, None, 0);
            }
            ErrorAction::Rejoin => {
                self.enter_unjoined(now, member_id, held, reason, None, attempts);
            }
            ErrorAction::RediscoverCoordinator => {
                self.enter_unjoined(now, member_id, held, reason, None, attempts);
                self.mark_coordinator_unknown();
            }
            ErrorAction::Retry(backoff) => {
                let retry_at = now + self.backoff(backoff, attempts + 1);
                self.enter_unjoined(now, member_id, held, reason, Some(retry_at), attempts + 1);
            }
            ErrorAction::Fatal(e) => {
                self.phase = Phase::Unjoined {
                    member_id,
                    held,
                    reason,
                    retry_at: None,
                    attempts,
                };
                self.fail(e);
            }
            ErrorAction::Ignore => {
                self.enter_unjoined(now, member_id, held, reason, None, attempts);
            }
        }
    }

    fn on_joined(
        &mut self,
        now: Instant,
        sent_at: Instant,
        held: Option<Generation>,
        r: JoinGroupResponse,
    ) {
        let protocol_type_matches = r
            .protocol_type
            .as_ref()
            .is_none_or(|t| t.as_str() == self.protocol_type);
        let protocol_name = r.protocol_name.as_ref().map(|n| n.to_string());
        let invalid = if r.member_id.is_empty() {
            Some("JoinGroup succeeded without a member id")
        } else if protocol_name.as_deref().is_none_or(str::is_empty) {
            Some("JoinGroup succeeded without a protocol name")
        } else {
            None
        };
        if !protocol_type_matches || invalid.is_some() {
            // Keep the held generation so `fail` reports it lost.
            self.phase = Phase::Unjoined {
                member_id: String::new(),
                held,
                reason: String::new(),
                retry_at: None,
                attempts: 0,
            };
            return self.fail(match invalid {
                Some(detail) => FatalError::InvalidResponse {
                    api: Api::JoinGroup,
                    detail,
                },
                None => FatalError::InconsistentGroupProtocol,
            });
        }
        let generation = Generation {
            generation_id: r.generation_id,
            member_id: r.member_id.to_string(),
            protocol_name: protocol_name.unwrap_or_default(),
            leader_id: r.leader.to_string(),
        };
        // The broker restarts every member's session when the join completes, somewhere
        // between our send and our receipt. A member that held a generation through the
        // rebalance keeps working on it, so its proof stays strict: the JoinGroup's send time
        // or a later heartbeat the broker answered meanwhile. A member that held none has no
        // work to protect until SyncGroup, whose send time (never before this receipt) becomes
        // the strict basis of its first assignment; until then the receipt is its basis, so a
        // long first join does not fence it at once.
        let basis = match held {
            Some(_) => self
                .heartbeat
                .last_success_sent_at
                .map_or(sent_at, |t| t.max(sent_at)),
            None => now,
        };
        self.heartbeat.last_success_sent_at = Some(basis);
        self.heartbeat.failures = 0;
        self.metrics.last_join_time = Some(now.saturating_duration_since(sent_at));
        self.heartbeat
            .next_at
            .get_or_insert(now + self.config.heartbeat_interval);
        self.arm_sync_bound(sent_at, held.is_some());
        info!(
            group = %self.config.group_id,
            generation = generation.generation_id,
            member_id = %generation.member_id,
            leader = generation.is_leader(),
            "joined"
        );
        self.events.push_back(MemberEvent::Joined {
            generation: generation.clone(),
        });
        if generation.is_leader() && !r.skip_assignment {
            let mut members: Vec<GroupMember> = r
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.to_string(),
                    group_instance_id: m.group_instance_id.map(|i| i.to_string()),
                    metadata: m.metadata,
                })
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            self.assignment_request = Some(AssignmentRequest {
                context: AssignContext::new(
                    generation.generation_id,
                    generation.member_id.clone(),
                    generation.protocol_name.clone(),
                ),
                members,
            });
            self.phase = Phase::AwaitingAssignment { generation };
        } else {
            // Follower, or a static leader told to keep the current assignment (KIP-814).
            self.phase = Phase::Syncing {
                generation,
                assignments: Vec::new(),
                request: SyncRequest::Pending {
                    retry_at: None,
                    attempts: 0,
                },
            };
        }
    }

    fn on_sync_group(&mut self, now: Instant, tag: RequestTag, r: SyncGroupResponse) {
        let Phase::Syncing {
            request: SyncRequest::InFlight { tag: t, .. },
            ..
        } = &self.phase
        else {
            return;
        };
        if *t != tag {
            return;
        }
        let Phase::Syncing {
            generation,
            assignments,
            request: SyncRequest::InFlight {
                sent_at, attempts, ..
            },
        } = std::mem::replace(&mut self.phase, Phase::Left)
        else {
            return;
        };
        let error = match r.error_code.err() {
            None => {
                let type_ok = r
                    .protocol_type
                    .as_ref()
                    .is_none_or(|t| t.as_str() == self.protocol_type);
                let name_ok = r
                    .protocol_name
                    .as_ref()
                    .is_none_or(|n| n.as_str() == generation.protocol_name);
                if type_ok && name_ok {
                    return self.on_synced(now, sent_at, generation, r);
                }
                ResponseError::InconsistentGroupProtocol
            }
            Some(error) => error,
        };
        match action_for(Api::SyncGroup, error) {
            ErrorAction::Rejoin | ErrorAction::Ignore | ErrorAction::RejoinWithAssignedMemberId => {
                self.metrics.rebalances_failed += 1;
                let member_id = generation.member_id.clone();
                let reason = format!("SyncGroup failed: {error}");
                self.enter_unjoined(now, member_id, Some(generation), reason, None, 0);
            }
            ErrorAction::RediscoverCoordinator => {
                let member_id = generation.member_id.clone();
                let reason = format!("SyncGroup failed: {error}");
                self.enter_unjoined(now, member_id, Some(generation), reason, None, 0);
                self.mark_coordinator_unknown();
            }
            ErrorAction::ResetGenerationAndRejoin | ErrorAction::ResetMemberIdAndRejoin => {
                self.metrics.rebalances_failed += 1;
                let member_id = match error {
                    ResponseError::IllegalGeneration => generation.member_id.clone(),
                    _ => String::new(),
                };
                self.lose(
                    Some(generation),
                    LostReason::Reset {
                        api: Api::SyncGroup,
                        error: error.into(),
                    },
                );
                let reason = format!("SyncGroup failed: {error}");
                self.enter_unjoined(now, member_id, None, reason, None, 0);
            }
            ErrorAction::Retry(backoff) => {
                let retry_at = now + self.backoff(backoff, attempts + 1);
                self.phase = Phase::Syncing {
                    generation,
                    assignments,
                    request: SyncRequest::Pending {
                        retry_at: Some(retry_at),
                        attempts: attempts + 1,
                    },
                };
            }
            ErrorAction::Fatal(e) => {
                self.phase = Phase::AwaitingAssignment { generation };
                self.fail(e);
            }
        }
    }

    fn on_synced(
        &mut self,
        now: Instant,
        sent_at: Instant,
        generation: Generation,
        r: SyncGroupResponse,
    ) {
        let basis = self
            .heartbeat
            .last_success_sent_at
            .map_or(sent_at, |t| t.max(sent_at));
        self.heartbeat.last_success_sent_at = Some(basis);
        self.heartbeat.sync_bound = None;
        self.settled_at(sent_at);
        self.metrics.rebalances_total += 1;
        self.metrics.last_sync_time = Some(now.saturating_duration_since(sent_at));
        if let Some(started) = self.rebalance_started_at.take() {
            self.metrics.last_rebalance_latency = Some(now.saturating_duration_since(started));
        }
        info!(
            group = %self.config.group_id,
            generation = generation.generation_id,
            latency_ms = self.metrics.last_rebalance_latency.map(|d| d.as_millis() as u64),
            "assigned"
        );
        let event_generation = generation.clone();
        let assignment = r.assignment.clone();
        self.phase = Phase::Stable {
            generation,
            assignment: r.assignment,
        };
        self.events.push_back(MemberEvent::Assigned {
            generation: event_generation,
            assignment,
            // The lease the sync just extended, as the status shows it.
            valid_until: self.fence_deadline().unwrap_or(now),
            times: RebalanceTimes {
                rebalance: self.metrics.last_rebalance_latency,
                join: self.metrics.last_join_time,
                // The leader's own work is timed by the driver, which runs it.
                assign: None,
                sync: self.metrics.last_sync_time,
            },
        });
        if let Some(reason) = self.pending_rejoin.take() {
            self.rejoin(now, reason);
        }
    }

    fn on_heartbeat(&mut self, now: Instant, tag: RequestTag, r: HeartbeatResponse) {
        if self
            .heartbeat
            .in_flight
            .as_ref()
            .is_none_or(|h| h.tag != tag)
        {
            return;
        }
        let Some(sent) = self.heartbeat.in_flight.take() else {
            return;
        };
        let current = self.generation().map(|g| g.generation_id);
        let same_generation = current == Some(sent.generation_id);
        let error = r.error_code.err();
        if matches!(error, None | Some(ResponseError::RebalanceInProgress)) {
            // Both prove the broker still counts this member in the generation.
            self.heartbeat.failures = 0;
            self.metrics.last_heartbeat_success_at = Some(now);
            if same_generation {
                let basis = self
                    .heartbeat
                    .last_success_sent_at
                    .map_or(sent.sent_at, |t| t.max(sent.sent_at));
                self.heartbeat.last_success_sent_at = Some(basis);
                match error {
                    None => self.settled_at(sent.sent_at),
                    Some(_) => {
                        let latest = self
                            .heartbeat
                            .last_preparing_sent_at
                            .map_or(sent.sent_at, |t| t.max(sent.sent_at));
                        self.heartbeat.last_preparing_sent_at = Some(latest);
                    }
                }
            }
            if error.is_some() && same_generation && matches!(self.phase, Phase::Stable { .. }) {
                self.rejoin(
                    now,
                    "the group is rebalancing (heartbeat: REBALANCE_IN_PROGRESS)".to_owned(),
                );
            }
            return;
        }
        let Some(error) = error else { return };
        self.metrics.heartbeats_failed += 1;
        match action_for(Api::Heartbeat, error) {
            ErrorAction::RediscoverCoordinator => self.mark_coordinator_unknown(),
            ErrorAction::ResetGenerationAndRejoin | ErrorAction::ResetMemberIdAndRejoin => {
                if !same_generation {
                    debug!(%error, "heartbeat error for an earlier generation ignored");
                    return;
                }
                if error == ResponseError::IllegalGeneration
                    && matches!(self.phase, Phase::Joining { .. })
                {
                    // The broker formed a newer generation while this member's JoinGroup is in
                    // flight: the join answers whether the member is in it (a member really
                    // dropped gets UNKNOWN_MEMBER_ID). Stop heartbeating the old generation and
                    // keep its work until the join completes or the lease runs out, as Kafka's
                    // heartbeat thread stays quiet while a rebalance is being prepared.
                    debug!("heartbeat: a newer generation formed while joining; awaiting the join");
                    self.heartbeat.superseded = true;
                    return;
                }
                let member_id = match error {
                    ResponseError::IllegalGeneration => self.member_id().to_owned(),
                    _ => String::new(),
                };
                let generation = self.generation().cloned();
                self.lose(
                    generation,
                    LostReason::Reset {
                        api: Api::Heartbeat,
                        error: error.into(),
                    },
                );
                // A join in flight stays in flight (its generation is new); otherwise rejoin.
                if !self.drop_held_generation_of_join(Some(member_id.clone())) {
                    let reason = format!("heartbeat failed: {error}");
                    self.enter_unjoined(now, member_id, None, reason, None, 0);
                }
            }
            ErrorAction::Fatal(e) => self.fail(e),
            action => {
                self.heartbeat.failures += 1;
                let backoff = self
                    .backoff(RetryBackoff::Exponential, self.heartbeat.failures)
                    .min(self.config.heartbeat_interval);
                if !matches!(action, ErrorAction::Retry(_)) {
                    warn!(?action, %error, "unexpected heartbeat action; retrying");
                }
                self.heartbeat.next_at = Some(now + backoff);
            }
        }
    }

    fn on_leave_group(&mut self, tag: RequestTag, r: LeaveGroupResponse) {
        if !matches!(self.phase, Phase::Leaving { tag: Some(t), .. } if t == tag) {
            return;
        }
        let error = r
            .error_code
            .err()
            .or_else(|| r.members.iter().find_map(|m| m.error_code.err()));
        if let Some(error) = error {
            // Kafka only logs LeaveGroup errors: the member is gone either way.
            debug!(%error, action = ?action_for(Api::LeaveGroup, error), "LeaveGroup failed");
        }
        self.phase = Phase::Left;
        self.events.push_back(MemberEvent::Left);
    }
}
