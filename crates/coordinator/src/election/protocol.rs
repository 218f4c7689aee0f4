//! The election protocol: metadata, the leader's choice, and the member's role.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use super::wire::{ElectionAssignment, ElectionMetadata};
use crate::codec::Versioned;
use crate::failover::{FailoverEndpoint, FailoverTarget};
use crate::membership::{
    AssignContext, AssignError, FencingToken, Generation, GroupMember, GroupProtocol,
    MemberAssignment, MemberEvent, ProtocolMetadata,
};

/// The protocol type of election groups.
pub(crate) const ELECTION_PROTOCOL_TYPE: &str = "kroupier-election";
/// The protocol name (the only one so far).
pub(crate) const ELECTION_PROTOCOL_NAME: &str = "sticky-leader";

/// A change of this member's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionEvent {
    /// This member leads; act only while the membership says the token is valid.
    Leader {
        /// The fencing token of the generation it leads.
        token: FencingToken,
    },
    /// Another member leads (or none is eligible).
    Follower {
        /// The generation.
        generation_id: i32,
        /// The leader's stable id, `None` if no member is eligible.
        leader_id: Option<String>,
    },
    /// The generation is gone: this member is neither leader nor follower until it rejoins.
    Lost {
        /// The generation lost, if it had one.
        generation_id: Option<i32>,
    },
}

#[derive(Debug, Default)]
struct State {
    led_generation: Option<i32>,
    in_generation: Option<i32>,
    resigned: bool,
    /// The leader to watch for fast failover: set while this member follows one that
    /// advertised an endpoint.
    watched: Option<FailoverTarget>,
    /// The member id of the leader this member last followed (kept through a lost generation:
    /// that leader may still be acting).
    followed: Option<String>,
    /// Set when this member leads a generation after following another leader: that
    /// leader's member id, whose lease may not have ended yet.
    succeeded: Option<String>,
    events: VecDeque<ElectionEvent>,
}

/// One member's side of a leader election (a [`GroupProtocol`]).
#[derive(Debug)]
pub(crate) struct LeaderElection {
    id: String,
    eligible: bool,
    /// This member's fast-failover endpoint, advertised in its metadata.
    endpoint: Option<FailoverEndpoint>,
    state: Mutex<State>,
}

impl LeaderElection {
    /// A member with stable id `id` (the same across restarts) that may lead if `eligible`.
    pub(crate) fn new(id: impl Into<String>, eligible: bool) -> Self {
        Self {
            id: id.into(),
            eligible,
            endpoint: None,
            state: Mutex::default(),
        }
    }

    /// The same member, advertising `endpoint` for fast failover.
    pub(crate) fn with_endpoint(mut self, endpoint: FailoverEndpoint) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The leader this member follows, if it advertised a fast-failover endpoint.
    pub(crate) fn watched(&self) -> Option<FailoverTarget> {
        self.state().watched.clone()
    }

    /// The member id of the leader this member followed before it led the current generation,
    /// `None` when it led the previous one too or followed nobody.
    pub(crate) fn succeeded(&self) -> Option<String> {
        self.state().succeeded.clone()
    }

    /// This member's stable id.
    #[cfg(test)]
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The next role change, if any.
    pub(crate) fn poll_event(&self) -> Option<ElectionEvent> {
        self.state().events.pop_front()
    }

    /// The metadata this member offers now.
    pub(crate) fn metadata(&self) -> ElectionMetadata {
        let state = self.state();
        ElectionMetadata {
            id: self.id.clone(),
            // A member on its way out must not be chosen again.
            eligible: self.eligible && !state.resigned,
            led_generation: state.led_generation.unwrap_or(-1),
            endpoint: self.endpoint.clone(),
        }
    }

    /// Stops acting on any role because this member is about to leave the group: reports
    /// [`ElectionEvent::Lost`] if it held a generation, and ignores every later assignment.
    /// Call it *before* LeaveGroup, so that the old leader has stopped before the group can
    /// elect another.
    pub(crate) fn resign(&self) {
        let mut state = self.state();
        state.resigned = true;
        state.watched = None;
        state.followed = None;
        if let Some(generation_id) = state.in_generation.take() {
            state.events.push_back(ElectionEvent::Lost {
                generation_id: Some(generation_id),
            });
        }
    }

    /// Takes in one of the member's events, in the order the member's stream delivers them:
    /// an assignment makes this member leader or follower, a loss ends its role. A revocation
    /// alone changes nothing: the leader keeps its role through a rebalance, and its fencing
    /// token stays valid while its heartbeats succeed. The role changes come out of
    /// [`poll_event`](Self::poll_event).
    pub(crate) fn handle_event(&self, event: &MemberEvent) {
        match event {
            MemberEvent::Assigned {
                generation,
                assignment,
                ..
            } => self.handle_assigned(generation, assignment),
            MemberEvent::Lost { generation, .. } => self.handle_lost(generation.as_ref()),
            _ => {}
        }
    }

