//! Why a driven member stopped, or why it could not start.

use thiserror::Error;

use crate::connection::ConnectionError;
use crate::connection::Detail;
use crate::membership::{ConfigError, FatalError};

/// What ended a [`Member`](super::Member)'s driver, or refused to build it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MemberError {
    /// The membership configuration or the protocol's metadata is invalid.
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// The cluster configuration (or another setting of the driver) is invalid.
    #[error("invalid member configuration: `{field}` {reason}")]
    InvalidClusterConfig {
        /// The field at fault.
        field: &'static str,
        /// Why, and what to change.
        reason: String,
    },
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
            Detail::InvalidConfig { field, reason } => Self::InvalidClusterConfig { field, reason },
            Detail::InvalidSecurity(e) => Self::InvalidClusterConfig {
                field: "security",
                reason: e.to_string(),
            },
            other => Self::InvalidClusterConfig {
                field: "cluster",
                reason: other.to_string(),
            },
        }
    }
}
