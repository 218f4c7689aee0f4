//! The seam, on tokio's paused clock.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use crate::TaskSpec;
use crate::builder::WorkerBuilder;
use crate::config::WorkerConfig;
use crate::context::TaskContext;
use crate::lease::LeaseErrorKind;
use crate::protocol::{Assignment, MemberMetadata};
use crate::status::TaskState;
use crate::task::{Registry, Task, TaskError};

/// Hands its context to the test, then waits for cancellation.
struct Probe(mpsc::UnboundedSender<TaskContext>);
impl Task for Probe {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let _ = self.0.send(ctx.clone());
        ctx.cancelled().await;
        Ok(())
    }
}

/// Ignores cancellation.
struct Stubborn;
impl Task for Stubborn {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Works until its lease check fails.
struct Checks;
impl Task for Checks {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        loop {
            ctx.check_lease()?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn runtime() -> (Runtime, mpsc::UnboundedReceiver<TaskContext>) {
    let (sender, contexts) = mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry
        .register_with("probe", move |_: &serde_json::Value| {
            Ok::<_, String>(Probe(sender.clone()))
        })
        .register_with("stubborn", |_: &serde_json::Value| {
            Ok::<_, String>(Stubborn)
        })
        .register_with("checks", |_: &serde_json::Value| Ok::<_, String>(Checks));
    let runtime = WorkerBuilder::new(WorkerConfig {
        worker_id: "worker-a".into(),
        ..WorkerConfig::new("orders")
    })
    .registry(registry)
    .task(TaskSpec::new("task-0", "probe", json!(null)))
    .task(TaskSpec::new("task-1", "probe", json!(null)))
    .task(TaskSpec::new("task-2", "probe", json!(null)))
    .task(TaskSpec::new("slow", "stubborn", json!(null)))
    .task(TaskSpec::new("careful", "checks", json!(null)))
    .build_runtime()
    .unwrap();
    (runtime, contexts)
}

fn change(generation: i32, member: &str, run: &[&str], revoke: &[&str]) -> AssignmentChange {
    AssignmentChange {
        token: FencingToken::new(generation, member),
        leader: "member-l".into(),
        valid_until: Instant::now() + Duration::from_secs(7),
        run: run.iter().map(|s| s.to_string()).collect(),
        revoke: revoke.iter().map(|s| s.to_string()).collect(),
        leader_catalogue_fingerprint: None,
    }
}

async fn contexts(rx: &mut mpsc::UnboundedReceiver<TaskContext>, n: usize) -> Vec<TaskContext> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(rx.recv().await.unwrap());
    }
    out.sort_by(|a, b| a.task_id().cmp(b.task_id()));
    out
}

#[tokio::test(start_paused = true)]
async fn apply_starts_the_target_set_and_keeps_what_stays() {
    let (runtime, mut rx) = runtime();
    let report = runtime
        .apply(&change(1, "m", &["task-0", "task-1", "task-2"], &[]))
        .await;
    assert_eq!(report.started, ["task-0", "task-1", "task-2"]);
    let ctxs = contexts(&mut rx, 3).await;
    assert_eq!(ctxs[0].check_lease(), Ok(FencingToken::new(1, "m")));

    runtime.rebalance_started();
    assert!(runtime.board().snapshot().rebalancing);
    let applying = runtime.apply(&change(2, "m", &["task-0", "task-1"], &["task-2"]));
    // At the call, before the future is polled: kept tasks carry on under the new generation,
    // the revoked one's lease is gone, the status shows the new generation.
    assert_eq!(ctxs[0].check_lease(), Ok(FencingToken::new(2, "m")));
    assert!(matches!(
        ctxs[2].check_lease(),
        Err(e) if e.kind() == LeaseErrorKind::Revoked
    ));
    assert_eq!(runtime.board().group().generation, Some(2));
    let report = applying.await;
    assert!(report.started.is_empty());
    let kept: Vec<&str> = report.kept.iter().map(|id| &**id).collect();
    assert_eq!(kept, ["task-0", "task-1"]);
    assert_eq!(report.stopped.graceful, ["task-2"]);
    let status = runtime.board().snapshot();
    assert!(!status.rebalancing);
    assert_eq!(status.group.generation, Some(2));
    assert_eq!(status.tasks.len(), 2);
    assert_eq!(
        runtime.owned(),
        [("task-0".into(), 1), ("task-1".into(), 1)].into()
    );
}

#[tokio::test(start_paused = true)]
async fn apply_returns_only_once_revocations_are_done() {
    let (runtime, _rx) = runtime();
    runtime
        .apply(&change(1, "m", &["slow", "task-0"], &[]))
        .await;
    // Let `slow` run (a task cancelled before its first poll stops without running).
    tokio::time::sleep(Duration::from_millis(1)).await;
    let started = Instant::now();
    // `slow` is missing from the full target set: it is stopped even without a revocation.
    let report = runtime.apply(&change(2, "m", &["task-0"], &[])).await;
    assert_eq!(report.stopped.aborted, ["slow"]);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(runtime.supervisor().held(), ["task-0"]);
}

#[tokio::test(start_paused = true)]
async fn lost_fails_leases_at_once_and_stops_all_by_the_deadline() {
    let (runtime, mut rx) = runtime();
    runtime
        .apply(&change(1, "m", &["task-0", "slow"], &[]))
        .await;
    let ctx = rx.recv().await.unwrap();
    let started = Instant::now();
    let lost = runtime.lost(started + Duration::from_secs(3));
    // At the call, before the future is ever polled.
    assert!(ctx.check_lease().is_err());
    let report = lost.await;
    assert!(started.elapsed() <= Duration::from_secs(3));
    assert_eq!(report.graceful, ["task-0"]);
    assert_eq!(report.aborted, ["slow"]);
    assert!(runtime.supervisor().held().is_empty());
    assert!(runtime.metadata().owned.is_empty());
}

#[tokio::test(start_paused = true)]
async fn expired_lease_without_heartbeats_fails_the_check() {
    let (runtime, mut rx) = runtime();
    runtime.apply(&change(1, "m", &["task-0"], &[])).await;
    let ctx = rx.recv().await.unwrap();
    tokio::time::advance(Duration::from_secs(5)).await;
    runtime.extend_lease(Instant::now() + Duration::from_secs(7));
    tokio::time::advance(Duration::from_secs(5)).await;
    assert!(ctx.check_lease().is_ok());
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(matches!(ctx.check_lease(), Err(e) if e.kind() == LeaseErrorKind::Expired));
}

#[tokio::test(start_paused = true)]
async fn a_new_member_id_restarts_tasks_under_the_new_token() {
    let (runtime, mut rx) = runtime();
    runtime.apply(&change(3, "old", &["task-0"], &[])).await;
    let old = rx.recv().await.unwrap();
    let report = runtime.apply(&change(1, "new", &["task-0"], &[])).await;
    assert_eq!(report.stopped.graceful, ["task-0"]);
    assert_eq!(report.started, ["task-0"]);
    let new = rx.recv().await.unwrap();
    assert!(old.check_lease().is_err());
    assert_eq!(new.check_lease(), Ok(FencingToken::new(1, "new")));
    assert_eq!(runtime.owned(), [("task-0".into(), 1)].into());
}

#[tokio::test(start_paused = true)]
async fn metadata_and_mismatch_and_failover_show() {
    let (runtime, _rx) = runtime();
    let mut first = change(1, "m", &["task-0"], &[]);
    first.leader_catalogue_fingerprint = Some(1);
    runtime.apply(&first).await;
    let status = runtime.board().snapshot();
    assert!(status.group.catalogue_mismatch);
    assert_eq!(
        status.group.leader_catalogue_fingerprint.as_deref(),
        Some("0000000000000001")
    );
    // The first assignment is no failover.
    assert!(
        runtime
            .board()
            .render_metrics()
            .contains("kroupier_last_failover_timestamp_seconds 0.0\n")
    );

    let mut second = change(2, "m", &["task-0", "task-1"], &[]);
    second.leader_catalogue_fingerprint = Some(runtime.supervisor().catalogue().fingerprint());
    runtime.apply(&second).await;
    assert!(!runtime.board().snapshot().group.catalogue_mismatch);
    assert!(
        !runtime
            .board()
            .render_metrics()
            .contains("kroupier_last_failover_timestamp_seconds 0.0\n")
    );

    let metadata = runtime.metadata();
    assert_eq!(metadata.worker_id, "worker-a");
    assert_eq!(
        metadata.owned,
        [("task-0".into(), 1), ("task-1".into(), 2)].into()
    );
    assert_eq!(
        metadata.kinds,
        ["checks", "probe", "stubborn"].map(String::from).into()
    );
    assert_eq!(MemberMetadata::decode(&metadata.encode()), Ok(metadata));
}

#[tokio::test(start_paused = true)]
async fn decoded_assignments_drive_the_runtime() {
    let (runtime, _rx) = runtime();
    let mut assignment = Assignment::new("member-l", 4);
    assignment.tasks = ["task-1".to_string()].into();
    let bytes = assignment.encode();
    let decoded = Assignment::decode(&bytes).unwrap();
    let valid_until = Instant::now() + Duration::from_secs(7);
    let change = AssignmentChange::from_assignment(&decoded, "m", valid_until);
    assert_eq!(change.token, FencingToken::new(4, "m"));
    let report = runtime.apply(&change).await;
    assert_eq!(report.started, ["task-1"]);
    tokio::task::yield_now().await;
    assert_eq!(
        runtime.board().tasks().state("task-1"),
        Some(TaskState::Running)
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_everything_and_fails_readiness() {
    let (runtime, _rx) = runtime();
    runtime
        .apply(&change(1, "m", &["task-0", "task-1"], &[]))
        .await;
    assert_eq!(runtime.board().not_ready(), None);
    let report = runtime
        .shutdown(Instant::now() + Duration::from_secs(6))
        .await;
    assert_eq!(report.graceful, ["task-0", "task-1"]);
    assert!(runtime.board().not_ready().is_some());
    assert!(runtime.board().snapshot().shutting_down);
}

#[tokio::test(start_paused = true)]
async fn eager_rebalances_revoke_everything_before_rejoining() {
    let (runtime, mut rx) = runtime();
    runtime
        .apply(&change(1, "m", &["task-0", "task-1"], &[]))
        .await;
    let ctxs = contexts(&mut rx, 2).await;
    runtime.rebalance_started();
    let report = runtime.revoke(&["task-1".to_string()].into()).await;
    assert_eq!(report.graceful, ["task-1"]);
    let report = runtime.revoke_all().await;
    assert_eq!(report.graceful, ["task-0"]);
    assert!(ctxs.iter().all(|ctx| ctx.check_lease().is_err()));
    assert!(runtime.metadata().owned.is_empty());
    // During the rebalance the last stable view is still served.
    let status = runtime.board().snapshot();
    assert!(status.rebalancing);
    assert_eq!(status.group.generation, Some(1));
}

#[tokio::test(start_paused = true)]
async fn tasks_stopped_by_an_expired_lease_resume_when_it_is_extended() {
    let (runtime, _rx) = runtime();
    runtime.apply(&change(1, "m", &["careful"], &[])).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let status = runtime.board().tasks().get("careful").unwrap();
    assert_eq!(status.state, TaskState::Stopped);
    assert!(status.last_error.unwrap().contains("expired"));
    runtime.extend_lease(Instant::now() + Duration::from_secs(7));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        runtime.board().tasks().state("careful"),
        Some(TaskState::Running)
    );
    // Once the membership is lost, nothing is held to revive.
    runtime.lost(Instant::now() + Duration::from_secs(2)).await;
    assert!(runtime.supervisor().held().is_empty());
}

/// The effective catalogue after a task store change: `change` edits the specs, `paused` the
/// desired states, `restart` the restart counters.
fn desired_with(
    runtime: &Runtime,
    change: impl FnOnce(&mut crate::Catalogue),
    paused: &[&str],
    restarts: &[(&str, u64)],
) -> desired::Desired {
    let mut next = (*runtime.desired()).clone();
    let mut catalogue = (*next.catalogue).clone();
    change(&mut catalogue);
    next.catalogue = Arc::new(catalogue);
    next.placement = std::sync::OnceLock::new();
    next.fingerprint = std::sync::OnceLock::new();
    next.entries.retain(|id, _| next.catalogue.contains(id));
    for spec in next.catalogue.iter() {
        let entry = next
            .entries
            .entry(spec.id.clone())
            .or_insert(desired::Entry {
                state: crate::store::DesiredState::Running,
                restart: 0,
                source: desired::Source::Store { version: 0 },
            });
        entry.state = if paused.contains(&spec.id.as_str()) {
            crate::store::DesiredState::Paused
        } else {
            crate::store::DesiredState::Running
        };
        if let Some((_, restart)) = restarts.iter().find(|(id, _)| *id == spec.id) {
            entry.restart = *restart;
        }
    }
    next
}

#[tokio::test(start_paused = true)]
async fn store_changes_restart_only_the_tasks_they_touch_without_a_new_assignment() {
    let (runtime, mut rx) = runtime();
    runtime
        .apply(&change(1, "m", &["task-0", "task-1", "task-2"], &[]))
        .await;
    let first = contexts(&mut rx, 3).await;
    let incarnation = |id: &str| {
        runtime
            .board()
            .tasks()
            .get(id)
            .map(|status| status.incarnation)
    };
    let untouched = incarnation("task-2");

    // task-0 paused, task-1 gets a new config: both restart; task-2 is not touched.
    let next = desired_with(
        &runtime,
        |c| {
            c.insert(TaskSpec::new("task-1", "probe", json!({"n": 2})))
                .unwrap();
        },
        &["task-0"],
        &[],
    );
    let changes = runtime.set_desired(next);
    assert!(!changes.placement, "{changes:?}");
    let applied = runtime.apply_desired(&changes);
    assert!(applied.stopped.is_empty() && applied.started.is_empty());
    assert_eq!(applied.restarted, ["task-0", "task-1"]);
    assert!(first[0].is_cancelled() && first[1].is_cancelled());
    assert!(!first[2].is_cancelled());
    let again = contexts(&mut rx, 1).await;
    assert_eq!(again[0].task_id(), "task-1");
    // Restarted under the generation it was granted in: no rebalance happened.
    assert_eq!(again[0].check_lease(), Ok(FencingToken::new(1, "m")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let table = runtime.board().tasks();
    assert_eq!(table.state("task-0"), Some(TaskState::Paused));
    assert_eq!(table.state("task-1"), Some(TaskState::Running));
    assert_eq!(incarnation("task-2"), untouched);
    // A paused task stays held (and claimed): pausing moves nothing.
    assert_eq!(runtime.owned().len(), 3);

    // A lease extension does not wake a paused task; resume does.
    runtime.extend_lease(Instant::now() + Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(table.state("task-0"), Some(TaskState::Paused));
    let changes = runtime.set_desired(desired_with(&runtime, |_| {}, &[], &[]));
    assert_eq!(runtime.apply_desired(&changes).restarted, ["task-0"]);
    assert_eq!(contexts(&mut rx, 1).await[0].task_id(), "task-0");

    // A restart request (the counter moved) restarts that task alone.
    let changes = runtime.set_desired(desired_with(&runtime, |_| {}, &[], &[("task-2", 1)]));
    assert_eq!(runtime.apply_desired(&changes).restarted, ["task-2"]);
    assert_eq!(contexts(&mut rx, 1).await[0].task_id(), "task-2");
    assert!(first[2].is_cancelled());

    // A deletion stops the task at once; nothing restarts it.
    let changes = runtime.set_desired(desired_with(
        &runtime,
        |c| {
            c.remove("task-1");
        },
        &[],
        &[("task-2", 1)],
    ));
    assert!(changes.placement);
    let applied = runtime.apply_desired(&changes);
    assert_eq!(applied.stopped, ["task-1"]);
    assert!(applied.restarted.is_empty());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        runtime.owned().into_keys().collect::<Vec<_>>(),
        ["task-0", "task-2"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_restart_for_a_store_change_does_not_start_a_task_taken_away_meanwhile() {
    let (runtime, mut rx) = runtime();
    runtime.apply(&change(1, "m", &["task-0"], &[])).await;
    let _first = contexts(&mut rx, 1).await;
    let changes = runtime.set_desired(desired_with(&runtime, |_| {}, &[], &[("task-0", 1)]));
    runtime.apply_desired(&changes);
    // The membership is lost before the restart's stop completes.
    drop(runtime.lost(Instant::now() + Duration::from_secs(1)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(runtime.owned().is_empty());
    assert!(rx.try_recv().is_err(), "nothing started again");
}

#[tokio::test(start_paused = true)]
async fn a_task_assigned_before_the_store_view_has_it_starts_once_the_view_catches_up() {
    // The leader read the store further than this worker: it assigns `late`, which this
    // worker's catalogue does not have yet.
    let (runtime, mut rx) = runtime();
    let report = runtime
        .apply(&change(3, "m", &["task-0", "late"], &[]))
        .await;
    assert_eq!(report.started, ["task-0"]);
    let _ = contexts(&mut rx, 1).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !runtime.owned().contains_key("late"),
        "not started while unknown"
    );

    // The view catches up: the task starts at once, granted in the generation that assigned it.
    let changes = runtime.set_desired(desired_with(
        &runtime,
        |c| {
            c.insert(TaskSpec::new("late", "probe", json!(null)))
                .unwrap();
        },
        &[],
        &[],
    ));
    assert_eq!(runtime.apply_desired(&changes).started, ["late"]);
    let late = contexts(&mut rx, 1).await;
    assert_eq!(late[0].check_lease(), Ok(FencingToken::new(3, "m")));

    // A task added to the store but assigned elsewhere does not start here.
    let changes = runtime.set_desired(desired_with(
        &runtime,
        |c| {
            c.insert(TaskSpec::new("other", "probe", json!(null)))
                .unwrap();
        },
        &[],
        &[],
    ));
    assert!(runtime.apply_desired(&changes).started.is_empty());
    assert!(rx.try_recv().is_err());
}

/// Takes 300 ms to stop after it is cancelled.
struct SlowStop;
impl Task for SlowStop {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_restarting_for_a_store_change_stays_claimed_until_it_runs_again() {
    let mut registry = Registry::new();
    registry.register_with("slow", |_: &serde_json::Value| Ok::<_, String>(SlowStop));
    let runtime = WorkerBuilder::new(WorkerConfig {
        worker_id: "worker-a".into(),
        ..WorkerConfig::new("orders")
    })
    .registry(registry)
    .task(TaskSpec::new("s", "slow", json!(null)))
    .build_runtime()
    .unwrap();
    runtime.apply(&change(4, "m", &["s"], &[])).await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    let changes = runtime.set_desired(desired_with(&runtime, |_| {}, &[], &[("s", 1)]));
    assert_eq!(runtime.apply_desired(&changes).restarted, ["s"]);
    // Stopping: not held, yet claimed with the generation it was granted in.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(runtime.owned().is_empty());
    assert_eq!(runtime.metadata().owned, [("s".to_owned(), 4)].into());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runtime.owned(), [("s".to_owned(), 4)].into());
    assert_eq!(runtime.board().tasks().state("s"), Some(TaskState::Running));
}

#[tokio::test(start_paused = true)]
async fn the_assigned_set_shares_the_supervisors_ids() {
    let (runtime, mut rx) = runtime();
    runtime
        .apply(&change(
            1,
            "m",
            &["task-0", "task-1", "not-here"],
            &["task-1"],
        ))
        .await;
    let _ctxs = contexts(&mut rx, 1).await;
    let assigned = lock(&runtime.assigned);
    let ids: Vec<&str> = assigned.0.iter().map(|id| &**id).collect();
    assert_eq!(ids, ["not-here", "task-0"]);
    // A held task's id is one allocation, shared by the supervisor's slot, the task table,
    // the run, its lease and this set: no copy per place.
    let held = assigned.0.get("task-0").unwrap();
    assert!(Arc::strong_count(held) >= 5, "{}", Arc::strong_count(held));
    // An id not held here (not in the catalogue yet) is this set's own.
    assert_eq!(Arc::strong_count(assigned.0.get("not-here").unwrap()), 1);
}

#[tokio::test(start_paused = true)]
async fn a_kept_task_stopped_by_an_expired_lease_starts_again_with_the_next_assignment() {
    let (runtime, mut rx) = runtime();
    runtime
        .apply(&change(1, "m", &["careful", "task-0"], &[]))
        .await;
    let _ = contexts(&mut rx, 1).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(
        runtime.board().tasks().state("careful"),
        Some(TaskState::Stopped)
    );
    // The next generation keeps both: the stopped one starts again under the new lease, the
    // running one is left alone (no second context).
    let report = runtime
        .apply(&change(2, "m", &["careful", "task-0"], &[]))
        .await;
    assert_eq!(report.started, ["careful"]);
    let kept: Vec<&str> = report.kept.iter().map(|id| &**id).collect();
    assert_eq!(kept, ["task-0"]);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        runtime.board().tasks().state("careful"),
        Some(TaskState::Running)
    );
    assert!(rx.try_recv().is_err());
}
