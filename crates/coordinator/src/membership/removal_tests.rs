//! Every way Kafka removes a member while its heartbeats succeed, on virtual time: the lease
//! must end before the broker can hand the member's work to someone else.

use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use super::tests::{Harness, heartbeat, join_ok, ms, sync_ok};
use super::*;

const SESSION: Duration = Duration::from_secs(10);
/// Default margin: max(heartbeat interval 3 s, session / 10).
const MARGIN: Duration = Duration::from_secs(3);
/// Default rebalance timeout.
const REBALANCE: Duration = Duration::from_secs(60);

fn rebalancing() -> Option<ResponseError> {
    Some(ResponseError::RebalanceInProgress)
}

/// A stable follower of generation 1 (SyncGroup sent at 20 ms) whose heartbeat at 3 020 ms is
/// answered REBALANCE_IN_PROGRESS: it is revoked and its JoinGroup goes out at 3 030 ms.
/// Returns the JoinGroup.
fn rejoining(h: &mut Harness) -> Outgoing {
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(ms(3030), hb.tag, heartbeat(rebalancing()));
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Revoked { .. }]
    ));
    let join = h.expect(ms(3030));
    assert!(matches!(join.request, Request::JoinGroup(_)));
    join
}

/// Answers every heartbeat due from `from` until `until` with `error`, 10 ms after it is sent,
/// stopping early at the first event. Returns the events.
fn heartbeats_answered(
    h: &mut Harness,
    from: u64,
    until: u64,
    error: Option<ResponseError>,
) -> Vec<MemberEvent> {
    let mut t = from;
    while t <= until {
        let now = h.at(ms(t));
        h.member.handle_timeout(now);
        let events = h.events();
        if !events.is_empty() {
            return events;
        }
        if let Some(out) = h.member.poll_request(now) {
            assert!(
                matches!(out.request, Request::Heartbeat(_)),
                "{:?}",
                out.request
            );
            h.respond(ms(t + 10), out.tag, heartbeat(error));
            let events = h.events();
            if !events.is_empty() {
                return events;
            }
        }
        t += 10;
    }
    Vec::new()
}

fn lost_at(events: &[MemberEvent]) -> Instant {
    match events {
        [
            MemberEvent::Lost {
                reason: LostReason::RebalanceTimeout { deadline },
                ..
            },
        ] => *deadline,
        other => panic!("expected a loss to the rebalance bound, got {other:?}"),
    }
}

#[test]
fn a_dynamic_member_whose_join_never_arrives_fences_before_the_join_timeout() {
    let mut h = Harness::dynamic();
    let join = rejoining(&mut h);
    // The JoinGroup never reaches the broker; heartbeats keep being answered
    // REBALANCE_IN_PROGRESS. The rebalance started after the SyncGroup sent at 20 ms was
    // answered, so the broker may drop the member from 20 ms + rebalance timeout.
    let events = heartbeats_answered(&mut h, 3040, 70_000, rebalancing());
    let deadline = lost_at(&events);
    assert_eq!(deadline, h.at(ms(20)) + REBALANCE - MARGIN);
    assert!(h.member.lease().is_none());
    // The JoinGroup stays in flight: if it did arrive, it forms the next generation.
    assert_eq!(h.member.state(), MemberState::Joining);
    h.respond(
        ms(58_000),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(2));
}

#[test]
fn a_static_member_keeps_its_work_through_the_join_and_the_pending_sync() {
    let mut config = MembershipConfig::new("g");
    config.group_instance_id = Some("w1".into());
    let mut h = Harness::new(config);
    rejoining(&mut h);
    // Kafka keeps a static member that did not rejoin; the generation formed without it then
    // drops it after its pending-sync timeout: two rebalance timeouts after the start.
    assert!(heartbeats_answered(&mut h, 3040, 100_000, rebalancing()).is_empty());
    let events = heartbeats_answered(&mut h, 100_010, 130_000, rebalancing());
    assert_eq!(lost_at(&events), h.at(ms(20)) + REBALANCE * 2 - MARGIN);
}

#[test]
fn a_member_whose_sync_never_arrives_fences_before_the_pending_sync_timeout() {
    let mut h = Harness::dynamic();
    let join = rejoining(&mut h);
    // Another heartbeat answered REBALANCE_IN_PROGRESS: the join completes after 6 020 ms.
    assert!(heartbeats_answered(&mut h, 6020, 6020, rebalancing()).is_empty());
    h.respond(
        ms(7000),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Joined { .. }]
    ));
    let sync = h.expect(ms(7000));
    assert!(matches!(sync.request, Request::SyncGroup(_)));
    // The SyncGroup never arrives; heartbeats are answered NONE (COMPLETING_REBALANCE).
    let events = heartbeats_answered(&mut h, 7010, 80_000, None);
    assert_eq!(lost_at(&events), h.at(ms(6020)) + REBALANCE - MARGIN);
}

