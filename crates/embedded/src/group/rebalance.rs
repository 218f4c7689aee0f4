//! The rebalance transitions of a classic group and its timers (Kafka's `prepareRebalance`,
//! `completeClassicGroupJoin`, `expirePendingSync`, heartbeat expiry).

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::classic::{ClassicGroup, Ctx, JoinTimer};
use super::types::{GroupState, JoinGroupResult, Output, SyncGroupResult};

impl ClassicGroup {
    /// Starts a rebalance: members awaiting sync are told to rejoin, and the join phase begins
    /// (after the initial delay if the group was empty).
    pub(crate) fn prepare_rebalance(&mut self, ctx: &mut Ctx<'_>, reason: &str) {
        if self.state == GroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_with_error(
                ctx.out,
                ctx.now,
                ResponseError::RebalanceInProgress,
            );
        }
        self.sync_deadline = None;
        let initial = self.state == GroupState::Empty;
        if initial {
            let delay = ctx.config.initial_rebalance_delay;
            let remaining = self.rebalance_timeout().saturating_sub(delay);
            self.join_timer = Some((
                ctx.now + delay,
                JoinTimer::InitialDelay { delay, remaining },
            ));
        }
        self.transition(GroupState::PreparingRebalance);
        tracing::info!(group = %self.group_id, generation = self.generation_id, reason, "preparing to rebalance");
        if !initial {
            self.maybe_complete_join_else_schedule(ctx);
        }
    }

    fn maybe_complete_join_else_schedule(&mut self, ctx: &mut Ctx<'_>) {
        if self.has_all_members_joined() {
            self.complete_join(ctx);
        } else {
            self.join_timer = Some((ctx.now + self.rebalance_timeout(), JoinTimer::Rebalance));
        }
    }

    /// Rebalances if the group can, else completes the join phase if everyone is in.
    pub(crate) fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        ctx: &mut Ctx<'_>,
        reason: &str,
    ) {
        if self.can_rebalance() {
            self.prepare_rebalance(ctx, reason);
        } else {
            self.maybe_complete_join_phase(ctx);
        }
    }

    /// Completes the join phase when every member has rejoined (but never during the initial delay).
    pub(crate) fn maybe_complete_join_phase(&mut self, ctx: &mut Ctx<'_>) {
        if self.state == GroupState::PreparingRebalance
            && self.has_all_members_joined()
            && self.previous_state != GroupState::Empty
        {
            self.complete_join(ctx);
        }
    }

    /// Ends the join phase: drops dynamic members that did not rejoin, elects a leader among those
    /// that did, and answers every parked JoinGroup with the new generation.
    pub(crate) fn complete_join(&mut self, ctx: &mut Ctx<'_>) {
        self.join_timer = None;
        let not_rejoined: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in &not_rejoined {
            self.remove(member_id);
        }
        if !not_rejoined.is_empty() {
            tracing::info!(group = %self.group_id, members = ?not_rejoined, "removed members that did not rejoin in time");
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            tracing::warn!(group = %self.group_id, "no member rejoined; waiting another rebalance timeout");
            self.join_timer = Some((ctx.now + self.rebalance_timeout(), JoinTimer::Rebalance));
            return;
        }
        self.init_next_generation();
        if self.state == GroupState::Empty {
            tracing::info!(group = %self.group_id, generation = self.generation_id, "group is now empty");
            return;
        }
        tracing::info!(
            group = %self.group_id,
            generation = self.generation_id,
            members = self.members.len(),
            protocol = self.protocol_name.as_deref().unwrap_or_default(),
            "stabilized group"
        );
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for member_id in ids {
            let leader = self.is_leader(&member_id);
            let result = self.current_join_result(&member_id, leader, false);
            self.complete_join_reply(ctx.out, &member_id, result);
            if let Some(member) = self.members.get_mut(&member_id) {
                member.reschedule_heartbeat(ctx.now);
                member.is_new = false;
            }
            self.pending_sync.insert(member_id);
        }
        self.sync_deadline = Some(ctx.now + self.rebalance_timeout());
    }

    /// Keeps the leader if it rejoined, else picks the first member that did. `false` when
    /// nobody can lead.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        let rejoined = self
            .members
            .get(&leader)
            .is_some_and(|m| m.awaiting_join.is_some());
        if rejoined {
            return true;
        }
        match self
            .members
            .values()
            .find(|m| m.awaiting_join.is_some())
            .map(|m| m.member_id.clone())
        {
            Some(new_leader) => {
                tracing::info!(group = %self.group_id, old = %leader, new = %new_leader, "leader did not rejoin; new leader");
                self.leader_id = Some(new_leader);
                true
            }
            None => false,
        }
    }

    fn init_next_generation(&mut self) {
        self.generation_id = self.generation_id.wrapping_add(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition(GroupState::Empty);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition(GroupState::CompletingRebalance);
        }
        self.pending_sync.clear();
    }

    /// Clears every assignment and answers parked SyncGroups with `error`.
    fn reset_and_propagate_assignment_with_error(
        &mut self,
        out: &mut Vec<Output>,
        now: Instant,
        error: ResponseError,
    ) {
        for member in self.members.values_mut() {
            member.assignment = Bytes::new();
        }
        self.propagate_assignment(out, now, Some(error));
    }

    /// Stores the leader's assignment (empty for members it left out) and answers parked SyncGroups.
    pub(crate) fn set_and_propagate_assignment(
        &mut self,
        out: &mut Vec<Output>,
        now: Instant,
        mut assignments: HashMap<String, Bytes>,
    ) {
        let missing: Vec<&str> = self
            .members
            .keys()
            .filter(|id| !assignments.contains_key(*id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            tracing::warn!(group = %self.group_id, generation = self.generation_id, members = ?missing, "leader left members out; they get an empty assignment");
        }
        for member in self.members.values_mut() {
            member.assignment = assignments.remove(&member.member_id).unwrap_or_default();
        }
        self.propagate_assignment(out, now, None);
    }

    fn propagate_assignment(
        &mut self,
        out: &mut Vec<Output>,
        now: Instant,
        error: Option<ResponseError>,
    ) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for member_id in ids {
            let Some(member) = self.members.get(&member_id) else {
                tracing::error!(group = %self.group_id, member = %member_id, "member vanished while its assignment was sent; skipped");
                continue;
            };
            let assignment = member.assignment.clone();
            let result = SyncGroupResult {
                error,
                protocol_type: self.protocol_type.clone(),
                protocol_name: self.protocol_name.clone(),
                assignment,
            };
            if self.complete_sync_reply(out, &member_id, result) {
                if let Some(member) = self.members.get_mut(&member_id) {
                    member.reschedule_heartbeat(now);
                }
            }
        }
    }

    /// Removes a member that left or expired, then rebalances or completes the join phase.
    pub(crate) fn remove_member_and_update(
        &mut self,
        ctx: &mut Ctx<'_>,
        member_id: &str,
        reason: &str,
    ) {
        self.complete_join_reply(
            ctx.out,
            member_id,
            JoinGroupResult::error(ResponseError::UnknownMemberId, ""),
        );
        self.complete_sync_reply(
            ctx.out,
            member_id,
            SyncGroupResult::error(ResponseError::UnknownMemberId),
        );
        if self.remove(member_id).is_none() {
            return;
        }
        tracing::info!(group = %self.group_id, member = %member_id, reason, "member removed");
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(ctx, reason);
            }
            GroupState::PreparingRebalance if self.has_all_members_joined() => {
                self.complete_join(ctx)
            }
            _ => {}
        }
    }

    /// Runs every timer of this group that is due at `ctx.now`.
    pub(crate) fn handle_timeout(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now;
        if let Some((at, timer)) = self.join_timer {
            if at <= now {
                self.join_timer = None;
                self.fire_join_timer(ctx, timer);
            }
        }
        if self.sync_deadline.is_some_and(|at| at <= now) {
            self.sync_deadline = None;
            if matches!(
                self.state,
                GroupState::CompletingRebalance | GroupState::Stable
            ) {
                let pending: Vec<String> =
                    std::mem::take(&mut self.pending_sync).into_iter().collect();
                tracing::info!(group = %self.group_id, members = ?pending, "removing members that did not send SyncGroup in time");
                for member_id in &pending {
                    self.complete_join_reply(
                        ctx.out,
                        member_id,
                        JoinGroupResult::error(ResponseError::UnknownMemberId, ""),
                    );
                    self.remove(member_id);
                }
                self.prepare_rebalance(ctx, "pending SyncGroup expired");
            }
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| m.heartbeat_deadline.is_some_and(|at| at <= now))
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in expired {
            let Some(member) = self.members.get_mut(&member_id) else {
                continue;
            };
            if member.has_satisfied_heartbeat() {
                member.heartbeat_deadline = None;
            } else {
                self.remove_member_and_update(ctx, &member_id, "session timeout expired");
            }
        }
        let pending: Vec<String> = self
            .pending_members
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for member_id in pending {
            self.pending_members.remove(&member_id);
            tracing::info!(group = %self.group_id, member = %member_id, "pending member expired before joining");
            if self.state == GroupState::PreparingRebalance {
                self.maybe_complete_join_phase(ctx);
            }
        }
    }

    fn fire_join_timer(&mut self, ctx: &mut Ctx<'_>, timer: JoinTimer) {
        match timer {
            JoinTimer::InitialDelay { delay, remaining }
                if self.new_member_added && !remaining.is_zero() =>
            {
                self.new_member_added = false;
                let next_delay = ctx.config.initial_rebalance_delay.min(remaining);
                let next_remaining = remaining.saturating_sub(delay);
                self.join_timer = Some((
                    ctx.now + next_delay,
                    JoinTimer::InitialDelay {
                        delay: next_delay,
                        remaining: next_remaining,
                    },
                ));
            }
            JoinTimer::InitialDelay { .. } | JoinTimer::Rebalance => {
                if self.state == GroupState::PreparingRebalance {
                    self.complete_join(ctx);
                }
            }
        }
    }
}
