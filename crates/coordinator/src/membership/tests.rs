//! Tests of the membership state machine on virtual time: a fixed base `Instant` plus offsets.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse, find_coordinator_response::Coordinator as WireCoordinator,
    join_group_response::JoinGroupResponseMember,
};
use kafka_protocol::protocol::StrBytes;

use super::*;

const SESSION: Duration = Duration::from_secs(10);
const HEARTBEAT: Duration = Duration::from_secs(3);
/// Default margin: max(heartbeat interval, session / 10).
const MARGIN: Duration = HEARTBEAT;

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_owned())
}

pub(super) struct Harness {
    pub(super) member: Membership,
    base: Instant,
}

impl Harness {
    pub(super) fn new(config: MembershipConfig) -> Self {
        let member = Membership::new(
            config,
            "kroupier",
            vec![
                ProtocolMetadata::new("sticky", Bytes::from_static(b"meta-s")),
                ProtocolMetadata::new("round-robin", Bytes::from_static(b"meta-r")),
            ],
        )
        .expect("valid config");
        Self {
            member,
            base: Instant::now(),
        }
    }

    pub(super) fn dynamic() -> Self {
        Self::new(MembershipConfig::new("g"))
    }

    pub(super) fn at(&self, offset: Duration) -> Instant {
        self.base + offset
    }

    pub(super) fn poll(&mut self, offset: Duration) -> Option<Outgoing> {
        let now = self.at(offset);
        self.member.poll_request(now)
    }

    pub(super) fn expect(&mut self, offset: Duration) -> Outgoing {
        self.poll(offset).expect("a request")
    }

    pub(super) fn respond(&mut self, offset: Duration, tag: RequestTag, response: Response) {
        let now = self.at(offset);
        self.member.handle_response(now, tag, response);
    }

    pub(super) fn events(&mut self) -> Vec<MemberEvent> {
        std::iter::from_fn(|| self.member.poll_event()).collect()
    }

    /// FindCoordinator → coordinator `node` at `offset`.
    fn find_coordinator(&mut self, offset: Duration, node: i32) {
        let out = self.expect(offset);
        let Request::FindCoordinator(fc) = &out.request else {
            panic!("expected FindCoordinator, got {:?}", out.request)
        };
        assert_eq!(fc.group_id, "g");
        self.respond(offset, out.tag, coordinator_response(node));
        let events = self.events();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, MemberEvent::CoordinatorChanged(c) if c.node_id == node)),
            "{events:?}"
        );
    }

    /// Drives a dynamic member from start to Stable as follower `member_id` in `generation`.
    pub(super) fn stable_follower(&mut self, generation: i32) -> Duration {
        self.find_coordinator(ms(0), 1);
        let join = self.expect(ms(0));
        self.respond(
            ms(10),
            join.tag,
            Response::JoinGroup(join_error(ResponseError::MemberIdRequired, "m1")),
        );
        let join = self.expect(ms(10));
        self.respond(
            ms(20),
            join.tag,
            Response::JoinGroup(join_ok(generation, "m1", "m0", vec![])),
        );
        let sync = self.expect(ms(20));
        self.respond(ms(30), sync.tag, Response::SyncGroup(sync_ok(b"tasks")));
        self.events();
        assert_eq!(self.member.state(), MemberState::Stable);
        ms(30)
    }
}

pub(super) fn coordinator_response(node: i32) -> Response {
    Response::FindCoordinator(FindCoordinatorResponse::default().with_coordinators(vec![
            WireCoordinator::default()
                .with_key(s("g"))
                .with_node_id(BrokerId(node))
                .with_host(s("127.0.0.1"))
                .with_port(9092 + node),
        ]))
}

pub(super) fn join_ok(
    generation: i32,
    member: &str,
    leader: &str,
    members: Vec<(&str, &[u8])>,
) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_generation_id(generation)
        .with_protocol_type(Some(s("kroupier")))
        .with_protocol_name(Some(s("sticky")))
        .with_leader(s(leader))
        .with_member_id(s(member))
        .with_members(
            members
                .into_iter()
                .map(|(id, meta)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(s(id))
                        .with_metadata(Bytes::copy_from_slice(meta))
                })
                .collect(),
        )
}

fn join_error(error: ResponseError, member: &str) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(error.code())
        .with_member_id(s(member))
        .with_generation_id(-1)
}

