//! Table and scenario tests of the classic group state machine on virtual time.

mod consistency;
mod join;
mod limits;
mod statics;
mod sync;
mod timers;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::{
    GroupConfig, GroupCoordinator, GroupState, Heartbeat, JoinGroup, JoinGroupResult, LeaveGroup,
    LeaveGroupResult, LeavingMember, MemberAssignment, Output, Protocol, ReplyId, SyncGroup,
    SyncGroupResult,
};

/// One member's first join, driven by hand: it leads generation 1 and the group waits for its
/// SyncGroup.
#[test]
fn a_first_member_leads_generation_one() {
    let mut coordinator = GroupCoordinator::new(GroupConfig::default(), 7);
    coordinator.handle_join(
        Instant::now(),
        ReplyId(1),
        JoinGroup {
            group_id: "g".into(),
            member_id: String::new(),
            group_instance_id: None,
            protocol_type: "kroupier".into(),
            protocols: vec![Protocol {
                name: "sticky".into(),
                metadata: Bytes::new(),
            }],
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            client_id: "worker-1".into(),
            client_host: "/127.0.0.1".into(),
            require_known_member_id: false,
            reason: None,
        },
    );
    let Some(Output::JoinGroup { result, .. }) = coordinator.poll_output() else {
        panic!("the join is answered at once");
    };
    assert_eq!(result.generation_id, 1);
    assert_eq!(result.leader, result.member_id);
    assert_eq!(
        coordinator.describe("g").state,
        GroupState::CompletingRebalance
    );
}

pub(super) const SESSION_MS: i32 = 10_000;
pub(super) const REBALANCE_MS: i32 = 30_000;

/// A coordinator on a virtual clock, collecting every parked answer by its reply id.
pub(super) struct Harness {
    pub(super) c: GroupCoordinator,
    pub(super) now: Instant,
    next_reply: u64,
    answers: HashMap<ReplyId, Output>,
}

impl Harness {
    pub(super) fn new() -> Self {
        Self::with_config(GroupConfig::default())
    }

    pub(super) fn with_config(config: GroupConfig) -> Self {
        Self {
            c: GroupCoordinator::new(config, 42),
            now: Instant::now(),
            next_reply: 0,
            answers: HashMap::new(),
        }
    }

    pub(super) fn advance(&mut self, by: Duration) {
        self.now += by;
        self.c.handle_timeout(self.now);
    }

    fn collect(&mut self) {
        while let Some(out) = self.c.poll_output() {
            let reply = match &out {
                Output::JoinGroup { reply, .. } | Output::SyncGroup { reply, .. } => *reply,
            };
            assert!(self.answers.insert(reply, out).is_none(), "answered twice");
        }
    }

    fn reply_id(&mut self) -> ReplyId {
        self.next_reply += 1;
        ReplyId(self.next_reply)
    }

    pub(super) fn join(&mut self, req: JoinGroup) -> ReplyId {
        let reply = self.reply_id();
        self.c.handle_join(self.now, reply, req);
        reply
    }

    pub(super) fn sync(&mut self, req: SyncGroup) -> ReplyId {
        let reply = self.reply_id();
        self.c.handle_sync(self.now, reply, req);
        reply
    }

    pub(super) fn heartbeat(&mut self, member: &str, generation: i32) -> Option<ResponseError> {
        let req = Heartbeat {
            group_id: "g".into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
        };
        self.c.handle_heartbeat(self.now, &req)
    }

    pub(super) fn leave(&mut self, members: &[(&str, Option<&str>)]) -> LeaveGroupResult {
        let members = members
            .iter()
            .map(|(id, instance)| LeavingMember {
                member_id: id.to_string(),
                group_instance_id: instance.map(str::to_string),
                reason: None,
            })
            .collect();
        self.c.handle_leave(
            self.now,
            LeaveGroup {
                group_id: "g".into(),
                members,
            },
        )
    }

