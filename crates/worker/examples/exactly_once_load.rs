//! Exactly-once throughput: N tasks on one worker, each committing a transaction every
//! `--every-ms` (default 100) that carries `--records` numbered records (default 10) and the
//! task's checkpoint (`TaskContext::exactly_once`). Prints one JSON line: committed
//! transactions and records per second for the worker and per task, and the commit latency
//! (from `begin` to the commit's answer) at p50/p99/max.
//!
//! `cargo run --release -p kroupier-worker --example exactly_once_load -- --bootstrap HOST:PORT`
//!
//! Options: `--tasks N` (default 1), `--secs S` measured after every task has committed once
//! (default 20), `--every-ms MS`, `--records R`.
//!
//! With `--watch TOPIC` it instead reads TOPIC read-committed from its start, polling every
//! 10 ms, and prints `{"ts_ms":..,"task":..,"count":..}` each time a task's committed count
//! grows: what `scripts/bench-eos` times a failover with.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_coordinator::log::{TopicLog, TopicSpec};
use kroupier_worker::{Kind, Task, TaskContext, TaskError, TaskState, WorkerBuilder, WorkerConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Load {
    topic: String,
    records: u64,
    every_ms: u64,
}

/// Commits `records` numbered records and its position every `every_ms`, recording each
/// commit's latency.
struct Committer {
    config: Load,
    latencies: Arc<Mutex<Vec<u32>>>,
}

impl Task for Committer {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut output = ctx.exactly_once().await?;
        let topic = output.output(&self.config.topic).await?;
        let mut next = ctx
            .last_checkpoint::<u64>()
            .await
            .map_err(TaskError::failed)?
            .unwrap_or(0);
        let mut ticks = tokio::time::interval(Duration::from_millis(self.config.every_ms.max(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let task = ctx.task_id().to_owned();
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let began = Instant::now();
            let end = next + self.config.records;
            let mut transaction = output.begin().await?;
            transaction
                .send(
                    &topic,
                    (next..end).map(|n| (format!("{task}-{n}"), format!("{task} {n}"))),
                )
                .await?;
            transaction.commit(&end).await?;
            next = end;
            let micros = u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX);
            self.latencies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(micros);
        }
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// `--watch TOPIC`: prints each growth of a task's committed count.
async fn watch(bootstrap: &str, topic: &str) {
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(bootstrap)).expect("cluster"));
    let log = TopicLog::open(cluster, TopicSpec::new(topic), true)
        .await
        .expect("the topic");
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut next = 0;
    loop {
        let batch = match log.read_committed(next, Duration::from_millis(10)).await {
            Ok(batch) => batch,
            Err(error) => {
                eprintln!("exactly_once_load: {error}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let now = unix_ms();
        let mut grown = BTreeMap::new();
        for record in &batch.records {
            let value =
                String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned();
            if let Some((task, _)) = value.split_once(' ') {
                let count = counts.entry(task.to_owned()).or_default();
                *count += 1;
                grown.insert(task.to_owned(), *count);
            }
        }
        next = batch.next_offset;
        let mut out = std::io::stdout().lock();
        for (task, count) in grown {
            let _ = writeln!(
                out,
                "{}",
                serde_json::json!({"ts_ms": now, "task": task, "count": count})
            );
        }
        let _ = out.flush();
    }
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

#[tokio::main]
async fn main() {
    let bootstrap = arg("--bootstrap").expect("--bootstrap HOST:PORT (a Kafka broker)");
    if let Some(topic) = arg("--watch") {
        watch(&bootstrap, &topic).await;
        return;
    }
    let tasks: usize = arg("--tasks").map_or(1, |v| v.parse().expect("--tasks N"));
    let secs: u64 = arg("--secs").map_or(20, |v| v.parse().expect("--secs S"));
    let every_ms: u64 = arg("--every-ms").map_or(100, |v| v.parse().expect("--every-ms MS"));
    let records: u64 = arg("--records").map_or(10, |v| v.parse().expect("--records R"));
    let stamp = unix_ms();
    let topic = format!("eos-load-{stamp}");
    let group = format!("eos-load-{stamp}");

    let latencies = Arc::new(Mutex::new(Vec::new()));
    let mut config = WorkerConfig::new(&group);
    config.member.cluster.bootstrap_servers = vec![bootstrap.clone()];
    config.tasks.store.enabled = true;
    config.status.addr = None;
    let kind: Kind<serde_json::Value> = Kind::new("load");
    let mut builder = WorkerBuilder::new(config).register_with(kind.clone(), {
        let latencies = latencies.clone();
        move |config: serde_json::Value| -> Result<Committer, serde_json::Error> {
            Ok(Committer {
                config: serde_json::from_value(config)?,
                latencies: latencies.clone(),
            })
        }
    });
    for i in 0..tasks {
        builder = builder.typed_task(
            &kind,
            format!("load-{i}"),
            serde_json::json!({"topic": topic, "records": records, "every_ms": every_ms}),
        );
    }
    let started = Instant::now();
    let worker = builder.spawn().await.expect("the worker");
    // Every task running and past its first commit.
    loop {
        let status = worker.status();
        let running = status
            .tasks
            .iter()
            .filter(|t| t.status.state == TaskState::Running)
            .count();
        let committed = latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        if running == tasks && committed >= tasks {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "tasks did not start: {running} of {tasks} running, {committed} commits"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ready = started.elapsed();
    latencies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let mut sample = std::mem::take(&mut *latencies.lock().unwrap_or_else(PoisonError::into_inner));
    let _ = worker.shutdown().await;
    sample.sort_unstable();
    let commits = sample.len() as f64 / secs as f64;
    println!(
        "{}",
        serde_json::json!({
            "tasks": tasks, "secs": secs, "every_ms": every_ms, "records_per_commit": records,
            "commits_per_s": commits, "commits_per_s_per_task": commits / tasks as f64,
            "records_per_s": commits * records as f64,
            "records_per_s_per_task": commits * records as f64 / tasks as f64,
            "commit_ms_p50": percentile(&sample, 0.5), "commit_ms_p99": percentile(&sample, 0.99),
            "commit_ms_max": percentile(&sample, 1.0),
            "ready_ms": ready.as_millis() as u64,
        })
    );
}
