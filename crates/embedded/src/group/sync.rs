//! SyncGroup, Heartbeat and LeaveGroup on a classic group.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;

use super::classic::{ClassicGroup, Ctx};
use super::types::{
    GroupState, Heartbeat, LeaveGroup, LeaveGroupResult, LeftMember, Output, ReplyId, SyncGroup,
    SyncGroupResult,
};

impl ClassicGroup {
    /// Handles a SyncGroup: the leader's assignment completes the rebalance; followers wait for it.
    pub(crate) fn sync(&mut self, ctx: &mut Ctx<'_>, reply: ReplyId, req: SyncGroup) {
        if let Some(error) = self.validate_sync(&req) {
            return ctx.out.push(Output::SyncGroup {
                reply,
                result: SyncGroupResult::error(error),
            });
        }
        let member_id = req.member_id.clone();
        match self.state {
            GroupState::Empty | GroupState::Dead => ctx.out.push(Output::SyncGroup {
                reply,
                result: SyncGroupResult::error(ResponseError::UnknownMemberId),
            }),
            GroupState::PreparingRebalance => ctx.out.push(Output::SyncGroup {
                reply,
                result: SyncGroupResult::error(ResponseError::RebalanceInProgress),
            }),
            GroupState::CompletingRebalance => {
                self.park_sync(ctx.out, &member_id, reply);
                self.remove_pending_sync(&member_id);
                if self.is_leader(&member_id) {
                    tracing::info!(
                        group = %self.group_id,
                        generation = self.generation_id,
                        members = self.members.len(),
                        "assignment received from the leader"
                    );
                    let assignments: HashMap<_, _> = req
                        .assignments
                        .into_iter()
                        .map(|a| (a.member_id, a.assignment))
                        .collect();
                    self.set_and_propagate_assignment(ctx.out, ctx.now, assignments);
                    self.transition(GroupState::Stable);
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(&member_id);
                let Some(member) = self.members.get(&member_id) else {
                    tracing::error!(group = %self.group_id, member = %member_id, "SyncGroup passed validation for a member the group does not hold");
                    return ctx.out.push(Output::SyncGroup {
                        reply,
                        result: SyncGroupResult::error(ResponseError::UnknownMemberId),
                    });
                };
                let assignment = member.assignment.clone();
                ctx.out.push(Output::SyncGroup {
                    reply,
                    result: SyncGroupResult {
                        error: None,
                        protocol_type: self.protocol_type.clone(),
                        protocol_name: self.protocol_name.clone(),
                        assignment,
                    },
                });
            }
        }
    }

    fn validate_sync(&self, req: &SyncGroup) -> Option<ResponseError> {
        if let Some(error) =
            self.validate_existing_member(&req.member_id, req.group_instance_id.as_deref())
        {
            return Some(error);
        }
        if req.generation_id != self.generation_id {
            return Some(ResponseError::IllegalGeneration);
        }
        let type_differs = req
            .protocol_type
            .as_ref()
            .is_some_and(|t| self.protocol_type.as_ref() != Some(t));
        let name_differs = req
            .protocol_name
            .as_ref()
            .is_some_and(|n| self.protocol_name.as_ref() != Some(n));
        (type_differs || name_differs).then_some(ResponseError::InconsistentGroupProtocol)
    }

    /// Handles a Heartbeat (Kafka's `classicGroupHeartbeatToClassicGroup`).
    pub(crate) fn heartbeat(
        &mut self,
        ctx: &mut Ctx<'_>,
        req: &Heartbeat,
    ) -> Option<ResponseError> {
        if self.state == GroupState::Dead {
            return Some(ResponseError::CoordinatorNotAvailable);
        }
        if let Some(error) =
            self.validate_existing_member(&req.member_id, req.group_instance_id.as_deref())
        {
            return Some(error);
        }
        if req.generation_id != self.generation_id {
            return Some(ResponseError::IllegalGeneration);
        }
        let Some(member) = self.members.get_mut(&req.member_id) else {
            // Unreachable after validation; an unknown member is never told NONE.
            return Some(ResponseError::UnknownMemberId);
        };
        match self.state {
            GroupState::Empty | GroupState::Dead => Some(ResponseError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                member.reschedule_heartbeat(ctx.now);
                Some(ResponseError::RebalanceInProgress)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                member.reschedule_heartbeat(ctx.now);
                None
            }
        }
    }

    /// Handles a LeaveGroup: each member is checked on its own, then the group rebalances once.
    pub(crate) fn leave(&mut self, ctx: &mut Ctx<'_>, req: LeaveGroup) -> LeaveGroupResult {
        if self.state == GroupState::Dead {
            return LeaveGroupResult {
                error: Some(ResponseError::CoordinatorNotAvailable),
                members: Vec::new(),
            };
        }
        let mut results = Vec::with_capacity(req.members.len());
        let mut leaving = Vec::new();
        let mut pending_removed = false;
        for m in req.members {
            let (error, target) = match &m.group_instance_id {
                None if m.member_id.is_empty() => (Some(ResponseError::UnknownMemberId), None),
                None if self.pending_members.remove(&m.member_id).is_some() => {
                    pending_removed = true;
                    (None, None)
                }
                None if !self.members.contains_key(&m.member_id) => {
                    (Some(ResponseError::UnknownMemberId), None)
                }
                None => (None, Some(m.member_id.clone())),
                Some(instance_id) => match self.static_member(instance_id) {
                    None => (Some(ResponseError::UnknownMemberId), None),
                    Some(existing) if !m.member_id.is_empty() && existing != m.member_id => {
                        (Some(ResponseError::FencedInstanceId), None)
                    }
                    Some(existing) => (None, Some(existing.to_string())),
                },
            };
            if let Some(target) = target {
                tracing::info!(group = %self.group_id, member = %target, reason = m.reason.as_deref().unwrap_or(""), "member leaves");
                leaving.push(target);
            }
            results.push(LeftMember {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                error,
            });
        }
        for member_id in &leaving {
            self.complete_join_reply(
                ctx.out,
                member_id,
                super::types::JoinGroupResult::error(ResponseError::UnknownMemberId, ""),
            );
            self.complete_sync_reply(
                ctx.out,
                member_id,
                SyncGroupResult::error(ResponseError::UnknownMemberId),
            );
            self.remove(member_id);
        }
        if !leaving.is_empty() {
            let reason = format!("members {leaving:?} left the group");
            self.maybe_prepare_rebalance_or_complete_join(ctx, &reason);
        } else if pending_removed && self.state == GroupState::PreparingRebalance {
            self.maybe_complete_join_phase(ctx);
        }
        LeaveGroupResult {
            error: None,
            members: results,
        }
    }
}
