//! Workers in a group, in one process, against the embedded coordinator (Kafka's wire
//! protocol on a local socket): a rolling upgrade with different catalogues, and an eager
//! (`sticky`) group that hands tasks over on shutdown.
//!
//! Real sockets and real time, with generous waits; no assertion depends on how long
//! anything takes.

use std::collections::BTreeSet;
use std::time::Duration;

use kroupier_assignor::{Assignor, Cooperative, CooperativeConfig, Sticky};
use kroupier_embedded::{CoordinatorHandle, EmbeddedCoordinator};
use kroupier_worker::{
    Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig, WorkerHandle, WorkerStatus,
};
use serde::Deserialize;

/// Beats until revoked, checking its lease each time.
#[derive(Deserialize)]
struct Beat {}

impl Task for Beat {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            ctx.check_lease()?;
        }
    }
}

async fn coordinator() -> CoordinatorHandle {
    EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .expect("the embedded coordinator starts")
}

fn config(bootstrap: &str, group: &str, worker: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(group);
    config.member.cluster.bootstrap_servers = vec![bootstrap.to_owned()];
    config.worker_id = worker.to_owned();
    worker.clone_into(&mut config.member.cluster.connection.client_id);
    config.member.membership.session_timeout = Duration::from_secs(3);
    config.member.membership.heartbeat_interval = Duration::from_millis(500);
    config.tasks.abort_timeout = Some(Duration::from_millis(200));
    config.status.addr = None;
    config
}

fn builder(config: WorkerConfig, assignor: impl Assignor + 'static) -> WorkerBuilder {
    WorkerBuilder::new(config).assignor(assignor)
}

fn specs(kind: &str, n: usize) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| TaskSpec::new(format!("{kind}-{i}"), kind, serde_json::json!({})))
        .collect()
}

fn running(status: &WorkerStatus) -> BTreeSet<String> {
    status
        .tasks
        .iter()
        .filter(|t| t.status.state == kroupier_worker::TaskState::Running)
        .map(|t| t.status.task_id.clone())
        .collect()
}

