//! Configuration of a driven member: the cluster to reach and the membership to run.

use std::time::Duration;

use crate::connection::ClusterConfig;
use crate::membership::MembershipConfig;

use super::error::MemberError;

/// Everything a [`Member`](super::Member) needs: where Kafka is, and how to be a member.
///
/// Plain data; [`MemberConfig::validate`] runs when the member is built, so a bad value fails
/// early with an error that names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberConfig {
    /// The brokers and connection settings. Each member opens its own connections (one to a
    /// bootstrap broker, two to the coordinator), because a Kafka broker serves one request per
    /// connection at a time and a JoinGroup is parked there for the whole rebalance.
    pub cluster: ClusterConfig,
    /// The group, timeouts and identity of the member.
    pub membership: MembershipConfig,
}

impl MemberConfig {
    /// The defaults for `group_id` on the cluster at `bootstrap` (`host:port[,host:port...]`).
    pub fn new(bootstrap: &str, group_id: impl Into<String>) -> Self {
        Self {
            cluster: ClusterConfig::new(bootstrap),
            membership: MembershipConfig::new(group_id),
        }
    }

    /// Sets the session timeout and heartbeat interval (Kafka's `session.timeout.ms` and
    /// `heartbeat.interval.ms`); the rebalance timeout is raised to the session timeout if it
    /// is below it.
    pub fn with_timeouts(
        mut self,
        session_timeout: Duration,
        heartbeat_interval: Duration,
    ) -> Self {
        self.membership.session_timeout = session_timeout;
        self.membership.heartbeat_interval = heartbeat_interval;
        if self.membership.rebalance_timeout < session_timeout {
            self.membership.rebalance_timeout = session_timeout;
        }
        self
    }

    /// Checks the cluster and membership settings. The membership's requests use the
    /// cluster's request timeout and retry backoff (their one home is [`ClusterConfig`]), so
    /// those are checked for the membership too.
    ///
    /// # Errors
    /// [`MemberError::InvalidConfig`], naming the
    /// field and the fix.
    pub fn validate(&self) -> Result<(), MemberError> {
        self.membership
            .clone()
            .with_cluster(&self.cluster)
            .validate()?;
        self.cluster.validate().map_err(MemberError::from_cluster)?;
        Ok(())
    }

    /// This configuration, checked, with the membership given the cluster's request timeout
    /// and retry backoff.
    pub(crate) fn validated(mut self) -> Result<Self, MemberError> {
        self.validate()?;
        self.membership = self.membership.with_cluster(&self.cluster);
        Ok(self)
    }
}
