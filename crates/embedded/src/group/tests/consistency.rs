//! A static-member map that disagrees with the member list never panics and never parks a
//! request forever: the stale entry counts as an unknown instance.

use kafka_protocol::error::ResponseError;

use super::super::GroupState;
use super::statics::{stable_static_pair, static_heartbeat, static_join};
use super::{Harness, sync};

/// A stable static pair whose `i1` entry names a member the member list no longer holds.
fn stale_static_entry(h: &mut Harness) -> (String, String, i32) {
    let (a, b, generation) = stable_static_pair(h);
    let group = h.c.group_mut("g").expect("the group exists");
    assert!(group.members.remove(&b).is_some());
    assert_eq!(group.static_members.get("i1"), Some(&b));
    (a, b, generation)
}

#[test]
fn sync_from_a_stale_static_entry_is_unknown_member_not_a_panic() {
    let mut h = Harness::new();
    let (_, b, generation) = stale_static_entry(&mut h);
    let mut req = sync(&b, generation, &[]);
    req.group_instance_id = Some("i1".into());
    let reply = h.sync(req);
    let answer = h.sync_answer(reply).expect("answered at once");
    assert_eq!(answer.error, Some(ResponseError::UnknownMemberId));
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn heartbeat_from_a_stale_static_entry_is_unknown_member() {
    let mut h = Harness::new();
    let (_, b, generation) = stale_static_entry(&mut h);
    assert_eq!(
        static_heartbeat(&mut h, "i1", &b, generation),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn rejoin_from_a_stale_static_entry_is_answered_at_once() {
    let mut h = Harness::new();
    let (_, b, _) = stale_static_entry(&mut h);
    let reply = h.join(static_join("i1", &b, "m1-changed"));
    let answer = h
        .join_answer(reply)
        .expect("answered at once, not parked for a member that does not exist");
    assert_eq!(answer.error, Some(ResponseError::UnknownMemberId));
}

#[test]
fn restart_over_a_stale_static_entry_joins_as_a_new_member() {
    let mut h = Harness::new();
    let (a, _, generation) = stale_static_entry(&mut h);
    let restarted = h.join(static_join("i1", "", "m1"));
    assert!(
        h.join_answer(restarted).is_none(),
        "a new member: the group rebalances"
    );
    let leader = h.join_now(static_join("i0", &a, "m0"));
    assert_eq!(leader.error, None);
    assert_eq!(leader.generation_id, generation + 1);
    let restarted = h.join_answer(restarted).expect("joined the new generation");
    assert_eq!(restarted.error, None);
    assert!(restarted.member_id.starts_with("i1-"));
    assert_eq!(leader.members.len(), 2);
}

#[test]
fn leave_by_a_stale_static_entry_is_unknown_and_starts_no_rebalance() {
    let mut h = Harness::new();
    let _ = stale_static_entry(&mut h);
    let left = h.leave(&[("", Some("i1"))]);
    assert_eq!(left.members[0].error, Some(ResponseError::UnknownMemberId));
    assert_eq!(h.state(), GroupState::Stable);
}
