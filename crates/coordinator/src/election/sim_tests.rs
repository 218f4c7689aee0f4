//! Whole groups on virtual time: several `Membership`s with `LeaderElection` against a small
//! in-test model of Kafka's classic group coordinator (join barrier, leader's SyncGroup,
//! heartbeats, session expiry). It checks that leadership is unique at every instant, sticky,
//! and moves after a partition only once the old leader has fenced itself.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse, join_group_response::JoinGroupResponseMember,
};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::membership::{
    Event, GroupProtocol, Membership, MembershipConfig, Outgoing, Request, RequestTag, Response,
};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

const SESSION: Duration = Duration::from_secs(6);
const HEARTBEAT: Duration = Duration::from_secs(1);
const REBALANCE: Duration = Duration::from_secs(6);

#[derive(Debug)]
struct BrokerMember {
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
struct Broker {
    state: GroupState,
    generation: i32,
    leader: Option<String>,
    members: BTreeMap<String, BrokerMember>,
    assignments: BTreeMap<String, Bytes>,
    next_id: u32,
    /// Responses to deliver: (member index, tag, response).
    out: VecDeque<(usize, RequestTag, Response)>,
}

impl Broker {
    fn new() -> Self {
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

    fn next_deadline(&self) -> Option<Instant> {
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

    fn tick(&mut self, now: Instant) {
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

    fn handle(&mut self, now: Instant, owner: usize, out: &Outgoing) {
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

struct SimMember {
    membership: Membership,
    election: Arc<LeaderElection>,
    /// Requests are dropped (a network partition); they fail after their timeout.
    partitioned: bool,
    /// The process is gone: no inputs, no outputs.
    dead: bool,
    failures: Vec<(Instant, RequestTag)>,
}

/// Who led when: (member index, from, until). `until` is the member's own `Lost` or, for a
/// member still leading, `None`.
type Reign = (usize, Instant, Option<Instant>);

struct Sim {
    base: Instant,
    now: Instant,
    broker: Broker,
    members: Vec<SimMember>,
    reigns: Vec<Reign>,
}

impl Sim {
    fn new(ids: &[(&str, bool)]) -> Self {
        let base = Instant::now();
        let members = ids
            .iter()
            .map(|(id, eligible)| {
                let election = Arc::new(LeaderElection::new(*id, *eligible));
                let mut config = MembershipConfig::new("election");
                config.session_timeout = SESSION;
                config.heartbeat_interval = HEARTBEAT;
                config.rebalance_timeout = REBALANCE;
                config.min_session_timeout = Duration::from_secs(1);
                let membership =
                    Membership::new(config, election.protocol_type(), election.protocols())
                        .expect("valid config");
                SimMember {
                    membership,
                    election,
                    partitioned: false,
                    dead: false,
                    failures: Vec::new(),
                }
            })
            .collect();
        Self {
            base,
            now: base,
            broker: Broker::new(),
            members,
            reigns: Vec::new(),
        }
    }

    /// One round at `self.now`: deliver, poll, react, until nothing moves.
    fn settle(&mut self) {
        for _ in 0..1000 {
            let mut moved = false;
            self.broker.tick(self.now);
            while let Some((i, tag, response)) = self.broker.out.pop_front() {
                let m = &mut self.members[i];
                if !m.dead && !m.partitioned {
                    m.membership.handle_response(self.now, tag, response);
                    moved = true;
                }
            }
            for i in 0..self.members.len() {
                moved |= self.drive(i);
            }
            if !moved && self.broker.out.is_empty() {
                return;
            }
        }
        panic!("the simulation does not settle");
    }

    /// The driver's loop for one member.
    fn drive(&mut self, i: usize) -> bool {
        let now = self.now;
        let m = &mut self.members[i];
        if m.dead {
            return false;
        }
        let mut moved = false;
        m.membership.handle_timeout(now);
        let due: Vec<RequestTag> = m
            .failures
            .iter()
            .filter(|(at, _)| *at <= now)
            .map(|(_, tag)| *tag)
            .collect();
        m.failures.retain(|(at, _)| *at > now);
        for tag in due {
            m.membership.handle_request_failed(now, tag);
            moved = true;
        }
        while let Some(out) = m.membership.poll_request(now) {
            moved = true;
            if m.partitioned {
                m.failures.push((now + out.timeout, out.tag));
            } else {
                self.broker.handle(now, i, &out);
            }
        }
        let m = &mut self.members[i];
        while let Some(event) = m.membership.poll_event() {
            moved = true;
            match event {
                Event::AssignmentRequested {
                    generation_id,
                    protocol_name,
                    members,
                } => {
                    // In the tokio driver this runs off the heartbeat path.
                    let assignments = m
                        .election
                        .assign(&protocol_name, &members)
                        .expect("election assigns");
                    m.membership
                        .set_assignment(generation_id, assignments)
                        .expect("current generation");
                }
                Event::Assigned {
                    generation,
                    assignment,
                } => {
                    m.election.on_assigned(&generation, &assignment);
                    m.membership
                        .set_metadata(m.election.protocols())
                        .expect("valid metadata");
                }
                Event::Revoked { generation, .. } => m.election.on_revoked(&generation),
                Event::Lost { generation, reason } => {
                    m.election.on_lost(generation.as_ref(), &reason)
                }
                _ => {}
            }
        }
        while let Some(event) = m.election.poll_event() {
            match event {
                ElectionEvent::Leader { .. } => {
                    let open = self.reigns.iter().any(|r| r.0 == i && r.2.is_none());
                    if !open {
                        self.reigns.push((i, now, None));
                    }
                }
                ElectionEvent::Follower { .. } | ElectionEvent::Lost { .. } => {
                    for r in self.reigns.iter_mut().filter(|r| r.0 == i && r.2.is_none()) {
                        r.2 = Some(now);
                    }
                }
            }
        }
        moved
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let members = self.members.iter().filter(|m| !m.dead).flat_map(|m| {
            m.membership
                .poll_timeout()
                .into_iter()
                .chain(m.failures.iter().map(|(at, _)| *at))
        });
        members
            .chain(self.broker.next_deadline())
            .filter(|t| *t > self.now)
            .min()
    }

    fn run_until(&mut self, offset: Duration) {
        let end = self.base + offset;
        self.settle();
        while let Some(next) = self.next_wakeup() {
            if next > end {
                break;
            }
            self.now = next;
            self.settle();
        }
        self.now = end;
        self.settle();
    }

    fn leader_now(&self) -> Option<usize> {
        let open: Vec<usize> = self
            .reigns
            .iter()
            .filter(|r| r.2.is_none())
            .map(|r| r.0)
            .collect();
        assert!(open.len() <= 1, "two leaders at once: {:?}", self.reigns);
        open.first().copied()
    }

    /// No two reigns overlap in time.
    fn assert_never_two_leaders(&self) {
        for (k, a) in self.reigns.iter().enumerate() {
            for b in &self.reigns[k + 1..] {
                let a_end = a.2.unwrap_or(Instant::now() + Duration::from_secs(86_400));
                let b_end = b.2.unwrap_or(Instant::now() + Duration::from_secs(86_400));
                assert!(
                    a_end <= b.1 || b_end <= a.1,
                    "overlapping leaders: {a:?} and {b:?}"
                );
            }
        }
    }
}

#[test]
fn three_members_elect_exactly_one_leader() {
    let mut sim = Sim::new(&[("b", true), ("a", true), ("c", false)]);
    sim.run_until(Duration::from_secs(10));
    let leader = sim.leader_now().expect("a leader");
    assert_eq!(sim.members[leader].election.id(), "a", "lowest eligible id");
    for m in &sim.members {
        assert_eq!(m.membership.state(), crate::membership::MemberState::Stable);
    }
    sim.assert_never_two_leaders();
}

#[test]
fn leadership_is_sticky_when_a_lower_id_joins() {
    let mut sim = Sim::new(&[("m", true), ("z", true), ("a", true)]);
    sim.members[2].dead = true; // "a" starts later
    sim.run_until(Duration::from_secs(10));
    let first = sim.leader_now().expect("a leader");
    assert_eq!(sim.members[first].election.id(), "m");
    sim.members[2].dead = false;
    sim.run_until(Duration::from_secs(30));
    assert_eq!(sim.leader_now(), Some(first), "the leader keeps leading");
    assert_eq!(
        sim.members[2].membership.state(),
        crate::membership::MemberState::Stable
    );
    assert_eq!(sim.reigns.len(), 1);
}

#[test]
fn a_partitioned_leader_fences_itself_before_another_leads() {
    let mut sim = Sim::new(&[("a", true), ("b", true), ("c", true)]);
    sim.run_until(Duration::from_secs(10));
    let old = sim.leader_now().expect("a leader");
    let cut_at = sim.now;
    sim.members[old].partitioned = true;
    sim.run_until(Duration::from_secs(40));
    let new = sim.leader_now().expect("a new leader");
    assert_ne!(new, old);
    sim.assert_never_two_leaders();
    let old_end = sim.reigns.iter().find(|r| r.0 == old).and_then(|r| r.2);
    let new_start = sim.reigns.iter().find(|r| r.0 == new).map(|r| r.1);
    let (old_end, new_start) = (old_end.expect("old leader lost"), new_start.expect("new"));
    assert!(
        old_end <= new_start,
        "fenced at {old_end:?}, new leader at {new_start:?}"
    );
    // The new leader is elected within session timeout + 2 heartbeat intervals of the cut.
    assert!(
        new_start - cut_at <= SESSION + 2 * HEARTBEAT,
        "took {:?}",
        new_start - cut_at
    );
}

#[test]
fn a_leader_that_leaves_hands_over_at_once() {
    let mut sim = Sim::new(&[("a", true), ("b", true)]);
    sim.run_until(Duration::from_secs(10));
    let old = sim.leader_now().expect("a leader");
    let now = sim.now;
    // The worker stops its work, then leaves.
    sim.members[old].election.on_lost(
        None,
        &crate::membership::LostReason::HeartbeatTimeout { deadline: now },
    );
    sim.members[old].membership.leave(now, "shutdown");
    sim.settle();
    let left_at = sim.now;
    sim.members[old].dead = true;
    sim.run_until(Duration::from_secs(12));
    let new = sim.leader_now().expect("a new leader");
    assert_ne!(new, old);
    let new_start = sim
        .reigns
        .iter()
        .find(|r| r.0 == new)
        .map(|r| r.1)
        .expect("new");
    assert!(
        new_start - left_at < HEARTBEAT * 2,
        "took {:?}",
        new_start - left_at
    );
    sim.assert_never_two_leaders();
}
