//! A million tasks in one group: `quickstart` workers (release build; 3 unless
//! `KROUPIER_MILLION_WORKERS` says otherwise) share `task-0` .. `task-999999` on a stock broker,
//! whose group record Kafka caps at 1 MiB. The group must settle with every task placed exactly
//! once and running, and a SIGKILLed worker's tasks must run on the survivors. Prints the group
//! record's size (every member's metadata plus every assignment, as DescribeGroups returns
//! them) and the times. The session timeout is 30 s: each worker holds the whole catalogue and
//! starts hundreds of thousands of tasks at once, on however few cores the machine has.
//!
//! A measurement, not a check for CI (it needs about 4 GB of memory per worker and minutes of
//! CPU):
//!
//! ```text
//! cargo build --release -p kroupier-examples --bin quickstart
//! KROUPIER_BIN_DIR=target/release KROUPIER_KAFKA_BOOTSTRAP=HOST:PORT \
//!   cargo test -p kroupier-integration-tests --test million_tasks -- --ignored --nocapture
//! ```

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use kroupier_coordinator::observer::{GroupState, Observer};
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::quickstart::unique;
use kroupier_integration_tests::{kafka_bootstrap, topics};
use kroupier_worker::protocol::Assignment;
use serde_json::Value;

const TASKS: usize = 1_000_000;

fn workers() -> usize {
    std::env::var("KROUPIER_MILLION_WORKERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n >= 2)
        .unwrap_or(3)
}

/// One quickstart process and where its status API listens.
struct Worker {
    process: Process,
    status_addr: String,
    _lines: Receiver<String>,
}

/// Starts a worker's process (its status address is read by [`started`]).
fn spawn(bootstrap: &str, group: &str, id: &str) -> (Process, Receiver<String>) {
    let args: Vec<String> = [
        "--bootstrap",
        bootstrap,
        "--group",
        group,
        "--worker-id",
        id,
        "--tasks",
        &TASKS.to_string(),
        // Idle tasks in all but name: one beat an hour.
        "--beat-ms",
        "3600000",
        "--session-timeout-ms",
        "30000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut process = Process::spawn("quickstart", &args);
    let lines = process.stdout_lines();
    (process, lines)
}

/// Waits for the worker's `started` line.
fn started((process, lines): (Process, Receiver<String>)) -> Worker {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["event"] == "started" {
            let status_addr = event["status_addr"].as_str().unwrap().to_owned();
            return Worker {
                process,
                status_addr,
                _lines: lines,
            };
        }
    }
    panic!("a worker did not start");
}

/// Tasks running on the worker, from its `/metrics`.
fn running(worker: &Worker) -> Option<usize> {
    let mut stream = TcpStream::connect(&worker.status_addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    body.lines()
        .find(|l| l.starts_with("kroupier_tasks{") && l.contains("state=\"RUNNING\""))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|n| n as usize)
}

/// The group, once stable: the record's size in bytes and whether every task is assigned
/// exactly once.
async fn record(observer: &Observer, group: &str, members: usize) -> Option<(usize, bool)> {
    let described = observer.describe_group(group).await.ok()?;
    if described.state != GroupState::Stable || described.members.len() != members {
        return None;
    }
    let mut bytes = 0;
    let mut seen = BTreeSet::new();
    let mut once = true;
    for member in &described.members {
        bytes += member.metadata.len() + member.assignment.len();
        let assignment = Assignment::decode(&member.assignment).ok()?;
        for task in assignment.tasks {
            once &= seen.insert(task);
        }
    }
    Some((bytes, once && seen.len() == TASKS))
}

/// Waits until the group is stable with `workers`, every task assigned once and running on
/// them; the group record's size then.
async fn settle(observer: &Observer, group: &str, workers: &[&Worker], timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        assert!(Instant::now() < deadline, "the group did not settle");
        if let Some((bytes, exactly_once)) = record(observer, group, workers.len()).await {
            let total: usize = workers.iter().filter_map(|w| running(w)).sum();
            if exactly_once && total == TASKS {
                return bytes;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Prints how long a step took since `since` and the group record's size, which must fit
/// Kafka's default 1 MiB.
fn report(measure: &str, since: Instant, bytes: usize) {
    println!(
        "MEASURE {measure}={} record_bytes={bytes} bytes_per_task={:.4}",
        since.elapsed().as_millis(),
        bytes as f64 / TASKS as f64
    );
    assert!(bytes < 1 << 20, "{bytes} bytes");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement, not a check: about 2 GB of memory per worker and minutes of CPU"]
async fn a_million_tasks_share_one_group_on_a_stock_broker() {
    let Some(bootstrap) = kafka_bootstrap("million_tasks") else {
        return;
    };
    let observer = Observer::new(topics::client(&bootstrap));
    let group = unique("million");
    let launched = Instant::now();
    // Every process first, so that they join together instead of one after the other.
    let spawned: Vec<_> = (0..workers())
        .map(|i| spawn(&bootstrap, &group, &format!("w{i}")))
        .collect();
    let mut workers: Vec<Worker> = spawned.into_iter().map(started).collect();
    let all: Vec<&Worker> = workers.iter().collect();
    let bytes = settle(&observer, &group, &all, Duration::from_secs(600)).await;
    report("million_cold_start_ms", launched, bytes);

    let victim = workers.remove(1);
    let killed = Instant::now();
    victim.process.signal(Signal::Kill);
    let survivors: Vec<&Worker> = workers.iter().collect();
    let bytes = settle(&observer, &group, &survivors, Duration::from_secs(600)).await;
    report("million_kill_to_running_ms", killed, bytes);
}
