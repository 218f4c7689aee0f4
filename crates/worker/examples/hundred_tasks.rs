//! Runs 100 ticking tasks in one worker (no Kafka: the group is on kroupier's embedded
//! coordinator, in the same process) and prints the process's resident memory, for sizing
//! workers. The figure includes the embedded coordinator, which holds one small group.
//!
//! `cargo run --release -p kroupier-worker --example hundred_tasks`

use std::time::Duration;

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::{
    Task, TaskContext, TaskError, TaskSpec, TaskState, WorkerBuilder, WorkerConfig,
};
use serde::Deserialize;

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
    let coordinator = EmbeddedCoordinator::builder().bind("127.0.0.1:0").await?;
    let mut config = WorkerConfig::new("sizing");
    config.member.cluster.bootstrap_servers = vec![coordinator.bootstrap()];
    let mut builder = WorkerBuilder::new(config).register::<Tick>("tick");
    for i in 0..TASKS {
        builder = builder.task(TaskSpec::new(
            format!("task-{i}"),
            "tick",
            serde_json::json!({"every_ms": 100}),
        ));
    }
    let before = resident_kib();
    let worker = builder.spawn().await?;
    let running = || {
        worker
            .tasks()
            .iter()
            .filter(|t| t.state == TaskState::Running)
            .count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while running() < TASKS && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "{} tasks running; RSS before {} KiB, with tasks {} KiB",
        running(),
        before.unwrap_or(0),
        resident_kib().unwrap_or(0)
    );
    worker.shutdown().await?;
    println!("stopped every task and left the group");
    Ok(())
}
