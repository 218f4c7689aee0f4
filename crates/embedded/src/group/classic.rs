//! The data of one classic group and the small queries over it (Kafka's `ClassicGroup`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use super::config::GroupConfig;
use super::member::Member;
use super::types::{GroupState, JoinGroupResult, JoinedMember, Output, ReplyId, SyncGroupResult};

/// What a group's join timer does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinTimer {
    /// The initial rebalance delay of an empty group: extend it while new members keep coming,
    /// up to `remaining`.
    InitialDelay {
        /// The delay this timer was armed with.
        delay: Duration,
        /// How much more the delay may still be extended.
        remaining: Duration,
    },
    /// The rebalance timeout: complete the join phase with whoever rejoined.
    Rebalance,
}

/// The context every transition runs in: the current time, the settings and where answers go.
pub(crate) struct Ctx<'a> {
    pub(crate) now: Instant,
    pub(crate) config: &'a GroupConfig,
    pub(crate) out: &'a mut Vec<Output>,
}

/// One classic group.
#[derive(Debug, Clone)]
pub(crate) struct ClassicGroup {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    pub(crate) previous_state: GroupState,
    pub(crate) generation_id: i32,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader_id: Option<String>,
    pub(crate) members: BTreeMap<String, Member>,
    /// Static members: instance id → member id.
    pub(crate) static_members: HashMap<String, String>,
    /// Members told MEMBER_ID_REQUIRED that have not joined yet, with their expiry.
    pub(crate) pending_members: BTreeMap<String, Instant>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pub(crate) pending_sync: BTreeSet<String>,
    /// A member joined during the initial rebalance delay (extends the delay).
    pub(crate) new_member_added: bool,
    pub(crate) join_timer: Option<(Instant, JoinTimer)>,
    pub(crate) sync_deadline: Option<Instant>,
    /// When this group, empty since, is deleted (`GroupConfig::empty_group_retention`).
    pub(crate) delete_at: Option<Instant>,
}

impl ClassicGroup {
    pub(crate) fn new(group_id: String) -> Self {
        Self {
            group_id,
            state: GroupState::Empty,
            previous_state: GroupState::Empty,
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: BTreeMap::new(),
            pending_sync: BTreeSet::new(),
            new_member_added: false,
            join_timer: None,
            sync_deadline: None,
            delete_at: None,
        }
    }

    pub(crate) fn transition(&mut self, state: GroupState) {
        tracing::debug!(group = %self.group_id, from = self.state.as_str(), to = state.as_str(), "group state");
        self.previous_state = self.state;
        self.state = state;
    }

