//! [`GroupCoordinator`]: every classic group by id, with the checks Kafka makes before a group
//! sees a request.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use kafka_protocol::error::ResponseError;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::classic::{ClassicGroup, Ctx};
use super::config::GroupConfig;
use super::join::millis;
use super::types::{
    GroupDescription, GroupListing, GroupState, Heartbeat, JoinGroup, JoinGroupResult, LeaveGroup,
    LeaveGroupResult, LeftMember, Output, ReplyId, SyncGroup, SyncGroupResult,
};

/// Passes over the groups per [`GroupCoordinator::handle_timeout`]; a timer that re-arms itself at
/// `now` (a zero delay) fires again in the next pass, never forever.
const MAX_TIMEOUT_PASSES: usize = 64;

/// The classic group coordinator: every group by id, driven by inputs carrying `now`.
///
/// See the [module docs](super) for how a driver uses it.
#[derive(Debug)]
pub(crate) struct GroupCoordinator {
    config: GroupConfig,
    groups: BTreeMap<String, ClassicGroup>,
    out: Vec<Output>,
    /// Outputs handed out one by one by `poll_output`, in order.
    ready: VecDeque<Output>,
    rng: StdRng,
}

impl GroupCoordinator {
    /// A coordinator with no groups. `seed` makes the member ids it hands out reproducible.
    pub(crate) fn new(config: GroupConfig, seed: u64) -> Self {
        Self {
            config,
            groups: BTreeMap::new(),
            out: Vec::new(),
            ready: VecDeque::new(),
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Takes a JoinGroup; its answer (now or after the rebalance) comes out of
    /// [`poll_output`](Self::poll_output) tagged with `reply`.
    pub(crate) fn handle_join(&mut self, now: Instant, reply: ReplyId, req: JoinGroup) {
        if req.group_id.is_empty() {
            return self.push_join_error(reply, ResponseError::InvalidGroupId, req.member_id);
        }
        let session = millis(req.session_timeout_ms);
        if req.session_timeout_ms < 0
            || session < self.config.min_session_timeout
            || session > self.config.max_session_timeout
        {
            return self.push_join_error(
                reply,
                ResponseError::InvalidSessionTimeout,
                req.member_id,
            );
        }
        if millis(req.rebalance_timeout_ms) > self.config.max_rebalance_timeout {
            tracing::warn!(
                group = %req.group_id,
                client = %req.client_id,
                rebalance_timeout_ms = req.rebalance_timeout_ms,
                max = ?self.config.max_rebalance_timeout,
                "JoinGroup refused: rebalance timeout above the maximum (max_rebalance_timeout)"
            );
            return self.push_join_error(
                reply,
                ResponseError::InvalidSessionTimeout,
                req.member_id,
            );
        }
        if !self.groups.contains_key(&req.group_id) {
            if !req.member_id.is_empty() {
                return self.push_join_error(reply, ResponseError::UnknownMemberId, req.member_id);
            }
            if self.groups.len() >= self.config.max_groups {
                // POLICY_VIOLATION is not retriable, so clients stop with an error instead of
                // looping as they would on COORDINATOR_NOT_AVAILABLE; GROUP_MAX_SIZE_REACHED would
                // blame the group's member count.
                tracing::warn!(
                    group = %req.group_id,
                    client = %req.client_id,
                    max_groups = self.config.max_groups,
                    "JoinGroup refused: the coordinator holds max_groups groups; raise max_groups or reuse group ids"
                );
                return self.push_join_error(reply, ResponseError::PolicyViolation, req.member_id);
            }
            let group = ClassicGroup::new(req.group_id.clone());
            self.groups.insert(req.group_id.clone(), group);
        }
        let prefix = req
            .group_instance_id
            .clone()
            .unwrap_or_else(|| req.client_id.clone());
        let new_member_id = self.generate_member_id(&prefix);
        let group_id = req.group_id.clone();
        if let Some(group) = self.groups.get_mut(&group_id) {
            let mut ctx = Ctx {
                now,
                config: &self.config,
                out: &mut self.out,
            };
            group.join(&mut ctx, reply, req, new_member_id);
        }
        self.settle(&group_id, now);
        self.handle_timeout(now);
    }

    /// Takes a SyncGroup; its answer comes out of [`poll_output`](Self::poll_output).
    pub(crate) fn handle_sync(&mut self, now: Instant, reply: ReplyId, req: SyncGroup) {
        let req_group_id = req.group_id.clone();
        let Some(group) = self.groups.get_mut(&req.group_id) else {
            let result = SyncGroupResult::error(ResponseError::UnknownMemberId);
            return self.out.push(Output::SyncGroup { reply, result });
        };
        let mut ctx = Ctx {
            now,
            config: &self.config,
            out: &mut self.out,
        };
        group.sync(&mut ctx, reply, req);
        self.settle(&req_group_id, now);
        self.handle_timeout(now);
    }

    /// Answers a Heartbeat at once: `None` is NONE.
    pub(crate) fn handle_heartbeat(
        &mut self,
        now: Instant,
        req: &Heartbeat,
    ) -> Option<ResponseError> {
        let Some(group) = self.groups.get_mut(&req.group_id) else {
            return Some(ResponseError::UnknownMemberId);
        };
        let mut ctx = Ctx {
            now,
            config: &self.config,
            out: &mut self.out,
        };
        let error = group.heartbeat(&mut ctx, req);
        self.settle(&req.group_id, now);
        self.handle_timeout(now);
        error
    }

    /// Answers a LeaveGroup at once (parked requests of the leaving members are answered through
    /// [`poll_output`](Self::poll_output)).
    pub(crate) fn handle_leave(&mut self, now: Instant, req: LeaveGroup) -> LeaveGroupResult {
        let group_id = req.group_id.clone();
        let Some(group) = self.groups.get_mut(&req.group_id) else {
            let members = req
                .members
                .into_iter()
                .map(|m| LeftMember {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    error: Some(ResponseError::UnknownMemberId),
                })
                .collect();
            return LeaveGroupResult {
                error: None,
                members,
            };
        };
        let mut ctx = Ctx {
            now,
            config: &self.config,
            out: &mut self.out,
        };
        let result = group.leave(&mut ctx, req);
        self.settle(&group_id, now);
        self.handle_timeout(now);
        result
    }

    /// Runs every timer due at `now`: initial delays, join and sync deadlines, session expiry,
    /// and the deletion of groups empty for [`GroupConfig::empty_group_retention`].
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for _ in 0..MAX_TIMEOUT_PASSES {
            let mut fired = Vec::new();
            for (group_id, group) in self.groups.iter_mut() {
                if group.next_deadline().is_some_and(|at| at <= now) {
                    let mut ctx = Ctx {
                        now,
                        config: &self.config,
                        out: &mut self.out,
                    };
                    group.handle_timeout(&mut ctx);
                    fired.push(group_id.clone());
                }
            }
            if fired.is_empty() {
                return;
            }
            for group_id in fired {
                self.settle(&group_id, now);
            }
        }
    }

    /// After `group_id` changed at `now`: forgets it if nothing refers to it (a group whose only
    /// pending member expired before joining never existed for Kafka), deletes it once it has been
    /// empty for the retention, and otherwise arms or disarms that deletion.
    fn settle(&mut self, group_id: &str, now: Instant) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.is_unused() {
            self.groups.remove(group_id);
        } else if group.is_due_for_deletion(now) {
            tracing::info!(
                group = %group_id,
                generation = group.generation_id,
                retention = ?self.config.empty_group_retention,
                "deleting a group empty for the retention"
            );
            self.groups.remove(group_id);
        } else {
            group.schedule_deletion(now, self.config.empty_group_retention);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next, if ever.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.groups
            .values()
            .filter_map(ClassicGroup::next_deadline)
            .min()
    }

    /// The next answer to a JoinGroup or SyncGroup, in the order they were decided.
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        if self.ready.is_empty() {
            self.ready.extend(self.out.drain(..));
        }
        self.ready.pop_front()
    }

