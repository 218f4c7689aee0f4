//! The coordinator's limits: the largest rebalance timeout, the number of groups, and how long
//! an empty group is kept.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use super::super::GroupConfig;
use super::{Harness, join};

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
