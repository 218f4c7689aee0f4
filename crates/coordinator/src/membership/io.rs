//! The plain data that crosses the sans-IO boundary: requests out, responses in.
//!
//! JoinGroup, SyncGroup and Heartbeat go out as kafka-protocol request structs with every field
//! this member uses set; the driver encodes them at the version it negotiated (kafka-protocol
//! refuses to encode `group_instance_id` below JoinGroup v5 / SyncGroup v3 / Heartbeat v3, which
//! is right: static membership needs those versions; the JoinGroup `reason` is dropped below
//! v8). FindCoordinator and LeaveGroup changed shape across versions, so they go out as small
//! structs with a `to_request(version)` that builds the right shape.

use std::time::Duration;

use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    SyncGroupResponse, leave_group_request::MemberIdentity,
};
use kafka_protocol::protocol::StrBytes;

use super::action::Api;

/// Identifies one request the membership asked for; hand it back with the response.
///
/// Tags grow monotonically; a response whose tag is not the one the membership waits for is
/// stale (an earlier generation, a request made void by a disconnect) and is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RequestTag(pub(crate) u64);

impl RequestTag {
    /// The sequence number, for logs.
    pub(crate) fn seq(self) -> u64 {
        self.0
    }
}

/// A request the driver must send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outgoing {
    /// Hand this back with the response (or the failure).
    pub tag: RequestTag,
    /// How long the driver should wait for the response before reporting
    /// [`Membership::handle_request_failed`](super::Membership::handle_request_failed).
    pub timeout: Duration,
    /// The request.
    pub request: Request,
}

/// The request itself. FindCoordinator goes to any broker, everything else to the coordinator
/// last reported by [`MemberEvent::CoordinatorChanged`](super::MemberEvent::CoordinatorChanged).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    /// FindCoordinator(GROUP).
    FindCoordinator(FindCoordinator),
    /// JoinGroup.
    JoinGroup(JoinGroupRequest),
    /// SyncGroup (with the assignments if this member leads, empty otherwise).
    SyncGroup(SyncGroupRequest),
    /// Heartbeat.
    Heartbeat(HeartbeatRequest),
    /// LeaveGroup.
    LeaveGroup(LeaveGroup),
}

impl Request {
    /// The API of this request.
    pub(crate) fn api(&self) -> Api {
        match self {
            Self::FindCoordinator(_) => Api::FindCoordinator,
            Self::JoinGroup(_) => Api::JoinGroup,
            Self::SyncGroup(_) => Api::SyncGroup,
            Self::Heartbeat(_) => Api::Heartbeat,
            Self::LeaveGroup(_) => Api::LeaveGroup,
        }
    }
}

/// FindCoordinator for a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FindCoordinator {
    /// The group id.
    pub group_id: String,
}

impl FindCoordinator {
    /// The request for `version`: `key` up to v3, `coordinator_keys` from v4 (KIP-699).
    pub(crate) fn to_request(&self, version: i16) -> FindCoordinatorRequest {
        let key = StrBytes::from_string(self.group_id.clone());
        let request = FindCoordinatorRequest::default().with_key_type(0);
        if version >= 4 {
            request.with_coordinator_keys(vec![key])
        } else {
            request.with_key(key)
        }
    }
}

/// LeaveGroup for this member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaveGroup {
    /// The group id.
    pub group_id: String,
    /// This member's id.
    pub member_id: String,
    /// Its `group.instance.id`, if static.
    pub group_instance_id: Option<String>,
    /// Why it leaves (KIP-800; sent from v5).
    pub reason: String,
}

impl LeaveGroup {
    /// The request for `version`: `member_id` up to v2, a one-member batch from v3.
    pub(crate) fn to_request(&self, version: i16) -> LeaveGroupRequest {
        let request =
            LeaveGroupRequest::default().with_group_id(GroupId(str_bytes(&self.group_id)));
        if version >= 3 {
            let member = MemberIdentity::default()
                .with_member_id(str_bytes(&self.member_id))
                .with_group_instance_id(self.group_instance_id.as_deref().map(str_bytes))
                .with_reason((version >= 5).then(|| str_bytes(&truncate_reason(&self.reason))));
            request.with_members(vec![member])
        } else {
            request.with_member_id(str_bytes(&self.member_id))
        }
    }
}

/// A response (or its absence) handed back to the membership.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Response {
    /// FindCoordinator response (any version).
    FindCoordinator(FindCoordinatorResponse),
    /// JoinGroup response.
    JoinGroup(JoinGroupResponse),
    /// SyncGroup response.
    SyncGroup(SyncGroupResponse),
    /// Heartbeat response.
    Heartbeat(HeartbeatResponse),
    /// LeaveGroup response.
    LeaveGroup(LeaveGroupResponse),
}

pub(crate) fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// Kafka truncates reasons to 255 characters (`JoinGroupRequest.maybeTruncateReason`).
pub(crate) fn truncate_reason(reason: &str) -> String {
    reason.chars().take(255).collect()
}
