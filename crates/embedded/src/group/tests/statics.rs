//! Static membership (KIP-345): replacement without a rebalance, fencing, admin removal.

use kafka_protocol::error::ResponseError;

use super::super::{GroupState, Heartbeat, JoinGroup};
use super::{Harness, join, sync};

pub(super) fn static_join(instance: &str, member_id: &str, metadata: &str) -> JoinGroup {
    let mut req = join(member_id, &[("p", metadata)]);
    req.group_instance_id = Some(instance.into());
    req.require_known_member_id = true;
    req
}

/// Two static members `i0` (leader) and `i1`, stable; returns their ids and the generation.
pub(super) fn stable_static_pair(h: &mut Harness) -> (String, String, i32) {
    let a = h.join_now(static_join("i0", "", "m0"));
    assert_eq!(a.error, None, "static members skip MEMBER_ID_REQUIRED");
    assert!(a.member_id.starts_with("i0-"));
    let s = h.sync(sync(&a.member_id, a.generation_id, &[]));
    assert!(h.sync_answer(s).is_some());
    let b = h.join(static_join("i1", "", "m1"));
    let a2 = h.join(static_join("i0", &a.member_id, "m0"));
    let a2 = h.join_answer(a2).unwrap();
    let b = h.join_answer(b).unwrap();
    let generation = a2.generation_id;
    let fb = h.sync(sync(&b.member_id, generation, &[]));
    let fa = h.sync(sync(
        &a.member_id,
        generation,
        &[(&a.member_id, "A"), (&b.member_id, "B")],
    ));
    assert!(h.sync_answer(fa).is_some() && h.sync_answer(fb).is_some());
    assert_eq!(h.state(), GroupState::Stable);
    (a.member_id, b.member_id, generation)
}

pub(super) fn static_heartbeat(
    h: &mut Harness,
    instance: &str,
    member: &str,
    generation: i32,
) -> Option<ResponseError> {
    let req = Heartbeat {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: Some(instance.into()),
    };
    h.c.handle_heartbeat(h.now, &req)
}

#[test]
fn restarted_static_follower_replaces_its_old_id_without_a_rebalance() {
    let mut h = Harness::new();
    let (_, b, generation) = stable_static_pair(&mut h);
    let r = h.join_now(static_join("i1", "", "m1"));
    assert_eq!(r.error, None);
    assert_ne!(r.member_id, b);
    assert_eq!(r.generation_id, generation, "no new generation");
    assert!(r.members.is_empty());
    assert!(!r.skip_assignment);
    assert_eq!(h.state(), GroupState::Stable);
    // The new id syncs and gets the old assignment; the old id is fenced.
    let s = h.sync(SyncGroupExt::static_sync("i1", &r.member_id, generation));
    assert_eq!(&h.sync_answer(s).unwrap().assignment[..], b"B");
    assert_eq!(
        static_heartbeat(&mut h, "i1", &b, generation),
        Some(ResponseError::FencedInstanceId)
    );
    assert_eq!(
        static_heartbeat(&mut h, "i1", &r.member_id, generation),
        None
    );
    let stale = h.join_now(static_join("i1", &b, "m1"));
    assert_eq!(stale.error, Some(ResponseError::FencedInstanceId));
}

#[test]
fn restarted_static_leader_is_told_to_skip_the_assignment() {
    let mut h = Harness::new();
    let (a, _, generation) = stable_static_pair(&mut h);
    let r = h.join_now(static_join("i0", "", "m0"));
    assert_eq!(r.generation_id, generation);
    assert_eq!(r.leader, r.member_id, "leadership moves to the new id");
    assert_ne!(r.member_id, a);
    assert_eq!(r.members.len(), 2);
    assert!(r.skip_assignment);
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn restarted_static_member_with_an_extra_protocol_keeps_the_generation_when_the_vote_holds() {
    let mut h = Harness::new();
    let (_, _, _) = stable_static_pair(&mut h);
    let mut req = static_join("i1", "", "m1");
    req.protocols.insert(
        0,
        super::super::Protocol {
            name: "q".into(),
            metadata: Default::default(),
        },
    );
    let r = h.join(req);
    // The vote is still `p` (i0 only offers p): no rebalance.
    assert!(h.join_answer(r).is_some());
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn static_members_are_kept_through_a_rebalance_they_miss() {
    let mut h = Harness::new();
    let (a, b, generation) = stable_static_pair(&mut h);
    let r = h.join(static_join("i0", &a, "m0-changed"));
    h.advance(super::ms(super::REBALANCE_MS));
    let r = h
        .join_answer(r)
        .expect("completes at the rebalance timeout");
    assert_eq!(r.generation_id, generation + 1);
    assert_eq!(
        r.members.len(),
        2,
        "the static member that did not rejoin stays"
    );
    assert!(h.c.describe("g").members.iter().any(|m| m.member_id == b));
}

#[test]
fn admin_removal_by_instance_id_and_fenced_leave() {
    let mut h = Harness::new();
    let (a, b, _) = stable_static_pair(&mut h);
    let fenced = h.leave(&[("someone-else", Some("i1"))]);
    assert_eq!(
        fenced.members[0].error,
        Some(ResponseError::FencedInstanceId)
    );
    let unknown = h.leave(&[("", Some("i9"))]);
    assert_eq!(
        unknown.members[0].error,
        Some(ResponseError::UnknownMemberId)
    );
    let removed = h.leave(&[("", Some("i1"))]);
    assert_eq!(removed.members[0].error, None);
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    let r = h.join_now(static_join("i0", &a, "m0"));
    assert_eq!(r.members.len(), 1);
    assert!(r.members.iter().all(|m| m.member_id != b));
}

/// A SyncGroup from a static member.
struct SyncGroupExt;

impl SyncGroupExt {
    fn static_sync(instance: &str, member: &str, generation: i32) -> super::super::SyncGroup {
        let mut req = sync(member, generation, &[]);
        req.group_instance_id = Some(instance.into());
        req
    }
}
