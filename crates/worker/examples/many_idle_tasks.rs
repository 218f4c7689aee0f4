//! Runs N idle tasks in one worker and prints what each costs: resident memory, threads and
//! CPU while idle, as one JSON line. For sizing workers and for docs/benchmarks.md.
//!
//! `cargo run --release -p kroupier-worker --example many_idle_tasks -- --tasks 10000`
//!
//! Options: `--tasks N` (default 1000); `--idle-secs S`, how long the idle CPU is measured
//! (default 10); `--bootstrap HOST:PORT`, a coordinator or Kafka broker to join instead of an
//! embedded coordinator in the same process (then the figures are the worker's alone).
//! An idle task waits for its cancellation and does nothing else, so the figures are the
//! worker's own bookkeeping per task.

use std::time::{Duration, Instant};

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::{
    Task, TaskContext, TaskError, TaskSpec, TaskState, WorkerBuilder, WorkerConfig,
};
use serde::Deserialize;

/// Waits until the worker stops it.
#[derive(Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

/// A value of this process's /proc/self/status (e.g. `VmRSS`, `Threads`).
fn status(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU time of this process, in clock ticks (fields 14 and 15 of /proc/self/stat).
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields after it start past the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Command-line settings.
struct Settings {
    tasks: usize,
    idle_secs: u64,
    bootstrap: Option<String>,
}

fn settings() -> Result<Settings, String> {
    let mut s = Settings {
        tasks: 1000,
        idle_secs: 10,
        bootstrap: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--tasks" => s.tasks = number()? as usize,
            "--idle-secs" => s.idle_secs = number()?,
            "--bootstrap" => s.bootstrap = Some(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(s)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = settings().map_err(|e| {
        format!("{e}\nusage: many_idle_tasks [--tasks N] [--idle-secs S] [--bootstrap HOST:PORT]")
    })?;
    let coordinator = match &s.bootstrap {
        Some(_) => None,
        None => Some(EmbeddedCoordinator::builder().bind("127.0.0.1:0").await?),
    };
    let bootstrap = match (&s.bootstrap, &coordinator) {
        (Some(b), _) => b.clone(),
        (None, Some(c)) => c.bootstrap(),
        (None, None) => unreachable!("an embedded coordinator runs when no --bootstrap is given"),
    };
    // Before the task specs exist: the per-task figure covers specs, tasks and bookkeeping.
    let rss_before = status("VmRSS:").unwrap_or(0);
    let threads_before = status("Threads:").unwrap_or(0);
    let mut config = WorkerConfig::new(format!("idle-{}", s.tasks));
    config.member.cluster.bootstrap_servers = vec![bootstrap];
    let mut builder = WorkerBuilder::new(config).register::<Idle>("idle");
    for i in 0..s.tasks {
        builder = builder.task(TaskSpec::new(
            format!("task-{i:07}"),
            "idle",
            serde_json::json!({}),
        ));
    }
    let started = Instant::now();
    let worker = builder.spawn().await?;
    let running = || {
        worker
            .tasks()
            .iter()
            .filter(|t| t.state == TaskState::Running)
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while running() < s.tasks && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all_running_ms = started.elapsed().as_millis();
    // Let start-up settle, then measure the idle window.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ticks_start = cpu_ticks().unwrap_or(0);
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs(s.idle_secs)).await;
    let idle_ticks = cpu_ticks().unwrap_or(0).saturating_sub(ticks_start);
    let idle_wall = idle_started.elapsed().as_secs_f64();
    let rss = status("VmRSS:").unwrap_or(0);
    let running_now = running();
    // Clock ticks are 1/100 s on Linux.
    let idle_cpu_percent = idle_ticks as f64 / idle_wall;
    let per_task_bytes = if s.tasks == 0 {
        0.0
    } else {
        (rss.saturating_sub(rss_before) * 1024) as f64 / s.tasks as f64
    };
    println!(
        "{{\"tasks\":{},\"running\":{},\"embedded_coordinator\":{},\"all_running_ms\":{},\
         \"rss_before_kib\":{},\"rss_kib\":{},\"rss_per_task_bytes\":{:.0},\
         \"threads_before\":{},\"threads\":{},\"idle_cpu_percent\":{:.2},\"idle_secs\":{:.1}}}",
        s.tasks,
        running_now,
        coordinator.is_some(),
        all_running_ms,
        rss_before,
        rss,
        per_task_bytes,
        threads_before,
        status("Threads:").unwrap_or(0),
        idle_cpu_percent,
        idle_wall,
    );
    worker.shutdown().await?;
    Ok(())
}
