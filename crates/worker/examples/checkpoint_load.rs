//! Checkpoint throughput and latency: N tasks in a group's task store, spread over W workers
//! (in this one process), each task saving a checkpoint once a second through
//! `TaskContext::save_checkpoint`. Prints one JSON line: checkpoints per second, the save
//! latency (from the call to the offset coming back) at p50/p99/max, and how long the tasks
//! took to start.
//!
//! `cargo run --release -p kroupier-worker --example checkpoint_load -- --bootstrap HOST:PORT`
//!
//! Options: `--tasks N` (default 10000), `--workers W` (default 3), `--secs S` measured
//! (default 30), `--bootstrap HOST:PORT` (default: an embedded coordinator in this process).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::store::{TaskRecord, TaskStore, tasks_topic};
use kroupier_worker::{
    Kind, Task, TaskContext, TaskError, TaskState, WorkerBuilder, WorkerConfig, WorkerHandle,
};
use serde::Deserialize;

/// The config of one load task: where in the second it saves.
#[derive(Deserialize)]
struct Load {
    phase_ms: u64,
}

/// Saves its counter once a second, recording how long each save took.
struct Saver {
    phase: Duration,
    latencies: Arc<Mutex<Vec<u32>>>,
}

impl Task for Saver {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut count = ctx
            .last_checkpoint::<u64>()
            .await
            .map_err(TaskError::failed)?
            .unwrap_or(0);
        let start = tokio::time::Instant::now() + self.phase;
        let mut ticks = tokio::time::interval_at(start, Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            count += 1;
            let began = Instant::now();
            ctx.save_checkpoint(&count)
                .await
                .map_err(TaskError::failed)?;
            let micros = u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX);
            self.latencies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(micros);
        }
    }
}

const LOAD: Kind<Load> = Kind::new("checkpoint-load");

struct Settings {
    tasks: usize,
    workers: usize,
    secs: u64,
    bootstrap: Option<String>,
}

fn settings() -> Result<Settings, String> {
    let mut s = Settings {
        tasks: 10_000,
        workers: 3,
        secs: 30,
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
            "--workers" => s.workers = number()?.max(1) as usize,
            "--secs" => s.secs = number()?,
            "--bootstrap" => s.bootstrap = Some(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(s)
}

fn running(workers: &[WorkerHandle]) -> usize {
    workers
        .iter()
        .map(|w| {
            w.tasks()
                .iter()
                .filter(|t| t.state == TaskState::Running)
                .count()
        })
        .sum()
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = settings().map_err(|e| {
        format!(
            "{e}\nusage: checkpoint_load [--tasks N] [--workers W] [--secs S] [--bootstrap HOST:PORT]"
        )
    })?;
    let coordinator = match &s.bootstrap {
        Some(_) => None,
        None => Some(EmbeddedCoordinator::builder().bind("127.0.0.1:0").await?),
    };
    let bootstrap = match (&s.bootstrap, &coordinator) {
        (Some(b), _) => b.clone(),
        (None, Some(c)) => c.bootstrap(),
        (None, None) => return Err("no coordinator".into()),
    };
    let group = format!("checkpoint-load-{}", std::process::id());
    let mut cluster = kroupier_coordinator::connection::ClusterConfig::new(&bootstrap);
    cluster.connection.client_id = "checkpoint-load".to_owned();
    let store = TaskStore::open(
        Arc::new(kroupier_coordinator::connection::Cluster::new(cluster)?),
        tasks_topic(&group)?,
        true,
    )
    .await?;
    store
        .put_all((0..s.tasks).map(|i| {
            let config = serde_json::json!({ "phase_ms": (i * 997) % 1000 });
            (format!("load-{i:06}"), TaskRecord::new(LOAD.name(), config))
        }))
        .await?;

    let latencies = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..s.workers {
        let mut config = WorkerConfig::new(group.clone());
        config.member.cluster.bootstrap_servers = vec![bootstrap.clone()];
        config.worker_id = format!("load-worker-{w}");
        config.tasks.store.enabled = true;
        config.status.addr = None;
        config.status.fast_failover = false;
        let latencies = latencies.clone();
        let worker = WorkerBuilder::new(config)
            .register_with(LOAD, move |load: Load| -> Result<Saver, String> {
                Ok(Saver {
                    phase: Duration::from_millis(load.phase_ms),
                    latencies: latencies.clone(),
                })
            })
            .spawn()
            .await?;
        workers.push(worker);
    }
    while running(&workers) < s.tasks {
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {} of {} tasks running after 300 s",
                running(&workers),
                s.tasks
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_running = started.elapsed();
    // Warm up one second, then measure.
    tokio::time::sleep(Duration::from_secs(1)).await;
    latencies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    let measured = Instant::now();
    tokio::time::sleep(Duration::from_secs(s.secs)).await;
    let mut sample = std::mem::take(&mut *latencies.lock().unwrap_or_else(PoisonError::into_inner));
    let window = measured.elapsed().as_secs_f64();
    sample.sort_unstable();
    let failed: usize = workers
        .iter()
        .map(|w| {
            w.tasks()
                .iter()
                .filter(|t| t.state == TaskState::Failed)
                .count()
        })
        .sum();
    println!(
        "{}",
        serde_json::json!({
            "tasks": s.tasks,
            "workers": s.workers,
            "all_running_ms": all_running.as_millis() as u64,
            "measured_s": window,
            "checkpoints": sample.len(),
            "checkpoints_per_s": (sample.len() as f64 / window).round(),
            "save_latency_ms": {
                "p50": percentile(&sample, 0.50),
                "p99": percentile(&sample, 0.99),
                "max": percentile(&sample, 1.0),
            },
            "failed_tasks": failed,
        })
    );
    for worker in workers {
        worker.shutdown().await?;
    }
    Ok(())
}
