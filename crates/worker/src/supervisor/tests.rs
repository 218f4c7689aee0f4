//! Supervisor tests on tokio's paused clock: every duration below is virtual and exact.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::*;
use crate::catalogue::TaskSpec;
use crate::context::TaskContext;
use crate::lease::{LeaseError, LeaseErrorKind};
use crate::task::{Task, TaskError};

/// Returns when cancelled.
struct Idle;
impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

/// Ignores cancellation (but yields, so it can be aborted).
struct Stubborn;
impl Task for Stubborn {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Hands its context to the test, then waits for cancellation.
struct Exposed(mpsc::UnboundedSender<TaskContext>);
impl Task for Exposed {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let _ = self.0.send(ctx.clone());
        ctx.cancelled().await;
        Ok(())
    }
}

/// Records when it ran, then panics.
struct Panics(Arc<Mutex<Vec<Instant>>>);
impl Task for Panics {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        self.0.lock().unwrap().push(Instant::now());
        panic!("boom");
    }
}

/// Fails after a short while.
struct Fails;
impl Task for Fails {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Err(TaskError::failed("disk full"))
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

/// Returns at once.
struct Done;
impl Task for Done {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        Ok(())
    }
}

#[derive(Deserialize)]
struct Typed {
    #[allow(dead_code)]
    topic: String,
}
impl Task for Typed {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

struct Fixture {
    supervisor: Supervisor,
    panics: Arc<Mutex<Vec<Instant>>>,
    contexts: mpsc::UnboundedReceiver<TaskContext>,
    builds: Arc<AtomicU32>,
}

fn fixture(config: SupervisorConfig) -> Fixture {
    let panics = Arc::new(Mutex::new(Vec::new()));
    let builds = Arc::new(AtomicU32::new(0));
    let (sender, contexts) = mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry
        .register_with("idle", |_: &serde_json::Value| Ok::<_, String>(Idle))
        .register_with("stubborn", |_: &serde_json::Value| {
            Ok::<_, String>(Stubborn)
        })
        .register_with("exposed", move |_: &serde_json::Value| {
            Ok::<_, String>(Exposed(sender.clone()))
        })
        .register_with("fails", |_: &serde_json::Value| Ok::<_, String>(Fails))
        .register_with("checks", |_: &serde_json::Value| Ok::<_, String>(Checks))
        .register_with("done", |_: &serde_json::Value| Ok::<_, String>(Done))
        .register::<Typed>("typed");
    let recorded = panics.clone();
    let counted = builds.clone();
    registry.register_with("panics", move |_: &serde_json::Value| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(Panics(recorded.clone()))
    });
    let kinds = [
        "idle", "stubborn", "exposed", "fails", "checks", "done", "panics",
    ];
    let mut specs: Vec<TaskSpec> = kinds
        .iter()
        .map(|kind| TaskSpec::new(*kind, *kind, json!(null)))
        .collect();
    specs.push(TaskSpec::new("typed-ok", "typed", json!({"topic": "a"})));
    specs.push(TaskSpec::new("typed-bad", "typed", json!({"topic": 7})));
    specs.push(TaskSpec::new("unknown", "nobody", json!(null)));
    let catalogue = Catalogue::from_specs(specs).unwrap();
    let supervisor = Supervisor::new(Arc::new(registry), Arc::new(catalogue), config);
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    Fixture {
        supervisor,
        panics,
        contexts,
        builds,
    }
}

fn token() -> FencingToken {
    FencingToken::new(7, "member-a")
}

/// The worker's lease: `token` until `valid_until`.
fn member_lease(token: FencingToken, valid_until: Instant) -> Lease {
    Lease {
        token,
        valid_until: valid_until.into_std(),
    }
}

fn quick_restarts(max_attempts: u32) -> SupervisorConfig {
    SupervisorConfig {
        restart: RestartPolicy {
            max_attempts,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            jitter: 0.0,
            reset_after: Duration::from_secs(60),
            stall_timeout: None,
        },
        ..SupervisorConfig::default()
    }
}