pub(super) fn sync_ok(assignment: &'static [u8]) -> SyncGroupResponse {
    SyncGroupResponse::default()
        .with_protocol_type(Some(s("kroupier")))
        .with_protocol_name(Some(s("sticky")))
        .with_assignment(Bytes::from_static(assignment))
}

pub(super) fn sync_error(error: ResponseError) -> Response {
    Response::SyncGroup(SyncGroupResponse::default().with_error_code(error.code()))
}

pub(super) fn heartbeat(error: Option<ResponseError>) -> Response {
    Response::Heartbeat(HeartbeatResponse::default().with_error_code(error.map_or(0, |e| e.code())))
}

#[test]
fn follower_joins_with_member_id_required_and_syncs() {
    let mut h = Harness::dynamic();
    assert_eq!(h.member.state(), MemberState::FindingCoordinator);
    h.find_coordinator(ms(0), 1);
    assert_eq!(h.member.state(), MemberState::Unjoined);

    let join = h.expect(ms(0));
    assert_eq!(
        join.timeout,
        Duration::from_secs(65),
        "rebalance timeout + 5 s"
    );
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.member_id.as_str(), "");
    assert_eq!(req.session_timeout_ms, 10_000);
    assert_eq!(req.rebalance_timeout_ms, 60_000);
    assert_eq!(req.protocol_type.as_str(), "kroupier");
    let names: Vec<_> = req.protocols.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["sticky", "round-robin"]);
    assert_eq!(
        req.reason.as_ref().map(|r| r.as_str()),
        Some("member started")
    );
    assert_eq!(h.member.state(), MemberState::Joining);
    assert!(h.poll(ms(0)).is_none(), "one join at a time");

    // KIP-394: the broker hands out the id; the member rejoins with it at once.
    h.respond(
        ms(5),
        join.tag,
        Response::JoinGroup(join_error(ResponseError::MemberIdRequired, "m1")),
    );
    assert!(h.events().is_empty());
    let join = h.expect(ms(5));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.member_id.as_str(), "m1");

    h.respond(
        ms(100),
        join.tag,
        Response::JoinGroup(join_ok(4, "m1", "m0", vec![])),
    );
    let events = h.events();
    let [MemberEvent::Joined { generation }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(
        (generation.generation_id, generation.member_id.as_str()),
        (4, "m1")
    );
    assert!(!generation.is_leader());
    assert_eq!(h.member.state(), MemberState::Syncing);

    let sync = h.expect(ms(100));
    let Request::SyncGroup(req) = &sync.request else {
        panic!()
    };
    assert!(req.assignments.is_empty(), "followers send no assignment");
    assert_eq!((req.generation_id, req.member_id.as_str()), (4, "m1"));
    assert_eq!(
        req.protocol_name.as_ref().map(|n| n.as_str()),
        Some("sticky")
    );

    h.respond(ms(150), sync.tag, Response::SyncGroup(sync_ok(b"tasks")));
    let events = h.events();
    let [
        MemberEvent::Assigned {
            generation,
            assignment,
            ..
        },
    ] = events.as_slice()
    else {
        panic!("{events:?}")
    };
    assert_eq!(generation.generation_id, 4);
    assert_eq!(assignment.as_ref(), b"tasks");
    assert_eq!(h.member.state(), MemberState::Stable);
    assert_eq!(
        h.member.assignment().map(|a| a.as_ref()),
        Some(&b"tasks"[..])
    );

    // The lease runs from the SyncGroup's send time.
    let lease = h.member.lease().expect("lease");
    assert_eq!(
        lease.token,
        FencingToken {
            generation_id: 4,
            member_id: "m1".into()
        }
    );
    assert_eq!(lease.valid_until, h.at(ms(100)) + SESSION - MARGIN);
    assert!(h.member.is_token_valid(&lease.token, h.at(ms(200))));
    assert_eq!(h.member.metrics().rebalances_total, 1);
    assert_eq!(h.member.metrics().last_rebalance_latency, Some(ms(150)));
    // Kafka's join-time and sync-time: each request's send to its answer (the JoinGroup that
    // succeeded was sent at 5 ms, after the member id round trip).
    assert_eq!(h.member.metrics().last_join_time, Some(ms(95)));
    assert_eq!(h.member.metrics().last_sync_time, Some(ms(50)));
}

