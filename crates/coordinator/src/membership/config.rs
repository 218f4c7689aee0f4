//! Timeouts and identity of one group member, validated when the member is built.

use std::time::Duration;

use thiserror::Error;

/// Configuration of one member of a Kafka group.
///
/// Plain data with documented defaults; its check runs when the
/// `Membership` is built, so a bad value fails early with an error that
/// names the field and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipConfig {
    /// The group id (`group.id`). No default: it must be set and non-empty.
    pub group_id: String,
    /// Static membership (KIP-345, `group.instance.id`). Default `None` (dynamic member).
    /// A static member that restarts within its session timeout gets its old assignment back
    /// without a rebalance, but a member that is gone for good holds its work for a whole
    /// session timeout. Charset `[a-zA-Z0-9._-]`, at most 249 characters.
    pub group_instance_id: Option<String>,
    /// `session.timeout.ms`. Default 10 s (Kafka Connect's default). The broker removes a member
    /// that has not heartbeated for this long; shorter means faster failover but more false
    /// removals on GC pauses or slow networks.
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms`. Default 3 s. Must be below the session timeout minus the
    /// self-fencing margin; about a third of the session timeout is Kafka's advice.
    pub heartbeat_interval: Duration,
    /// `rebalance.timeout.ms`. Default 60 s. How long the broker waits for all members to rejoin
    /// (and the leader to send the assignment). Must be at least the session timeout; longer
    /// tolerates slow revocations, but a member that never rejoins stalls the group this long.
    pub rebalance_timeout: Duration,
    /// First backoff after a retriable error: [`ClusterConfig::retry_backoff`](crate::connection::ClusterConfig::retry_backoff),
    /// copied here when the member is built (one setting, one home).
    pub(crate) retry_backoff: Duration,
    /// Cap of the exponential backoff: [`ClusterConfig::retry_backoff_max`](crate::connection::ClusterConfig::retry_backoff_max),
    /// copied here when the member is built.
    pub(crate) retry_backoff_max: Duration,
    /// [`ConnectionConfig::request_timeout`](crate::connection::ConnectionConfig::request_timeout),
    /// copied here when the member is built: the timeout of FindCoordinator and LeaveGroup.
    /// JoinGroup and SyncGroup use `max(request_timeout, rebalance_timeout + 5 s)`, as Kafka's
    /// JoinGroup does, because the broker holds them until the rebalance completes. Heartbeats
    /// use `request_timeout` too, as Kafka's clients do: a heartbeat answered late is still an
    /// answer, and timing it out early would close the coordinator connections and abandon a
    /// JoinGroup or SyncGroup in flight. A heartbeat that never comes back is covered by
    /// self-fencing, which does not wait for any timeout.
    pub(crate) request_timeout: Duration,
    /// Self-fencing margin. Default `None` = `max(heartbeat_interval, session_timeout / 10)`.
    /// The member reports `Lost` at `last successful heartbeat's send time + session_timeout −
    /// margin`; the margin is the time left to stop work before the broker may give it to someone
    /// else. Larger is safer but fences sooner on a transient network blip.
    pub self_fence_margin: Option<Duration>,
    /// The broker's `group.min.session.timeout.ms`. Default 6 s (Kafka's default). Lower it only
    /// when the broker is configured lower (test brokers often use 1 s).
    pub min_session_timeout: Duration,
    /// The broker's `group.max.session.timeout.ms`. Default 30 min (Kafka's default).
    pub max_session_timeout: Duration,
    /// Whether a *static* member sends LeaveGroup when it leaves. Default `false`, as in Kafka:
    /// a static member's restart then causes no rebalance, but a static member that is gone for
    /// good keeps its work idle until its session timeout. Dynamic members always leave.
    pub leave_group_on_close_static: bool,
    /// The join gate: whether a rebalance that starts while the member is stable holds its
    /// JoinGroup until `Membership::revocation_done`
    /// (the user's revoked work has stopped, as Kafka Connect's `onJoinPrepare` waits), or
    /// until `rebalance_timeout − self-fencing margin` has passed since the revocation, so the
    /// broker never drops the member for joining late. Heartbeats go on meanwhile. Default
    /// `false`: rejoin at once, for owners that need not stop work before the rejoin.
    /// `true` guarantees the revoked work stopped before anyone else can be given it, at the
    /// price of a rebalance that lasts as long as the slowest revocation.
    pub await_revocation: bool,
}

impl Default for MembershipConfig {
    fn default() -> Self {
        Self {
            group_id: String::new(),
            group_instance_id: None,
            session_timeout: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(3),
            rebalance_timeout: Duration::from_secs(60),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            self_fence_margin: None,
            min_session_timeout: Duration::from_secs(6),
            max_session_timeout: Duration::from_secs(30 * 60),
            leave_group_on_close_static: false,
            await_revocation: false,
        }
    }
}

