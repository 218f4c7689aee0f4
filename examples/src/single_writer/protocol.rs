//! The single-writer group protocol: what each replica offers at JoinGroup (its identity),
//! how the Kafka group leader picks the writer, and each replica's role.
//!
//! Both payloads are JSON, as Schema Registry's are: Kafka never reads them, and JSON lets an
//! operator read them in `kafka-consumer-groups --describe --verbose`.

use std::sync::{Mutex, MutexGuard};

use axum::body::Bytes;
use kroupier::Events;
use kroupier::FencingToken;
use kroupier::failover::{Failover, FailoverEndpoint, FailoverTarget};
use kroupier::protocol::{
    AssignContext, AssignError, Generation, GroupMember, GroupProtocol, MemberAssignment,
    MemberEvent, ProtocolMetadata, SharedEvents,
};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};

/// The protocol type every replica's JoinGroup carries (Schema Registry's is `sr`).
pub const PROTOCOL_TYPE: &str = "single-writer";
/// The one protocol name (a version: a later format would be offered as `v2` first).
pub const PROTOCOL_NAME: &str = "v1";

/// A replica's member metadata: who it is, where it answers, whether it may write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The replica's stable id (`--id`).
    pub id: String,
    /// The base URL of its HTTP API; followers forward writes there when it leads.
    pub url: String,
    /// Whether it may be chosen as the writer (Schema Registry's `leader.eligibility`).
    pub leader_eligible: bool,
    /// The latest generation it led, -1 if none: the choice is sticky, so a rebalance that
    /// keeps the writer in the group does not move the writes.
    pub led_generation: i32,
    /// Its fast-failover endpoint (text form), if it turned fast failover on. Replicas that
    /// predate it send none and read past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<String>,
}

/// The writer the leader chose, as every replica receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writer {
    /// Its member id in the generation (how a replica recognises itself).
    pub member_id: String,
    /// Its stable id.
    pub id: String,
    /// Its base URL.
    pub url: String,
    /// Its `group.instance.id`, if it is a static member (what removing it names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// Its fast-failover endpoint (text form), if it advertised one: the followers link to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<String>,
}

impl Writer {
    /// Fast failover's target: this writer, if it advertised an endpoint that parses.
    fn failover_target(&self) -> Option<FailoverTarget> {
        let endpoint = self.failover.as_deref()?.parse::<FailoverEndpoint>().ok()?;
        Some(FailoverTarget {
            member_id: self.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            endpoint,
        })
    }
}

/// The assignment: the same for every replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The writer, or `None` when no replica is eligible (then every write is refused).
    pub writer: Option<Writer>,
}

/// The writer among `members`: among eligible replicas that led before, the one that led
/// the latest generation; else the eligible replica with the lowest stable id (member id
/// breaking ties). Metadata that does not decode makes a member ineligible, never an error.
pub fn choose_writer(members: &[GroupMember]) -> Option<Writer> {
    let eligible: Vec<(&GroupMember, Identity)> = members
        .iter()
        .filter_map(|m| {
            serde_json::from_slice::<Identity>(&m.metadata)
                .ok()
                .filter(|identity| identity.leader_eligible)
                .map(|identity| (m, identity))
        })
        .collect();
    let latest = eligible.iter().map(|(_, i)| i.led_generation).max()?;
    eligible
        .into_iter()
        .filter(|(_, i)| i.led_generation == latest)
        .min_by(|(a_member, a), (b_member, b)| {
            (&a.id, &a_member.member_id).cmp(&(&b.id, &b_member.member_id))
        })
        .map(|(member, identity)| Writer {
            member_id: member.member_id.clone(),
            id: identity.id,
            url: identity.url,
            group_instance_id: member.group_instance_id.clone(),
            failover: identity.failover,
        })
}