#[test]
fn leader_assigns_off_the_heartbeat_path() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m1", vec![("m2", b"b"), ("m1", b"a")])),
    );
    let events = h.events();
    let [MemberEvent::Joined { generation }] = events.as_slice() else {
        panic!("{events:?}")
    };
    let Some(AssignmentRequest { context, members }) = h.member.poll_assignment_request() else {
        panic!("no assignment requested")
    };
    let (context, members) = (&context, &members);
    assert!(generation.is_leader());
    assert_eq!(context, &AssignContext::new(1, "m1", "sticky"));
    let ids: Vec<_> = members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2"], "sorted by member id");
    assert_eq!(h.member.state(), MemberState::AwaitingAssignment);
    assert!(h.poll(ms(10)).is_none());

    // The assignment takes a while: heartbeats go on meanwhile.
    assert_eq!(h.member.poll_timeout(), Some(h.at(ms(10)) + HEARTBEAT));
    let hb = h.expect(ms(10) + HEARTBEAT);
    let Request::Heartbeat(req) = &hb.request else {
        panic!()
    };
    assert_eq!((req.generation_id, req.member_id.as_str()), (1, "m1"));
    h.respond(ms(3020), hb.tag, heartbeat(None));

    assert_eq!(
        h.member.set_assignment(0, vec![]),
        Err(CommandError::StaleAssignment { generation_id: 0 })
    );
    h.member
        .set_assignment(
            1,
            vec![
                MemberAssignment::new("m1", b"x".to_vec()),
                MemberAssignment::new("m2", b"y".to_vec()),
            ],
        )
        .expect("current generation");
    let sync = h.expect(ms(4000));
    let Request::SyncGroup(req) = &sync.request else {
        panic!()
    };
    assert_eq!(req.assignments.len(), 2);
    assert_eq!(req.assignments[1].assignment.as_ref(), b"y");
    h.respond(ms(4010), sync.tag, Response::SyncGroup(sync_ok(b"x")));
    assert_eq!(h.member.state(), MemberState::Stable);
    // The heartbeat sent at 3010 ms is the latest proof... no: the sync at 4000 ms is later.
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(4000)) + SESSION - MARGIN)
    );
}

#[test]
fn static_leader_told_to_skip_assignment_syncs_empty() {
    let mut config = MembershipConfig::new("g");
    config.group_instance_id = Some("w-1".into());
    let mut h = Harness::new(config);
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(
        req.group_instance_id.as_ref().map(|i| i.as_str()),
        Some("w-1")
    );
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(7, "w-1-uuid", "w-1-uuid", vec![]).with_skip_assignment(true)),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [MemberEvent::Joined { .. }]),
        "{events:?}"
    );
    let sync = h.expect(ms(10));
    let Request::SyncGroup(req) = &sync.request else {
        panic!()
    };
    assert!(req.assignments.is_empty());
    assert_eq!(
        req.group_instance_id.as_ref().map(|i| i.as_str()),
        Some("w-1")
    );
    h.respond(ms(20), sync.tag, Response::SyncGroup(sync_ok(b"kept")));
    assert_eq!(
        h.member.assignment().map(|a| a.as_ref()),
        Some(&b"kept"[..])
    );
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Assigned { .. }]
    ));

    // Static members do not send LeaveGroup by default.
    h.member.leave(h.at(ms(30)), "shutdown");
    assert_eq!(h.events(), vec![MemberEvent::Left]);
    assert_eq!(h.member.state(), MemberState::Left);
    assert!(h.poll(ms(30)).is_none());
    assert_eq!(h.member.poll_timeout(), None);
}

#[test]
fn static_member_may_leave_when_configured() {
    let mut config = MembershipConfig::new("g");
    config.group_instance_id = Some("w-1".into());
    config.leave_group_on_close_static = true;
    let mut h = Harness::new(config);
    h.stable_follower(1);
    h.member.leave(h.at(ms(40)), "scale down");
    let leave = h.expect(ms(40));
    let Request::LeaveGroup(l) = &leave.request else {
        panic!()
    };
    assert_eq!(l.group_instance_id.as_deref(), Some("w-1"));
    let v5 = l.to_request(5);
    assert_eq!(
        v5.members[0].reason.as_ref().map(|r| r.as_str()),
        Some("scale down")
    );
    assert_eq!(
        v5.members[0].group_instance_id.as_ref().map(|r| r.as_str()),
        Some("w-1")
    );
}

