//! SyncGroup, Heartbeat, LeaveGroup and the views.

use kafka_protocol::error::ResponseError;

use super::super::{GroupState, SyncGroup};
use super::{Harness, join, sync};

#[test]
fn followers_wait_for_the_leader_and_left_out_members_get_empty_assignments() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(3);
    // Force a new generation: the leader rejoins, then everyone.
    let replies: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| h.join(join(id, &[("p", &format!("m{i}"))])))
        .collect();
    let answers: Vec<_> = replies
        .into_iter()
        .map(|r| h.join_answer(r).unwrap())
        .collect();
    let generation = {
        assert_eq!(answers[0].generation_id, generation + 1);
        generation + 1
    };
    assert_eq!(answers[0].members.len(), 3, "the leader sees every member");
    assert!(answers[1].members.is_empty() && answers[2].members.is_empty());
    let f1 = h.sync(sync(&ids[1], generation, &[]));
    let f2 = h.sync(sync(&ids[2], generation, &[]));
    assert!(
        h.sync_answer(f1).is_none(),
        "a follower waits for the leader"
    );
    assert_eq!(
        h.heartbeat(&ids[1], generation),
        None,
        "heartbeats are fine meanwhile"
    );
    let leader = h.sync(sync(
        &ids[0],
        generation,
        &[(&ids[0], "a0"), (&ids[1], "a1"), ("stranger", "x")],
    ));
    assert_eq!(&h.sync_answer(leader).unwrap().assignment[..], b"a0");
    let r1 = h.sync_answer(f1).unwrap();
    assert_eq!(r1.error, None);
    assert_eq!(&r1.assignment[..], b"a1");
    assert_eq!(r1.protocol_name.as_deref(), Some("p"));
    let r2 = h.sync_answer(f2).unwrap();
    assert_eq!(r2.error, None);
    assert!(
        r2.assignment.is_empty(),
        "left out by the leader: empty assignment"
    );
    assert_eq!(h.state(), GroupState::Stable);
    // In Stable a SyncGroup just returns the stored assignment.
    let again = h.sync(sync(&ids[1], generation, &[]));
    assert_eq!(&h.sync_answer(again).unwrap().assignment[..], b"a1");
    let d = h.c.describe("g");
    assert_eq!(d.protocol, "p");
    assert_eq!(d.members.len(), 3);
    let m1 = d.members.iter().find(|m| m.member_id == ids[1]).unwrap();
    assert_eq!(&m1.assignment[..], b"a1");
    assert_eq!(&m1.metadata[..], b"m1");
}

#[test]
fn sync_errors_table() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let mut wrong_type = sync(&ids[1], generation, &[]);
    wrong_type.protocol_type = Some("consumer".into());
    let mut wrong_name = sync(&ids[1], generation, &[]);
    wrong_name.protocol_name = Some("range".into());
    let mut unknown_group = sync(&ids[1], generation, &[]);
    unknown_group.group_id = "other".into();
    let mut right_names = sync(&ids[1], generation, &[]);
    right_names.protocol_type = Some("kroupier".into());
    right_names.protocol_name = Some("p".into());
    let cases: [(SyncGroup, Option<ResponseError>); 6] = [
        (
            sync("nobody", generation, &[]),
            Some(ResponseError::UnknownMemberId),
        ),
        (
            sync(&ids[1], generation + 1, &[]),
            Some(ResponseError::IllegalGeneration),
        ),
        (wrong_type, Some(ResponseError::InconsistentGroupProtocol)),
        (wrong_name, Some(ResponseError::InconsistentGroupProtocol)),
        (unknown_group, Some(ResponseError::UnknownMemberId)),
        (right_names, None),
    ];
    for (req, expected) in cases {
        let r = h.sync(req.clone());
        assert_eq!(h.sync_answer(r).unwrap().error, expected, "{req:?}");
    }
    // During PreparingRebalance: REBALANCE_IN_PROGRESS.
    let rejoin = h.join(join(&ids[0], &[("p", "m0")]));
    assert!(h.join_answer(rejoin).is_none());
    let r = h.sync(sync(&ids[1], generation, &[]));
    assert_eq!(
        h.sync_answer(r).unwrap().error,
        Some(ResponseError::RebalanceInProgress)
    );
}

