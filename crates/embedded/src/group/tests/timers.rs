//! Deadlines on virtual time: initial delay, join and sync deadlines, session expiry.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use super::super::{GroupConfig, GroupState};
use super::{Harness, REBALANCE_MS, SESSION_MS, join, ms, sync};

#[test]
fn initial_rebalance_delay_gathers_members_into_one_generation() {
    let config = GroupConfig {
        initial_rebalance_delay: Duration::from_secs(3),
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let a = h.join(join("", &[("p", "a")]));
    assert_eq!(h.c.poll_timeout(), Some(h.now + Duration::from_secs(3)));
    h.advance(Duration::from_secs(2));
    let b = h.join(join("", &[("p", "b")]));
    h.advance(Duration::from_secs(1));
    assert!(
        h.join_answer(a).is_none(),
        "a member joined during the delay: it is extended"
    );
    h.advance(Duration::from_secs(3));
    let a = h
        .join_answer(a)
        .expect("completes after the extended delay");
    let b = h.join_answer(b).unwrap();
    assert_eq!(a.generation_id, 1);
    assert_eq!(b.generation_id, 1);
    assert_eq!(a.members.len(), 2);
}

#[test]
fn initial_rebalance_delay_without_new_members_completes_once() {
    let config = GroupConfig {
        initial_rebalance_delay: Duration::from_secs(3),
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let a = h.join(join("", &[("p", "a")]));
    h.advance(Duration::from_millis(2_999));
    assert!(h.join_answer(a).is_none());
    h.advance(Duration::from_millis(1));
    assert_eq!(h.join_answer(a).unwrap().generation_id, 1);
}

#[test]
fn members_that_do_not_rejoin_by_the_rebalance_timeout_are_removed() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    // The follower changes its metadata; the leader never rejoins (it keeps heartbeating).
    let f = h.join(join(&ids[1], &[("p", "changed")]));
    for _ in 0..5 {
        h.advance(ms(REBALANCE_MS / 6));
        assert_eq!(
            h.heartbeat(&ids[0], generation),
            Some(ResponseError::RebalanceInProgress)
        );
    }
    assert!(h.join_answer(f).is_none());
    h.advance(ms(REBALANCE_MS / 6));
    let f = h
        .join_answer(f)
        .expect("the join deadline completes the phase");
    assert_eq!(f.generation_id, generation + 1);
    assert_eq!(
        f.leader, ids[1],
        "the old leader is gone; the member that rejoined leads"
    );
    assert_eq!(f.members.len(), 1);
    assert_eq!(
        h.heartbeat(&ids[0], generation),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn session_expiry_removes_a_silent_member_and_rebalances() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let step = ms(SESSION_MS / 4);
    for _ in 0..3 {
        h.advance(step);
        assert_eq!(h.heartbeat(&ids[0], generation), None);
    }
    assert_eq!(h.state(), GroupState::Stable);
    h.advance(step);
    assert_eq!(
        h.state(),
        GroupState::PreparingRebalance,
        "the silent member expired"
    );
    assert_eq!(
        h.heartbeat(&ids[0], generation),
        Some(ResponseError::RebalanceInProgress)
    );
    let r = h.join_now(join(&ids[0], &[("p", "m0")]));
    assert_eq!(r.generation_id, generation + 1);
    assert_eq!(r.members.len(), 1);
    assert_eq!(h.c.describe("g").members.len(), 1);
}

#[test]
fn a_parked_member_does_not_expire() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    // The follower rejoins and waits; the leader is slow but keeps heartbeating.
    let f = h.join(join(&ids[1], &[("p", "changed")]));
    h.advance(ms(SESSION_MS * 2));
    assert_eq!(
        h.heartbeat(&ids[0], generation),
        Some(ResponseError::UnknownMemberId),
        "the leader did not heartbeat: expired"
    );
    let f = h
        .join_answer(f)
        .expect("the leader's expiry completed the join");
    assert_eq!(f.error, None);
    assert_eq!(f.generation_id, generation + 1);
}

#[test]
fn members_that_do_not_sync_in_time_are_removed() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let a = h.join(join(&ids[0], &[("p", "m0")]));
    let b = h.join(join(&ids[1], &[("p", "m1")]));
    assert!(h.join_answer(a).is_some() && h.join_answer(b).is_some());
    let generation = generation + 1;
    let leader = h.sync(sync(&ids[0], generation, &[(&ids[0], "x")]));
    assert!(h.sync_answer(leader).is_some());
    assert_eq!(h.state(), GroupState::Stable);
    // The follower never syncs (it heartbeats, but that is not a SyncGroup).
    for _ in 0..5 {
        h.advance(ms(REBALANCE_MS / 6));
        assert_eq!(h.heartbeat(&ids[0], generation), None);
        assert_eq!(h.heartbeat(&ids[1], generation), None);
    }
    h.advance(ms(REBALANCE_MS / 6));
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(&ids[1], generation),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn a_new_member_that_waits_too_long_in_join_is_dropped() {
    let config = GroupConfig {
        new_member_join_timeout: Duration::from_secs(5),
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let (ids, generation) = h.stable_group(1);
    // A new member waits for the leader, which neither rejoins nor misses heartbeats for long.
    let new = h.join(join("", &[("p", "new")]));
    for _ in 0..5 {
        h.advance(Duration::from_secs(1));
        h.heartbeat(&ids[0], generation);
    }
    let r = h
        .join_answer(new)
        .expect("dropped at the new-member timeout");
    assert_eq!(r.error, Some(ResponseError::UnknownMemberId));
}

#[test]
fn poll_timeout_tracks_the_earliest_deadline() {
    let mut h = Harness::new();
    assert_eq!(h.c.poll_timeout(), None);
    let (ids, generation) = h.stable_group(1);
    assert_eq!(h.c.poll_timeout(), Some(h.now + ms(SESSION_MS)));
    h.advance(Duration::from_secs(1));
    assert_eq!(h.heartbeat(&ids[0], generation), None);
    assert_eq!(h.c.poll_timeout(), Some(h.now + ms(SESSION_MS)));
}