/// Polls the workers' status until `done` holds for all of them together.
async fn until(
    workers: &[&WorkerHandle],
    done: impl Fn(&[WorkerStatus]) -> bool,
) -> Vec<WorkerStatus> {
    for _ in 0..400 {
        let statuses: Vec<WorkerStatus> = workers.iter().map(|w| w.status()).collect();
        if done(&statuses) {
            return statuses;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let statuses: Vec<WorkerStatus> = workers.iter().map(|w| w.status()).collect();
    panic!("never settled: {statuses:#?}");
}

/// Every task of `all` runs on exactly one of the workers.
fn exactly_once(statuses: &[WorkerStatus], all: &BTreeSet<String>) -> bool {
    let mut seen = BTreeSet::new();
    for status in statuses {
        for task in running(status) {
            if !seen.insert(task) {
                return false;
            }
        }
    }
    &seen == all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_gives_new_kinds_only_to_workers_that_know_them() {
    let coordinator = coordinator().await;
    let bootstrap = coordinator.bootstrap();
    // The upgraded worker knows kind `new`; it starts first, so it leads.
    let upgraded = specs("old", 4)
        .into_iter()
        .chain(specs("new", 2))
        .fold(
            builder(
                config(&bootstrap, "upgrade", "upgraded"),
                Cooperative::default(),
            )
            .register::<Beat>("old")
            .register::<Beat>("new"),
            WorkerBuilder::task,
        )
        .spawn()
        .await
        .unwrap();
    let all: BTreeSet<String> = (0..4)
        .map(|i| format!("old-{i}"))
        .chain((0..2).map(|i| format!("new-{i}")))
        .collect();
    until(&[&upgraded], |s| exactly_once(s, &all)).await;

    let mut older = builder(
        config(&bootstrap, "upgrade", "older"),
        Cooperative::default(),
    )
    .register::<Beat>("old");
    for spec in specs("old", 4) {
        older = older.task(spec);
    }
    let older = older.spawn().await.unwrap();
    let settled = until(&[&upgraded, &older], |s| {
        exactly_once(s, &all)
            && !running(&s[1]).is_empty()
            && !s[0].rebalancing
            && !s[1].rebalancing
    })
    .await;
    assert!(
        running(&settled[1]).iter().all(|t| t.starts_with("old-")),
        "{settled:#?}"
    );
    assert!(
        settled[1].group.catalogue_mismatch,
        "the older worker sees the mismatch"
    );
    assert!(!settled[0].group.catalogue_mismatch);

    // No ping-pong: the group stays in its generation with the same tasks.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later: Vec<WorkerStatus> = [&upgraded, &older].iter().map(|w| w.status()).collect();
    for (before, after) in settled.iter().zip(&later) {
        assert_eq!(before.group.generation, after.group.generation);
        assert_eq!(running(before), running(after));
    }
    older.shutdown().await.unwrap();
    upgraded.shutdown().await.unwrap();
    coordinator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eager_group_spreads_tasks_and_takes_them_over_on_shutdown() {
    let coordinator = coordinator().await;
    let bootstrap = coordinator.bootstrap();
    let start = |id: &str| {
        let mut builder = builder(config(&bootstrap, "eager", id), Sticky).register::<Beat>("beat");
        for spec in specs("beat", 6) {
            builder = builder.task(spec);
        }
        builder.spawn()
    };
    let all: BTreeSet<String> = (0..6).map(|i| format!("beat-{i}")).collect();
    let a = start("a").await.unwrap();
    until(&[&a], |s| exactly_once(s, &all)).await;
    let b = start("b").await.unwrap();
    until(&[&a, &b], |s| {
        exactly_once(s, &all) && running(&s[0]).len() == 3 && running(&s[1]).len() == 3
    })
    .await;
    b.shutdown().await.unwrap();
    until(&[&a], |s| exactly_once(s, &all)).await;
    a.shutdown().await.unwrap();
    coordinator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_workers_tasks_wait_the_lost_task_delay_then_move() {
    let coordinator = coordinator().await;
    let bootstrap = coordinator.bootstrap();
    let start = |id: &str| {
        let mut config = config(&bootstrap, "lost-delay", id);
        // Static: its shutdown sends no LeaveGroup, so the group sees it vanish, as a crash.
        config.member.membership.group_instance_id = Some(id.to_owned());
        let cooperative = Cooperative::new(CooperativeConfig {
            lost_task_delay: Duration::from_secs(2),
            ..CooperativeConfig::default()
        })
        .unwrap();
        let mut builder = builder(config, cooperative).register::<Beat>("beat");
        for spec in specs("beat", 4) {
            builder = builder.task(spec);
        }
        builder.spawn()
    };
    let all: BTreeSet<String> = (0..4).map(|i| format!("beat-{i}")).collect();
    let survivor = start("a").await.unwrap();
    until(&[&survivor], |s| exactly_once(s, &all)).await;
    let vanishing = start("b").await.unwrap();
    let settled = until(&[&survivor, &vanishing], |s| {
        exactly_once(s, &all) && running(&s[0]).len() == 2 && running(&s[1]).len() == 2
    })
    .await;
    let generation = settled[0].group.generation;
    vanishing.shutdown().await.unwrap();

    // After the session timeout the group rebalances without b; its tasks wait for it first.
    let waiting = until(&[&survivor], |s| s[0].group.generation > generation).await;
    // (Tasks of an assignment are on the board, in whatever state, before its generation is.)
    assert_eq!(
        waiting[0].tasks.len(),
        2,
        "b's tasks wait the lost-task delay"
    );
    // Then the leader's scheduled follow-up rebalance hands them over.
    until(&[&survivor], |s| exactly_once(s, &all)).await;
    survivor.shutdown().await.unwrap();
    coordinator.shutdown().await;
}