#[test]
fn dynamic_member_leaves_with_reason() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    h.member.leave(h.at(ms(40)), "shutting down");
    assert_eq!(h.member.state(), MemberState::Leaving);
    assert!(h.member.lease().is_none(), "the token ends when leaving");
    let leave = h.expect(ms(40));
    let Request::LeaveGroup(l) = &leave.request else {
        panic!()
    };
    assert_eq!(
        (l.member_id.as_str(), l.reason.as_str()),
        ("m1", "shutting down")
    );
    assert_eq!(l.to_request(2).member_id.as_str(), "m1");
    assert_eq!(l.to_request(3).members.len(), 1);
    assert!(h.poll(ms(40)).is_none(), "no heartbeat while leaving");
    // Any answer, even an error, completes the leave.
    let error = Response::LeaveGroup(
        LeaveGroupResponse::default().with_error_code(ResponseError::UnknownMemberId.code()),
    );
    h.respond(ms(50), leave.tag, error);
    assert_eq!(h.events(), vec![MemberEvent::Left]);
    assert_eq!(h.member.state(), MemberState::Left);
}

#[test]
fn stale_responses_are_ignored() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join1 = h.expect(ms(0));
    h.respond(
        ms(10),
        join1.tag,
        Response::JoinGroup(join_error(ResponseError::MemberIdRequired, "m1")),
    );
    let join2 = h.expect(ms(10));
    // A duplicate of the first answer, and an answer of the wrong kind, change nothing.
    h.respond(
        ms(11),
        join1.tag,
        Response::JoinGroup(join_ok(9, "mX", "mX", vec![])),
    );
    h.respond(
        ms(11),
        join2.tag,
        heartbeat(Some(ResponseError::UnknownMemberId)),
    );
    h.respond(
        ms(11),
        join2.tag,
        sync_error(ResponseError::UnknownMemberId),
    );
    assert!(h.events().is_empty());
    assert_eq!(h.member.state(), MemberState::Joining);
    h.respond(
        ms(20),
        join2.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    let sync = h.expect(ms(20));
    h.respond(ms(30), sync.tag, Response::SyncGroup(sync_ok(b"a")));
    h.events();

    // A heartbeat of generation 2 is in flight when a rebalance moves the member to 3.
    let hb_old = h.expect(ms(20) + HEARTBEAT);
    h.member.request_rejoin(h.at(ms(3100)), "test");
    let join = h.expect(ms(3100));
    h.respond(
        ms(3200),
        join.tag,
        Response::JoinGroup(join_ok(3, "m1", "m0", vec![])),
    );
    // Its ILLEGAL_GENERATION is about generation 2: ignored.
    h.respond(
        ms(3300),
        hb_old.tag,
        heartbeat(Some(ResponseError::IllegalGeneration)),
    );
    let events = h.events();
    assert!(
        !events.iter().any(|e| matches!(e, MemberEvent::Lost { .. })),
        "{events:?}"
    );
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(3));
    assert_eq!(h.member.state(), MemberState::Syncing);
}

#[test]
fn coordinator_move_during_join_rediscovers_then_rejoins() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_error(ResponseError::NotCoordinator, "")),
    );
    assert_eq!(h.member.state(), MemberState::FindingCoordinator);
    assert!(h.member.coordinator().is_none());
    h.find_coordinator(ms(10), 2);
    assert_eq!(h.member.coordinator().map(|c| c.port), Some(9094));
    let join = h.expect(ms(10));
    assert!(matches!(join.request, Request::JoinGroup(_)));
}

#[test]
fn coordinator_move_while_stable_keeps_the_generation() {
    let mut h = Harness::dynamic();
    let t = h.stable_follower(5);
    let hb = h.expect(t + HEARTBEAT);
    h.respond(
        t + HEARTBEAT + ms(5),
        hb.tag,
        heartbeat(Some(ResponseError::NotCoordinator)),
    );
    assert_eq!(h.member.state(), MemberState::Stable);
    assert_eq!(h.member.metrics().heartbeats_failed, 1);
    let fc = h.expect(t + HEARTBEAT + ms(5));
    assert!(matches!(fc.request, Request::FindCoordinator(_)));
    h.respond(t + HEARTBEAT + ms(6), fc.tag, coordinator_response(3));
    // Heartbeats go on at their cadence to the new coordinator, same generation.
    assert!(h.poll(t + HEARTBEAT + ms(6)).is_none());
    assert!(h.poll(t + HEARTBEAT * 2 - ms(1)).is_none());
    let hb = h.expect(t + HEARTBEAT * 2);
    let Request::Heartbeat(req) = &hb.request else {
        panic!("{:?}", hb.request)
    };
    assert_eq!(req.generation_id, 5);
    h.respond(t + HEARTBEAT + ms(7), hb.tag, heartbeat(None));
    assert!(
        !h.events()
            .iter()
            .any(|e| matches!(e, MemberEvent::Lost { .. } | MemberEvent::Joined { .. }))
    );
}

