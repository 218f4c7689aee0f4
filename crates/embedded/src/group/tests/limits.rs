//! The coordinator's limits: the largest rebalance timeout, the number of groups, and how long
//! an empty group is kept.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use super::super::{GroupConfig, GroupState, JoinGroup, LeaveGroup, LeavingMember};
use super::{Harness, SESSION_MS, join, ms, sync};

#[test]
fn a_rebalance_timeout_of_weeks_is_refused_by_default() {
    let mut h = Harness::new();
    let mut req = join("", &[("p", "")]);
    req.rebalance_timeout_ms = 14 * 24 * 3600 * 1000;
    assert_eq!(
        h.join_now(req).error,
        Some(ResponseError::InvalidSessionTimeout)
    );
    assert!(!h.c.contains("g"), "a refused join creates no group");
}

#[test]
fn the_rebalance_timeout_bound_is_inclusive_and_configurable() {
    let config = GroupConfig {
        max_rebalance_timeout: Duration::from_secs(60),
        ..GroupConfig::default()
    };
    let mut h = Harness::with_config(config);
    let mut req = join("", &[("p", "")]);
    req.rebalance_timeout_ms = 60_001;
    assert_eq!(
        h.join_now(req.clone()).error,
        Some(ResponseError::InvalidSessionTimeout)
    );
    req.rebalance_timeout_ms = 60_000;
    let joined = h.join_now(req.clone());
    assert_eq!(joined.error, None);
    // A member already in the group cannot raise it past the bound either.
    req.member_id = joined.member_id;
    req.rebalance_timeout_ms = i32::MAX;
    assert_eq!(
        h.join_now(req).error,
        Some(ResponseError::InvalidSessionTimeout)
    );
}

#[test]
fn a_zero_rebalance_timeout_bound_is_refused() {
    let config = GroupConfig {
        max_rebalance_timeout: Duration::ZERO,
        ..GroupConfig::default()
    };
    assert!(config.validate().is_err());
}

fn retention_config() -> GroupConfig {
    GroupConfig {
        empty_group_retention: Duration::from_secs(60),
        ..GroupConfig::default()
    }
}

#[test]
fn an_empty_group_is_deleted_once_the_retention_has_passed() {
    let mut h = Harness::with_config(retention_config());
    let (ids, _) = h.stable_group(2);
    let left = h.leave(&[(&ids[0], None), (&ids[1], None)]);
    assert!(left.members.iter().all(|m| m.error.is_none()));
    assert_eq!(h.state(), GroupState::Empty);
    assert_eq!(h.c.poll_timeout(), Some(h.now + Duration::from_secs(60)));
    h.advance(Duration::from_millis(59_999));
    assert_eq!(h.state(), GroupState::Empty, "kept during the retention");
    h.advance(Duration::from_millis(1));
    assert!(!h.c.contains("g"));
    let described = h.c.describe("g");
    assert_eq!(described.state, GroupState::Dead);
    assert!(described.members.is_empty());
    assert!(h.c.list().is_empty());
    assert_eq!(h.c.poll_timeout(), None);
}

#[test]
fn a_group_emptied_by_session_expiry_is_deleted_too() {
    let mut h = Harness::with_config(retention_config());
    let _ = h.stable_group(1);
    h.advance(ms(SESSION_MS));
    assert_eq!(h.state(), GroupState::Empty);
    h.advance(Duration::from_secs(60));
    assert!(!h.c.contains("g"));
}

#[test]
fn a_member_joining_an_empty_group_cancels_its_deletion() {
    let mut h = Harness::with_config(retention_config());
    let (ids, generation) = h.stable_group(1);
    h.leave(&[(&ids[0], None)]);
    h.advance(Duration::from_secs(30));
    let joined = h.join_now(join("", &[("p", "again")]));
    assert_eq!(joined.error, None);
    assert_eq!(
        joined.generation_id,
        generation + 2,
        "the same group: its generation goes on"
    );
    let synced = h.sync(sync(&joined.member_id, joined.generation_id, &[]));
    assert!(h.sync_answer(synced).is_some());
    for _ in 0..20 {
        h.advance(Duration::from_secs(5));
        assert_eq!(h.heartbeat(&joined.member_id, joined.generation_id), None);
    }
    assert_eq!(h.state(), GroupState::Stable);
}

#[test]
fn a_pending_member_keeps_an_empty_group() {
    let mut h = Harness::with_config(retention_config());
    let (ids, _) = h.stable_group(1);
    h.leave(&[(&ids[0], None)]);
    h.advance(Duration::from_secs(59));
    let mut req = join("", &[("p", "")]);
    req.require_known_member_id = true;
    req.session_timeout_ms = 20_000;
    assert_eq!(h.join_now(req).error, Some(ResponseError::MemberIdRequired));
    h.advance(Duration::from_secs(1));
    assert!(
        h.c.contains("g"),
        "a member id was handed out for this group"
    );
    h.advance(Duration::from_secs(19));
    assert!(
        h.c.contains("g"),
        "the retention restarts when the pending member expires"
    );
    h.advance(Duration::from_secs(60));
    assert!(!h.c.contains("g"));
}

fn join_group(group_id: &str) -> JoinGroup {
    let mut req = join("", &[("p", "")]);
    req.group_id = group_id.into();
    req
}

#[test]
fn a_join_that_would_create_a_group_over_the_cap_is_refused_with_policy_violation() {
    let config = GroupConfig {
        max_groups: 2,
        ..retention_config()
    };
    let mut h = Harness::with_config(config);
    let a = h.join_now(join_group("a"));
    assert_eq!(a.error, None);
    assert_eq!(h.join_now(join_group("b")).error, None);
    let refused = h.join_now(join_group("c"));
    assert_eq!(refused.error, Some(ResponseError::PolicyViolation));
    assert!(!h.c.contains("c"), "no group is created over the cap");
    assert_eq!(h.c.list().len(), 2);
    let second = h.join(join_group("a"));
    assert!(
        h.join_answer(second).is_none(),
        "an existing group still takes members: this one waits for the rebalance"
    );
    // `a` empties; it counts until it is deleted.
    h.c.handle_leave(
        h.now,
        LeaveGroup {
            group_id: "a".into(),
            members: vec![LeavingMember {
                member_id: a.member_id,
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    let second = h.join_answer(second).expect("the rebalance completes");
    h.c.handle_leave(
        h.now,
        LeaveGroup {
            group_id: "a".into(),
            members: vec![LeavingMember {
                member_id: second.member_id,
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    assert_eq!(h.c.describe("a").state, GroupState::Empty);
    assert_eq!(
        h.join_now(join_group("c")).error,
        Some(ResponseError::PolicyViolation)
    );
    h.advance(Duration::from_secs(60));
    assert!(!h.c.contains("a"));
    assert_eq!(h.join_now(join_group("c")).error, None);
}

#[test]
fn a_zero_group_cap_is_refused() {
    let config = GroupConfig {
        max_groups: 0,
        ..GroupConfig::default()
    };
    assert!(config.validate().is_err());
}
