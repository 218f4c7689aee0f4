//! The membership state machine: its states, commands and outputs. Response handling is in
//! `handle.rs`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, SyncGroupRequest,
    join_group_request::JoinGroupRequestProtocol, sync_group_request::SyncGroupRequestAssignment,
};
use thiserror::Error;
use tracing::warn;

use super::action::{FatalError, RetryBackoff};
use super::config::{ConfigError, Fault, MembershipConfig};
use super::event::{AssignmentRequest, Coordinator, Generation, Lease, MemberEvent, Metrics};
pub(crate) use super::heartbeat::{HeartbeatInFlight, HeartbeatState, JoinGate};
use super::io::{
    FindCoordinator, LeaveGroup, Outgoing, Request, RequestTag, str_bytes, truncate_reason,
};
use super::protocol::{MemberAssignment, ProtocolMetadata};

/// The state of a member, in the words of Kafka's `AbstractCoordinator` (see the module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// Not in a join; waiting for a backoff before JoinGroup.
    Unjoined,
    /// Waiting for the coordinator's address before JoinGroup.
    FindingCoordinator,
    /// JoinGroup in flight (Kafka's PREPARING_REBALANCE).
    Joining,
    /// Leader: waiting for the assignment computed outside (COMPLETING_REBALANCE).
    AwaitingAssignment,
    /// SyncGroup pending or in flight (COMPLETING_REBALANCE).
    Syncing,
    /// Assignment received; heartbeating (STABLE).
    Stable,
    /// LeaveGroup pending or in flight.
    Leaving,
    /// Left the group; terminal until `Membership::request_rejoin`.
    Left,
    /// Stopped on a fatal error; terminal.
    Fatal,
}

/// A command that does not fit the member's current state.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub(crate) enum CommandError {
    /// The assignment is for a generation this member no longer awaits an assignment for
    /// (a rebalance or a reset overtook it): drop it; a new request will come if needed.
    #[error(
        "stale assignment for generation {generation_id}: the member moved on; drop it and wait for the next AssignmentRequested"
    )]
    StaleAssignment {
        /// The generation the assignment was computed for.
        generation_id: i32,
    },
}

#[derive(Debug)]
pub(crate) enum CoordinatorState {
    Unknown {
        retry_at: Option<Instant>,
        attempts: u32,
    },
    Finding {
        tag: RequestTag,
        attempts: u32,
    },
    Known(Coordinator),
}

#[derive(Debug)]
pub(crate) enum SyncRequest {
    Pending {
        retry_at: Option<Instant>,
        attempts: u32,
    },
    InFlight {
        tag: RequestTag,
        sent_at: Instant,
        attempts: u32,
    },
}

/// The member's phase; each carries its own data. A [`Generation`] always holds a member id.
#[derive(Debug)]
pub(crate) enum Phase {
    /// Will send JoinGroup once the coordinator is known and `retry_at` passed. `held` is the
    /// generation the member still holds while it rejoins (heartbeats continue for it).
    Unjoined {
        member_id: String,
        held: Option<Generation>,
        reason: String,
        retry_at: Option<Instant>,
        attempts: u32,
    },
    Joining {
        member_id: String,
        held: Option<Generation>,
        reason: String,
        tag: RequestTag,
        sent_at: Instant,
        attempts: u32,
    },
    AwaitingAssignment {
        generation: Generation,
    },
    Syncing {
        generation: Generation,
        assignments: Vec<MemberAssignment>,
        request: SyncRequest,
    },
    Stable {
        generation: Generation,
        assignment: Bytes,
    },
    Leaving {
        leave: LeaveGroup,
        tag: Option<RequestTag>,
    },
    Left,
    Fatal(FatalError),
}