/// Lets spawned tasks run until they all wait on something.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn start_then_revoke_stops_gracefully() {
    let f = fixture(SupervisorConfig::default());
    assert_eq!(f.supervisor.start("idle", token()), StartOutcome::Started);
    assert_eq!(
        f.supervisor.start("idle", token()),
        StartOutcome::AlreadyHeld
    );
    settle().await;
    assert_eq!(f.supervisor.table().state("idle"), Some(TaskState::Running));
    assert_eq!(f.supervisor.held(), ["idle"]);
    let started = Instant::now();
    let report = f.supervisor.revoke(["idle", "not-held"]).await;
    assert_eq!(report.graceful, ["idle"]);
    assert!(report.aborted.is_empty() && report.all_stopped());
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(f.supervisor.table().get("idle"), None);
    assert!(f.supervisor.held().is_empty());
}

#[tokio::test(start_paused = true)]
async fn revoke_aborts_after_the_graceful_timeout() {
    let f = fixture(SupervisorConfig::default());
    f.supervisor.start("stubborn", token());
    settle().await;
    let started = Instant::now();
    let stopping = f.supervisor.revoke(["stubborn"]);
    // Cancelled at once: no longer RUNNING while it winds down.
    assert_eq!(
        f.supervisor.table().state("stubborn"),
        Some(TaskState::Stopping)
    );
    let report = stopping.await;
    assert_eq!(report.aborted, ["stubborn"]);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(f.supervisor.table().get("stubborn"), None);
}

