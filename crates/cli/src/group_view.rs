//! A described group as the command line shows it (`kroupier describe`'s JSON contract), with
//! kroupier members' metadata and assignments decoded: what `describe`, `placement`, `tasks`
//! and the console read. A leaf: it knows no command.

use std::collections::{BTreeMap, BTreeSet};

use kroupier_coordinator::observer::{AssignmentDecoder, GroupDescription};
use kroupier_worker::protocol::{Assignment, DecodeError, MemberMetadata, PROTOCOL_TYPE};
use serde::Serialize;

/// A group as `kroupier describe` shows it (the JSON contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GroupView {
    /// The group id.
    pub group: String,
    /// Kafka's spelling of the group state (`Stable`, `PreparingRebalance`, `Dead`, ...).
    pub state: String,
    /// The newest generation the members' assignments record.
    pub generation: Option<i32>,
    /// The group's protocol type (`kroupier` for kroupier groups).
    pub protocol_type: Option<String>,
    /// The chosen protocol (for kroupier groups, the assignor).
    pub protocol: Option<String>,
    /// The leader's member id, as the assignments of the newest generation record it.
    pub leader: Option<String>,
    /// The members, sorted by worker id (kroupier groups) or member id.
    pub members: Vec<MemberView>,
    /// Tasks the leader could place on no member, by reason, as its newest assignments list
    /// them (not part of the JSON contract).
    #[serde(skip)]
    pub unplaced: BTreeMap<String, BTreeSet<String>>,
}

/// One member as `kroupier describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MemberView {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its static instance id (`group.instance.id`), if any.
    pub instance_id: Option<String>,
    /// The client id it connected with.
    pub client_id: String,
    /// The host it connected from.
    pub host: String,
    /// Its tasks, sorted; `None` when unknown (not a kroupier member, or undecodable).
    pub tasks: Option<Vec<String>>,
    /// The worker id from its kroupier metadata (not part of the JSON contract).
    #[serde(skip)]
    pub worker_id: Option<String>,
}

impl MemberView {
    /// The name to show for this member: its worker id, else its client id, else its member
    /// id (Kafka shows no metadata while a group rebalances).
    pub(crate) fn name(&self) -> &str {
        match &self.worker_id {
            Some(worker) => worker,
            None if !self.client_id.is_empty() => &self.client_id,
            None => &self.member_id,
        }
    }
}

/// Reads kroupier member metadata and assignments for the observer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KroupierDecoder;

/// A kroupier member's decoded bytes; either may be absent (empty bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedMember {
    /// What the member sent in JoinGroup.
    pub metadata: Option<MemberMetadata>,
    /// What the leader gave it in SyncGroup.
    pub assignment: Option<Assignment>,
}

impl AssignmentDecoder for KroupierDecoder {
    type Member = DecodedMember;
    type Error = DecodeError;

    fn decode(
        &self,
        _protocol: &str,
        metadata: &[u8],
        assignment: &[u8],
    ) -> Result<DecodedMember, DecodeError> {
        Ok(DecodedMember {
            metadata: (!metadata.is_empty())
                .then(|| MemberMetadata::decode(metadata))
                .transpose()?,
            assignment: (!assignment.is_empty())
                .then(|| Assignment::decode(assignment))
                .transpose()?,
        })
    }

    fn leader(&self, member: &DecodedMember) -> Option<String> {
        member.assignment.as_ref().map(|a| a.leader.clone())
    }

    fn generation(&self, member: &DecodedMember) -> Option<i32> {
        member.assignment.as_ref().map(|a| a.generation)
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// Builds the view of a described group, decoding kroupier groups' members.
pub(crate) fn build_view(description: GroupDescription) -> GroupView {
    let kroupier = description.protocol_type == PROTOCOL_TYPE;
    let mut view = GroupView {
        group: description.group_id.clone(),
        state: description.state.as_str().to_owned(),
        generation: None,
        protocol_type: non_empty(&description.protocol_type),
        protocol: non_empty(&description.protocol),
        leader: None,
        members: Vec::new(),
        unplaced: BTreeMap::new(),
    };
    let base = |m: &kroupier_coordinator::observer::MemberDescription| MemberView {
        member_id: m.member_id.clone(),
        instance_id: m.group_instance_id.clone(),
        client_id: m.client_id.clone(),
        host: m.client_host.clone(),
        tasks: None,
        worker_id: None,
    };
    if kroupier {
        let decoded = description.decode(&KroupierDecoder);
        view.generation = decoded.generation;
        view.leader = decoded.leader;
        for (raw, member) in decoded.description.members.iter().zip(decoded.members) {
            let mut member_view = base(raw);
            if let Ok(member) = member {
                member_view.worker_id = member.metadata.map(|m| m.worker_id);
                if let Some(assignment) = &member.assignment
                    && Some(assignment.generation) == view.generation
                {
                    for (reason, tasks) in &assignment.unplaced {
                        view.unplaced
                            .entry(reason.clone())
                            .or_default()
                            .extend(tasks.iter().cloned());
                    }
                }
                member_view.tasks = Some(
                    member
                        .assignment
                        .map(|a| a.tasks.into_iter().collect())
                        .unwrap_or_default(),
                );
            }
            view.members.push(member_view);
        }
    } else {
        view.members = description.members.iter().map(base).collect();
    }
    view.members
        .sort_by(|a, b| (a.name(), a.member_id.as_str()).cmp(&(b.name(), b.member_id.as_str())));
    view
}