/// The sans-IO group member. See the [module guide](super) for the protocol and the loop.
#[derive(Debug)]
pub(crate) struct Membership {
    pub(crate) config: MembershipConfig,
    pub(crate) protocol_type: String,
    pub(crate) protocols: Vec<ProtocolMetadata>,
    pub(crate) coordinator: CoordinatorState,
    pub(crate) phase: Phase,
    pub(crate) heartbeat: HeartbeatState,
    pub(crate) pending_rejoin: Option<String>,
    /// Set while an unacknowledged revocation holds the next JoinGroup (only in `Unjoined`
    /// with a held generation; cleared when the JoinGroup goes out or the generation is lost).
    pub(crate) join_gate: Option<JoinGate>,
    pub(crate) rebalance_started_at: Option<Instant>,
    pub(crate) next_tag: u64,
    pub(crate) events: VecDeque<MemberEvent>,
    /// The assignment this member must compute as leader, for the driver to take.
    pub(crate) assignment_request: Option<AssignmentRequest>,
    pub(crate) metrics: Metrics,
}

pub(crate) fn validate_protocols(
    protocol_type: &str,
    protocols: &[ProtocolMetadata],
) -> Result<(), ConfigError> {
    if protocol_type.is_empty() {
        return Err(Fault::EmptyProtocolType.into());
    }
    if protocols.is_empty() {
        return Err(Fault::InvalidProtocols("no protocol offered").into());
    }
    for (i, p) in protocols.iter().enumerate() {
        if p.name.is_empty() {
            return Err(Fault::InvalidProtocols("empty protocol name").into());
        }
        if protocols[..i].iter().any(|q| q.name == p.name) {
            return Err(Fault::InvalidProtocols("protocol offered twice").into());
        }
    }
    Ok(())
}

impl Membership {
    /// A new member that will find the coordinator and join at the first
    /// [`poll_request`](Self::poll_request). Fails if the configuration or protocols are invalid.
    pub(crate) fn new(
        config: MembershipConfig,
        protocol_type: impl Into<String>,
        protocols: Vec<ProtocolMetadata>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let protocol_type = protocol_type.into();
        validate_protocols(&protocol_type, &protocols)?;
        Ok(Self {
            config,
            protocol_type,
            protocols,
            coordinator: CoordinatorState::Unknown {
                retry_at: None,
                attempts: 0,
            },
            phase: Phase::Unjoined {
                member_id: String::new(),
                held: None,
                reason: "member started".to_owned(),
                retry_at: None,
                attempts: 0,
            },
            heartbeat: HeartbeatState::default(),
            pending_rejoin: None,
            join_gate: None,
            rebalance_started_at: None,
            next_tag: 0,
            events: VecDeque::new(),
            assignment_request: None,
            metrics: Metrics::default(),
        })
    }

    // ----- (A) getters -----

    /// The configuration.
    pub(crate) fn config(&self) -> &MembershipConfig {
        &self.config
    }

    /// The current state.
    pub(crate) fn state(&self) -> MemberState {
        match &self.phase {
            Phase::Unjoined { .. } if !matches!(self.coordinator, CoordinatorState::Known(_)) => {
                MemberState::FindingCoordinator
            }
            Phase::Unjoined { .. } => MemberState::Unjoined,
            Phase::Joining { .. } => MemberState::Joining,
            Phase::AwaitingAssignment { .. } => MemberState::AwaitingAssignment,
            Phase::Syncing { .. } => MemberState::Syncing,
            Phase::Stable { .. } => MemberState::Stable,
            Phase::Leaving { .. } => MemberState::Leaving,
            Phase::Left => MemberState::Left,
            Phase::Fatal(_) => MemberState::Fatal,
        }
    }

    /// The generation this member is in (also while it rejoins, until the new one forms).
    pub(crate) fn generation(&self) -> Option<&Generation> {
        match &self.phase {
            Phase::Unjoined { held, .. } | Phase::Joining { held, .. } => held.as_ref(),
            Phase::AwaitingAssignment { generation }
            | Phase::Syncing { generation, .. }
            | Phase::Stable { generation, .. } => Some(generation),
            Phase::Leaving { .. } | Phase::Left | Phase::Fatal(_) => None,
        }
    }

