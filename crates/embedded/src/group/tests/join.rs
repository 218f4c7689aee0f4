//! JoinGroup rules: validation, KIP-394, the protocol vote, rejoins in each state.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use super::super::{GroupConfig, GroupState};
use super::{Harness, join, sync};

#[test]
fn first_member_forms_generation_one_and_leads() {
    let mut h = Harness::new();
    let r = h.join_now(join("", &[("p", "meta")]));
    assert_eq!(r.error, None);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.leader, r.member_id);
    assert!(r.member_id.starts_with("client-"), "{}", r.member_id);
    assert_eq!(r.protocol_type.as_deref(), Some("kroupier"));
    assert_eq!(r.protocol_name.as_deref(), Some("p"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(&r.members[0].metadata[..], b"meta");
    assert_eq!(h.state(), GroupState::CompletingRebalance);
}

#[test]
fn validation_errors_table() {
    let mut no_type = join("", &[("p", "")]);
    no_type.protocol_type = String::new();
    let no_protocols = join("", &[]);
    let mut no_group = join("", &[("p", "")]);
    no_group.group_id = String::new();
    let mut too_short = join("", &[("p", "")]);
    too_short.session_timeout_ms = 999;
    let mut too_long = join("", &[("p", "")]);
    too_long.session_timeout_ms = 1_800_001;
    let mut negative = join("", &[("p", "")]);
    negative.session_timeout_ms = -1;
    let unknown_member = join("someone-1", &[("p", "")]);
    let cases = [
        (no_type, ResponseError::InconsistentGroupProtocol),
        (no_protocols, ResponseError::InconsistentGroupProtocol),
        (no_group, ResponseError::InvalidGroupId),
        (too_short, ResponseError::InvalidSessionTimeout),
        (too_long, ResponseError::InvalidSessionTimeout),
        (negative, ResponseError::InvalidSessionTimeout),
        (unknown_member, ResponseError::UnknownMemberId),
    ];
    for (req, expected) in cases {
        let mut h = Harness::new();
        let r = h.join_now(req.clone());
        assert_eq!(r.error, Some(expected), "{req:?}");
        assert_eq!(r.generation_id, -1);
        assert!(
            h.c.list().is_empty(),
            "a failed first join leaves no group behind"
        );
    }
}

#[test]
fn session_timeout_bounds_are_configurable() {
    let config = GroupConfig {
        min_session_timeout: Duration::from_secs(6),
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let mut req = join("", &[("p", "")]);
    req.session_timeout_ms = 5_999;
    assert_eq!(
        h.join_now(req.clone()).error,
        Some(ResponseError::InvalidSessionTimeout)
    );
    req.session_timeout_ms = 6_000;
    assert_eq!(h.join_now(req).error, None);
}

#[test]
fn member_id_required_then_join_with_it() {
    let mut h = Harness::new();
    let mut req = join("", &[("p", "")]);
    req.require_known_member_id = true;
    let first = h.join_now(req.clone());
    assert_eq!(first.error, Some(ResponseError::MemberIdRequired));
    assert!(!first.member_id.is_empty());
    assert_eq!(
        h.state(),
        GroupState::Empty,
        "a pending member is not a member"
    );
    req.member_id = first.member_id.clone();
    let second = h.join_now(req);
    assert_eq!(second.error, None);
    assert_eq!(second.member_id, first.member_id);
    assert_eq!(second.generation_id, 1);
}

#[test]
fn pending_member_holds_the_join_phase_until_it_joins() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(1);
    let mut req = join("", &[("p", "new")]);
    req.require_known_member_id = true;
    let pending = h.join_now(req.clone());
    assert_eq!(pending.error, Some(ResponseError::MemberIdRequired));
    // The leader rejoins: a rebalance that must wait for the pending member.
    let leader = h.join(join(&ids[0], &[("p", "m0")]));
    assert!(h.join_answer(leader).is_none());
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    req.member_id = pending.member_id.clone();
    let joined = h.join(req);
    let leader = h
        .join_answer(leader)
        .expect("join completes once the pending member joins");
    assert_eq!(leader.generation_id, generation + 1);
    assert_eq!(leader.members.len(), 2);
    assert_eq!(h.join_answer(joined).unwrap().generation_id, generation + 1);
}

#[test]
fn pending_member_expires_after_its_session_timeout() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(1);
    let mut req = join("", &[("p", "new")]);
    req.require_known_member_id = true;
    assert_eq!(h.join_now(req).error, Some(ResponseError::MemberIdRequired));
    let leader = h.join(join(&ids[0], &[("p", "m0")]));
    h.advance(super::ms(super::SESSION_MS) - Duration::from_millis(1));
    assert!(h.join_answer(leader).is_none());
    h.advance(Duration::from_millis(1));
    let leader = h
        .join_answer(leader)
        .expect("completes without the pending member");
    assert_eq!(leader.generation_id, generation + 1);
    assert_eq!(leader.members.len(), 1);
}

