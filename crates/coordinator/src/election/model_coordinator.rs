//! A small model of Kafka's classic group coordinator (join barrier, leader's SyncGroup,
//! heartbeats, session expiry) for tests on virtual time: the election simulation drives
//! `Membership`s against it directly, the driver tests through a fake transport.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse, join_group_response::JoinGroupResponseMember,
};
use kafka_protocol::protocol::StrBytes;

use super::{ELECTION_PROTOCOL_NAME, ELECTION_PROTOCOL_TYPE};
use crate::membership::{Outgoing, Request, RequestTag, Response};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

pub(crate) const SESSION: Duration = Duration::from_secs(6);
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);
pub(crate) const REBALANCE: Duration = Duration::from_secs(6);

#[derive(Debug)]
pub(crate) struct BrokerMember {
    owner: usize,
    metadata: Bytes,
    last_seen: Instant,
    awaiting_join: Option<RequestTag>,
    awaiting_sync: Option<RequestTag>,
}

#[derive(Debug, PartialEq)]
enum GroupState {
    Empty,
    Preparing { deadline: Instant },
    Completing,
    Stable,
}

/// Kafka's classic group coordinator, reduced to what these tests need.
pub(crate) struct Broker {
    state: GroupState,
    generation: i32,
    leader: Option<String>,
    pub(crate) members: BTreeMap<String, BrokerMember>,
    assignments: BTreeMap<String, Bytes>,
    next_id: u32,
    /// Responses to deliver: (member index, tag, response).
    pub(crate) out: VecDeque<(usize, RequestTag, Response)>,
}

impl Broker {
    pub(crate) fn new() -> Self {
        Self {
            state: GroupState::Empty,
            generation: 0,
            leader: None,
            members: BTreeMap::new(),
            assignments: BTreeMap::new(),
            next_id: 0,
            out: VecDeque::new(),
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let sessions = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.last_seen + SESSION);
        let preparing = match self.state {
            GroupState::Preparing { deadline } => Some(deadline),
            _ => None,
        };
        sessions.chain(preparing).min()
    }

