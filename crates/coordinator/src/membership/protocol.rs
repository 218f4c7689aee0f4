//! The trait a group protocol implements (the KIP-795 idea, typed and stable).
//!
//! A protocol says what it offers at JoinGroup (its type and an ordered list of named metadata),
//! and how the leader splits the work ([`GroupProtocol::assign`], a pure function over every
//! member's metadata). That is all only the protocol knows.
//!
//! What happens to this member — its assignment arrives, is revoked, is lost — is not the
//! protocol's to hear: it leaves the membership as one ordered stream of
//! [`MemberEvent`](super::MemberEvent)s, which the protocol's owner reads
//! ([`MemberHandle::events`](crate::driver::MemberHandle::events)) and acts on, updating the
//! protocol's state if its metadata depends on it.
//!
//! The sans-IO [`Membership`](super::Membership) never calls the protocol itself: the driver
//! reads [`GroupProtocol::protocols`] right before each JoinGroup (through
//! [`Membership::poll_request_with`](super::Membership::poll_request_with)), after it has
//! queued every earlier event on the owner's stream and published the member's status, and
//! runs `assign` off the heartbeat path when the membership asks for an assignment.

use bytes::Bytes;
use thiserror::Error;

/// One protocol a member offers at JoinGroup: its name and this member's metadata for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolMetadata {
    /// The protocol name (an assignor name for kroupier groups).
    pub name: String,
    /// This member's metadata for that protocol, opaque to Kafka.
    pub metadata: Bytes,
}

impl ProtocolMetadata {
    /// A protocol `name` with `metadata`.
    pub fn new(name: impl Into<String>, metadata: impl Into<Bytes>) -> Self {
        Self {
            name: name.into(),
            metadata: metadata.into(),
        }
    }
}

/// One member as the leader sees it in the JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member id the coordinator gave that member.
    pub member_id: String,
    /// Its `group.instance.id`, if it is a static member.
    pub group_instance_id: Option<String>,
    /// Its metadata for the protocol the group selected.
    pub metadata: Bytes,
}

/// The assignment the leader gives one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    /// The member id.
    pub member_id: String,
    /// The assignment bytes, opaque to Kafka.
    pub assignment: Bytes,
}

impl MemberAssignment {
    /// An assignment of `assignment` to `member_id`.
    pub fn new(member_id: impl Into<String>, assignment: impl Into<Bytes>) -> Self {
        Self {
            member_id: member_id.into(),
            assignment: assignment.into(),
        }
    }
}

/// What the leader knows about the round it assigns, besides the members.
///
/// The generation and the leader's member id are those of the JoinGroup response that made
/// this member the leader: the SyncGroup that delivers the assignment carries the same
/// generation, so an assignment that records them records the true values.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AssignContext {
    /// The generation being assigned (the JoinGroup response's `generation_id`).
    pub generation_id: i32,
    /// The leader's member id, i.e. this member's.
    pub leader_member_id: String,
    /// The protocol the group selected.
    pub protocol_name: String,
}

impl AssignContext {
    /// The context of `generation_id`, led by `leader_member_id` under `protocol_name`.
    pub fn new(
        generation_id: i32,
        leader_member_id: impl Into<String>,
        protocol_name: impl Into<String>,
    ) -> Self {
        Self {
            generation_id,
            leader_member_id: leader_member_id.into(),
            protocol_name: protocol_name.into(),
        }
    }
}

/// Why the leader could not compute an assignment.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AssignError {
    /// The group selected a protocol this member does not implement.
    #[error("unknown protocol {0:?}: offer only protocols this build implements")]
    UnknownProtocol(String),
    /// The protocol's own reason; the driver rejoins after a backoff.
    #[error("assignment failed: {0}")]
    Failed(String),
}

/// A group protocol: what a member offers at JoinGroup and how the leader assigns.
///
/// Implementations are shared between the driver and the assignment task, hence
/// `Send + Sync`; `protocols` runs on the driver's task, so keep it quick. State the metadata
/// reports (e.g. "I led generation 7") is updated by the protocol's owner from the member's
/// events, behind interior mutability. To see that state fresh at a JoinGroup, read what the
/// member published: the driver publishes its status
/// ([`MemberHandle::current`](crate::driver::MemberHandle::current)) and queues every earlier
/// event before it calls [`protocols`](GroupProtocol::protocols).
pub trait GroupProtocol: Send + Sync + 'static {
    /// The protocol type every member of the group shares (`protocol_type` of JoinGroup).
    fn protocol_type(&self) -> &str;

    /// The protocols this member offers, most preferred first, with its metadata for each.
    /// Called right before every JoinGroup the driver sends.
    fn protocols(&self) -> Vec<ProtocolMetadata>;

    /// The leader's assignment for `members` (sorted by member id) in the round `context`
    /// describes (generation, leader member id, selected protocol). Pure and deterministic;
    /// runs off the heartbeat path. Members missing from the result get an empty assignment
    /// from the broker.
    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError>;
}
