//! JoinGroup on a classic group (Kafka's `classicGroupJoinToClassicGroup` and friends).

use kafka_protocol::error::ResponseError;

use super::classic::{ClassicGroup, Ctx};
use super::member::Member;
use super::types::{GroupState, JoinGroup, JoinGroupResult, Output, ReplyId};

impl ClassicGroup {
    /// Handles a JoinGroup whose group id and session timeout are already validated.
    /// `new_member_id` is the id this member gets if it has none yet.
    pub(crate) fn join(
        &mut self,
        ctx: &mut Ctx<'_>,
        reply: ReplyId,
        req: JoinGroup,
        new_member_id: String,
    ) {
        let names: Vec<&str> = req.protocols.iter().map(|p| p.name.as_str()).collect();
        if !self.supports_protocols(&req.protocol_type, &names) {
            return respond(
                ctx,
                reply,
                JoinGroupResult::error(ResponseError::InconsistentGroupProtocol, req.member_id),
            );
        }
        if !self.accept_joining_member(ctx, &req.member_id) {
            if self.members.contains_key(&req.member_id) {
                self.remove_member_and_update(
                    ctx,
                    &req.member_id.clone(),
                    "group is over its maximum size",
                );
            }
            return respond(
                ctx,
                reply,
                JoinGroupResult::error(ResponseError::GroupMaxSizeReached, req.member_id),
            );
        }
        if req.member_id.is_empty() {
            self.join_new_member(ctx, reply, req, new_member_id);
        } else {
            self.join_existing_member(ctx, reply, req);
        }
    }