    /// The JoinGroup answer for `reply`, if it has been given.
    pub(super) fn join_answer(&mut self, reply: ReplyId) -> Option<JoinGroupResult> {
        self.collect();
        match self.answers.remove(&reply)? {
            Output::JoinGroup { result, .. } => Some(result),
            other => panic!("expected a JoinGroup answer, got {other:?}"),
        }
    }

    /// The SyncGroup answer for `reply`, if it has been given.
    pub(super) fn sync_answer(&mut self, reply: ReplyId) -> Option<SyncGroupResult> {
        self.collect();
        match self.answers.remove(&reply)? {
            Output::SyncGroup { result, .. } => Some(result),
            other => panic!("expected a SyncGroup answer, got {other:?}"),
        }
    }

    /// Joins a dynamic member without KIP-394 and returns the answer, which must be immediate.
    pub(super) fn join_now(&mut self, req: JoinGroup) -> JoinGroupResult {
        let reply = self.join(req);
        self.join_answer(reply)
            .expect("an immediate JoinGroup answer")
    }

    pub(super) fn state(&self) -> GroupState {
        self.c.describe("g").state
    }

    /// Forms a stable group of `n` dynamic members (protocol `p`, metadata `m<i>`) and returns
    /// their member ids, leader first, and the generation.
    pub(super) fn stable_group(&mut self, n: usize) -> (Vec<String>, i32) {
        let first = self.join_now(join("", &[("p", "m0")]));
        let mut ids = vec![first.member_id.clone()];
        let mut generation = first.generation_id;
        let leader_sync = self.sync(sync(&ids[0], generation, &[]));
        assert_eq!(self.sync_answer(leader_sync).map(|r| r.error), Some(None));
        for i in 1..n {
            let metadata = format!("m{i}");
            let new = self.join(join("", &[("p", metadata.as_str())]));
            assert!(self.join_answer(new).is_none(), "the new member waits");
            let parked: Vec<ReplyId> = ids
                .iter()
                .enumerate()
                .map(|(k, id)| self.join(join(id, &[("p", format!("m{k}").as_str())])))
                .collect();
            let answer = self.join_answer(new).expect("join completes");
            ids.push(answer.member_id.clone());
            generation = answer.generation_id;
            for reply in parked {
                let r = self.join_answer(reply).expect("rejoin answered");
                assert_eq!(r.generation_id, generation);
            }
            let followers: Vec<ReplyId> = ids[1..]
                .iter()
                .map(|id| self.sync(sync(id, generation, &[])))
                .collect();
            let leader = self.sync(sync(&ids[0], generation, &[]));
            assert_eq!(self.sync_answer(leader).map(|r| r.error), Some(None));
            for reply in followers {
                assert_eq!(self.sync_answer(reply).map(|r| r.error), Some(None));
            }
        }
        assert_eq!(self.state(), GroupState::Stable);
        (ids, generation)
    }
}

/// A JoinGroup for group `g`, type `kroupier`, without KIP-394.
pub(super) fn join(member_id: &str, protocols: &[(&str, &str)]) -> JoinGroup {
    JoinGroup {
        group_id: "g".into(),
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "kroupier".into(),
        protocols: protocols
            .iter()
            .map(|(name, metadata)| Protocol {
                name: name.to_string(),
                metadata: Bytes::copy_from_slice(metadata.as_bytes()),
            })
            .collect(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
        reason: None,
    }
}

/// A SyncGroup for group `g` with the given assignments.
pub(super) fn sync(member_id: &str, generation: i32, assignments: &[(&str, &str)]) -> SyncGroup {
    SyncGroup {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: None,
        protocol_name: None,
        assignments: assignments
            .iter()
            .map(|(id, a)| MemberAssignment {
                member_id: id.to_string(),
                assignment: Bytes::copy_from_slice(a.as_bytes()),
            })
            .collect(),
    }
}

pub(super) fn ms(n: i32) -> Duration {
    Duration::from_millis(n as u64)
}
