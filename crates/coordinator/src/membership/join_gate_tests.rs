//! The join gate on virtual time: after a revocation the JoinGroup waits for
//! `revocation_done` or for `rebalance_timeout − margin`, while heartbeats go on.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use super::tests::{Harness, heartbeat, join_ok, ms};
use super::*;

/// Default rebalance timeout (60 s) minus the default margin (3 s).
const BOUND: Duration = Duration::from_secs(57);

fn gated() -> Harness {
    let mut config = MembershipConfig::new("g");
    config.await_revocation = true;
    assert_eq!(config.revocation_bound(), BOUND);
    Harness::new(config)
}

/// A stable follower of generation 1 (SyncGroup sent at 20 ms) whose heartbeat at 3 020 ms is
/// answered REBALANCE_IN_PROGRESS at 3 030 ms: it is revoked and its join is held until the
/// bound, measured from the broker's earliest rebalance start (after the SyncGroup).
fn revoked(h: &mut Harness) {
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(
        ms(3030),
        hb.tag,
        heartbeat(Some(ResponseError::RebalanceInProgress)),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [MemberEvent::Revoked { generation, .. }] if generation.generation_id == 1),
        "{events:?}"
    );
    assert_eq!(h.member.join_held(), Some((1, h.at(ms(20) + BOUND))));
}

fn is_join(out: &Outgoing) -> bool {
    matches!(out.request, Request::JoinGroup(_))
}

fn is_heartbeat_of(out: &Outgoing, generation: i32) -> bool {
    matches!(&out.request, Request::Heartbeat(r) if r.generation_id == generation)
}

#[test]
fn the_join_waits_for_the_ack_and_heartbeats_go_on() {
    let mut h = gated();
    revoked(&mut h);
    assert!(h.poll(ms(3030)).is_none(), "no JoinGroup before the ack");
    assert_eq!(h.member.state(), MemberState::Unjoined);
    assert_eq!(
        h.member.poll_timeout(),
        Some(h.at(ms(6020))),
        "next heartbeat"
    );

    // The held generation keeps heartbeating, and each success extends its lease.
    for t in [6020, 9020] {
        let hb = h.expect(ms(t));
        assert!(is_heartbeat_of(&hb, 1), "{:?}", hb.request);
        h.respond(
            ms(t + 10),
            hb.tag,
            heartbeat(Some(ResponseError::RebalanceInProgress)),
        );
        assert!(h.poll(ms(t + 10)).is_none());
        assert_eq!(
            h.member.lease().map(|l| l.valid_until),
            Some(h.at(ms(t)) + Duration::from_secs(7))
        );
    }
    assert!(h.events().is_empty());

    // An ack for another generation does not open the gate.
    h.member.revocation_done(h.at(ms(9500)), 0);
    assert!(h.poll(ms(9500)).is_none());
    h.member.revocation_done(h.at(ms(9500)), 1);
    assert_eq!(h.member.join_held(), None);
    let join = h.expect(ms(9500));
    let Request::JoinGroup(req) = &join.request else {
        panic!("{:?}", join.request)
    };
    assert!(
        req.reason
            .as_ref()
            .is_some_and(|r| r.as_str().contains("rebalancing"))
    );
    h.respond(
        ms(9600),
        join.tag,
        Response::JoinGroup(join_ok(2, "m1", "m0", vec![])),
    );
    assert_eq!(h.member.generation().map(|g| g.generation_id), Some(2));
}

#[test]
fn without_an_ack_the_join_goes_out_at_the_bound() {
    let mut h = gated();
    revoked(&mut h);
    let bound = ms(20) + BOUND;
    // Heartbeats every interval until the bound; never a JoinGroup.
    let mut t = ms(6020);
    while t < bound {
        let hb = h.expect(t);
        assert!(is_heartbeat_of(&hb, 1), "at {t:?}: {:?}", hb.request);
        h.respond(
            t + ms(5),
            hb.tag,
            heartbeat(Some(ResponseError::RebalanceInProgress)),
        );
        assert!(h.poll(t + ms(5)).is_none(), "at {t:?}");
        t += Duration::from_secs(3);
    }
    assert!(h.poll(bound - ms(1)).is_none());
    assert_eq!(h.member.poll_timeout(), Some(h.at(bound)));
    h.member.handle_timeout(h.at(bound));
    let join = h.expect(bound);
    assert!(is_join(&join), "{:?}", join.request);
    // The bound is also where the broker could start dropping a member whose JoinGroup had not
    // arrived: the work still running is stopped (self-fencing), and the member rejoins.
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [MemberEvent::Lost {
                reason: LostReason::RebalanceTimeout { .. },
                ..
            }]
        ),
        "{events:?}"
    );
    assert_eq!(h.member.join_held(), None);
    assert_eq!(h.member.generation(), None);
}

#[test]
fn a_lost_generation_opens_the_gate_at_once() {
    let mut h = gated();
    revoked(&mut h);
    let hb = h.expect(ms(6020));
    h.respond(
        ms(6030),
        hb.tag,
        heartbeat(Some(ResponseError::IllegalGeneration)),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [MemberEvent::Lost { .. }]),
        "{events:?}"
    );
    assert_eq!(h.member.join_held(), None);
    assert!(is_join(&h.expect(ms(6030))));
}

#[test]
fn without_the_gate_the_member_rejoins_at_once() {
    let mut h = Harness::dynamic();
    h.stable_follower(1);
    let hb = h.expect(ms(3020));
    h.respond(
        ms(3030),
        hb.tag,
        heartbeat(Some(ResponseError::RebalanceInProgress)),
    );
    assert_eq!(h.member.join_held(), None);
    assert!(is_join(&h.expect(ms(3030))));
}
