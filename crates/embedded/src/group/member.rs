//! One member of a classic group, as the coordinator keeps it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::types::{Protocol, ReplyId};

/// A member of a classic group.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) protocol_type: String,
    pub(crate) protocols: Vec<Protocol>,
    /// The assignment of the current generation.
    pub(crate) assignment: Bytes,
    /// The parked JoinGroup, if the member awaits the join phase.
    pub(crate) awaiting_join: Option<ReplyId>,
    /// The parked SyncGroup, if the member awaits the leader's assignment.
    pub(crate) awaiting_sync: Option<ReplyId>,
    /// A member that has not yet completed a join phase (it may expire while awaiting join).
    pub(crate) is_new: bool,
    /// When the member expires unless it heartbeats (or rejoins) before.
    pub(crate) heartbeat_deadline: Option<Instant>,
}

impl Member {
    /// Whether the member offers exactly these protocols with this metadata, in this order.
    pub(crate) fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// Whether the member is static (has a `group.instance.id`).
    pub(crate) fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    /// Whether the member offers protocol `name`.
    pub(crate) fn supports(&self, name: &str) -> bool {
        self.protocols.iter().any(|p| p.name == name)
    }

    /// The member's metadata for protocol `name` (empty if it does not offer it).
    pub(crate) fn metadata(&self, name: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// The member's vote: its most preferred protocol among `candidates`.
    pub(crate) fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|name| candidates.contains(name))
    }

    /// Kafka's `hasSatisfiedHeartbeat`: a member parked in a rebalance counts as alive, except a new
    /// member, which may expire while awaiting join.
    pub(crate) fn has_satisfied_heartbeat(&self) -> bool {
        if self.is_new {
            false
        } else {
            self.awaiting_join.is_some() || self.awaiting_sync.is_some()
        }
    }

    /// Restarts the session timer from `now`.
    pub(crate) fn reschedule_heartbeat(&mut self, now: Instant) {
        self.heartbeat_deadline = Some(now + self.session_timeout);
    }
}
