//! Kafka's consumer protocol as a kroupier [`GroupProtocol`]: protocol type `consumer`, one
//! protocol per assignor, a subscription as metadata, the leader's plan as assignments.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;
use kroupier::Events;
use kroupier::failover::Failover;
use kroupier::protocol::{
    AssignContext, AssignError, Generation, GroupMember, GroupProtocol, MemberAssignment,
    MemberEvent, ProtocolMetadata, SharedEvents,
};
use tokio::sync::mpsc;

use super::assignor::{COOPERATIVE_STICKY, MemberSubscription, Plan, RANGE};
use super::wire::{Assignment, Subscription, TopicPartition};
use super::{failover, range, sticky};

/// The protocol type Kafka's consumers use; `kafka-consumer-groups` lists only these groups.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// An assignor a member offers, by its Kafka protocol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Assignor {
    /// `range`: eager; every member drops all its partitions when a rebalance starts.
    Range,
    /// `cooperative-sticky`: members keep their partitions through a rebalance and give up only
    /// those the new assignment leaves out.
    CooperativeSticky,
}

impl Assignor {
    /// Its protocol name.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => RANGE,
            Assignor::CooperativeSticky => COOPERATIVE_STICKY,
        }
    }

    /// The assignor named `name`, if this build has it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            RANGE => Some(Assignor::Range),
            COOPERATIVE_STICKY => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    /// The plan for `members` over the partition `counts`.
    pub fn assign(self, members: &[MemberSubscription], counts: &BTreeMap<String, i32>) -> Plan {
        match self {
            Assignor::Range => range::assign(members, counts),
            Assignor::CooperativeSticky => sticky::assign(members, counts),
        }
    }
}

/// A change of the partitions this member owns, or a new generation that keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The generation the member is in (−1 once it lost or left its generation).
    pub generation: i32,
    /// Whether it leads that generation.
    pub leader: bool,
    /// Every partition it owns now.
    pub partitions: BTreeSet<TopicPartition>,
    /// What it just gave up. Under a cooperative protocol a non-empty set after an
    /// assignment means the member must rejoin, so that the partitions can move.
    pub revoked: BTreeSet<TopicPartition>,
    /// Set when the leader's assignment did not decode (the member then owns nothing).
    pub error: Option<String>,
    /// When the change happened, in Unix milliseconds: taken when the member's event is taken
    /// in, at the latest right before the member's next JoinGroup, so a revocation is stamped
    /// before the rejoin that lets another member take the partitions.
    pub at_ms: u64,
}

#[derive(Debug)]
struct State {
    owned: BTreeSet<TopicPartition>,
    generation: Option<i32>,
    closed: bool,
}