    /// The group's rebalance timeout: the largest of its members'.
    pub(crate) fn rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    pub(crate) fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    pub(crate) fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_members.is_empty()
    }

    pub(crate) fn can_rebalance(&self) -> bool {
        matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        )
    }

    pub(crate) fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// Adds a member; the first member sets the protocol type and becomes leader.
    pub(crate) fn add(&mut self, member: Member) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        if let Some(instance_id) = &member.group_instance_id {
            self.static_members
                .insert(instance_id.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member; if it led, the first remaining member leads.
    pub(crate) fn remove(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id)?;
        if let Some(instance_id) = &member.group_instance_id {
            if self.static_members.get(instance_id).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance_id);
            }
        }
        self.remove_pending_sync(member_id);
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        Some(member)
    }

    /// Marks that `member_id` has synced; when nobody is left to sync, the sync deadline goes.
    pub(crate) fn remove_pending_sync(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        match self.state {
            GroupState::CompletingRebalance | GroupState::Stable => {
                if self.pending_sync.is_empty() {
                    self.sync_deadline = None;
                }
            }
            _ => self.sync_deadline = None,
        }
    }

    /// Kafka's `supportsProtocols`: an empty group takes any non-empty type and protocol list;
    /// otherwise the type must match and one protocol must be supported by every member.
    pub(crate) fn supports_protocols(&self, protocol_type: &str, protocols: &[&str]) -> bool {
        if self.state == GroupState::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|name| self.members.values().all(|m| m.supports(name)))
    }

    /// The protocols every member supports.
    fn candidate_protocols(&self) -> BTreeSet<&str> {
        let Some(first) = self.members.values().next() else {
            return BTreeSet::new();
        };
        first
            .protocols
            .iter()
            .map(|p| p.name.as_str())
            .filter(|name| self.members.values().all(|m| m.supports(name)))
            .collect()
    }

    /// Kafka's protocol vote: each member votes for its most preferred candidate; most votes win.
    /// Ties go to the name that sorts first, so the choice is deterministic.
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.vote(&candidates) {
                *votes.entry(name).or_default() += 1;
            }
        }
        let most = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, n)| *n == most)
            .map(|(name, _)| name.to_string())
    }

    /// Kafka's `validateExistingMember`: UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID, or `None`.
    pub(crate) fn validate_existing_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<ResponseError> {
        match group_instance_id {
            None => {
                (!self.members.contains_key(member_id)).then_some(ResponseError::UnknownMemberId)
            }
            Some(instance_id) => match self.static_member(instance_id) {
                None => Some(ResponseError::UnknownMemberId),
                Some(existing) if existing != member_id => Some(ResponseError::FencedInstanceId),
                Some(_) => None,
            },
        }
    }

    /// The member id of the static member with this `group.instance.id`. An entry of the static
    /// map whose member the member list does not hold (a broken invariant) is logged and counts
    /// as absent, so no lookup panics and no request waits for a member that is not there.
    pub(crate) fn static_member(&self, instance_id: &str) -> Option<&str> {
        let member_id = self.static_members.get(instance_id)?;
        if self.members.contains_key(member_id) {
            return Some(member_id);
        }
        tracing::error!(
            group = %self.group_id,
            instance = instance_id,
            member = %member_id,
            "the static member map names a member the group does not hold; treating the instance as unknown"
        );
        None
    }

    /// Every member with its metadata for the selected protocol: what the leader gets.
    pub(crate) fn current_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    /// The current generation as a JoinGroup answer for `member_id`.
    pub(crate) fn current_join_result(
        &self,
        member_id: &str,
        with_members: bool,
        skip_assignment: bool,
    ) -> JoinGroupResult {
        JoinGroupResult {
            error: None,
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader_id.clone().unwrap_or_default(),
            skip_assignment,
            member_id: member_id.to_string(),
            members: if with_members {
                self.current_members()
            } else {
                Vec::new()
            },
        }
    }

    /// Answers `member_id`'s parked JoinGroup, if it has one.
    pub(crate) fn complete_join_reply(
        &mut self,
        out: &mut Vec<Output>,
        member_id: &str,
        result: JoinGroupResult,
    ) {
        if let Some(reply) = self
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_join.take())
        {
            out.push(Output::JoinGroup { reply, result });
        }
    }

    /// Answers `member_id`'s parked SyncGroup, if it has one.
    pub(crate) fn complete_sync_reply(
        &mut self,
        out: &mut Vec<Output>,
        member_id: &str,
        result: SyncGroupResult,
    ) -> bool {
        match self
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_sync.take())
        {
            Some(reply) => {
                out.push(Output::SyncGroup { reply, result });
                true
            }
            None => false,
        }
    }

    /// Replaces a parked request with a newer one from the same member; the older one is told to
    /// retry (REBALANCE_IN_PROGRESS), so no parked request is ever forgotten.
    pub(crate) fn park_join(&mut self, out: &mut Vec<Output>, member_id: &str, reply: ReplyId) {
        if let Some(member) = self.members.get_mut(member_id) {
            if let Some(old) = member.awaiting_join.replace(reply) {
                out.push(Output::JoinGroup {
                    reply: old,
                    result: JoinGroupResult::error(ResponseError::RebalanceInProgress, member_id),
                });
            }
        }
    }

    /// Parks a SyncGroup; see [`ClassicGroup::park_join`].
    pub(crate) fn park_sync(&mut self, out: &mut Vec<Output>, member_id: &str, reply: ReplyId) {
        if let Some(member) = self.members.get_mut(member_id) {
            if let Some(old) = member.awaiting_sync.replace(reply) {
                out.push(Output::SyncGroup {
                    reply: old,
                    result: SyncGroupResult::error(ResponseError::RebalanceInProgress),
                });
            }
        }
    }

    /// Whether nothing refers to this group any more, so it can be forgotten.
    pub(crate) fn is_unused(&self) -> bool {
        self.is_empty() && self.generation_id == 0
    }

    /// Whether the group is empty and nothing would bring a member back into it: no member, and
    /// no member id handed out that could still join.
    pub(crate) fn is_empty(&self) -> bool {
        self.state == GroupState::Empty
            && self.members.is_empty()
            && self.pending_members.is_empty()
    }

    /// Arms the deletion of an empty group `retention` from `now` (once: the group stays empty
    /// from the first call on), or disarms it when the group is no longer empty.
    pub(crate) fn schedule_deletion(&mut self, now: Instant, retention: Duration) {
        if !self.is_empty() {
            self.delete_at = None;
        } else if self.delete_at.is_none() {
            // A retention too long for the clock means: never.
            self.delete_at = now.checked_add(retention);
        }
    }

    /// Whether the group has been empty for its whole retention at `now`.
    pub(crate) fn is_due_for_deletion(&self, now: Instant) -> bool {
        self.is_empty() && self.delete_at.is_some_and(|at| at <= now)
    }

    /// The earliest instant at which something in this group is due.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let timers = [
            self.join_timer.map(|(at, _)| at),
            self.sync_deadline,
            self.delete_at,
        ];
        let members = self.members.values().filter_map(|m| m.heartbeat_deadline);
        let pending = self.pending_members.values().copied();
        timers
            .into_iter()
            .flatten()
            .chain(members)
            .chain(pending)
            .min()
    }
}