#[tokio::test(start_paused = true)]
async fn panics_restart_with_backoff_then_fail() {
    let f = fixture(quick_restarts(4));
    let t0 = Instant::now();
    f.supervisor.start("panics", token());
    tokio::time::sleep(Duration::from_secs(30)).await;
    let runs: Vec<Duration> = f.panics.lock().unwrap().iter().map(|at| *at - t0).collect();
    // Backoff 1 s, 2 s, 4 s between the four attempts.
    let secs = |s: u64| Duration::from_secs(s);
    assert_eq!(runs, [secs(0), secs(1), secs(3), secs(7)]);
    let status = f.supervisor.table().get("panics").unwrap();
    assert_eq!(status.state, TaskState::Failed);
    assert_eq!(status.restarts, 3);
    assert_eq!(status.consecutive_failures, 4);
    let error = status.last_error.unwrap();
    assert!(
        error.contains("panicked: boom") && error.contains("request a restart"),
        "{error}"
    );
    // FAILED stays FAILED: a new assignment does not restart it...
    assert_eq!(
        f.supervisor.start("panics", token()),
        StartOutcome::AlreadyHeld
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(f.panics.lock().unwrap().len(), 4);
    // ...a restart request does.
    f.supervisor.restart("panics").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(f.panics.lock().unwrap().len(), 5);
    let status = f.supervisor.table().get("panics").unwrap();
    assert_eq!(status.state, TaskState::Restarting);
    assert_eq!(status.consecutive_failures, 1);
    assert_eq!(
        f.builds.load(Ordering::SeqCst),
        5,
        "a fresh value per attempt"
    );
}

#[tokio::test(start_paused = true)]
async fn errors_restart_and_are_reported() {
    let f = fixture(quick_restarts(2));
    f.supervisor.start("fails", token());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = f.supervisor.table().get("fails").unwrap();
    assert_eq!(status.state, TaskState::Restarting);
    assert_eq!(status.last_error.as_deref(), Some("disk full"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(f.supervisor.table().state("fails"), Some(TaskState::Failed));
    assert_eq!(
        f.supervisor.restart("nope").await,
        Err(RestartError::NotHeld("nope".into()))
    );
}

#[tokio::test(start_paused = true)]
async fn bad_config_fails_with_serde_message_without_retrying() {
    let f = fixture(quick_restarts(5));
    f.supervisor.start("typed-bad", token());
    f.supervisor.start("typed-ok", token());
    f.supervisor.start("unknown", token());
    f.supervisor.start("not-in-catalogue", token());
    settle().await;
    let table = f.supervisor.table();
    let bad = table.get("typed-bad").unwrap();
    assert_eq!(bad.state, TaskState::Failed);
    assert_eq!(bad.restarts, 0);
    let error = bad.last_error.unwrap();
    assert!(
        error.contains("invalid type: integer `7`, expected a string"),
        "{error}"
    );
    assert_eq!(table.state("typed-ok"), Some(TaskState::Running));
    let unknown = table.get("unknown").unwrap();
    assert_eq!(unknown.state, TaskState::Failed);
    assert!(unknown.last_error.unwrap().contains("not registered"));
    let missing = table.get("not-in-catalogue").unwrap();
    assert_eq!(missing.state, TaskState::Failed);
    assert_eq!(missing.kind, None);
}

#[tokio::test(start_paused = true)]
async fn lease_is_invalid_as_soon_as_revoke_is_called() {
    let mut f = fixture(SupervisorConfig::default());
    f.supervisor.start("exposed", token());
    let ctx = f.contexts.recv().await.unwrap();
    assert_eq!(ctx.check_lease(), Ok(token()));
    assert_eq!(ctx.task_id(), "exposed");
    assert_eq!(ctx.attempt(), 1);
    let stopping = f.supervisor.revoke(["exposed"]);
    assert_eq!(
        ctx.check_lease(),
        Err(LeaseError::from(crate::lease::LeaseDetail::Revoked {
            task_id: "exposed".into()
        }))
    );
    assert_eq!(stopping.await.graceful, ["exposed"]);
}

#[tokio::test(start_paused = true)]
async fn progress_reports_show_in_status() {
    let mut f = fixture(SupervisorConfig::default());
    f.supervisor.start("exposed", token());
    let ctx = f.contexts.recv().await.unwrap();
    ctx.report_progress("copied 10 rows");
    let status = f.supervisor.table().get("exposed").unwrap();
    assert_eq!(status.progress.as_deref(), Some("copied 10 rows"));
    assert!(status.last_progress_ms.is_some());
}

#[tokio::test(start_paused = true)]
async fn expired_lease_stops_the_task_and_a_new_grant_restarts_it() {
    let f = fixture(SupervisorConfig::default());
    let now = Instant::now();
    f.supervisor
        .set_member_lease(member_lease(token(), now + Duration::from_secs(1)));
    f.supervisor.start("checks", token());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = f.supervisor.table().get("checks").unwrap();
    assert_eq!(status.state, TaskState::Stopped);
    assert!(status.last_error.unwrap().contains("expired"));
    // Assigned again in a new generation, with a fresh lease: it runs again.
    let next = FencingToken::new(8, "member-a");
    f.supervisor
        .set_member_lease(member_lease(next.clone(), now + Duration::from_secs(60)));
    assert_eq!(f.supervisor.start("checks", next), StartOutcome::Started);
    settle().await;
    let status = f.supervisor.table().get("checks").unwrap();
    assert_eq!(status.state, TaskState::Running);
    assert_eq!(status.generation, 8);
}

#[tokio::test(start_paused = true)]
async fn completed_task_is_not_restarted() {
    let f = fixture(SupervisorConfig::default());
    f.supervisor.start("done", token());
    settle().await;
    assert_eq!(
        f.supervisor.table().state("done"),
        Some(TaskState::Completed)
    );
    assert_eq!(
        f.supervisor.start("done", token()),
        StartOutcome::AlreadyHeld
    );
}

#[tokio::test(start_paused = true)]
async fn stop_all_is_bounded_by_its_deadline() {
    let mut f = fixture(SupervisorConfig::default());
    for id in ["idle", "stubborn", "exposed", "panics"] {
        f.supervisor.start(id, token());
    }
    let ctx = f.contexts.recv().await.unwrap();
    settle().await;
    let started = Instant::now();
    // 5 s graceful + 1 s abort do not fit in 2 s: the graceful phase is cut to 1 s.
    let report = f
        .supervisor
        .stop_all(started + Duration::from_secs(2))
        .await;
    assert!(started.elapsed() <= Duration::from_secs(2));
    assert_eq!(report.graceful, ["exposed", "idle", "panics"]);
    assert_eq!(report.aborted, ["stubborn"]);
    assert!(matches!(
        ctx.check_lease(),
        Err(e) if e.kind() == LeaseErrorKind::ShuttingDown
    ));
    assert!(f.supervisor.table().snapshot().is_empty());
    assert_eq!(
        f.supervisor.start("idle", token()),
        StartOutcome::ShuttingDown
    );
}

/// A gate that blocks a thread until opened.
#[derive(Default)]
struct Gate {
    state: std::sync::Mutex<(bool, bool)>,
    changed: std::sync::Condvar,
}

impl Gate {
    fn enter_and_wait(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        self.changed.notify_all();
        while !state.1 {
            state = self.changed.wait(state).unwrap();
        }
    }

    fn entered(&self) -> bool {
        self.state.lock().unwrap().0
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// Blocks its thread (no await point) until the gate opens, then idles.
struct Blocks(Arc<Gate>);
impl Task for Blocks {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        self.0.enter_and_wait();
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            ctx.check_lease()?;
        }
    }
}

// Real time on two worker threads: the blocked task holds one, the test runs on the other.
// Nothing here depends on how long anything takes: the task stays blocked until the test opens
// the gate, and the final wait is for a condition, bounded by a generous iteration count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_stuck_in_blocking_code_is_never_started_twice() {
    let gate = Arc::new(Gate::default());
    let shared = gate.clone();
    let mut registry = Registry::new();
    registry.register_with("blocks", move |_: &serde_json::Value| {
        Ok::<_, String>(Blocks(shared.clone()))
    });
    let catalogue = Catalogue::from_specs([TaskSpec::new("b", "blocks", json!(null))]).unwrap();
    let config = SupervisorConfig {
        graceful_stop_timeout: Duration::from_millis(20),
        abort_timeout: Duration::from_millis(20),
        ..SupervisorConfig::default()
    };
    let supervisor = Supervisor::new(Arc::new(registry), Arc::new(catalogue), config);
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    supervisor.start("b", token());
    while !gate.entered() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let report = supervisor.revoke(["b"]).await;
    assert_eq!(report.unresponsive, ["b"]);
    assert!(!report.all_stopped());
    assert_eq!(supervisor.start("b", token()), StartOutcome::StillStopping);
    let status = supervisor.table().get("b").unwrap();
    assert_eq!(status.state, TaskState::Stopping);
    assert!(
        status
            .last_error
            .unwrap()
            .contains("did not stop after abort")
    );

    gate.open();
    let mut outcome = StartOutcome::StillStopping;
    for _ in 0..1000 {
        outcome = supervisor.start("b", token());
        if outcome != StartOutcome::StillStopping {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(outcome, StartOutcome::Started);
    let report = supervisor
        .stop_all(Instant::now() + Duration::from_secs(1))
        .await;
    assert!(report.all_stopped());
}

#[tokio::test(start_paused = true)]
async fn dropping_the_revoke_future_still_stops_the_task() {
    let f = fixture(SupervisorConfig::default());
    f.supervisor.start("stubborn", token());
    settle().await;
    drop(f.supervisor.revoke(["stubborn"]));
    assert_eq!(
        f.supervisor.start("stubborn", token()),
        StartOutcome::StillStopping
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(f.supervisor.table().get("stubborn"), None);
    assert_eq!(
        f.supervisor.start("stubborn", token()),
        StartOutcome::Started
    );
}

/// Counts live runs per task; a run that finds another one live records a violation.
#[derive(Default)]
struct LiveRuns {
    live: Mutex<std::collections::HashMap<String, u32>>,
    violations: AtomicU32,
    runs: AtomicU32,
}

struct LiveGuard(Arc<LiveRuns>, String);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        *self.0.live.lock().unwrap().get_mut(&self.1).unwrap() -= 1;
    }
}

/// Misbehaves at random: fails, panics, ignores cancellation until aborted.
struct Chaos(Arc<LiveRuns>);
impl Task for Chaos {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        {
            let mut live = self.0.live.lock().unwrap();
            let count = live.entry(ctx.task_id().to_owned()).or_default();
            *count += 1;
            if *count > 1 {
                self.0.violations.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.0.runs.fetch_add(1, Ordering::SeqCst);
        let _guard = LiveGuard(self.0.clone(), ctx.task_id().to_owned());
        let stubborn = rand::random_bool(0.3);
        loop {
            let pause = rand::random_range(0..3u64);
            tokio::time::sleep(Duration::from_millis(pause)).await;
            match rand::random_range(0..100u32) {
                0 => panic!("chaos"),
                1..=4 => return Err(TaskError::failed("chaos")),
                _ => {}
            }
            if ctx.is_cancelled() && !stubborn {
                return Ok(());
            }
        }
    }
}

// Real time on two worker threads, random interleavings of start, revoke, restart and
// failures. Only the invariant is asserted (never two live runs of one task), not timings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_task_ever_has_two_live_runs() {
    use rand::{Rng, SeedableRng};
    let runs = Arc::new(LiveRuns::default());
    let shared = runs.clone();
    let mut registry = Registry::new();
    registry.register_with("chaos", move |_: &serde_json::Value| {
        Ok::<_, String>(Chaos(shared.clone()))
    });
    let ids = ["c0", "c1", "c2", "c3"];
    let catalogue =
        Catalogue::from_specs(ids.map(|id| TaskSpec::new(id, "chaos", json!(null)))).unwrap();
    let config = SupervisorConfig {
        graceful_stop_timeout: Duration::from_millis(3),
        // Only an upper bound: aborted runs end at their next await, far sooner on an idle
        // machine; generous so that a loaded CI machine never reports them unresponsive.
        abort_timeout: Duration::from_secs(10),
        restart: RestartPolicy {
            max_attempts: 1_000,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            jitter: 0.5,
            reset_after: Duration::from_secs(60),
            stall_timeout: None,
        },
    };
    let supervisor = Arc::new(Supervisor::new(
        Arc::new(registry),
        Arc::new(catalogue),
        config,
    ));
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut waits = Vec::new();
    for _ in 0..3_000 {
        let id = ids[rng.random_range(0..ids.len())];
        match rng.random_range(0..10) {
            0..=4 => {
                supervisor.start(id, token());
            }
            5..=7 => {
                let stopping = supervisor.revoke([id]);
                if rng.random_bool(0.5) {
                    stopping.await;
                } else {
                    waits.push(tokio::spawn(stopping));
                }
            }
            8 => {
                let supervisor = supervisor.clone();
                waits.push(tokio::spawn(async move {
                    let _ = supervisor.restart(id).await;
                    StopReport::default()
                }));
            }
            _ => tokio::time::sleep(Duration::from_micros(rng.random_range(0..500))).await,
        }
    }
    for wait in waits {
        wait.await.unwrap();
    }
    let report = supervisor
        .stop_all(Instant::now() + Duration::from_secs(30))
        .await;
    assert!(report.all_stopped(), "{report:?}");
    let total = runs.runs.load(Ordering::SeqCst);
    println!("{total} runs");
    assert!(total > 50, "the test exercised little: {total} runs");
    assert_eq!(runs.violations.load(Ordering::SeqCst), 0);
    assert!(runs.live.lock().unwrap().values().all(|&n| n == 0));
}

/// Reports progress `reports` times, once a second, then hangs ignoring cancellation.
struct Hangs(u32);
impl Task for Hangs {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        for i in 0..self.0 {
            ctx.report_progress(format!("step {i}"));
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn stalled_tasks_are_stopped_and_restarted() {
    let mut registry = Registry::new();
    registry
        .register_with("hangs", |_: &serde_json::Value| Ok::<_, String>(Hangs(3)))
        .register_with("steady", |_: &serde_json::Value| {
            Ok::<_, String>(Hangs(u32::MAX))
        });
    let catalogue = Catalogue::from_specs([
        TaskSpec::new("h", "hangs", json!(null)),
        TaskSpec::new("s", "steady", json!(null)),
    ])
    .unwrap();
    let config = SupervisorConfig {
        restart: RestartPolicy {
            stall_timeout: Some(Duration::from_secs(10)),
            jitter: 0.0,
            ..RestartPolicy::default()
        },
        ..SupervisorConfig::default()
    };
    let supervisor = Supervisor::new(Arc::new(registry), Arc::new(catalogue), config);
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    supervisor.start("h", token());
    supervisor.start("s", token());
    // Last progress at 2 s; stalled at 12 s; 5 s graceful stop; then the 1 s backoff.
    tokio::time::sleep(Duration::from_millis(12_500)).await;
    assert_eq!(supervisor.table().state("h"), Some(TaskState::Stopping));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let status = supervisor.table().get("h").unwrap();
    assert_eq!(status.state, TaskState::Restarting);
    assert_eq!(status.restarts, 1);
    assert!(status.last_error.unwrap().contains("stalled"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(supervisor.table().state("h"), Some(TaskState::Running));
    // A task that keeps reporting is left alone.
    let steady = supervisor.table().get("s").unwrap();
    assert_eq!(steady.state, TaskState::Running);
    assert_eq!(steady.restarts, 0);
    assert!(steady.progress.is_some());
}

/// A worker holds one run per task, idle for hours: its future stays small (it was 1.3 KB
/// before the shared parts moved behind one pointer and the rare paths into their own boxes;
/// 184 bytes then, a tokio task of 384). At 152 bytes or less a tokio task with it takes 256
/// (tokio's cell is 128-byte aligned and adds 104 bytes of its own on x86_64): the lease's
/// receiver and the checkpoint client are the supervisor's, the attempt's start is an 8-byte
/// offset, and an attempt's future is one box whether or not the stall watch wraps it.
#[test]
fn a_supervised_run_stays_small() {
    let shared = run::RunShared::new(
        Arc::new(Registry::new()),
        RestartPolicy::default(),
        TaskTable::new(),
        CancellationToken::new(),
        Duration::from_secs(1),
        watch::channel(no_lease()).1,
    );
    let plan = run::RunPlan {
        shared: Arc::new(shared),
        task_id: "t".into(),
        spec: None,
        paused: false,
        incarnation: 1,
        granted: token(),
        cancel: CancellationToken::new(),
    };
    let size = run::future_size(plan);
    assert!(size <= 152, "a supervised run's future takes {size} bytes");
}

/// On its first attempt cancels its own token and fails; later attempts wait to be stopped.
struct CancelsItself;
impl Task for CancelsItself {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        if ctx.attempt() == 1 {
            ctx.cancellation_token().cancel();
            return Err(TaskError::failed("gave up"));
        }
        ctx.cancelled().await;
        Ok(())
    }
}

/// A supervisor with the fixture's kinds plus `cancels-itself`, under `config`.
fn with_cancels_itself(
    config: SupervisorConfig,
) -> (Supervisor, mpsc::UnboundedReceiver<TaskContext>) {
    let (sender, contexts) = mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry
        .register_with("exposed", move |_: &serde_json::Value| {
            Ok::<_, String>(Exposed(sender.clone()))
        })
        .register_with("cancels-itself", |_: &serde_json::Value| {
            Ok::<_, String>(CancelsItself)
        });
    let catalogue = Catalogue::from_specs([
        TaskSpec::new("exposed", "exposed", json!(null)),
        TaskSpec::new("cancels-itself", "cancels-itself", json!(null)),
    ])
    .unwrap();
    let supervisor = Supervisor::new(Arc::new(registry), Arc::new(catalogue), config);
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    (supervisor, contexts)
}

/// Whether the token in `task_id`'s slot fired.
fn slot_cancelled(supervisor: &Supervisor, task_id: &str) -> bool {
    supervisor.lock()[task_id].cancel.is_cancelled()
}

#[tokio::test(start_paused = true)]
async fn a_task_holds_its_runs_token_unless_a_stall_watch_needs_one_per_attempt() {
    // Without a stall watch, one token per task: the task's token is its slot's.
    let (supervisor, mut contexts) = with_cancels_itself(quick_restarts(3));
    supervisor.start("exposed", token());
    let ctx = contexts.recv().await.unwrap();
    ctx.cancellation_token().cancel();
    assert!(slot_cancelled(&supervisor, "exposed"), "one token per task");
    // The task cancelled its own token: it returned on its own, so it completed, as it did
    // with a token of its own.
    settle().await;
    assert_eq!(
        supervisor.table().state("exposed"),
        Some(TaskState::Completed)
    );
    assert!(!slot_cancelled(&supervisor, "exposed"));

    // With a stall watch, each attempt has a child of the run's token.
    let mut config = quick_restarts(3);
    config.restart.stall_timeout = Some(Duration::from_secs(600));
    let (supervisor, mut contexts) = with_cancels_itself(config);
    supervisor.start("exposed", token());
    let ctx = contexts.recv().await.unwrap();
    ctx.cancellation_token().cancel();
    assert!(
        !slot_cancelled(&supervisor, "exposed"),
        "a token per attempt"
    );
    settle().await;
    assert_eq!(
        supervisor.table().state("exposed"),
        Some(TaskState::Completed)
    );
}

#[tokio::test(start_paused = true)]
async fn a_task_that_cancels_its_own_token_and_fails_is_restarted_and_still_revocable() {
    let (supervisor, _contexts) = with_cancels_itself(quick_restarts(3));
    supervisor.start("cancels-itself", token());
    settle().await;
    let status = supervisor.table().get("cancels-itself").unwrap();
    assert_eq!(status.state, TaskState::Restarting);
    assert_eq!(status.last_error.as_deref(), Some("gave up"));
    // After the 1 s backoff, attempt 2 runs on a fresh token, the one the supervisor cancels.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        supervisor.table().state("cancels-itself"),
        Some(TaskState::Running)
    );
    assert!(!slot_cancelled(&supervisor, "cancels-itself"));
    let started = Instant::now();
    let report = supervisor.revoke(["cancels-itself"]).await;
    assert_eq!(report.graceful, ["cancels-itself"]);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

/// Stopping many tasks takes time linear in their number: the stop once waited on every
/// task's join handle in a way that, past tokio's cooperative budget, visited all of them again
/// on every poll (these 100,000 took 21 s in a debug build; 200,000 in a quickstart release
/// build, 21 s: docs/benchmarks.md). The bound is the one for a worker's whole exit, graceful
/// stop + abort + 2 s: far above the linear stop (under 2 s here in a debug build, on 2 shared
/// cores) and far below the quadratic one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_many_tasks_takes_linear_time() {
    const TASKS: usize = 100_000;
    let mut registry = Registry::new();
    registry.register_with("idle", |_: &serde_json::Value| Ok::<_, String>(Idle));
    let specs = (0..TASKS).map(|i| TaskSpec::new(format!("task-{i}"), "idle", json!(null)));
    let catalogue = Catalogue::from_specs(specs).unwrap();
    let config = SupervisorConfig::default();
    let bound = config.graceful_stop_timeout + config.abort_timeout + Duration::from_secs(2);
    let supervisor = Supervisor::new(Arc::new(registry), Arc::new(catalogue), config);
    supervisor.set_member_lease(member_lease(
        token(),
        Instant::now() + Duration::from_secs(3600),
    ));
    for i in 0..TASKS {
        assert_eq!(
            supervisor.start(&format!("task-{i}"), token()),
            StartOutcome::Started
        );
    }
    while supervisor.table().state(&format!("task-{}", TASKS - 1)) != Some(TaskState::Running) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = std::time::Instant::now();
    let report = supervisor
        .stop_all(Instant::now() + Duration::from_secs(60))
        .await;
    let took = started.elapsed();
    assert_eq!(
        report.graceful.len(),
        TASKS,
        "every task stopped gracefully"
    );
    assert!(
        took < bound,
        "stopping {TASKS} tasks took {took:?}, more than {bound:?}"
    );
}
