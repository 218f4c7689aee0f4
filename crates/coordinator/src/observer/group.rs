//! What the observer returns: typed views of ListGroups and DescribeGroups answers, and the
//! hook that decodes a protocol's member metadata and assignments.

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;

/// A group's state as the coordinator reports it (classic group protocol).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupState {
    /// No members; offsets or metadata may remain.
    Empty,
    /// Members are (re)joining: a rebalance is under way.
    PreparingRebalance,
    /// Members joined; the coordinator waits for the leader's assignment (SyncGroup).
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
    /// The group does not exist (or no longer does).
    Dead,
    /// A state this version of kroupier does not know, as the broker spelled it.
    Other(String),
}

impl GroupState {
    /// Parses Kafka's spelling (`"Stable"`, ...); an empty string is [`GroupState::Dead`].
    pub fn parse(state: &str) -> Self {
        match state {
            "Empty" => Self::Empty,
            "PreparingRebalance" => Self::PreparingRebalance,
            "CompletingRebalance" => Self::CompletingRebalance,
            "Stable" => Self::Stable,
            "Dead" | "" => Self::Dead,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Kafka's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
            Self::Dead => "Dead",
            Self::Other(other) => other,
        }
    }
}

impl std::fmt::Display for GroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One group as ListGroups names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// The group id.
    pub group_id: String,
    /// Its protocol type (`"kroupier"`, `"consumer"`, `"connect"`, ...; empty for groups that
    /// only store offsets).
    pub protocol_type: String,
    /// Its state (ListGroups v4+; `None` from older brokers).
    pub state: Option<GroupState>,
    /// Its type, `"classic"` or `"consumer"` (ListGroups v5+; `None` from older brokers).
    pub group_type: Option<String>,
}

impl From<&ListedGroup> for GroupListing {
    fn from(g: &ListedGroup) -> Self {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Self {
            group_id: g.group_id.to_string(),
            protocol_type: g.protocol_type.to_string(),
            state: non_empty(&g.group_state).map(|s| GroupState::parse(&s)),
            group_type: non_empty(&g.group_type),
        }
    }
}

/// One group as DescribeGroups shows it.
///
/// DescribeGroups carries **no generation id and no leader**: Kafka keeps both to itself.
/// What it gives is the state, the protocol type, the chosen protocol (the assignor, for
/// kroupier groups) and each member's raw metadata (what it sent in JoinGroup) and assignment
/// (what the leader gave it in SyncGroup). A protocol that records the generation and the
/// leader in its assignments (as kroupier's does) recovers them with
/// [`GroupDescription::decode`] and an [`AssignmentDecoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// The group's state.
    pub state: GroupState,
    /// Its protocol type (`"kroupier"` for kroupier groups).
    pub protocol_type: String,
    /// The protocol the group chose (for kroupier groups: the assignor's name). Kafka fills it
    /// in only while the group is [`GroupState::Stable`]; otherwise it is empty.
    pub protocol: String,
    /// The members, in the coordinator's order.
    pub members: Vec<MemberDescription>,
}

/// One member as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its static instance id (`group.instance.id`, KIP-345), if it has one.
    pub group_instance_id: Option<String>,
    /// The client id it connected with.
    pub client_id: String,
    /// The host it connected from, as the coordinator saw it (`/10.0.0.7`).
    pub client_host: String,
    /// Its metadata for the chosen protocol, raw (from its JoinGroup); Kafka provides it only
    /// while the group is stable.
    pub metadata: Bytes,
    /// Its assignment, raw (from the leader's SyncGroup); Kafka provides it only while the
    /// group is stable, and it is empty otherwise.
    pub assignment: Bytes,
}

impl From<&DescribedGroupMember> for MemberDescription {
    fn from(m: &DescribedGroupMember) -> Self {
        Self {
            member_id: m.member_id.to_string(),
            group_instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()),
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            metadata: m.member_metadata.clone(),
            assignment: m.member_assignment.clone(),
        }
    }
}

impl From<&DescribedGroup> for GroupDescription {
    fn from(g: &DescribedGroup) -> Self {
        Self {
            group_id: g.group_id.to_string(),
            state: GroupState::parse(&g.group_state),
            protocol_type: g.protocol_type.to_string(),
            protocol: g.protocol_data.to_string(),
            members: g.members.iter().map(MemberDescription::from).collect(),
        }
    }
}

/// The hook that reads a protocol's member metadata and assignments, so an observer can show
/// what DescribeGroups alone cannot: the leader, the generation, and each member's work.
pub trait AssignmentDecoder {
    /// A member's decoded view (for kroupier: its tasks, capacity, ...).
    type Member;
    /// Why a member's bytes do not decode.
    type Error;

    /// Decodes one member's `metadata` and `assignment` for the group's chosen `protocol`.
    /// `assignment` is empty while the group is rebalancing.
    ///
    /// # Errors
    /// When the bytes are not this protocol's (or are newer than it can read).
    fn decode(
        &self,
        protocol: &str,
        metadata: &[u8],
        assignment: &[u8],
    ) -> Result<Self::Member, Self::Error>;

    /// The leader's member id, if this member's assignment records it.
    fn leader(&self, member: &Self::Member) -> Option<String>;

    /// The generation this member's assignment was made in, if it records it.
    fn generation(&self, member: &Self::Member) -> Option<i32>;
}

/// A [`GroupDescription`] with each member decoded by an [`AssignmentDecoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedGroup<M, E> {
    /// The raw description.
    pub description: GroupDescription,
    /// The leader, as recorded by the assignments of the newest generation.
    pub leader: Option<String>,
    /// The newest generation any member's assignment records.
    pub generation: Option<i32>,
    /// Each member's decoded view, in the order of `description.members`.
    pub members: Vec<Result<M, E>>,
}

impl GroupDescription {
    /// Decodes every member with `decoder`; the generation is the newest recorded, and the
    /// leader is the one recorded by a member of that generation.
    pub fn decode<D: AssignmentDecoder>(self, decoder: &D) -> DecodedGroup<D::Member, D::Error> {
        let members: Vec<_> = self
            .members
            .iter()
            .map(|m| decoder.decode(&self.protocol, &m.metadata, &m.assignment))
            .collect();
        let generation = members
            .iter()
            .filter_map(|m| m.as_ref().ok().and_then(|m| decoder.generation(m)))
            .max();
        let leader = members
            .iter()
            .filter_map(|m| m.as_ref().ok())
            .filter(|m| decoder.generation(m) == generation)
            .find_map(|m| decoder.leader(m));
        DecodedGroup {
            description: self,
            leader,
            generation,
            members,
        }
    }
}