/// Kafka's `JOIN_GROUP_TIMEOUT_LAPSE`: JoinGroup waits this much longer than the rebalance timeout.
const JOIN_GROUP_TIMEOUT_LAPSE: Duration = Duration::from_secs(5);

impl MembershipConfig {
    /// A default configuration for `group_id`.
    pub fn new(group_id: impl Into<String>) -> Self {
        Self {
            group_id: group_id.into(),
            ..Self::default()
        }
    }

    /// This configuration with the request timeout and retry backoff of `cluster`, their one
    /// home: the membership's requests wait and back off as the cluster client's do.
    pub(crate) fn with_cluster(mut self, cluster: &crate::connection::ClusterConfig) -> Self {
        self.request_timeout = cluster.connection.request_timeout;
        self.retry_backoff = cluster.retry_backoff;
        self.retry_backoff_max = cluster.retry_backoff_max;
        self
    }

    /// The self-fencing margin in effect (the configured one, or the default formula).
    pub fn effective_self_fence_margin(&self) -> Duration {
        self.self_fence_margin
            .unwrap_or_else(|| self.heartbeat_interval.max(self.session_timeout / 10))
    }

    unstable_pub! {
        /// How long the join gate holds a JoinGroup at most after a revocation:
        /// `rebalance_timeout − self-fencing margin` (zero if the margin is larger).
        pub fn revocation_bound(&self) -> Duration {
            self.rebalance_timeout
                .saturating_sub(self.effective_self_fence_margin())
        }
    }

    /// The timeout the driver should give a JoinGroup or SyncGroup request.
    pub(crate) fn join_group_timeout(&self) -> Duration {
        self.request_timeout
            .max(self.rebalance_timeout + JOIN_GROUP_TIMEOUT_LAPSE)
    }

    /// The timeout the driver should give a Heartbeat request.
    pub(crate) fn heartbeat_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Checks every field and their relations; the error names the field and what to change
    /// ([`MemberConfig::validate`](crate::driver::MemberConfig::validate) runs it).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field at fault ([`ConfigError::field`]).
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.check().map_err(ConfigError)
    }

    fn check(&self) -> Result<(), Fault> {
        if self.group_id.is_empty() {
            return Err(Fault::EmptyGroupId);
        }
        if let Some(id) = &self.group_instance_id {
            let valid_chars = id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if id.is_empty() || id.len() > 249 || !valid_chars || id == "." || id == ".." {
                return Err(Fault::InvalidGroupInstanceId(id.clone()));
            }
        }
        for (field, value) in [
            ("session_timeout", self.session_timeout),
            ("heartbeat_interval", self.heartbeat_interval),
            ("rebalance_timeout", self.rebalance_timeout),
            ("retry_backoff", self.retry_backoff),
            ("request_timeout", self.request_timeout),
        ] {
            if value.is_zero() {
                return Err(Fault::Zero(field));
            }
            if value.as_millis() > i32::MAX as u128 {
                return Err(Fault::TooLong(field));
            }
        }
        if self.retry_backoff_max < self.retry_backoff {
            return Err(Fault::BackoffMaxBelowBackoff);
        }
        if self.session_timeout < self.min_session_timeout
            || self.session_timeout > self.max_session_timeout
        {
            return Err(Fault::SessionTimeoutOutOfBounds {
                session: self.session_timeout,
                min: self.min_session_timeout,
                max: self.max_session_timeout,
            });
        }
        if self.heartbeat_interval >= self.session_timeout {
            return Err(Fault::HeartbeatNotBelowSession {
                heartbeat: self.heartbeat_interval,
                session: self.session_timeout,
            });
        }
        if self.rebalance_timeout < self.session_timeout {
            return Err(Fault::RebalanceBelowSession {
                rebalance: self.rebalance_timeout,
                session: self.session_timeout,
            });
        }
        let margin = self.effective_self_fence_margin();
        if margin + self.heartbeat_interval >= self.session_timeout {
            return Err(Fault::MarginTooLarge {
                margin,
                heartbeat: self.heartbeat_interval,
                session: self.session_timeout,
            });
        }
        Ok(())
    }
}

/// A member's configuration that cannot work: its [`MembershipConfig`], the protocol list given
/// with it, or its cluster and driver settings (bootstrap servers, timeouts, security, fast
/// failover). Its message names the field and what to change; [`field`](Self::field) names the
/// field for code.
#[derive(Clone, PartialEq, Eq, Error)]
#[error(transparent)]
pub struct ConfigError(Fault);