#[test]
fn a_sync_that_arrives_ends_the_pending_sync_bound() {
    let mut h = Harness::dynamic();
    let join = rejoining(&mut h);
    h.respond(
        ms(4000),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    h.events();
    let sync = h.expect(ms(4000));
    h.respond(ms(4010), sync.tag, Response::SyncGroup(sync_ok(b"a")));
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Assigned { .. }]
    ));
    assert_eq!(h.member.state(), MemberState::Stable);
    // Stable: heartbeats answered NONE extend the lease well past the old bounds.
    let events = heartbeats_answered(&mut h, 4020, 130_000, None);
    assert!(events.is_empty(), "{events:?}");
    assert!(
        h.member
            .fence_deadline()
            .is_some_and(|d| d > h.at(ms(130_000)))
    );
}

#[test]
fn a_newer_generation_seen_by_a_heartbeat_during_the_join_is_not_a_loss() {
    let mut h = Harness::dynamic();
    let join = rejoining(&mut h);
    let deadline = h.member.fence_deadline();
    // The broker completed the join (generation 2) and answers the heartbeat of generation 1,
    // sent on the other connection, before the JoinGroup response arrives.
    let hb = h.expect(ms(6020));
    h.respond(
        ms(6030),
        hb.tag,
        heartbeat(Some(ResponseError::IllegalGeneration)),
    );
    assert!(h.events().is_empty(), "the work is not stopped");
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(1));
    assert_eq!(
        h.member.fence_deadline(),
        deadline,
        "the lease is not extended"
    );
    assert!(
        h.poll(ms(9020)).is_none(),
        "no heartbeat for a superseded generation"
    );
    h.respond(
        ms(6040),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert!(matches!(
        h.events().as_slice(),
        [MemberEvent::Joined { .. }]
    ));
    let sync = h.expect(ms(6040));
    assert!(matches!(sync.request, Request::SyncGroup(_)));
    let hb = h.expect(ms(9040));
    assert!(matches!(&hb.request, Request::Heartbeat(r) if r.generation_id == 2));
}

/// A member rejoining (see [`rejoining`]) whose heartbeat sent at 6 020 ms is answered `error`.
fn rejoining_then_heartbeat(error: ResponseError) -> Harness {
    let mut h = Harness::dynamic();
    rejoining(&mut h);
    let hb = h.expect(ms(6020));
    h.respond(ms(6030), hb.tag, heartbeat(Some(error)));
    h
}

#[test]
fn a_superseded_generation_is_lost_at_its_deadline_if_the_join_never_completes() {
    let mut h = rejoining_then_heartbeat(ResponseError::IllegalGeneration);
    let deadline = h.member.fence_deadline().expect("a deadline");
    assert_eq!(deadline, h.at(ms(3020)) + SESSION - MARGIN);
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
}

#[test]
fn unknown_member_id_during_the_join_is_still_a_loss() {
    let mut h = rejoining_then_heartbeat(ResponseError::UnknownMemberId);
    assert!(matches!(h.events().as_slice(), [MemberEvent::Lost { .. }]));
}

#[test]
fn the_join_gate_is_bounded_from_the_last_settled_heartbeat() {
    let mut config = MembershipConfig::new("g");
    config.await_revocation = true;
    let mut h = Harness::new(config);
    h.stable_follower(1);
    // A heartbeat sent at 3 020 ms is answered NONE: the rebalance starts after it.
    assert!(heartbeats_answered(&mut h, 3020, 3020, None).is_empty());
    // The next one, sent at 6 020 ms, learns of the rebalance.
    let events = heartbeats_answered(&mut h, 6020, 6020, rebalancing());
    assert!(matches!(events.as_slice(), [MemberEvent::Revoked { .. }]));
    assert_eq!(
        h.member.join_held(),
        Some((1, h.at(ms(3020)) + REBALANCE - MARGIN)),
        "measured from the broker's earliest rebalance start, not from when the member learned"
    );
}

#[test]
fn a_slow_heartbeat_keeps_the_join_in_flight() {
    let mut h = Harness::dynamic();
    rejoining(&mut h);
    let hb = h.expect(ms(6020));
    assert_eq!(
        hb.timeout,
        h.member.config().request_timeout,
        "heartbeats wait request_timeout, as Kafka's clients do"
    );
    // Answered after more than a heartbeat interval: still an answer.
    h.respond(ms(9500), hb.tag, heartbeat(rebalancing()));
    assert_eq!(h.member.state(), MemberState::Joining);
    assert!(h.member.coordinator().is_some());
}