/// One member of a consumer group: what it subscribes to, the assignors it offers, the
/// partitions it owns. Every change of ownership goes out on the channel given to
/// [`ConsumerProtocol::new`]. The member's events reach it through
/// [`attach_events`](ConsumerProtocol::attach_events) and
/// [`with_events`](ConsumerProtocol::with_events);
/// taking one in only locks a mutex and sends, so it never blocks the driver.
#[derive(Debug)]
pub struct ConsumerProtocol {
    topics: BTreeSet<String>,
    assignors: Vec<Assignor>,
    rack: Option<String>,
    counts: Mutex<BTreeMap<String, i32>>,
    state: Mutex<State>,
    changes: mpsc::UnboundedSender<Ownership>,
    failover: Option<Failover>,
    /// The member's events, taken in by [`with_events`](Self::with_events) and before each
    /// JoinGroup.
    events: SharedEvents,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update leaves the state consistent, so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ConsumerProtocol {
    /// A member subscribing to `topics` that offers `assignors` (most preferred first) and
    /// reports its ownership on `changes`.
    pub fn new(
        topics: impl IntoIterator<Item = String>,
        assignors: Vec<Assignor>,
        rack: Option<String>,
        changes: mpsc::UnboundedSender<Ownership>,
    ) -> Self {
        Self {
            topics: topics.into_iter().collect(),
            assignors,
            rack,
            counts: Mutex::default(),
            state: Mutex::new(State {
                owned: BTreeSet::new(),
                generation: None,
                closed: false,
            }),
            changes,
            failover: None,
            events: SharedEvents::default(),
        }
    }

    /// The same member with fast failover among the group's kroupier members: it advertises
    /// `failover`'s endpoint in its subscription's `user_data`, follows every other kroupier
    /// member its assignment names, and closes the endpoint on [`close`](Self::close). Java
    /// members are left to their session.
    #[must_use]
    pub fn with_failover(mut self, failover: Failover) -> Self {
        self.failover = Some(failover);
        self
    }

    /// Tells fast failover (if on) whom to follow.
    fn follow(&self, targets: Vec<kroupier::failover::FailoverTarget>) {
        if let Some(failover) = &self.failover {
            failover.follow(targets);
        }
    }

    /// Whether the member follows the cooperative protocol: as Java decides, only when every
    /// assignor it offers supports it.
    pub fn is_cooperative(&self) -> bool {
        self.assignors
            .iter()
            .all(|a| *a == Assignor::CooperativeSticky)
    }

    /// Sets the partition counts the leader assigns over (from a Metadata request). Returns
    /// whether those of the subscribed topics changed, in which case a leader should rejoin.
    pub fn set_partition_counts(&self, counts: BTreeMap<String, i32>) -> bool {
        let mut mine = lock(&self.counts);
        let relevant = |c: &BTreeMap<String, i32>| -> Vec<(String, i32)> {
            c.iter()
                .filter(|(t, _)| self.topics.contains(*t))
                .map(|(t, n)| (t.clone(), *n))
                .collect()
        };
        let changed = relevant(&mine) != relevant(&counts);
        *mine = counts;
        changed
    }

    /// The partitions owned now.
    pub fn owned(&self) -> BTreeSet<TopicPartition> {
        lock(&self.state).owned.clone()
    }

    /// The subscription this member sends for `assignor`.
    pub fn subscription(&self, assignor: Assignor) -> Subscription {
        let state = lock(&self.state);
        let generation = state.generation;
        Subscription {
            topics: self.topics.iter().cloned().collect(),
            // Java's cooperative-sticky also carries the generation in its user data, for
            // leaders that read subscriptions older than version 2.
            user_data: {
                let java = (assignor == Assignor::CooperativeSticky)
                    .then(|| generation.unwrap_or(-1).to_be_bytes().to_vec());
                match &self.failover {
                    Some(f) => Some(failover::advertise(java, f.endpoint())),
                    None => java,
                }
            },
            owned_partitions: state.owned.iter().cloned().collect(),
            generation_id: generation,
            rack_id: self.rack.clone(),
        }
    }

    /// Gives up every partition before the member leaves the group, and ignores any later
    /// assignment. Call it before `MemberHandle::leave`: a cooperative member keeps its
    /// partitions through the revocation that leaving starts.
    pub fn close(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        let revoked = std::mem::take(&mut state.owned);
        state.generation = None;
        self.report(-1, false, revoked, None, &state);
        // It owns nothing any more: its followers may prove it gone.
        if let Some(failover) = &self.failover {
            failover.resign();
        }
    }

    fn report(
        &self,
        generation: i32,
        leader: bool,
        revoked: BTreeSet<TopicPartition>,
        error: Option<String>,
        state: &State,
    ) {
        let _ = self.changes.send(Ownership {
            generation,
            leader,
            partitions: state.owned.clone(),
            revoked,
            error,
            at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        });
    }

    /// Reads the member's `events` (from `member.events()`): call it before the driver runs.
    pub fn attach_events(&self, events: Events<MemberEvent>) {
        self.events.attach(events);
    }

    /// `driver` with the member's events taken in beside it, in its own task: each as soon as
    /// the driver yields, and the last ones once it ends.
    pub async fn with_events<F: std::future::Future>(
        self: std::sync::Arc<Self>,
        driver: F,
    ) -> F::Output {
        self.events
            .drive(driver, |event| self.handle_event(&event))
            .await
    }

    /// Takes in one of the member's events: an assignment, a revocation or a loss changes
    /// what this member owns (reported on the channel), anything else nothing.
    pub fn handle_event(&self, event: &MemberEvent) {
        match event {
            MemberEvent::Assigned {
                generation,
                assignment,
                ..
            } => self.assigned(generation, assignment),
            MemberEvent::Revoked { generation, .. } => self.revoked(generation),
            MemberEvent::Lost { .. } => self.lost(),
            _ => {}
        }
    }

    /// This member's assignment for `generation` arrived: it owns what it names.
    fn assigned(&self, generation: &Generation, assignment: &Bytes) {
        let mut state = lock(&self.state);
        if state.closed {
            return;
        }
        let (assigned, error) = match Assignment::decode(assignment) {
            Ok(a) => {
                self.follow(failover::targets(a.user_data.as_deref()));
                (
                    a.partitions
                        .into_iter()
                        .filter(|tp| self.topics.contains(&tp.topic))
                        .collect(),
                    None,
                )
            }
            Err(e) => {
                self.follow(Vec::new());
                (BTreeSet::new(), Some(e.to_string()))
            }
        };
        let revoked: BTreeSet<TopicPartition> =
            state.owned.difference(&assigned).cloned().collect();
        state.owned = assigned;
        state.generation = Some(generation.generation_id);
        self.report(
            generation.generation_id,
            generation.is_leader(),
            revoked,
            error,
            &state,
        );
    }

    /// A rebalance of `generation` started: an eager member gives up everything now.
    fn revoked(&self, generation: &Generation) {
        let mut state = lock(&self.state);
        // Eager: everything goes before the member rejoins; cooperative: nothing yet.
        if state.closed || self.is_cooperative() || state.owned.is_empty() {
            return;
        }
        let revoked = std::mem::take(&mut state.owned);
        self.report(
            generation.generation_id,
            generation.is_leader(),
            revoked,
            None,
            &state,
        );
    }

    /// The generation is gone: someone else may own the partitions already.
    fn lost(&self) {
        let mut state = lock(&self.state);
        if state.closed {
            return;
        }
        // Someone else may own them already: drop them, and claim nothing next time.
        self.follow(Vec::new());
        let revoked = std::mem::take(&mut state.owned);
        state.generation = None;
        self.report(-1, false, revoked, None, &state);
    }
}

/// Decodes the members' subscriptions for an assignor.
fn subscriptions(members: &[GroupMember]) -> Result<Vec<MemberSubscription>, AssignError> {
    members
        .iter()
        .map(|m| {
            let s = Subscription::decode(&m.metadata)
                .map_err(|e| AssignError::Failed(format!("member {}: {e}", m.member_id)))?;
            Ok(MemberSubscription {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                topics: s.topics.into_iter().collect(),
                owned: s.owned_partitions.into_iter().collect(),
                generation: s.generation_id,
            })
        })
        .collect()
}

impl GroupProtocol for ConsumerProtocol {
    fn protocol_type(&self) -> &str {
        CONSUMER_PROTOCOL_TYPE
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        // Every event before this JoinGroup first: its subscription claims what is owned now.
        self.events.take_in(|event| self.handle_event(&event));
        self.assignors
            .iter()
            .map(|a| ProtocolMetadata::new(a.name(), self.subscription(*a).encode()))
            .collect()
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        let assignor = Assignor::from_name(&context.protocol_name)
            .filter(|a| self.assignors.contains(a))
            .ok_or_else(|| AssignError::UnknownProtocol(context.protocol_name.clone()))?;
        let targets = failover::targets_by_member(members);
        let members = subscriptions(members)?;
        let counts = lock(&self.counts).clone();
        let plan = assignor.assign(&members, &counts);
        Ok(members
            .iter()
            .zip(targets)
            .map(|(m, targets)| {
                let partitions = plan
                    .get(&m.member_id)
                    .map(|p| p.iter().cloned().collect())
                    .unwrap_or_default();
                let assignment = Assignment {
                    partitions,
                    user_data: targets,
                };
                MemberAssignment::new(m.member_id.clone(), assignment.encode())
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(assignors: Vec<Assignor>) -> (ConsumerProtocol, mpsc::UnboundedReceiver<Ownership>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let p = ConsumerProtocol::new(["t".to_owned()], assignors, None, tx);
        p.set_partition_counts(BTreeMap::from([("t".to_owned(), 4)]));
        (p, rx)
    }

    fn generation(id: i32, member: &str, leader: &str, protocol: &str) -> Generation {
        Generation {
            generation_id: id,
            member_id: member.into(),
            protocol_name: protocol.into(),
            leader_id: leader.into(),
        }
    }

    fn group_member(id: &str, p: &ConsumerProtocol) -> GroupMember {
        GroupMember {
            member_id: id.into(),
            group_instance_id: None,
            metadata: p.protocols()[0].metadata.clone(),
        }
    }

    #[test]
    fn cooperative_members_revoke_then_move_over_two_generations() {
        let (a, mut a_rx) = member(vec![Assignor::CooperativeSticky]);
        let (b, mut b_rx) = member(vec![Assignor::CooperativeSticky]);
        assert_eq!(a.protocols()[0].name, "cooperative-sticky");
        // Generation 1: a alone owns everything.
        let ctx = AssignContext::new(1, "a", COOPERATIVE_STICKY);
        let out = a.assign(&ctx, &[group_member("a", &a)]).unwrap();
        a.assigned(
            &generation(1, "a", "a", COOPERATIVE_STICKY),
            &out[0].assignment,
        );
        assert_eq!(a_rx.try_recv().unwrap().partitions.len(), 4);
        // b joins; a keeps its partitions through the rebalance.
        a.revoked(&generation(1, "a", "a", COOPERATIVE_STICKY));
        assert!(a_rx.try_recv().is_err());
        let members = [group_member("a", &a), group_member("b", &b)];
        let out = a
            .assign(&AssignContext::new(2, "a", COOPERATIVE_STICKY), &members)
            .unwrap();
        a.assigned(
            &generation(2, "a", "a", COOPERATIVE_STICKY),
            &out[0].assignment,
        );
        b.assigned(
            &generation(2, "b", "a", COOPERATIVE_STICKY),
            &out[1].assignment,
        );
        let change = a_rx.try_recv().unwrap();
        assert_eq!((change.partitions.len(), change.revoked.len()), (2, 2));
        assert!(b_rx.try_recv().unwrap().partitions.is_empty());
        // a rejoins with what it still owns; b gets the revoked two in generation 3.
        let members = [group_member("a", &a), group_member("b", &b)];
        let sub = Subscription::decode(&members[0].metadata).unwrap();
        assert_eq!(
            (sub.generation_id, sub.owned_partitions.len()),
            (Some(2), 2)
        );
        assert_eq!(sub.user_data, Some(vec![0, 0, 0, 2]));
        let out = a
            .assign(&AssignContext::new(3, "a", COOPERATIVE_STICKY), &members)
            .unwrap();
        b.assigned(
            &generation(3, "b", "a", COOPERATIVE_STICKY),
            &out[1].assignment,
        );
        assert_eq!(b_rx.try_recv().unwrap().revoked.len(), 0);
        assert_eq!(b.owned().len(), 2);
        assert!(a.owned().is_disjoint(&b.owned()));
    }

    #[test]
    fn eager_members_drop_everything_when_a_rebalance_starts() {
        let (a, mut rx) = member(vec![Assignor::Range]);
        let out = a
            .assign(&AssignContext::new(1, "a", RANGE), &[group_member("a", &a)])
            .unwrap();
        a.assigned(&generation(1, "a", "a", RANGE), &out[0].assignment);
        assert_eq!(rx.try_recv().unwrap().partitions.len(), 4);
        a.revoked(&generation(1, "a", "a", RANGE));
        let change = rx.try_recv().unwrap();
        assert!(change.partitions.is_empty());
        assert_eq!(change.revoked.len(), 4);
        let sub = Subscription::decode(&a.protocols()[0].metadata).unwrap();
        assert!(sub.owned_partitions.is_empty());
        assert_eq!(sub.user_data, None);
    }

    #[test]
    fn unknown_protocols_garbage_and_closing() {
        let (a, mut rx) = member(vec![Assignor::Range]);
        let ctx = AssignContext::new(1, "a", "roundrobin");
        assert!(matches!(
            a.assign(&ctx, &[group_member("a", &a)]),
            Err(AssignError::UnknownProtocol(_))
        ));
        let garbage = GroupMember {
            member_id: "x".into(),
            group_instance_id: None,
            metadata: Bytes::from_static(&[255, 255]),
        };
        assert!(matches!(
            a.assign(&AssignContext::new(1, "a", RANGE), &[garbage]),
            Err(AssignError::Failed(_))
        ));
        a.assigned(
            &generation(1, "a", "x", RANGE),
            &Bytes::from_static(&[0, 3, 0]),
        );
        assert!(rx.try_recv().unwrap().error.is_some());
        a.close();
        assert_eq!(rx.try_recv().unwrap().generation, -1);
        a.assigned(&generation(2, "a", "x", RANGE), &Bytes::new());
        assert!(
            rx.try_recv().is_err(),
            "a closed member takes no assignment"
        );
    }
}
