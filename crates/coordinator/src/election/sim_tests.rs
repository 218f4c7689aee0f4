//! Whole groups on virtual time: several `Membership`s with `LeaderElection` against a small
//! in-test model of Kafka's classic group coordinator (join barrier, leader's SyncGroup,
//! heartbeats, session expiry). It checks that leadership is unique at every instant, sticky,
//! and moves after a partition only once the old leader has fenced itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::model_coordinator::{Broker, HEARTBEAT, REBALANCE, SESSION};
use super::*;
use crate::membership::{GroupProtocol, MemberEvent, Membership, MembershipConfig, RequestTag};

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
        if let Some(request) = m.membership.poll_assignment_request() {
            moved = true;
            // In the tokio driver this runs off the heartbeat path.
            let assignments = m
                .election
                .assign(&request.context, &request.members)
                .expect("election assigns");
            m.membership
                .set_assignment(request.context.generation_id, assignments)
                .expect("current generation");
        }
        while let Some(event) = m.membership.poll_event() {
            moved = true;
            // The election's owner hands it every event of the member's stream.
            m.election.handle_event(&event);
            if matches!(event, MemberEvent::Assigned { .. }) {
                m.membership
                    .set_metadata(m.election.protocols())
                    .expect("valid metadata");
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
    // The member resigns, then leaves.
    sim.members[old].election.resign();
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