#[test]
fn protocol_vote_picks_the_most_preferred_common_protocol() {
    let mut h = Harness::new();
    let a = h.join_now(join("", &[("range", "a"), ("rr", "a"), ("sticky", "a")]));
    let lead = h.sync(sync(&a.member_id, a.generation_id, &[]));
    assert!(h.sync_answer(lead).is_some());
    let b = h.join(join("", &[("rr", "b"), ("range", "b")]));
    let c = h.join(join("", &[("rr", "c"), ("range", "c")]));
    let a2 = h.join(join(
        &a.member_id,
        &[("range", "a"), ("rr", "a"), ("sticky", "a")],
    ));
    let a2 = h.join_answer(a2).unwrap();
    assert_eq!(
        a2.protocol_name.as_deref(),
        Some("rr"),
        "two votes for rr, one for range"
    );
    assert!(
        a2.members.iter().all(|m| m.metadata.len() == 1),
        "metadata of the chosen protocol"
    );
    assert_eq!(
        h.join_answer(b).unwrap().protocol_name.as_deref(),
        Some("rr")
    );
    assert_eq!(
        h.join_answer(c).unwrap().protocol_name.as_deref(),
        Some("rr")
    );
}

#[test]
fn inconsistent_protocols_are_rejected_once_the_group_has_members() {
    let mut h = Harness::new();
    h.stable_group(1);
    let no_common = h.join_now(join("", &[("other", "")]));
    assert_eq!(
        no_common.error,
        Some(ResponseError::InconsistentGroupProtocol)
    );
    let mut other_type = join("", &[("p", "")]);
    other_type.protocol_type = "consumer".into();
    assert_eq!(
        h.join_now(other_type).error,
        Some(ResponseError::InconsistentGroupProtocol)
    );
    assert_eq!(
        h.state(),
        GroupState::Stable,
        "no rebalance for a rejected member"
    );
}

#[test]
fn follower_rejoin_in_stable_with_same_metadata_keeps_the_generation() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let r = h.join_now(join(&ids[1], &[("p", "m1")]));
    assert_eq!(r.error, None);
    assert_eq!(r.generation_id, generation);
    assert!(r.members.is_empty());
    assert_eq!(r.leader, ids[0]);
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn follower_rejoin_with_new_metadata_and_leader_rejoin_rebalance() {
    for (who, metadata) in [(1usize, "changed"), (0, "m0")] {
        let mut h = Harness::new();
        let (ids, generation) = h.stable_group(2);
        let r = h.join(join(&ids[who], &[("p", metadata)]));
        assert!(
            h.join_answer(r).is_none(),
            "member {who} waits for the rebalance"
        );
        assert_eq!(h.state(), GroupState::PreparingRebalance);
        assert_eq!(
            h.heartbeat(&ids[1 - who], generation),
            Some(ResponseError::RebalanceInProgress)
        );
        let other = 1 - who;
        let o = h.join(join(&ids[other], &[("p", &format!("m{other}"))]));
        assert_eq!(h.join_answer(r).unwrap().generation_id, generation + 1);
        assert_eq!(h.join_answer(o).unwrap().generation_id, generation + 1);
    }
}

#[test]
fn rejoin_during_completing_rebalance_with_same_metadata_gets_the_current_generation() {
    let mut h = Harness::new();
    let first = h.join_now(join("", &[("p", "m0")]));
    assert_eq!(h.state(), GroupState::CompletingRebalance);
    let again = h.join_now(join(&first.member_id, &[("p", "m0")]));
    assert_eq!(again.generation_id, first.generation_id);
    assert_eq!(again.members.len(), 1, "the leader gets the members again");
    assert_eq!(h.state(), GroupState::CompletingRebalance);
}

#[test]
fn group_max_size_is_enforced() {
    let config = GroupConfig {
        max_group_size: 1,
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    h.stable_group(1);
    let r = h.join_now(join("", &[("p", "")]));
    assert_eq!(r.error, Some(ResponseError::GroupMaxSizeReached));
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn a_group_whose_only_pending_member_expires_is_forgotten() {
    let mut h = Harness::new();
    let mut req = join("", &[("p", "")]);
    req.require_known_member_id = true;
    assert_eq!(h.join_now(req).error, Some(ResponseError::MemberIdRequired));
    assert_eq!(h.c.list().len(), 1);
    h.advance(super::ms(super::SESSION_MS));
    assert!(h.c.list().is_empty());
    assert_eq!(h.c.poll_timeout(), None);
}
