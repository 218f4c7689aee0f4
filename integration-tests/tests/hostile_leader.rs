//! A leader whose assignments are wrong: garbage bytes for one worker, tasks the catalogue does
//! not have and tasks both assigned and revoked for another. Each worker rejects what it cannot
//! accept with a logged reason and runs the rest; the healthy worker's tasks are untouched, and
//! no task ever runs on two workers at once.
//!
//! The leader is this test process: a kroupier-protocol member built on the coordinator crate,
//! which joins first (Kafka makes the first member to join the leader) and hands out what the
//! test wants. The followers are `quickstart` workers. Runs against Kafka or the embedded
//! coordinator through `KROUPIER_KAFKA_BOOTSTRAP`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kroupier_coordinator::driver::{Member, MemberConfig, MemberHandle};
use kroupier_coordinator::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberState,
    ProtocolMetadata,
};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::quickstart::*;
use kroupier_worker::protocol::{Assignment, MemberMetadata};

/// Hands `w1` garbage, `w2` its tasks plus an unknown one and one both assigned and revoked,
/// `w3` its tasks; keeps nothing itself (it registers no kind).
struct HostileLeader;

impl GroupProtocol for HostileLeader {
    fn protocol_type(&self) -> &str {
        "kroupier"
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        let metadata = MemberMetadata::new("hostile-leader").encode();
        vec![ProtocolMetadata::new("cooperative", Bytes::from(metadata))]
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        let assignment = |tasks: &[&str], revoked: &[&str]| {
            let mut a = Assignment::new(context.leader_member_id.clone(), context.generation_id);
            a.tasks = tasks.iter().map(|t| (*t).to_owned()).collect();
            a.revoked = revoked.iter().map(|t| (*t).to_owned()).collect();
            Bytes::from(a.encode())
        };
        Ok(members
            .iter()
            .map(|m| {
                let worker = MemberMetadata::decode(&m.metadata)
                    .map(|meta| meta.worker_id)
                    .unwrap_or_default();
                let bytes = match worker.as_str() {
                    "w1" => Bytes::from_static(b"\x00\x01\xff\xff\xff\xff not an assignment"),
                    "w2" => assignment(&["task-0", "task-1", "task-2", "task-999"], &["task-2"]),
                    "w3" => assignment(&["task-3", "task-4", "task-5"], &[]),
                    _ => assignment(&[], &[]),
                };
                MemberAssignment::new(m.member_id.clone(), bytes)
            })
            .collect())
    }
}

async fn hostile_leader(bootstrap: &str, group: &str) -> MemberHandle {
    let mut config = MemberConfig::new(bootstrap, group).with_timeouts(
        Duration::from_millis(SESSION_MS),
        Duration::from_millis(HEARTBEAT_MS),
    );
    config.membership.min_session_timeout = Duration::from_secs(1);
    let member = Member::spawn(config, Arc::new(HostileLeader)).expect("valid config");
    let mut status = member.status();
    tokio::time::timeout(
        Duration::from_secs(20),
        status.wait_for(|s| s.state == MemberState::Stable),
    )
    .await
    .expect("the hostile leader joins")
    .expect("its driver runs");
    member
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_reject_a_bad_assignment_and_run_the_rest() {
    let Some(bootstrap) = kafka_bootstrap("hostile leader") else {
        return;
    };
    let dir = TempDir::new("hostile");
    let group = Group::new(&bootstrap, "hostile", 6, &dir.0);
    let leader = hostile_leader(&bootstrap, &group.group).await;
    let _workers: Vec<Worker> = tokio::task::block_in_place(|| {
        ["w1", "w2", "w3"]
            .iter()
            .map(|id| group.start(id))
            .collect()
    });
    let started_ms = unix_ms();
    // w1 rejects its garbage and rejoins every second; the others keep their tasks meanwhile.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let all = journals(&dir.0);
    let ran: BTreeSet<&str> = all.keys().map(String::as_str).collect();
    assert_eq!(
        ran,
        BTreeSet::from(["task-0", "task-1", "task-3", "task-4", "task-5"]),
        "the unknown task, the assigned-and-revoked one and w1's garbage start nothing"
    );
    for (task, beats) in &all {
        let workers: BTreeSet<&str> = beats.iter().map(|b| b.worker.as_str()).collect();
        let expected = if ["task-0", "task-1"].contains(&task.as_str()) {
            "w2"
        } else {
            "w3"
        };
        assert_eq!(workers, BTreeSet::from([expected]), "{task}");
    }
    // Healthy tasks are untouched by w1's rebalances: no gap once they started.
    let settled_ms = started_ms + 2_000;
    for task in ["task-3", "task-4", "task-5"] {
        let gap = journal::longest_unowned(&all[task], settled_ms);
        assert!(gap < 500, "{task} stopped for {gap} ms during w1's rejoins");
    }
    assert_no_overlap(&dir.0);
    drop(leader);
}