    /// A group as DescribeGroups shows it; an unknown group is `Dead` with no members.
    pub(crate) fn describe(&self, group_id: &str) -> GroupDescription {
        match self.groups.get(group_id) {
            Some(group) => group.describe(),
            None => GroupDescription {
                group_id: group_id.to_string(),
                state: GroupState::Dead,
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            },
        }
    }

    /// Whether a group by this id exists.
    pub(crate) fn contains(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id)
    }

    /// Every group, as ListGroups shows them, ordered by group id.
    pub(crate) fn list(&self) -> Vec<GroupListing> {
        self.groups.values().map(ClassicGroup::listing).collect()
    }

    /// The group by this id, for tests that must reach states no request sequence can.
    #[cfg(test)]
    pub(crate) fn group_mut(&mut self, group_id: &str) -> Option<&mut ClassicGroup> {
        self.groups.get_mut(group_id)
    }

    fn push_join_error(&mut self, reply: ReplyId, error: ResponseError, member_id: String) {
        let result = JoinGroupResult::error(error, member_id);
        self.out.push(Output::JoinGroup { reply, result });
    }

    /// Kafka's member id format: `<client id or instance id>-<uuid>`.
    fn generate_member_id(&mut self, prefix: &str) -> String {
        let n: u128 = self.rng.random();
        let hex = format!("{n:032x}");
        format!(
            "{prefix}-{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }
}