    /// This member's id (empty before the coordinator gave one).
    pub(crate) fn member_id(&self) -> &str {
        match &self.phase {
            Phase::Unjoined { member_id, .. } | Phase::Joining { member_id, .. } => member_id,
            Phase::AwaitingAssignment { generation }
            | Phase::Syncing { generation, .. }
            | Phase::Stable { generation, .. } => &generation.member_id,
            Phase::Leaving { leave, .. } => &leave.member_id,
            Phase::Left | Phase::Fatal(_) => "",
        }
    }

    /// The assignment of the stable generation.
    pub(crate) fn assignment(&self) -> Option<&Bytes> {
        match &self.phase {
            Phase::Stable { assignment, .. } => Some(assignment),
            _ => None,
        }
    }

    /// The coordinator, if known.
    pub(crate) fn coordinator(&self) -> Option<&Coordinator> {
        match &self.coordinator {
            CoordinatorState::Known(c) => Some(c),
            _ => None,
        }
    }

    /// The fatal error that stopped the member.
    pub(crate) fn fatal_error(&self) -> Option<&FatalError> {
        match &self.phase {
            Phase::Fatal(e) => Some(e),
            _ => None,
        }
    }

    /// The self-fencing deadline: the send time of the last success in this generation plus
    /// the session timeout minus the margin. `None` without a generation.
    pub(crate) fn fence_deadline(&self) -> Option<Instant> {
        self.generation()?;
        let basis = self.heartbeat.last_success_sent_at?;
        let session =
            basis + self.config.session_timeout - self.config.effective_self_fence_margin();
        Some(
            self.removal_bound()
                .map_or(session, |bound| bound.min(session)),
        )
    }

    /// The fencing token of the current generation, with its deadline.
    pub(crate) fn lease(&self) -> Option<Lease> {
        Some(Lease {
            token: self.generation()?.token(),
            valid_until: self.fence_deadline()?,
        })
    }

    #[cfg(test)]
    /// Whether `token` is the current generation's and the deadline has not passed at `now`.
    pub(crate) fn is_token_valid(&self, token: &super::FencingToken, now: Instant) -> bool {
        self.lease()
            .is_some_and(|lease| &lease.token == token && lease.is_valid(now))
    }

    /// While the join gate holds the JoinGroup: the generation whose revocation must be
    /// acknowledged with [`revocation_done`](Self::revocation_done), and the instant at which
    /// the member rejoins without the acknowledgement.
    pub(crate) fn join_held(&self) -> Option<(i32, Instant)> {
        self.join_gate.map(|g| (g.generation_id, g.until))
    }

    /// The metrics.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    // ----- (D) outputs -----

    /// The next event, if any.
    #[must_use]
    pub(crate) fn poll_event(&mut self) -> Option<MemberEvent> {
        self.events.pop_front()
    }

    /// The assignment this member must compute as the leader of a generation, if it must:
    /// the driver runs the protocol's `assign` off the heartbeat path and hands the result to
    /// [`set_assignment`](Self::set_assignment). A newer request replaces an older one.
    #[must_use]
    pub(crate) fn poll_assignment_request(&mut self) -> Option<AssignmentRequest> {
        self.assignment_request.take()
    }

