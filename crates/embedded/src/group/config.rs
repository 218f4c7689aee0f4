//! The group coordinator's settings (Kafka's `group.*` broker configs).

use std::time::Duration;

/// Settings of the group state machine, named after Kafka's broker configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupConfig {
    /// `group.min.session.timeout.ms`. Default 1 s (Kafka: 6 s), so the demo fails over fast;
    /// a lower bound lets members with tiny timeouts flap on a loaded machine.
    pub(crate) min_session_timeout: Duration,
    /// `group.max.session.timeout.ms`. Default 30 min, as Kafka. A higher bound lets a dead member
    /// hold its work longer.
    pub(crate) max_session_timeout: Duration,
    /// The largest rebalance timeout a member may ask for; a JoinGroup above it is refused with
    /// INVALID_SESSION_TIMEOUT, which Kafka clients treat as fatal. Kafka bounds only the
    /// session timeout (`group.max.session.timeout.ms`) and takes any rebalance timeout up to
    /// `i32::MAX` ms (about 25 days), during which one member that never rejoins holds the whole
    /// group in PreparingRebalance. Default 30 min, as the session bound: a higher bound lets a
    /// slow member stall everyone longer, a lower one refuses clients that need long
    /// revocations.
    ///
    /// Refused rather than clamped: a clamped member would believe it has longer than it has,
    /// and be dropped from the group mid-rebalance with no hint why; a refusal names the problem
    /// at the first JoinGroup.
    pub(crate) max_rebalance_timeout: Duration,
    /// `group.initial.rebalance.delay.ms`: how long an empty group waits for more members before its
    /// first generation. Default 0 (Kafka: 3 s): fast tests and demo; a delay saves rebalances when
    /// many members start together.
    pub(crate) initial_rebalance_delay: Duration,
    /// How long a brand-new member may wait in a JoinGroup before it is dropped. Default 5 min
    /// (Kafka's hard-coded `CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`).
    pub(crate) new_member_join_timeout: Duration,
    /// How long a group stays after it became empty (no members, no member id handed out)
    /// before it is deleted; DescribeGroups then answers as for a group that never existed.
    /// Kafka deletes an empty group without offsets at its next cleanup pass
    /// (`offsets.retention.check.interval.ms`, 10 min); there are no offsets here. Default
    /// 10 min: longer keeps an empty group's generation (and what `kroupier describe` shows)
    /// longer, shorter frees the memory of groups no longer used sooner.
    pub(crate) empty_group_retention: Duration,
    /// How many groups may exist at once; a JoinGroup that would create one more is refused with
    /// POLICY_VIOLATION (Kafka has no such cap). Default 10,000: a bound on the memory that
    /// clients using ever new group ids can make the coordinator hold; raise it for tests that
    /// really run that many groups.
    pub(crate) max_groups: usize,
    /// `group.max.size`: members per group; more get GROUP_MAX_SIZE_REACHED. Default `usize::MAX`
    /// (Kafka: `Integer.MAX_VALUE`).
    pub(crate) max_group_size: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            min_session_timeout: Duration::from_secs(1),
            max_session_timeout: Duration::from_secs(30 * 60),
            max_rebalance_timeout: Duration::from_secs(30 * 60),
            initial_rebalance_delay: Duration::ZERO,
            new_member_join_timeout: Duration::from_secs(300),
            empty_group_retention: Duration::from_secs(600),
            max_groups: 10_000,
            max_group_size: usize::MAX,
        }
    }
}

/// A [`GroupConfig`] that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum GroupConfigError {
    /// The minimum session timeout is above the maximum.
    #[error(
        "min_session_timeout ({min:?}) is above max_session_timeout ({max:?}); lower the minimum or raise the maximum"
    )]
    SessionTimeoutBounds {
        /// The minimum.
        min: Duration,
        /// The maximum.
        max: Duration,
    },
    /// A zero maximum rebalance timeout refuses every member.
    #[error("max_rebalance_timeout is 0, so every JoinGroup would be refused; set it above 0")]
    ZeroRebalanceTimeout,
    /// A cap of zero groups refuses every JoinGroup.
    #[error("max_groups is 0, so no group could ever be created; set it to at least 1")]
    ZeroGroups,
    /// A group of zero members can never form.
    #[error("max_group_size is 0, so no member could ever join; set it to at least 1")]
    ZeroGroupSize,
}

impl GroupConfig {
    /// Checks that the settings can work together.
    pub(crate) fn validate(&self) -> Result<(), GroupConfigError> {
        if self.min_session_timeout > self.max_session_timeout {
            return Err(GroupConfigError::SessionTimeoutBounds {
                min: self.min_session_timeout,
                max: self.max_session_timeout,
            });
        }
        if self.max_rebalance_timeout.is_zero() {
            return Err(GroupConfigError::ZeroRebalanceTimeout);
        }
        if self.max_groups == 0 {
            return Err(GroupConfigError::ZeroGroups);
        }
        if self.max_group_size == 0 {
            return Err(GroupConfigError::ZeroGroupSize);
        }
        Ok(())
    }
}
