//! Runs 100 ticking tasks under the worker runtime (no Kafka: the assignment is handed in as a
//! group driver would) and prints the process's resident memory, for sizing workers.
//!
//! `cargo run --release -p kroupier-worker --example hundred_tasks`

use std::time::Duration;

use kroupier_worker::{
    AssignmentChange, FencingToken, Task, TaskContext, TaskError, TaskSpec, WorkerBuilder,
    WorkerConfig,
};
use serde::Deserialize;
use tokio::time::Instant;

/// Checks its lease and reports progress every `every_ms`.
#[derive(Deserialize)]
struct Tick {
    every_ms: u64,
}

impl Task for Tick {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut ticks = tokio::time::interval(Duration::from_millis(self.every_ms));
        let mut count = 0u64;
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            ctx.check_lease()?;
            count += 1;
            ctx.report_progress(format!("tick {count}"));
        }
    }
}

fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    const TASKS: usize = 100;
    let mut builder = WorkerBuilder::new(WorkerConfig::new("sizing")).register::<Tick>("tick");
    for i in 0..TASKS {
        builder = builder.task(TaskSpec::new(
            format!("task-{i}"),
            "tick",
            serde_json::json!({"every_ms": 100}),
        ));
    }
    let runtime = builder.build_runtime()?;
    let before = resident_kib();
    let report = runtime
        .apply(AssignmentChange {
            token: FencingToken::new(1, "member-1"),
            leader: "member-1".into(),
            valid_until: Instant::now() + Duration::from_secs(3600),
            run: (0..TASKS).map(|i| format!("task-{i}")).collect(),
            revoke: Default::default(),
            leader_catalogue_fingerprint: None,
        })
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let running = runtime
        .board()
        .snapshot()
        .tasks
        .iter()
        .filter(|t| t.status.state == kroupier_worker::TaskState::Running)
        .count();
    println!(
        "started {} tasks, {running} running; RSS before {} KiB, with tasks {} KiB",
        report.started.len(),
        before.unwrap_or(0),
        resident_kib().unwrap_or(0)
    );
    let stopped = runtime
        .shutdown(Instant::now() + Duration::from_secs(6))
        .await;
    println!(
        "stopped: {} graceful, {} aborted",
        stopped.graceful.len(),
        stopped.aborted.len()
    );
    Ok(())
}