/// A replica's role in the current generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// This replica writes; every write carries `token`, and only while the membership says
    /// the token is valid.
    Leader {
        /// The generation's fencing token.
        token: FencingToken,
    },
    /// Another replica writes (or none: no replica is eligible).
    Follower {
        /// The generation.
        generation_id: i32,
        /// Where writes go.
        writer: Option<Writer>,
    },
    /// The generation is gone (self-fenced, removed, or leaving): no writes until the
    /// replica is assigned again.
    Lost {
        /// The generation lost, if there was one.
        generation_id: Option<i32>,
    },
}

#[derive(Debug, Default)]
struct State {
    led_generation: Option<i32>,
    in_generation: bool,
    resigned: bool,
}

/// One replica's side of the protocol: a [`GroupProtocol`] whose callbacks publish the
/// [`Role`] (on a watch for the request path, on a broadcast for the role log). They only
/// lock a mutex and send, so they never hold up the driver's heartbeats.
///
/// With [`with_failover`](Self::with_failover), each replica advertises its fast-failover
/// endpoint, the writer's travels in the assignment, and every follower follows the writer:
/// when the writer's process ends, a follower removes it from the group and a new writer is
/// chosen in milliseconds instead of after the writer's session.
#[derive(Debug)]
pub struct SingleWriter {
    id: String,
    url: String,
    leader_eligible: bool,
    failover: Option<Failover>,
    state: Mutex<State>,
    role: watch::Sender<Option<Role>>,
    changes: broadcast::Sender<Role>,
    /// The member's events, taken in by [`with_events`](Self::with_events) and before each
    /// JoinGroup.
    events: SharedEvents,
}

impl SingleWriter {
    /// A replica with stable id `id`, answering at `url`, that may write if `leader_eligible`.
    pub fn new(id: impl Into<String>, url: impl Into<String>, leader_eligible: bool) -> Self {
        Self {
            id: id.into(),
            url: url.into(),
            leader_eligible,
            failover: None,
            state: Mutex::default(),
            role: watch::channel(None).0,
            changes: broadcast::channel(64).0,
            events: SharedEvents::default(),
        }
    }

    /// The same replica with fast failover: it advertises `failover`'s endpoint, follows the
    /// writer, and closes the endpoint when it [resigns](Self::resign).
    #[must_use]
    pub fn with_failover(mut self, failover: Failover) -> Self {
        self.failover = Some(failover);
        self
    }

    /// The metadata this replica offers now.
    pub fn identity(&self) -> Identity {
        let state = self.state();
        Identity {
            id: self.id.clone(),
            url: self.url.clone(),
            // A replica on its way out must not be chosen again.
            leader_eligible: self.leader_eligible && !state.resigned,
            led_generation: state.led_generation.unwrap_or(-1),
            failover: self.failover.as_ref().map(|f| f.endpoint().to_string()),
        }
    }

    /// The current role (`None` before the first assignment).
    pub fn role(&self) -> Option<Role> {
        self.role.borrow().clone()
    }

    /// Every later role change.
    pub fn changes(&self) -> broadcast::Receiver<Role> {
        self.changes.subscribe()
    }

    /// Stops acting on any role before the replica leaves the group (call it *before*
    /// LeaveGroup, so the writer has stopped before another can be chosen); later
    /// assignments are ignored.
    pub fn resign(&self) {
        let lost = {
            let mut state = self.state();
            state.resigned = true;
            std::mem::take(&mut state.in_generation)
        };
        if lost {
            let generation_id = match self.role() {
                Some(Role::Leader { token }) => Some(token.generation_id),
                Some(Role::Follower { generation_id, .. }) => Some(generation_id),
                _ => None,
            };
            self.publish(Role::Lost { generation_id });
        }
        // Only now, with no role left to act on, may the followers prove this replica gone.
        if let Some(failover) = &self.failover {
            failover.resign();
        }
    }

    /// Tells fast failover (if on) whom this replica follows now.
    fn follow(&self, target: Option<FailoverTarget>) {
        if let Some(failover) = &self.failover {
            failover.follow(target);
        }
    }