#[test]
fn disconnect_during_sync_rejoins_after_rediscovery() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m0", vec![])),
    );
    let sync = h.expect(ms(10));
    h.member.handle_disconnect(h.at(ms(20)));
    h.respond(ms(21), sync.tag, Response::SyncGroup(sync_ok(b"late")));
    assert_eq!(h.member.state(), MemberState::FindingCoordinator);
    h.find_coordinator(ms(30), 1);
    let join = h.expect(ms(30));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.member_id.as_str(), "m1", "the member id is kept");
    assert_eq!(
        h.member.generation().map(|g| g.generation_id),
        Some(1),
        "held while rejoining"
    );
}

#[test]
fn heartbeat_failure_self_fences_at_the_exact_deadline() {
    let mut h = Harness::dynamic();
    let t = h.stable_follower(1);
    // The SyncGroup was sent at 20 ms. A heartbeat sent at 3020 ms succeeds.
    let hb = h.expect(ms(20) + HEARTBEAT);
    h.respond(ms(3100), hb.tag, heartbeat(None));
    let basis = h.at(ms(3020));
    let deadline = basis + SESSION - MARGIN;
    assert_eq!(h.member.fence_deadline(), Some(deadline));
    let token = h.member.lease().expect("lease").token;
    // From then on every heartbeat times out; the coordinator cannot be found again.
    let hb = h.expect(ms(6020));
    h.member.handle_request_failed(h.at(ms(9000)), hb.tag);
    let fc = h.expect(ms(9000));
    assert!(matches!(fc.request, Request::FindCoordinator(_)));
    h.member.handle_request_failed(h.at(ms(9500)), fc.tag);
    assert!(t < ms(9500));
    // The driver sleeps until poll_timeout; the deadline is the earliest wakeup once the
    // FindCoordinator retries are exhausted.
    let mut now = h.at(ms(9500));
    loop {
        let next = h.member.poll_timeout().expect("a timer");
        assert!(next <= deadline);
        now = now.max(next);
        h.member.handle_timeout(now);
        if now == deadline {
            break;
        }
        assert!(h.events().is_empty(), "not lost before the deadline");
        assert!(h.member.is_token_valid(&token, now));
        while let Some(out) = h.member.poll_request(now) {
            h.member.handle_request_failed(now, out.tag);
        }
    }
    let events = h.events();
    let [
        MemberEvent::Lost {
            generation: Some(g),
            reason: LostReason::HeartbeatTimeout { deadline: d },
        },
    ] = events.as_slice()
    else {
        panic!("{events:?}")
    };
    assert_eq!((g.generation_id, *d), (1, deadline));
    assert_eq!(deadline, h.at(ms(3020 + 7000)));
    assert!(!h.member.is_token_valid(&token, deadline));
    assert!(h.member.lease().is_none());
    assert_eq!(h.member.state(), MemberState::FindingCoordinator);
    // It rejoins with its member id once the coordinator answers.
    let retry = h.member.poll_timeout().expect("find coordinator retry");
    assert!(retry > deadline && h.member.poll_request(deadline).is_none());
    h.member.handle_timeout(retry);
    let fc = h.member.poll_request(retry).expect("find coordinator");
    h.member
        .handle_response(retry, fc.tag, coordinator_response(1));
    let join = h.member.poll_request(retry).expect("join");
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.member_id.as_str(), "m1");
    assert!(
        req.reason
            .as_ref()
            .is_some_and(|r| r.as_str().contains("session lost"))
    );
}

#[test]
fn lease_is_not_extended_by_a_late_response_after_the_deadline() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    let hb = h.expect(ms(20) + HEARTBEAT);
    let deadline = h.at(ms(20)) + SESSION - MARGIN;
    // The answer arrives after the deadline: fenced first, the answer is then stale.
    h.respond(ms(20) + SESSION - MARGIN, hb.tag, heartbeat(None));
    assert!(matches!(h.events().as_slice(), [MemberEvent::Lost { .. }]));
    assert!(h.member.lease().is_none());
    assert!(h.member.fence_deadline().is_none());
    assert_eq!(deadline, h.at(ms(7020)));
}