#[test]
fn heartbeat_answers_table() {
    let mut h = Harness::new();
    assert_eq!(
        h.heartbeat("x", 0),
        Some(ResponseError::UnknownMemberId),
        "unknown group"
    );
    let first = h.join_now(join("", &[("p", "m0")]));
    let id = first.member_id.clone();
    assert_eq!(h.state(), GroupState::CompletingRebalance);
    assert_eq!(h.heartbeat(&id, 1), None, "CompletingRebalance");
    assert_eq!(h.heartbeat(&id, 0), Some(ResponseError::IllegalGeneration));
    assert_eq!(
        h.heartbeat("nobody", 1),
        Some(ResponseError::UnknownMemberId)
    );
    let s = h.sync(sync(&id, 1, &[]));
    assert!(h.sync_answer(s).is_some());
    assert_eq!(h.heartbeat(&id, 1), None, "Stable");
    let other = h.join(join("", &[("p", "m1")]));
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(&id, 1),
        Some(ResponseError::RebalanceInProgress)
    );
    assert!(h.join_answer(other).is_none());
    // Everyone leaves: the group is Empty and heartbeats are UNKNOWN_MEMBER_ID.
    h.leave(&[(&id, None)]);
    let other = h.join_answer(other).unwrap();
    h.leave(&[(&other.member_id, None)]);
    assert_eq!(h.state(), GroupState::Empty);
    assert_eq!(
        h.heartbeat(&id, other.generation_id),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn leave_batch_reports_each_member_and_rebalances_once() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(3);
    let result = h.leave(&[(&ids[0], None), ("nobody", None), ("", None)]);
    assert_eq!(result.error, None);
    let errors: Vec<_> = result.members.iter().map(|m| m.error).collect();
    assert_eq!(
        errors,
        vec![
            None,
            Some(ResponseError::UnknownMemberId),
            Some(ResponseError::UnknownMemberId)
        ]
    );
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    // The leader left: the first member to rejoin leads the next generation.
    let b = h.join(join(&ids[2], &[("p", "m2")]));
    let c = h.join(join(&ids[1], &[("p", "m1")]));
    let b = h.join_answer(b).unwrap();
    let c = h.join_answer(c).unwrap();
    assert_eq!(b.generation_id, generation + 1);
    assert_eq!(b.leader, c.leader);
    assert!(b.leader == ids[1] || b.leader == ids[2]);
    assert_ne!(b.leader, ids[0]);
}

#[test]
fn leave_of_a_member_parked_in_join_answers_it() {
    let mut h = Harness::new();
    let (ids, _) = h.stable_group(2);
    let parked = h.join(join(&ids[1], &[("p", "changed")]));
    assert!(h.join_answer(parked).is_none());
    h.leave(&[(&ids[1], None)]);
    let r = h.join_answer(parked).unwrap();
    assert_eq!(r.error, Some(ResponseError::UnknownMemberId));
}

#[test]
fn list_and_describe_views() {
    let mut h = Harness::new();
    let mut other = join("", &[("q", "")]);
    other.group_id = "a-group".into();
    other.protocol_type = "consumer".into();
    h.join_now(other);
    let first = h.join_now(join("", &[("p", "m0")]));
    let groups = h.c.list();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].group_id, "a-group");
    assert_eq!(groups[0].protocol_type, "consumer");
    assert_eq!(groups[1].state, GroupState::CompletingRebalance);
    let d = h.c.describe("g");
    assert_eq!(d.protocol, "", "the protocol shows only when Stable");
    assert!(d.members[0].metadata.is_empty());
    assert_eq!(d.members[0].member_id, first.member_id);
    assert_eq!(d.members[0].client_id, "client");
    assert_eq!(h.c.describe("missing").state, GroupState::Dead);
}