    /// This member's assignment for `generation` arrived ([`MemberEvent::Assigned`]): it
    /// leads or follows, as the assignment says.
    pub(crate) fn handle_assigned(&self, generation: &Generation, assignment: &[u8]) {
        // An assignment that does not decode names no leader: never lead on garbage.
        let decoded = ElectionAssignment::decode(assignment).unwrap_or(ElectionAssignment {
            leader_member_id: None,
            leader_id: None,
            leader_group_instance_id: None,
            leader_endpoint: None,
        });
        let mut state = self.state();
        if state.resigned {
            return;
        }
        state.in_generation = Some(generation.generation_id);
        let leads = decoded.leader_member_id.as_deref() == Some(generation.member_id.as_str());
        state.watched = match (&decoded.leader_member_id, decoded.leader_endpoint) {
            (Some(member_id), Some(endpoint)) if !leads => Some(FailoverTarget {
                member_id: member_id.clone(),
                group_instance_id: decoded.leader_group_instance_id.clone(),
                endpoint,
            }),
            _ => None,
        };
        let followed = state.followed.take();
        state.succeeded = None;
        let event = if leads {
            state.succeeded = followed.filter(|previous| *previous != generation.member_id);
            state.led_generation = Some(generation.generation_id);
            ElectionEvent::Leader {
                token: generation.token(),
            }
        } else {
            state.followed = decoded.leader_member_id.clone();
            ElectionEvent::Follower {
                generation_id: generation.generation_id,
                leader_id: decoded.leader_id,
            }
        };
        state.events.push_back(event);
    }

    /// The generation is gone ([`MemberEvent::Lost`]): this member neither leads nor follows
    /// until its next assignment.
    pub(crate) fn handle_lost(&self, generation: Option<&Generation>) {
        let mut state = self.state();
        state.watched = None;
        if state.in_generation.take().is_some() {
            state.events.push_back(ElectionEvent::Lost {
                generation_id: generation.map(|g| g.generation_id),
            });
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state stays consistent under every update, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The leader among `members` (sorted or not): `(member id, stable id)`, or `None` if no member
/// is eligible. Undecodable metadata makes a member ineligible, never an error.
#[cfg(test)]
pub(crate) fn choose_leader(members: &[GroupMember]) -> Option<(String, String)> {
    choose(members).map(|(member, meta)| (member.member_id.clone(), meta.id))
}

/// The leader among `members` and its decoded metadata.
fn choose(members: &[GroupMember]) -> Option<(&GroupMember, ElectionMetadata)> {
    let eligible: Vec<(&GroupMember, ElectionMetadata)> = members
        .iter()
        .filter_map(|m| {
            ElectionMetadata::decode(&m.metadata)
                .ok()
                .filter(|meta| meta.eligible)
                .map(|meta| (m, meta))
        })
        .collect();
    let latest_led = eligible.iter().map(|(_, m)| m.led_generation).max()?;
    eligible
        .into_iter()
        // Sticky: the latest leader still in the group; if nobody led, every eligible member.
        .filter(|(_, m)| m.led_generation == latest_led)
        .min_by(|(a, a_meta), (b, b_meta)| {
            (&a_meta.id, &a.member_id).cmp(&(&b_meta.id, &b.member_id))
        })
}

impl GroupProtocol for LeaderElection {
    fn protocol_type(&self) -> &str {
        ELECTION_PROTOCOL_TYPE
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        vec![ProtocolMetadata::new(
            ELECTION_PROTOCOL_NAME,
            self.metadata().encode(),
        )]
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        if context.protocol_name != ELECTION_PROTOCOL_NAME {
            return Err(AssignError::UnknownProtocol(context.protocol_name.clone()));
        }
        let leader = choose(members);
        let assignment = match leader {
            Some((member, meta)) => ElectionAssignment {
                leader_member_id: Some(member.member_id.clone()),
                leader_id: Some(meta.id),
                leader_group_instance_id: member.group_instance_id.clone(),
                leader_endpoint: meta.endpoint,
            },
            None => ElectionAssignment {
                leader_member_id: None,
                leader_id: None,
                leader_group_instance_id: None,
                leader_endpoint: None,
            },
        }
        .encode();
        Ok(members
            .iter()
            .map(|m| MemberAssignment::new(m.member_id.clone(), assignment.clone()))
            .collect())
    }
}