#[test]
fn rebalance_in_progress_heartbeat_revokes_rejoins_and_keeps_heartbeating() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(
        ms(3030),
        hb.tag,
        heartbeat(Some(ResponseError::RebalanceInProgress)),
    );
    let events = h.events();
    let [MemberEvent::Revoked { generation, reason }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(generation.generation_id, 1);
    assert!(reason.contains("REBALANCE_IN_PROGRESS"));
    // It counted as a success.
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(3020)) + SESSION - MARGIN)
    );
    let join = h.expect(ms(3030));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert!(
        req.reason
            .as_ref()
            .is_some_and(|r| r.as_str().contains("rebalancing"))
    );
    // The join waits for other members; the held generation keeps heartbeating.
    let hb = h.expect(ms(6020));
    let Request::Heartbeat(req) = &hb.request else {
        panic!()
    };
    assert_eq!(req.generation_id, 1);
    h.respond(
        ms(6030),
        hb.tag,
        heartbeat(Some(ResponseError::RebalanceInProgress)),
    );
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(6020)) + SESSION - MARGIN)
    );
    assert!(h.events().is_empty());
    h.respond(
        ms(8000),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(2));
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(6020)) + SESSION - MARGIN)
    );
}

#[test]
fn changed_metadata_starts_a_follower_rebalance() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    let same = h.member.protocols.clone();
    h.member.update_metadata(h.at(ms(40)), same).expect("valid");
    assert!(h.events().is_empty(), "unchanged metadata: no rebalance");
    h.member
        .update_metadata(
            h.at(ms(40)),
            vec![ProtocolMetadata::new("sticky", b"new".to_vec())],
        )
        .expect("valid");
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Revoked { .. }]
    ));
    let join = h.expect(ms(40));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.protocols[0].metadata.as_ref(), b"new");
    assert_eq!(
        req.reason.as_ref().map(|r| r.as_str()),
        Some("member metadata changed")
    );
    assert!(h.member.update_metadata(h.at(ms(40)), vec![]).is_err());
    // A member that left does not come back because its metadata changed.
    h.member.leave(h.at(ms(50)), "bye");
    h.member
        .update_metadata(
            h.at(ms(60)),
            vec![ProtocolMetadata::new("sticky", b"newer".to_vec())],
        )
        .expect("valid");
    assert_eq!(h.member.state(), MemberState::Leaving);
}

#[test]
fn rejoin_requested_during_a_join_follows_it() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.member.request_rejoin(h.at(ms(1)), "config changed");
    assert!(h.poll(ms(1)).is_none());
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m0", vec![])),
    );
    let sync = h.expect(ms(10));
    h.respond(ms(20), sync.tag, Response::SyncGroup(sync_ok(b"")));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                MemberEvent::Joined { .. },
                MemberEvent::Assigned { .. },
                MemberEvent::Revoked { .. }
            ]
        ),
        "{events:?}"
    );
    let join = h.expect(ms(20));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(
        req.reason.as_ref().map(|r| r.as_str()),
        Some("config changed")
    );
}

#[test]
fn fenced_instance_id_is_terminal() {
    let mut config = MembershipConfig::new("g");
    config.group_instance_id = Some("w-1".into());
    let mut h = Harness::new(config);
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(
        ms(3030),
        hb.tag,
        heartbeat(Some(ResponseError::FencedInstanceId)),
    );
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                MemberEvent::Lost {
                    reason: LostReason::Fatal(FatalError::FencedInstanceId),
                    ..
                },
                MemberEvent::Fenced {
                    group_instance_id: Some(_)
                }
            ]
        ),
        "{events:?}"
    );
    assert_eq!(h.member.state(), MemberState::Fatal);
    assert_eq!(h.member.fatal_error(), Some(&FatalError::FencedInstanceId));
    assert!(h.poll(ms(9999)).is_none());
    assert!(h.member.poll_timeout().is_none());
}

#[test]
fn unknown_member_id_on_sync_loses_and_rejoins_as_new_member() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m0", vec![])),
    );
    h.events();
    let sync = h.expect(ms(10));
    h.respond(ms(20), sync.tag, sync_error(ResponseError::UnknownMemberId));
    let events = h.events();
    assert!(matches!(
        events.as_slice(),
        [MemberEvent::Lost {
            reason: LostReason::Reset {
                api: Api::SyncGroup,
                ..
            },
            ..
        }]
    ));
    let join = h.expect(ms(20));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.member_id.as_str(), "");
    assert_eq!(h.member.metrics().rebalances_failed, 1);
}