    pub(crate) fn tick(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.awaiting_join.is_none() && m.last_seen + SESSION <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.members.remove(&id);
            self.prepare(now);
        }
        if let GroupState::Preparing { deadline } = self.state {
            if now >= deadline {
                self.members.retain(|_, m| m.awaiting_join.is_some());
            }
            self.maybe_complete_join(now);
        }
    }

    fn prepare(&mut self, now: Instant) {
        if !matches!(self.state, GroupState::Preparing { .. }) {
            // Followers waiting in SyncGroup learn of the new rebalance.
            for m in self.members.values_mut() {
                if let Some(tag) = m.awaiting_sync.take() {
                    let r = SyncGroupResponse::default()
                        .with_error_code(ResponseError::RebalanceInProgress.code());
                    self.out.push_back((m.owner, tag, Response::SyncGroup(r)));
                }
            }
            self.state = GroupState::Preparing {
                deadline: now + REBALANCE,
            };
        }
        if self.members.is_empty() {
            self.state = GroupState::Empty;
        }
    }

    fn maybe_complete_join(&mut self, now: Instant) {
        if !matches!(self.state, GroupState::Preparing { .. })
            || self.members.is_empty()
            || self.members.values().any(|m| m.awaiting_join.is_none())
        {
            return;
        }
        self.generation += 1;
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        let leader = self.leader.clone().unwrap_or_default();
        let all: Vec<JoinGroupResponseMember> = self
            .members
            .iter()
            .map(|(id, m)| {
                JoinGroupResponseMember::default()
                    .with_member_id(sb(id))
                    .with_metadata(m.metadata.clone())
            })
            .collect();
        for (id, m) in &mut self.members {
            m.last_seen = now;
            let Some(tag) = m.awaiting_join.take() else {
                continue;
            };
            let mut r = JoinGroupResponse::default()
                .with_generation_id(self.generation)
                .with_protocol_type(Some(sb(ELECTION_PROTOCOL_TYPE)))
                .with_protocol_name(Some(sb(ELECTION_PROTOCOL_NAME)))
                .with_leader(sb(&leader))
                .with_member_id(sb(id));
            if *id == leader {
                r = r.with_members(all.clone());
            }
            self.out.push_back((m.owner, tag, Response::JoinGroup(r)));
        }
        self.state = GroupState::Completing;
    }

    pub(crate) fn handle(&mut self, now: Instant, owner: usize, out: &Outgoing) {
        let tag = out.tag;
        let error = |e: ResponseError| e.code();
        match &out.request {
            Request::FindCoordinator(_) => {
                let r = FindCoordinatorResponse::default()
                    .with_node_id(BrokerId(1))
                    .with_host(sb("sim"))
                    .with_port(1);
                self.out
                    .push_back((owner, tag, Response::FindCoordinator(r)));
            }
            Request::JoinGroup(j) => {
                let member_id = j.member_id.to_string();
                if member_id.is_empty() {
                    self.next_id += 1;
                    let id = format!("member-{}-{}", self.next_id, owner);
                    let r = JoinGroupResponse::default()
                        .with_error_code(error(ResponseError::MemberIdRequired))
                        .with_member_id(sb(&id));
                    self.members.insert(
                        id,
                        BrokerMember {
                            owner,
                            metadata: Bytes::new(),
                            last_seen: now,
                            awaiting_join: None,
                            awaiting_sync: None,
                        },
                    );
                    self.out.push_back((owner, tag, Response::JoinGroup(r)));
                    return;
                }
                let Some(m) = self.members.get_mut(&member_id) else {
                    let r = JoinGroupResponse::default()
                        .with_error_code(error(ResponseError::UnknownMemberId));
                    self.out.push_back((owner, tag, Response::JoinGroup(r)));
                    return;
                };
                m.metadata = j.protocols[0].metadata.clone();
                m.awaiting_join = Some(tag);
                m.last_seen = now;
                self.prepare(now);
                self.maybe_complete_join(now);
            }
            Request::SyncGroup(s) => {
                let id = s.member_id.to_string();
                let code = match self.members.get(&id) {
                    None => Some(ResponseError::UnknownMemberId),
                    Some(_) if matches!(self.state, GroupState::Preparing { .. }) => {
                        Some(ResponseError::RebalanceInProgress)
                    }
                    Some(_) if s.generation_id != self.generation => {
                        Some(ResponseError::IllegalGeneration)
                    }
                    Some(_) => None,
                };
                if let Some(code) = code {
                    let r = SyncGroupResponse::default().with_error_code(code.code());
                    self.out.push_back((owner, tag, Response::SyncGroup(r)));
                    return;
                }
                if let Some(m) = self.members.get_mut(&id) {
                    m.awaiting_sync = Some(tag);
                    m.last_seen = now;
                }
                if self.state == GroupState::Completing && self.leader.as_deref() == Some(&id) {
                    self.assignments = s
                        .assignments
                        .iter()
                        .map(|a| (a.member_id.to_string(), a.assignment.clone()))
                        .collect();
                    self.state = GroupState::Stable;
                }
                if self.state == GroupState::Stable {
                    for (id, m) in &mut self.members {
                        if let Some(tag) = m.awaiting_sync.take() {
                            m.last_seen = now;
                            let a = self.assignments.get(id).cloned().unwrap_or_default();
                            let r = SyncGroupResponse::default().with_assignment(a);
                            self.out.push_back((m.owner, tag, Response::SyncGroup(r)));
                        }
                    }
                }
            }
            Request::Heartbeat(h) => {
                let id = h.member_id.to_string();
                let code = match self.members.get_mut(&id) {
                    None => ResponseError::UnknownMemberId.code(),
                    Some(_) if h.generation_id != self.generation => {
                        ResponseError::IllegalGeneration.code()
                    }
                    Some(m) => {
                        m.last_seen = now;
                        match self.state {
                            GroupState::Preparing { .. } => {
                                ResponseError::RebalanceInProgress.code()
                            }
                            _ => 0,
                        }
                    }
                };
                let r = HeartbeatResponse::default().with_error_code(code);
                self.out.push_back((owner, tag, Response::Heartbeat(r)));
            }
            Request::LeaveGroup(l) => {
                if self.members.remove(&l.member_id).is_some() {
                    self.prepare(now);
                    self.maybe_complete_join(now);
                }
                let r = LeaveGroupResponse::default();
                self.out.push_back((owner, tag, Response::LeaveGroup(r)));
            }
        }
    }
}