    /// Kafka's `acceptJoiningMember` against `group.max.size`.
    fn accept_joining_member(&self, ctx: &Ctx<'_>, member_id: &str) -> bool {
        let max = ctx.config.max_group_size;
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                self.members
                    .get(member_id)
                    .is_some_and(|m| m.awaiting_join.is_some())
                    || self.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.contains_key(member_id) || self.members.len() < max
            }
        }
    }

    fn join_new_member(
        &mut self,
        ctx: &mut Ctx<'_>,
        reply: ReplyId,
        req: JoinGroup,
        new_member_id: String,
    ) {
        if let Some(instance_id) = req.group_instance_id.clone() {
            match self.static_member(&instance_id).map(str::to_string) {
                Some(old_member_id) => {
                    self.replace_static_member(ctx, reply, req, old_member_id, new_member_id);
                }
                None => {
                    self.add_member_then_rebalance_or_complete_join(ctx, reply, req, new_member_id)
                }
            }
        } else if req.require_known_member_id {
            // KIP-394: hand out the id first; the member joins with it in its next request.
            let expiry = ctx.now + session_timeout(&req);
            self.pending_members.insert(new_member_id.clone(), expiry);
            tracing::debug!(group = %self.group_id, member = %new_member_id, "member id required");
            respond(
                ctx,
                reply,
                JoinGroupResult::error(ResponseError::MemberIdRequired, new_member_id),
            );
        } else {
            self.add_member_then_rebalance_or_complete_join(ctx, reply, req, new_member_id);
        }
    }

    fn join_existing_member(&mut self, ctx: &mut Ctx<'_>, reply: ReplyId, req: JoinGroup) {
        let member_id = req.member_id.clone();
        if self.pending_members.contains_key(&member_id) {
            if req.group_instance_id.is_some() {
                // Kafka treats this as an illegal state: static members never get a pending id.
                return respond(
                    ctx,
                    reply,
                    JoinGroupResult::error(ResponseError::UnknownServerError, member_id),
                );
            }
            return self.add_member_then_rebalance_or_complete_join(ctx, reply, req, member_id);
        }
        if let Some(error) =
            self.validate_existing_member(&member_id, req.group_instance_id.as_deref())
        {
            return respond(ctx, reply, JoinGroupResult::error(error, member_id));
        }
        let matches = self
            .members
            .get(&member_id)
            .is_some_and(|m| m.matches(&req.protocols));
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member_then_rebalance_or_complete_join(
                    ctx,
                    reply,
                    req,
                    "member rejoins during PreparingRebalance",
                );
            }
            GroupState::CompletingRebalance if matches => {
                // It lost the JoinGroup answer: hand the current generation back.
                let leader = self.is_leader(&member_id);
                let result = self.current_join_result(&member_id, leader, false);
                respond(ctx, reply, result);
            }
            GroupState::CompletingRebalance => {
                self.update_member_then_rebalance_or_complete_join(
                    ctx,
                    reply,
                    req,
                    "member changed its metadata during CompletingRebalance",
                );
            }
            GroupState::Stable if self.is_leader(&member_id) => {
                self.update_member_then_rebalance_or_complete_join(
                    ctx,
                    reply,
                    req,
                    "leader rejoins during Stable",
                );
            }
            GroupState::Stable if !matches => {
                self.update_member_then_rebalance_or_complete_join(
                    ctx,
                    reply,
                    req,
                    "member changed its metadata during Stable",
                );
            }
            GroupState::Stable => {
                // A follower with unchanged metadata: no rebalance, just the current generation.
                let result = self.current_join_result(&member_id, false, false);
                respond(ctx, reply, result);
            }
            GroupState::Empty | GroupState::Dead => {
                respond(
                    ctx,
                    reply,
                    JoinGroupResult::error(ResponseError::UnknownMemberId, member_id),
                );
            }
        }
    }

    fn add_member_then_rebalance_or_complete_join(
        &mut self,
        ctx: &mut Ctx<'_>,
        reply: ReplyId,
        req: JoinGroup,
        member_id: String,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            session_timeout: session_timeout(&req),
            rebalance_timeout: rebalance_timeout(&req),
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols,
            assignment: Default::default(),
            awaiting_join: Some(reply),
            awaiting_sync: None,
            is_new: true,
            // A new member cannot heartbeat yet; it is dropped if its JoinGroup waits too long.
            heartbeat_deadline: Some(ctx.now + ctx.config.new_member_join_timeout),
        };
        if self.state == GroupState::PreparingRebalance && self.previous_state == GroupState::Empty
        {
            self.new_member_added = true;
        }
        self.add(member);
        self.pending_members.remove(&member_id);
        let reason = format!("new member {member_id} joins");
        self.maybe_prepare_rebalance_or_complete_join(ctx, &reason);
    }

    fn update_member_then_rebalance_or_complete_join(
        &mut self,
        ctx: &mut Ctx<'_>,
        reply: ReplyId,
        req: JoinGroup,
        reason: &str,
    ) {
        let member_id = req.member_id.clone();
        self.park_join(ctx.out, &member_id, reply);
        if let Some(member) = self.members.get_mut(&member_id) {
            member.session_timeout = session_timeout(&req);
            member.rebalance_timeout = rebalance_timeout(&req);
            member.protocols = req.protocols;
        }
        self.maybe_prepare_rebalance_or_complete_join(ctx, reason);
    }

    /// A static member restarted with a new member id: the old id is fenced, the new one takes its
    /// place, and the group rebalances only if the selected protocol would change.
    fn replace_static_member(
        &mut self,
        ctx: &mut Ctx<'_>,
        reply: ReplyId,
        req: JoinGroup,
        old_member_id: String,
        new_member_id: String,
    ) {
        let Some(mut member) = self.members.remove(&old_member_id) else {
            return respond(
                ctx,
                reply,
                JoinGroupResult::error(ResponseError::UnknownServerError, new_member_id),
            );
        };
        if let Some(old) = member.awaiting_join.take() {
            let result =
                JoinGroupResult::error(ResponseError::FencedInstanceId, old_member_id.clone());
            ctx.out.push(Output::JoinGroup { reply: old, result });
        }
        if let Some(old) = member.awaiting_sync.take() {
            let result = super::types::SyncGroupResult::error(ResponseError::FencedInstanceId);
            ctx.out.push(Output::SyncGroup { reply: old, result });
        }
        tracing::info!(group = %self.group_id, old = %old_member_id, new = %new_member_id, "static member replaced");
        member.member_id = new_member_id.clone();
        member.reschedule_heartbeat(ctx.now);
        member.session_timeout = session_timeout(&req);
        member.rebalance_timeout = rebalance_timeout(&req);
        member.protocols = req.protocols;
        member.client_id = req.client_id;
        member.client_host = req.client_host;
        member.awaiting_join = Some(reply);
        if let Some(instance_id) = &member.group_instance_id {
            self.static_members
                .insert(instance_id.clone(), new_member_id.clone());
        }
        self.members.insert(new_member_id.clone(), member);
        if self.is_leader(&old_member_id) {
            self.leader_id = Some(new_member_id.clone());
        }
        if self.pending_sync.remove(&old_member_id) {
            self.pending_sync.insert(new_member_id.clone());
        }
        match self.state {
            GroupState::Stable => {
                if self.select_protocol() == self.protocol_name {
                    let leader = self.is_leader(&new_member_id);
                    let result = self.current_join_result(&new_member_id, leader, leader);
                    self.complete_join_reply(ctx.out, &new_member_id, result);
                } else {
                    self.prepare_rebalance(
                        ctx,
                        "a static member rejoined with a change of protocol",
                    );
                }
            }
            GroupState::CompletingRebalance => {
                self.prepare_rebalance(ctx, "a static member rejoined during CompletingRebalance");
            }
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(ctx),
            GroupState::Empty | GroupState::Dead => {}
        }
    }
}

fn respond(ctx: &mut Ctx<'_>, reply: ReplyId, result: JoinGroupResult) {
    ctx.out.push(Output::JoinGroup { reply, result });
}

fn session_timeout(req: &JoinGroup) -> std::time::Duration {
    millis(req.session_timeout_ms)
}

fn rebalance_timeout(req: &JoinGroup) -> std::time::Duration {
    millis(req.rebalance_timeout_ms)
}

/// Milliseconds from the wire; negative values count as zero.
pub(crate) fn millis(ms: i32) -> std::time::Duration {
    std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