#[test]
fn find_coordinator_backs_off_exponentially_and_reads_old_versions() {
    let mut h = Harness::dynamic();
    let mut now = ms(0);
    for expected in [100, 200, 400, 800, 1000, 1000] {
        let fc = h.expect(now);
        let error = FindCoordinatorResponse::default()
            .with_error_code(ResponseError::CoordinatorNotAvailable.code());
        h.respond(now, fc.tag, Response::FindCoordinator(error));
        assert_eq!(h.member.poll_timeout(), Some(h.at(now + ms(expected))));
        assert!(h.poll(now + ms(expected - 1)).is_none());
        now += ms(expected);
    }
    // v0–v3 answer at the top level.
    let fc = h.expect(now);
    let v3 = FindCoordinatorResponse::default()
        .with_node_id(BrokerId(4))
        .with_host(s("broker-4"))
        .with_port(9093);
    h.respond(now, fc.tag, Response::FindCoordinator(v3));
    assert_eq!(
        h.member.coordinator().map(|c| (c.node_id, c.host.as_str())),
        Some((4, "broker-4"))
    );
}

#[test]
fn find_coordinator_request_shape_per_version() {
    let fc = FindCoordinator {
        group_id: "g".into(),
    };
    assert_eq!(fc.to_request(3).key.as_str(), "g");
    assert!(fc.to_request(3).coordinator_keys.is_empty());
    assert_eq!(fc.to_request(4).coordinator_keys[0].as_str(), "g");
    assert!(fc.to_request(4).key.is_empty());
}

#[test]
fn config_is_validated_on_construction() {
    let ok = MembershipConfig::new("g");
    assert_eq!(ok.validate(), Ok(()));
    type Breaker = fn(&mut MembershipConfig);
    let cases: Vec<(Breaker, &str)> = vec![
        (|c| c.group_id.clear(), "EmptyGroupId"),
        (
            |c| c.group_instance_id = Some("a b".into()),
            "InvalidGroupInstanceId",
        ),
        (
            |c| c.group_instance_id = Some("x".repeat(250)),
            "InvalidGroupInstanceId",
        ),
        (
            |c| c.heartbeat_interval = c.session_timeout,
            "HeartbeatNotBelowSession",
        ),
        (
            |c| c.session_timeout = Duration::from_secs(1),
            "SessionTimeoutOutOfBounds",
        ),
        (
            |c| c.session_timeout = Duration::from_secs(3600),
            "SessionTimeoutOutOfBounds",
        ),
        (
            |c| c.rebalance_timeout = Duration::from_secs(5),
            "RebalanceBelowSession",
        ),
        (
            |c| c.self_fence_margin = Some(Duration::from_secs(8)),
            "MarginTooLarge",
        ),
        (|c| c.heartbeat_interval = Duration::ZERO, "Zero"),
        (
            |c| c.retry_backoff_max = Duration::from_millis(1),
            "BackoffMaxBelowBackoff",
        ),
        (
            |c| c.rebalance_timeout = Duration::from_secs(30 * 86_400),
            "TooLong",
        ),
    ];
    for (break_it, expected) in cases {
        let mut config = MembershipConfig::new("g");
        break_it(&mut config);
        let error = Membership::new(
            config,
            "kroupier",
            vec![ProtocolMetadata::new("p", Bytes::new())],
        )
        .expect_err(expected);
        assert!(
            format!("{error:?}").starts_with(expected),
            "{error:?} vs {expected}"
        );
        assert!(!error.to_string().is_empty());
    }
    // A test broker with group.min.session.timeout.ms = 1 s.
    let mut fast = MembershipConfig::new("g");
    fast.min_session_timeout = Duration::from_secs(1);
    fast.session_timeout = Duration::from_secs(1);
    fast.heartbeat_interval = Duration::from_millis(300);
    fast.rebalance_timeout = Duration::from_secs(1);
    assert_eq!(fast.validate(), Ok(()));
    assert_eq!(
        fast.effective_self_fence_margin(),
        Duration::from_millis(300)
    );
    let protocols = |names: &[&str]| {
        names
            .iter()
            .map(|n| ProtocolMetadata::new(*n, Bytes::new()))
            .collect()
    };
    assert_eq!(
        Membership::new(MembershipConfig::new("g"), "", protocols(&["a"])).err(),
        Some(super::config::Fault::EmptyProtocolType.into())
    );
    assert!(Membership::new(MembershipConfig::new("g"), "t", protocols(&[])).is_err());
    assert!(Membership::new(MembershipConfig::new("g"), "t", protocols(&["a", "a"])).is_err());
    assert!(Membership::new(MembershipConfig::new("g"), "t", protocols(&[""])).is_err());
}