    /// Whether an event waits for [`poll_event`](Self::poll_event) (or an assignment request
    /// for [`poll_assignment_request`](Self::poll_assignment_request)).
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty() || self.assignment_request.is_some()
    }

    /// The next request to send at `now`, if any. Call until `None` after every input; `now`
    /// becomes the request's send time (which self-fencing measures from).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn poll_request(&mut self, now: Instant) -> Option<Outgoing> {
        self.poll_request_with(now, || None)
    }

    /// [`poll_request`](Self::poll_request), reading this member's protocol metadata from
    /// `fresh` right before a JoinGroup is built, so every JoinGroup carries the metadata of
    /// that moment (Kafka reads `metadata()` in `sendJoinGroupRequest` the same way). `fresh`
    /// is called only when a JoinGroup goes out; `None`, or metadata that does not validate
    /// (logged), keeps the last metadata.
    #[must_use]
    pub(crate) fn poll_request_with(
        &mut self,
        now: Instant,
        fresh: impl FnOnce() -> Option<Vec<ProtocolMetadata>>,
    ) -> Option<Outgoing> {
        self.check_fence(now);
        if matches!(self.phase, Phase::Left | Phase::Fatal(_)) {
            return None;
        }
        match &self.coordinator {
            CoordinatorState::Unknown { retry_at, attempts } => {
                if matches!(self.phase, Phase::Leaving { .. }) || retry_at.is_some_and(|t| t > now)
                {
                    return None;
                }
                let attempts = *attempts;
                let tag = self.tag();
                self.coordinator = CoordinatorState::Finding { tag, attempts };
                return Some(Outgoing {
                    tag,
                    timeout: self.config.request_timeout,
                    request: Request::FindCoordinator(FindCoordinator {
                        group_id: self.config.group_id.clone(),
                    }),
                });
            }
            CoordinatorState::Finding { .. } => return None,
            CoordinatorState::Known(_) => {}
        }
        if let Some(out) = self.poll_heartbeat(now) {
            return Some(out);
        }
        self.poll_group_request(now, fresh)
    }

    /// The next instant at which [`handle_timeout`](Self::handle_timeout) (and then
    /// [`poll_request`](Self::poll_request)) has work; `None` if nothing is scheduled.
    #[must_use]
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Left | Phase::Fatal(_)) {
            return None;
        }
        let mut next = self.fence_deadline();
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        match &self.coordinator {
            CoordinatorState::Unknown { retry_at, .. } => consider(*retry_at),
            CoordinatorState::Finding { .. } => {}
            CoordinatorState::Known(_) => {
                if self.heartbeat_enabled() && self.heartbeat.in_flight.is_none() {
                    consider(self.heartbeat.next_at);
                }
                match &self.phase {
                    Phase::Unjoined { retry_at, .. } => {
                        consider(*retry_at);
                        consider(self.join_gate.map(|g| g.until));
                    }
                    Phase::Syncing {
                        request: SyncRequest::Pending { retry_at, .. },
                        ..
                    } => consider(*retry_at),
                    _ => {}
                }
            }
        }
        next
    }

    // ----- internals shared with handle.rs -----

    pub(crate) fn tag(&mut self) -> RequestTag {
        self.next_tag += 1;
        RequestTag(self.next_tag)
    }

    pub(crate) fn backoff(&self, backoff: RetryBackoff, attempts: u32) -> Duration {
        match backoff {
            RetryBackoff::Fixed => self.config.retry_backoff,
            // Attempts count from 1 here, from 0 in the backoff.
            RetryBackoff::Exponential => crate::backoff::base_delay(
                self.config.retry_backoff,
                self.config.retry_backoff_max,
                attempts.saturating_sub(1),
            ),
        }
    }

    fn heartbeat_enabled(&self) -> bool {
        self.generation().is_some() && !self.heartbeat.superseded
    }

    fn poll_heartbeat(&mut self, now: Instant) -> Option<Outgoing> {
        if !self.heartbeat_enabled()
            || self.heartbeat.in_flight.is_some()
            || self.heartbeat.next_at.is_none_or(|t| t > now)
        {
            return None;
        }
        let generation = self.generation()?.clone();
        let tag = self.tag();
        self.heartbeat.in_flight = Some(HeartbeatInFlight {
            tag,
            sent_at: now,
            generation_id: generation.generation_id,
        });
        self.heartbeat.next_at = Some(now + self.config.heartbeat_interval);
        self.metrics.heartbeats_sent += 1;
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes(&self.config.group_id)))
            .with_generation_id(generation.generation_id)
            .with_member_id(str_bytes(&generation.member_id))
            .with_group_instance_id(self.config.group_instance_id.as_deref().map(str_bytes));
        Some(Outgoing {
            tag,
            timeout: self.config.heartbeat_timeout(),
            request: Request::Heartbeat(request),
        })
    }

    fn poll_group_request(
        &mut self,
        now: Instant,
        fresh: impl FnOnce() -> Option<Vec<ProtocolMetadata>>,
    ) -> Option<Outgoing> {
        let tag = RequestTag(self.next_tag + 1);
        let config = &self.config;
        let (request, timeout) = match &mut self.phase {
            Phase::Unjoined {
                member_id,
                held,
                reason,
                retry_at,
                attempts,
            } => {
                if retry_at.is_some_and(|t| t > now) {
                    return None;
                }
                if let Some(gate) = self.join_gate {
                    if gate.until > now {
                        return None;
                    }
                    warn!(
                        group = %config.group_id,
                        generation = gate.generation_id,
                        "the revocation was not acknowledged within rebalance_timeout − margin; \
                         rejoining anyway so the broker does not drop this member"
                    );
                }
                self.join_gate = None;
                if let Some(protocols) = fresh() {
                    match validate_protocols(&self.protocol_type, &protocols) {
                        Ok(()) => self.protocols = protocols,
                        Err(error) => warn!(
                            %error,
                            "the protocol's metadata is invalid; this JoinGroup keeps the last one"
                        ),
                    }
                }
                let request = JoinGroupRequest::default()
                    .with_group_id(GroupId(str_bytes(&config.group_id)))
                    .with_session_timeout_ms(millis(config.session_timeout))
                    .with_rebalance_timeout_ms(millis(config.rebalance_timeout))
                    .with_member_id(str_bytes(member_id))
                    .with_group_instance_id(config.group_instance_id.as_deref().map(str_bytes))
                    .with_protocol_type(str_bytes(&self.protocol_type))
                    .with_protocols(
                        self.protocols
                            .iter()
                            .map(|p| {
                                JoinGroupRequestProtocol::default()
                                    .with_name(str_bytes(&p.name))
                                    .with_metadata(p.metadata.clone())
                            })
                            .collect(),
                    )
                    .with_reason(Some(str_bytes(&truncate_reason(reason))));
                self.rebalance_started_at.get_or_insert(now);
                self.phase = Phase::Joining {
                    member_id: std::mem::take(member_id),
                    held: held.take(),
                    reason: std::mem::take(reason),
                    tag,
                    sent_at: now,
                    attempts: *attempts,
                };
                (Request::JoinGroup(request), config.join_group_timeout())
            }
            Phase::Syncing {
                generation,
                assignments,
                request: sync,
            } => {
                let SyncRequest::Pending { retry_at, attempts } = sync else {
                    return None;
                };
                if retry_at.is_some_and(|t| t > now) {
                    return None;
                }
                let request = SyncGroupRequest::default()
                    .with_group_id(GroupId(str_bytes(&config.group_id)))
                    .with_generation_id(generation.generation_id)
                    .with_member_id(str_bytes(&generation.member_id))
                    .with_group_instance_id(config.group_instance_id.as_deref().map(str_bytes))
                    .with_protocol_type(Some(str_bytes(&self.protocol_type)))
                    .with_protocol_name(Some(str_bytes(&generation.protocol_name)))
                    .with_assignments(
                        assignments
                            .iter()
                            .map(|a| {
                                SyncGroupRequestAssignment::default()
                                    .with_member_id(str_bytes(&a.member_id))
                                    .with_assignment(a.assignment.clone())
                            })
                            .collect(),
                    );
                *sync = SyncRequest::InFlight {
                    tag,
                    sent_at: now,
                    attempts: *attempts,
                };
                (Request::SyncGroup(request), config.join_group_timeout())
            }
            Phase::Leaving { leave, tag: sent } => {
                if sent.is_some() {
                    return None;
                }
                *sent = Some(tag);
                (Request::LeaveGroup(leave.clone()), config.request_timeout)
            }
            _ => return None,
        };
        self.next_tag += 1;
        Some(Outgoing {
            tag,
            timeout,
            request,
        })
    }
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