impl ConfigError {
    /// The setting at fault, as [`MembershipConfig`] names it (`"group_id"`,
    /// `"session_timeout"`, ...), as [`ClusterConfig`](crate::connection::ClusterConfig) names it
    /// (`"bootstrap_servers"`, `"retry_backoff"`, `"request_timeout"`, `"security"`, ...;
    /// `"cluster"` for one it cannot name), `"fast_failover"`, or `"protocol_type"` /
    /// `"protocols"` for what the protocol offers.
    pub fn field(&self) -> &'static str {
        match &self.0 {
            Fault::EmptyGroupId => "group_id",
            Fault::InvalidGroupInstanceId(_) => "group_instance_id",
            Fault::Zero(field) | Fault::TooLong(field) => field,
            Fault::BackoffMaxBelowBackoff => "retry_backoff_max",
            Fault::SessionTimeoutOutOfBounds { .. } => "session_timeout",
            Fault::HeartbeatNotBelowSession { .. } | Fault::MarginTooLarge { .. } => {
                "heartbeat_interval"
            }
            Fault::RebalanceBelowSession { .. } => "rebalance_timeout",
            Fault::EmptyProtocolType => "protocol_type",
            Fault::InvalidProtocols(_) => "protocols",
            Fault::Cluster { field, .. } => field,
        }
    }
}

impl ConfigError {
    /// A setting of the cluster or the driver, `field`, cannot work: `reason`.
    pub(crate) fn cluster(field: &'static str, reason: String) -> Self {
        Self(Fault::Cluster { field, reason })
    }
}

impl From<Fault> for ConfigError {
    fn from(fault: Fault) -> Self {
        Self(fault)
    }
}

/// Shows the cause itself (`Zero("session_timeout")`), as the tests and logs read it.
impl std::fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What is wrong, with the values its message names (crate-internal: users read the message
/// and [`ConfigError::field`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum Fault {
    /// `group_id` is empty.
    #[error("group_id is empty: set the Kafka group id the members share")]
    EmptyGroupId,
    /// `group_instance_id` breaks Kafka's rules.
    #[error(
        "group_instance_id {0:?} is invalid: use 1 to 249 characters of [a-zA-Z0-9._-] (not \".\" or \"..\")"
    )]
    InvalidGroupInstanceId(String),
    /// A duration that must be positive is zero.
    #[error("{0} is zero: give it a positive duration")]
    Zero(&'static str),
    /// A duration does not fit Kafka's `int32` milliseconds.
    #[error("{0} is longer than i32::MAX milliseconds (about 24.8 days): shorten it")]
    TooLong(&'static str),
    /// `retry_backoff_max < retry_backoff`.
    #[error("retry_backoff_max is below retry_backoff: raise retry_backoff_max")]
    BackoffMaxBelowBackoff,
    /// The session timeout is outside the broker's bounds.
    #[error(
        "session_timeout {session:?} is outside the broker's bounds [{min:?}, {max:?}]: pick a value inside, or set min/max_session_timeout to the broker's group.min/max.session.timeout.ms"
    )]
    SessionTimeoutOutOfBounds {
        /// The configured session timeout.
        session: Duration,
        /// The broker's minimum.
        min: Duration,
        /// The broker's maximum.
        max: Duration,
    },
    /// `heartbeat_interval >= session_timeout`.
    #[error(
        "heartbeat_interval {heartbeat:?} must be below session_timeout {session:?}: use about a third of it"
    )]
    HeartbeatNotBelowSession {
        /// The configured heartbeat interval.
        heartbeat: Duration,
        /// The configured session timeout.
        session: Duration,
    },
    /// `rebalance_timeout < session_timeout`.
    #[error(
        "rebalance_timeout {rebalance:?} is below session_timeout {session:?}: raise rebalance_timeout"
    )]
    RebalanceBelowSession {
        /// The configured rebalance timeout.
        rebalance: Duration,
        /// The configured session timeout.
        session: Duration,
    },
    /// The self-fencing margin leaves no room for a heartbeat.
    #[error(
        "self-fencing margin {margin:?} + heartbeat_interval {heartbeat:?} must be below session_timeout {session:?}: shorten the heartbeat interval or the margin, or lengthen the session timeout"
    )]
    MarginTooLarge {
        /// The margin in effect.
        margin: Duration,
        /// The configured heartbeat interval.
        heartbeat: Duration,
        /// The configured session timeout.
        session: Duration,
    },
    /// The protocol type is empty.
    #[error("the protocol type is empty: give the group's protocol type, e.g. \"kroupier\"")]
    EmptyProtocolType,
    /// No protocol was offered, or one is offered twice or has an empty name.
    #[error(
        "the protocol list is invalid ({0}): offer at least one protocol, each with a unique non-empty name"
    )]
    InvalidProtocols(&'static str),
    /// A setting of the cluster or of the driver (bootstrap servers, timeouts, security, fast
    /// failover) cannot work.
    #[error("invalid member configuration: `{field}` {reason}")]
    Cluster {
        /// The field at fault, as [`ClusterConfig`](crate::connection::ClusterConfig) or the
        /// driver names it.
        field: &'static str,
        /// Why, and what to change.
        reason: String,
    },
}