#[test]
fn reasons_are_truncated_to_255_characters() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    h.member.request_rejoin(h.at(ms(40)), "x".repeat(400));
    let join = h.expect(ms(40));
    let Request::JoinGroup(req) = &join.request else {
        panic!()
    };
    assert_eq!(req.reason.as_ref().map(|r| r.len()), Some(255));
}

#[test]
fn a_long_first_join_does_not_fence_the_new_member() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    // The group waits 20 s for a slow member; this member held no generation.
    h.respond(
        ms(20_000),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m0", vec![])),
    );
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Joined { .. }]
    ));
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(20_000)) + SESSION - MARGIN)
    );
    let sync = h.expect(ms(20_000));
    h.respond(ms(20_050), sync.tag, Response::SyncGroup(sync_ok(b"a")));
    assert_eq!(h.member.state(), MemberState::Stable);
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(20_000)) + SESSION - MARGIN)
    );
}

#[test]
fn self_fencing_while_rejoining_keeps_the_join_in_flight() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(
        ms(3030),
        hb.tag,
        heartbeat(Some(ResponseError::RebalanceInProgress)),
    );
    h.events();
    let join = h.expect(ms(3030));
    // The next heartbeat is never answered; the join waits for a slow member.
    let _unanswered = h.expect(ms(6020));
    let deadline = h.at(ms(3020)) + SESSION - MARGIN;
    assert_eq!(h.member.poll_timeout(), Some(deadline));
    h.member.handle_timeout(deadline);
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [MemberEvent::Lost {
                reason: LostReason::HeartbeatTimeout { .. },
                ..
            }]
        ),
        "{events:?}"
    );
    assert_eq!(h.member.state(), MemberState::Joining);
    assert!(h.member.lease().is_none());
    assert!(
        h.poll(ms(10_020)).is_none(),
        "no second JoinGroup, no heartbeat"
    );
    // The join completes: a new generation, counted from the join's receipt.
    h.respond(
        ms(15_000),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(2));
    assert_eq!(
        h.member.fence_deadline(),
        Some(h.at(ms(15_000)) + SESSION - MARGIN)
    );
}

#[test]
fn a_failed_assignment_rejoins_and_the_late_result_is_stale() {
    let mut h = Harness::dynamic();
    h.find_coordinator(ms(0), 1);
    let join = h.expect(ms(0));
    h.respond(
        ms(10),
        join.tag,
        Response::JoinGroup(join_ok(1, "m1", "m1", vec![("m1", b"a")])),
    );
    h.events();
    // The protocol's assign failed: the driver asks for a rejoin.
    h.member
        .request_rejoin(h.at(ms(20)), "assignment failed: no tasks");
    assert!(
        h.events().is_empty(),
        "no Revoked: nothing was assigned yet"
    );
    let join = h.expect(ms(20));
    assert!(matches!(join.request, Request::JoinGroup(_)));
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(1));
    assert_eq!(
        h.member.set_assignment(1, vec![]),
        Err(CommandError::StaleAssignment { generation_id: 1 })
    );
}

#[test]
fn a_per_key_find_coordinator_error_is_retried() {
    let mut h = Harness::dynamic();
    let fc = h.expect(ms(0));
    let r = FindCoordinatorResponse::default().with_coordinators(vec![
        WireCoordinator::default()
            .with_key(s("g"))
            .with_error_code(ResponseError::CoordinatorLoadInProgress.code()),
    ]);
    h.respond(ms(1), fc.tag, Response::FindCoordinator(r));
    assert!(h.member.coordinator().is_none());
    assert_eq!(h.member.poll_timeout(), Some(h.at(ms(101))));
    // A "success" without an address is no coordinator either.
    let fc = h.expect(ms(101));
    let r = FindCoordinatorResponse::default().with_node_id(BrokerId(-1));
    h.respond(ms(102), fc.tag, Response::FindCoordinator(r));
    assert!(h.member.coordinator().is_none());
    assert_eq!(h.member.state(), MemberState::FindingCoordinator);
}
