//! An application's own assignor plugs into the worker as a value: three workers in this
//! process, on a real Kafka group, with an assignor that puts every task on the member with the
//! smallest member id. When that member leaves, the next smallest takes everything.

use std::collections::BTreeSet;
use std::time::Duration;

use kroupier_assignor::{
    AssignmentInput, Assignor, AssignorError, MemberPlan, Plan, RebalanceProtocol, TaskIndex,
    Unplaced, UnplacedReason,
};
use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_worker::{
    Kind, Task, TaskContext, TaskError, WorkerBuilder, WorkerConfig, WorkerHandle,
};
use serde::{Deserialize, Serialize};

/// Every task on the member with the smallest member id (members come sorted by id). Eager:
/// members stop everything when a rebalance starts, so a task can move in the same round.
struct SmallestMemberId;

impl Assignor for SmallestMemberId {
    fn name(&self) -> &'static str {
        "smallest-member-id"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        let mut plan = Plan {
            state: input.state,
            ..Plan::default()
        };
        for (i, member) in input.members.iter().enumerate() {
            let mut assignment = MemberPlan {
                member_id: member.id.clone(),
                assigned: Vec::new(),
                revoked: Vec::new(),
            };
            for t in 0..input.tasks.len() {
                let task = TaskIndex(t as u32);
                let runs_it = input
                    .tasks
                    .kind(task)
                    .is_some_and(|kind| member.kinds.can_run(kind));
                let target = input
                    .members
                    .iter()
                    .position(|m| input.tasks.kind(task).is_some_and(|k| m.kinds.can_run(k)));
                if runs_it && target == Some(i) {
                    assignment.assigned.push(task);
                } else if member.owned.contains(&task) {
                    assignment.revoked.push(task);
                }
            }
            plan.assignments.push(assignment);
        }
        for t in 0..input.tasks.len() {
            let task = TaskIndex(t as u32);
            if !plan.assignments.iter().any(|a| a.assigned.contains(&task)) {
                plan.unplaced.push(Unplaced {
                    task,
                    reason: UnplacedReason::NoEligibleMember,
                });
            }
        }
        Ok(plan)
    }
}

#[derive(Serialize, Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

const IDLE: Kind<Idle> = Kind::new("idle");
const TASKS: usize = 6;

async fn start(bootstrap: &str, group: &str, id: &str) -> WorkerHandle {
    let mut config = WorkerConfig::new(group);
    config.member.cluster.bootstrap_servers = vec![bootstrap.to_owned()];
    config.member.cluster.connection.client_id = format!("custom-assignor-{id}");
    config.member.membership.session_timeout = Duration::from_secs(6);
    config.member.membership.heartbeat_interval = Duration::from_secs(1);
    config.tasks.graceful_stop_timeout = Duration::from_secs(2);
    config.worker_id = id.to_owned();
    let mut builder = WorkerBuilder::new(config)
        .assignor(SmallestMemberId)
        .register(IDLE);
    for i in 0..TASKS {
        builder = builder.typed_task(&IDLE, format!("idle-{i}"), Idle {});
    }
    builder.spawn().await.expect("the worker starts")
}

/// Each worker's member id and running tasks, once they all hold the same generation.
fn placement(workers: &[&WorkerHandle]) -> Option<Vec<(String, BTreeSet<String>)>> {
    let mut generation = None;
    let mut out = Vec::new();
    for worker in workers {
        let current = worker.member().current().generation?;
        if *generation.get_or_insert(current.generation_id) != current.generation_id {
            return None;
        }
        let tasks = worker.owned().into_keys().collect();
        out.push((current.member_id, tasks));
    }
    Some(out)
}

/// Waits (up to 60 s) until the worker with the smallest member id runs every task and the
/// others none; returns the index of that worker.
async fn all_on_smallest(workers: &[&WorkerHandle]) -> usize {
    let all: BTreeSet<String> = (0..TASKS).map(|i| format!("idle-{i}")).collect();
    let mut last = None;
    for _ in 0..600 {
        if let Some(placement) = placement(workers) {
            let smallest = (0..placement.len())
                .min_by_key(|&i| placement[i].0.clone())
                .expect("workers");
            let placed = placement.iter().enumerate().all(|(i, (_, tasks))| {
                if i == smallest {
                    *tasks == all
                } else {
                    tasks.is_empty()
                }
            });
            if placed {
                return smallest;
            }
            last = Some(placement);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("tasks never all landed on the smallest member id: {last:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_defined_assignor_places_every_task_on_the_smallest_member_id() {
    let Some(bootstrap) = kafka_bootstrap("custom_assignor: smallest member id") else {
        return;
    };
    let group = format!("custom-assignor-{}", unix_ms());
    let mut workers = Vec::new();
    for id in ["w1", "w2", "w3"] {
        workers.push(start(&bootstrap, &group, id).await);
    }
    // N workers with the defaults on one machine: each status API got its own free port.
    let ports: BTreeSet<u16> = workers
        .iter()
        .map(|w| w.status_addr().expect("the status API is on").port())
        .collect();
    assert_eq!(ports.len(), 3, "{ports:?}");

    let smallest = all_on_smallest(&workers.iter().collect::<Vec<_>>()).await;

    // The smallest leaves: the next smallest takes everything.
    let leaving = workers.remove(smallest);
    leaving.shutdown().await.expect("a clean shutdown");
    all_on_smallest(&workers.iter().collect::<Vec<_>>()).await;

    for worker in workers {
        worker.shutdown().await.expect("a clean shutdown");
    }
}
