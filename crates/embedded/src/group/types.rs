//! The inputs and outputs of the group state machine, in Kafka's words but free of wire versions.
//!
//! The server turns each decoded request into one of these and each result back into a response
//! at the version the client asked for.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

/// Identifies a parked request (a JoinGroup or SyncGroup waiting for the rebalance) so the driver
/// can route its answer back to the right connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ReplyId(pub u64);

/// The state of a classic group, as DescribeGroups and ListGroups name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(not(any(test, feature = "testing")), allow(unreachable_pub, dead_code))]
pub enum GroupState {
    /// No members; the group keeps its protocol type and generation.
    Empty,
    /// Waiting for members to (re)join before a new generation.
    PreparingRebalance,
    /// A new generation is formed; waiting for the leader's assignment.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
    /// The group does not exist (or no longer does).
    Dead,
}

#[cfg_attr(not(any(test, feature = "testing")), allow(unreachable_pub, dead_code))]
impl GroupState {
    /// The name Kafka gives the state on the wire (`"PreparingRebalance"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// One protocol a member offers: its name (for kroupier, an assignor) and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Protocol {
    /// The protocol name; opaque to the coordinator.
    pub name: String,
    /// The member's metadata for this protocol; opaque to the coordinator.
    pub metadata: Bytes,
}

/// A JoinGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JoinGroup {
    /// The group to join.
    pub group_id: String,
    /// The member id; empty for a member that has none yet.
    pub member_id: String,
    /// The static member's `group.instance.id` (KIP-345), if any.
    pub group_instance_id: Option<String>,
    /// The protocol type, e.g. `kroupier` or `consumer`.
    pub protocol_type: String,
    /// The protocols the member supports, in its order of preference.
    pub protocols: Vec<Protocol>,
    /// The session timeout in milliseconds, as sent.
    pub session_timeout_ms: i32,
    /// The rebalance timeout in milliseconds, as sent (the session timeout for JoinGroup v0).
    pub rebalance_timeout_ms: i32,
    /// The client id from the request header.
    pub client_id: String,
    /// The client's host, as the coordinator sees it.
    pub client_host: String,
    /// Whether the member id must be known before joining (JoinGroup v4+, KIP-394).
    pub require_known_member_id: bool,
    /// The reason the member gives (v8+, KIP-800), for the log.
    pub reason: Option<String>,
}

/// One member as the leader sees it in its JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JoinedMember {
    /// The member id.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// The answer to a JoinGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct JoinGroupResult {
    /// The error, or `None` for NONE.
    pub error: Option<ResponseError>,
    /// The generation the member joined, or -1.
    pub generation_id: i32,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id (empty when unknown).
    pub leader: String,
    /// Tells a re-joining static leader not to compute a new assignment (KIP-814).
    pub skip_assignment: bool,
    /// The member's id (assigned by the coordinator for a new member).
    pub member_id: String,
    /// All members with their metadata; only for the leader.
    pub members: Vec<JoinedMember>,
}

impl JoinGroupResult {
    /// A result that carries only an error (and the member id the request used).
    pub(crate) fn error(error: ResponseError, member_id: impl Into<String>) -> Self {
        Self {
            error: Some(error),
            generation_id: -1,
            member_id: member_id.into(),
            ..Self::default()
        }
    }
}

/// One member's assignment in the leader's SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberAssignment {
    /// The member id.
    pub member_id: String,
    /// Its assignment; opaque to the coordinator.
    pub assignment: Bytes,
}

/// A SyncGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncGroup {
    /// The group.
    pub group_id: String,
    /// The generation the member believes in.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub group_instance_id: Option<String>,
    /// The protocol type (v5+), checked when present.
    pub protocol_type: Option<String>,
    /// The protocol name (v5+), checked when present.
    pub protocol_name: Option<String>,
    /// The assignments; only the leader sends any.
    pub assignments: Vec<MemberAssignment>,
}

/// The answer to a SyncGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SyncGroupResult {
    /// The error, or `None` for NONE.
    pub error: Option<ResponseError>,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The member's assignment (empty when the leader left it out).
    pub assignment: Bytes,
}

impl SyncGroupResult {
    /// A result that carries only an error.
    pub(crate) fn error(error: ResponseError) -> Self {
        Self {
            error: Some(error),
            ..Self::default()
        }
    }
}

/// A Heartbeat request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Heartbeat {
    /// The group.
    pub group_id: String,
    /// The generation the member believes in.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub group_instance_id: Option<String>,
}

/// One member leaving in a LeaveGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeavingMember {
    /// The member id; empty with an instance id for an admin removal of a static member.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub group_instance_id: Option<String>,
    /// The reason given (v5+), for the log.
    pub reason: Option<String>,
}

/// A LeaveGroup request (v0–v2 carry exactly one member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaveGroup {
    /// The group.
    pub group_id: String,
    /// The members that leave.
    pub members: Vec<LeavingMember>,
}

/// The answer for one member of a LeaveGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeftMember {
    /// The member id as sent.
    pub member_id: String,
    /// The instance id as sent.
    pub group_instance_id: Option<String>,
    /// The error for this member, or `None`.
    pub error: Option<ResponseError>,
}

/// The answer to a LeaveGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LeaveGroupResult {
    /// The top-level error, or `None`.
    pub error: Option<ResponseError>,
    /// One entry per member in the request, in order.
    pub members: Vec<LeftMember>,
}

/// One member as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(any(test, feature = "testing")), allow(unreachable_pub, dead_code))]
pub struct MemberDescription {
    /// The member id.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// Metadata for the selected protocol (empty unless the group is Stable).
    pub metadata: Bytes,
    /// The member's assignment (empty unless the group is Stable).
    pub assignment: Bytes,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(any(test, feature = "testing")), allow(unreachable_pub, dead_code))]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// The state.
    pub state: GroupState,
    /// The protocol type (empty when none).
    pub protocol_type: String,
    /// The selected protocol (empty unless the group is Stable).
    pub protocol: String,
    /// The members.
    pub members: Vec<MemberDescription>,
}

/// A group as ListGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupListing {
    /// The group id.
    pub group_id: String,
    /// The protocol type (empty when none).
    pub protocol_type: String,
    /// The state.
    pub state: GroupState,
}

/// An answer the state machine hands back for a parked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// The answer to the JoinGroup request `reply`.
    JoinGroup {
        /// The request it answers.
        reply: ReplyId,
        /// The answer.
        result: JoinGroupResult,
    },
    /// The answer to the SyncGroup request `reply`.
    SyncGroup {
        /// The request it answers.
        reply: ReplyId,
        /// The answer.
        result: SyncGroupResult,
    },
}