    fn publish(&self, role: Role) {
        self.role.send_replace(Some(role.clone()));
        let _ = self.changes.send(role);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every update leaves the state consistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Takes in one of the member's events. A rebalance alone (`Revoked`) changes nothing: the
    /// writer keeps writing while its token is valid, and the sticky choice keeps it the
    /// writer if it stays in the group.
    pub fn handle_event(&self, event: &MemberEvent) {
        match event {
            MemberEvent::Assigned {
                generation,
                assignment,
                ..
            } => self.assigned(generation, assignment),
            MemberEvent::Lost { generation, .. } => self.lost(generation.as_ref()),
            _ => {}
        }
    }

    /// This replica's assignment for `generation` arrived: it writes or follows, as the
    /// assignment says.
    fn assigned(&self, generation: &Generation, assignment: &[u8]) {
        // An assignment that does not decode names no writer: never write on garbage.
        let writer = serde_json::from_slice::<Assignment>(assignment)
            .ok()
            .and_then(|a| a.writer);
        let role = {
            let mut state = self.state();
            if state.resigned {
                return;
            }
            state.in_generation = true;
            if writer.as_ref().map(|w| w.member_id.as_str()) == Some(generation.member_id.as_str())
            {
                state.led_generation = Some(generation.generation_id);
                self.follow(None);
                Role::Leader {
                    token: generation.token(),
                }
            } else {
                self.follow(writer.as_ref().and_then(Writer::failover_target));
                Role::Follower {
                    generation_id: generation.generation_id,
                    writer,
                }
            }
        };
        self.publish(role);
    }

    /// The generation is gone: this replica neither writes nor follows until its next
    /// assignment.
    fn lost(&self, generation: Option<&Generation>) {
        let was_in = std::mem::take(&mut self.state().in_generation);
        self.follow(None);
        if was_in {
            self.publish(Role::Lost {
                generation_id: generation.map(|g| g.generation_id),
            });
        }
    }
}

impl GroupProtocol for SingleWriter {
    fn protocol_type(&self) -> &str {
        PROTOCOL_TYPE
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        // Every event before this JoinGroup first: its identity claims the generation it led.
        self.events.take_in(|event| self.handle_event(&event));
        let identity = serde_json::to_vec(&self.identity()).unwrap_or_default();
        vec![ProtocolMetadata::new(PROTOCOL_NAME, identity)]
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        if context.protocol_name != PROTOCOL_NAME {
            return Err(AssignError::UnknownProtocol(context.protocol_name.clone()));
        }
        let assignment = Assignment {
            writer: choose_writer(members),
        };
        let bytes = Bytes::from(
            serde_json::to_vec(&assignment).map_err(|e| AssignError::Failed(e.to_string()))?,
        );
        Ok(members
            .iter()
            .map(|m| MemberAssignment::new(m.member_id.clone(), bytes.clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use kroupier::failover::FastFailover;

    use super::*;

    fn member(member_id: &str, replica: &SingleWriter) -> GroupMember {
        GroupMember {
            member_id: member_id.into(),
            group_instance_id: None,
            metadata: replica.protocols()[0].metadata.clone(),
        }
    }

    fn generation(id: i32, member_id: &str) -> Generation {
        Generation {
            generation_id: id,
            member_id: member_id.into(),
            protocol_name: PROTOCOL_NAME.into(),
            leader_id: "m-a".into(),
        }
    }

    #[test]
    fn the_lowest_eligible_id_writes_then_stays_the_writer() {
        let a = SingleWriter::new("a", "http://a", true);
        let b = SingleWriter::new("b", "http://b", true);
        let c = SingleWriter::new("c", "http://c", false);
        let members = [member("m-c", &c), member("m-b", &b)];
        let chosen = choose_writer(&members).expect("b is eligible");
        assert_eq!((chosen.id.as_str(), chosen.url.as_str()), ("b", "http://b"));

        let context = AssignContext::new(1, "m-b", PROTOCOL_NAME);
        let assignments = b.assign(&context, &members).expect("assign");
        assert_eq!(assignments.len(), 2);
        b.assigned(&generation(1, "m-b"), &assignments[0].assignment);
        assert!(matches!(b.role(), Some(Role::Leader { token }) if token.generation_id == 1));
        c.assigned(&generation(1, "m-c"), &assignments[0].assignment);
        assert!(matches!(
            c.role(),
            Some(Role::Follower { writer: Some(w), .. }) if w.url == "http://b"
        ));

        // `a` joins with a lower id, but `b` led generation 1: it keeps the writes.
        let members = [member("m-a", &a), member("m-b", &b), member("m-c", &c)];
        assert_eq!(choose_writer(&members).expect("a writer").id, "b");
    }

    #[test]
    fn with_fast_failover_the_writer_s_endpoint_reaches_its_followers() {
        let failover = Failover::bind(&FastFailover::new()).expect("bind 127.0.0.1:0");
        let a = SingleWriter::new("a", "http://a", true).with_failover(failover.clone());
        let b = SingleWriter::new("b", "http://b", true);
        let advertised = a.identity().failover.expect("a advertises its endpoint");
        assert_eq!(advertised.parse().as_ref(), Ok(failover.endpoint()));
        assert_eq!(b.identity().failover, None, "b has fast failover off");

        let mut static_a = member("m-a", &a);
        static_a.group_instance_id = Some("pod-a".into());
        let writer = choose_writer(&[static_a, member("m-b", &b)]).expect("a writes");
        assert_eq!(
            writer.failover_target(),
            Some(FailoverTarget {
                member_id: "m-a".into(),
                group_instance_id: Some("pod-a".into()),
                endpoint: failover.endpoint().clone(),
            })
        );
        let unreadable = Writer {
            failover: Some("not an endpoint".into()),
            ..writer
        };
        assert_eq!(unreadable.failover_target(), None, "no proof from garbage");

        // A replica that predates fast failover sends no endpoint, and reads past one.
        let old: Identity = serde_json::from_str(
            r#"{"id":"x","url":"http://x","leader_eligible":true,"led_generation":-1}"#,
        )
        .expect("an old replica's metadata");
        assert_eq!(old.failover, None);

        // Resigning closes the endpoint: only now may the followers prove this replica gone.
        let addr: std::net::SocketAddr = failover.endpoint().addr.parse().unwrap();
        assert!(
            std::net::TcpStream::connect(addr).is_ok(),
            "open while a may act"
        );
        a.resign();
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "closed once a resigned"
        );
    }

    #[test]
    fn no_eligible_replica_no_writer_and_garbage_is_no_writer() {
        let c = SingleWriter::new("c", "http://c", false);
        let garbage = GroupMember {
            member_id: "m-x".into(),
            group_instance_id: None,
            metadata: Bytes::from_static(b"\x00not json"),
        };
        assert_eq!(choose_writer(&[member("m-c", &c), garbage]), None);
        c.assigned(&generation(3, "m-c"), &Bytes::from_static(b"garbage"));
        assert_eq!(
            c.role(),
            Some(Role::Follower {
                generation_id: 3,
                writer: None
            })
        );
    }

    #[test]
    fn a_lost_or_resigned_replica_stops_and_a_resigned_one_is_not_chosen() {
        let a = SingleWriter::new("a", "http://a", true);
        let mut changes = a.changes();
        let members = [member("m-a", &a)];
        let assignments = a
            .assign(&AssignContext::new(4, "m-a", PROTOCOL_NAME), &members)
            .expect("assign");
        a.assigned(&generation(4, "m-a"), &assignments[0].assignment);
        let deadline = std::time::Instant::now();
        a.handle_event(&MemberEvent::Lost {
            generation: Some(generation(4, "m-a")),
            reason: kroupier::protocol::LostReason::HeartbeatTimeout { deadline },
        });
        assert!(matches!(changes.try_recv(), Ok(Role::Leader { .. })));
        assert_eq!(
            changes.try_recv().ok(),
            Some(Role::Lost {
                generation_id: Some(4)
            })
        );
        a.resign();
        assert!(!a.identity().leader_eligible);
        assert_eq!(choose_writer(&[member("m-a", &a)]), None);
        a.assigned(&generation(5, "m-a"), &assignments[0].assignment);
        assert!(matches!(a.role(), Some(Role::Lost { .. })));
    }
}
