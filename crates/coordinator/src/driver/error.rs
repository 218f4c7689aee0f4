//! Why a driven member stopped, or why it could not start.

use thiserror::Error;

use crate::connection::ConnectionError;
use crate::connection::Detail;
use crate::membership::{ConfigError, FatalError};

/// What ended a [`Member`](super::Member)'s driver, or refused to build it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MemberError {
    /// The configuration (membership, cluster, fast failover) or the protocol's metadata is
    /// invalid: [`ConfigError::field`] names the field.
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// The member stopped on an error it cannot recover from without an operator.
    #[error(transparent)]
    Fatal(FatalError),
    /// Another process joined with this member's `group.instance.id` (FENCED_INSTANCE_ID).
    #[error(
        "fenced: another process joined the group with group.instance.id {group_instance_id:?}; \
         give every process its own instance id"
    )]
    Fenced {
        /// The instance id.
        group_instance_id: Option<String>,
    },
    /// The driver is not running (it ended, was dropped, or was never polled), so the command
    /// could not be delivered. Build a new member.
    #[error(
        "the member's driver is not running: it stopped or was never spawned; build a new member"
    )]
    Stopped,
}

impl MemberError {
    pub(crate) fn from_cluster(error: ConnectionError) -> Self {
        match error.into_detail() {
            Detail::InvalidConfig { field, reason } => Self::invalid_setting(field, reason),
            Detail::InvalidSecurity(e) => Self::invalid_setting("security", e.to_string()),
            other => Self::invalid_setting("cluster", other.to_string()),
        }
    }

    /// A setting of the cluster or the driver, `field`, cannot work: `reason`.
    pub(crate) fn invalid_setting(field: &'static str, reason: String) -> Self {
        Self::InvalidConfig(ConfigError::cluster(field, reason))
    }
}
