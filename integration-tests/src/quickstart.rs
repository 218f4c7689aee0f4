//! Groups of `quickstart` worker processes for the integration tests: start them with the
//! contract's flags, read their JSON lines and status API, and check their task journals (the
//! witness that no task runs on two workers at once) with `kroupier_worker::journal`.
//!
//! Needs the example built (`scripts/test` builds all targets; locally `cargo build -p
//! kroupier-examples`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::journal::{self, Beat, unix_ms};
use crate::process::Process;

/// The session timeout the tests use (`--session-timeout-ms`).
pub const SESSION_MS: u64 = 3_000;
/// The heartbeat interval the tests use (`--heartbeat-interval-ms`).
pub const HEARTBEAT_MS: u64 = 500;
/// Scheduling, JoinGroup and SyncGroup round trips on a busy 2-core machine.
pub const SLACK_MS: u64 = 1_000;
/// Beats come every 100 ms; a longer silence ends a worker's tenure of a task.
pub const TENURE_GAP_MS: u64 = 300;
/// A task counts as running if its last beat is this recent.
pub const RECENT_MS: u64 = 600;

/// A name no other test run uses.
pub fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), unix_ms())
}

/// A fresh journal directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after `name` under the system's temporary directory.
    pub fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(unique(&format!("kroupier-{name}")));
        std::fs::create_dir_all(&path).expect("create the journal dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One quickstart process.
pub struct Worker {
    /// The worker id.
    pub id: String,
    /// The process.
    pub process: Process,
    lines: Receiver<String>,
    /// Every stdout line seen so far, parsed.
    pub seen: Vec<Value>,
    /// Where its status API listens.
    pub status_addr: String,
}

/// How to start workers of one group.
#[derive(Clone)]
pub struct Group {
    /// The bootstrap address.
    pub bootstrap: String,
    /// The group id (unique per test run).
    pub group: String,
    /// How many tasks (`task-0` ..).
    pub tasks: usize,
    /// The journal directory.
    pub journal: PathBuf,
    /// `--session-timeout-ms`.
    pub session_ms: u64,
    /// `--heartbeat-interval-ms`.
    pub heartbeat_ms: u64,
    /// More flags.
    pub extra: Vec<String>,
    /// Where each worker's stderr goes, appended to `DIR/<worker-id>.stderr`; `None` (the
    /// default) leaves it on the test's stderr.
    pub logs: Option<PathBuf>,
    /// Environment variables for the workers (`RUST_LOG`, ...); none by default.
    pub env: Vec<(String, String)>,
    /// A command the workers run under, which executes the binary in the end (a network
    /// namespace and a host name of their own: [`crate::netns::Namespace::wrapper`]); empty
    /// (the default) starts them directly.
    pub wrapper: Vec<String>,
}

impl Group {
    /// A group named after `name` (made unique), with the tests' timeouts and no extra flags.
    pub fn new(bootstrap: &str, name: &str, tasks: usize, journal: &Path) -> Self {
        Group {
            bootstrap: bootstrap.to_owned(),
            group: unique(name),
            tasks,
            journal: journal.to_owned(),
            session_ms: SESSION_MS,
            heartbeat_ms: HEARTBEAT_MS,
            extra: Vec::new(),
            logs: None,
            env: Vec::new(),
            wrapper: Vec::new(),
        }
    }

    /// The same group, its workers following the task store (`tasks.store.enabled=true`, in a
    /// client properties file written to `dir`).
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn with_task_store(mut self, dir: &Path) -> Self {
        let properties = dir.join("worker.properties");
        std::fs::write(&properties, "tasks.store.enabled=true\n").expect("write the properties");
        self.extra
            .extend(["--command-config".into(), properties.display().to_string()]);
        self
    }

    /// Starts worker `id` and waits for its `started` line.
    pub fn start(&self, id: &str) -> Worker {
        let mut args: Vec<String> = vec![
            "--bootstrap".into(),
            self.bootstrap.clone(),
            "--group".into(),
            self.group.clone(),
            "--worker-id".into(),
            id.into(),
            "--tasks".into(),
            self.tasks.to_string(),
            "--journal-dir".into(),
            self.journal.display().to_string(),
            "--session-timeout-ms".into(),
            self.session_ms.to_string(),
            "--heartbeat-interval-ms".into(),
            self.heartbeat_ms.to_string(),
        ];
        args.extend(self.extra.iter().cloned());
        let stderr = self.logs.as_ref().map(|dir| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("{id}.stderr")))
                .expect("open the worker's stderr log")
        });
        let mut process =
            Process::spawn_under(&self.wrapper, "quickstart", &args, stderr, &self.env);
        let lines = process.stdout_lines();
        let mut worker = Worker {
            id: id.to_owned(),
            process,
            lines,
            seen: Vec::new(),
            status_addr: String::new(),
        };
        let started = worker
            .wait_line(Duration::from_secs(20), |v| v["event"] == "started")
            .unwrap_or_else(|| panic!("{id} did not start"));
        worker.status_addr = started["status_addr"]
            .as_str()
            .expect("status address")
            .to_owned();
        worker
    }
}

impl Worker {
    /// Reads lines until one matches (returns it) or `timeout` passes.
    pub fn wait_line(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(v) = self.seen.iter().find(|v| pred(v)) {
            return Some(v.clone());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(raw) => {
                    let v: Value = serde_json::from_str(&raw)
                        .unwrap_or_else(|e| panic!("{}: not a JSON line ({e}): {raw}", self.id));
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return Some(v);
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Takes every line printed so far.
    pub fn drain(&mut self) {
        while let Ok(raw) = self.lines.try_recv() {
            if let Ok(v) = serde_json::from_str(&raw) {
                self.seen.push(v);
            }
        }
    }

    /// `GET path` on the worker's status API: the body.
    pub fn get(&self, path: &str) -> String {
        let stream = TcpStream::connect(&self.status_addr).expect("connect to the status API");
        http_get(stream, &self.status_addr, path)
    }
}

/// `GET path` over `stream`, a connection to a status API at `host` (its address, or a proxy's
/// in front of it): the body.
pub fn http_get(mut stream: TcpStream, host: &str, path: &str) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// Polls `check` every 100 ms until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every task's journal in `dir`.
pub fn journals(dir: &Path) -> BTreeMap<String, Vec<Beat>> {
    journal::read_dir(dir).expect("journals parse")
}

/// Each task's current owner: the worker of its recent beats (after `since_ms`), if exactly one
/// worker beat for it recently. `None` unless all `tasks` tasks run, each on exactly one worker.
pub fn running(dir: &Path, tasks: usize, since_ms: u64) -> Option<BTreeMap<String, String>> {
    let recent_ms = unix_ms().saturating_sub(RECENT_MS).max(since_ms + 1);
    let all = journals(dir);
    if all.len() != tasks {
        return None;
    }
    journal::exactly_once_since(&all, all.keys(), recent_ms).ok()
}

/// How many tasks each worker runs.
pub fn counts(owners: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for worker in owners.values() {
        *counts.entry(worker.clone()).or_insert(0) += 1;
    }
    counts
}

/// Each task's owner if every task runs on exactly one worker (beating after `since_ms`) and
/// the counts are balanced over `workers` workers; `None` otherwise.
pub fn balanced(
    dir: &Path,
    tasks: usize,
    workers: usize,
    since_ms: u64,
) -> Option<BTreeMap<String, String>> {
    let owners = running(dir, tasks, since_ms)?;
    let counts = counts(&owners);
    let (min, max) = (counts.values().min()?, counts.values().max()?);
    (counts.len() == workers && max - min <= 1).then_some(owners)
}

/// Waits until every task runs on exactly one worker (beating after `since_ms`) and the counts
/// are balanced over `workers` workers.
pub fn wait_balanced_since(
    dir: &Path,
    tasks: usize,
    workers: usize,
    since_ms: u64,
) -> BTreeMap<String, String> {
    poll(Duration::from_secs(30), || {
        balanced(dir, tasks, workers, since_ms)
    })
    .unwrap_or_else(|| {
        panic!(
            "{tasks} tasks never ran balanced over {workers} workers; last view: {:?}",
            running(dir, tasks, since_ms)
        )
    })
}

/// [`wait_balanced_since`] the start of time.
pub fn wait_balanced(dir: &Path, tasks: usize, workers: usize) -> BTreeMap<String, String> {
    wait_balanced_since(dir, tasks, workers, 0)
}

/// The first task whose journal shows two workers beating in overlapping time, described
/// (`None`: no task ran on two workers at once).
pub fn first_overlap(dir: &Path) -> Option<String> {
    journals(dir).into_iter().find_map(|(task, beats)| {
        let tenures = journal::tenures(&beats, TENURE_GAP_MS);
        let (a, b) = journal::overlaps(&tenures).into_iter().next()?;
        Some(format!(
            "{task} ran on two workers at once: {a:?} and {b:?}"
        ))
    })
}

/// Asserts that no task's journal shows two workers beating in overlapping time.
pub fn assert_no_overlap(dir: &Path) {
    if let Some(overlap) = first_overlap(dir) {
        panic!("{overlap}");
    }
}

/// How many tasks ran on two workers at once, by the journals.
pub fn overlapping_tasks(dir: &Path) -> usize {
    journals(dir)
        .values()
        .filter(|beats| !journal::overlaps(&journal::tenures(beats, TENURE_GAP_MS)).is_empty())
        .count()
}

/// Waits until every task in `moved` beats on another worker than `from` after `since_ms`;
/// returns the latest such first beat, in ms after `since_ms`.
pub fn moved_after(dir: &Path, moved: &[String], from: &str, since_ms: u64, bound: u64) -> u64 {
    poll(Duration::from_millis(bound + 10_000), || {
        let all = journals(dir);
        let mut latest = 0;
        for task in moved {
            let first = all
                .get(task)?
                .iter()
                .filter(|b| b.worker != from && b.unix_ms > since_ms)
                .map(|b| b.unix_ms)
                .min()?;
            latest = latest.max(first - since_ms);
        }
        Some(latest)
    })
    .unwrap_or_else(|| panic!("the tasks of {from} never ran elsewhere: {moved:?}"))
}

/// [`moved_after`] for several stopped workers at once (each with the tasks it held, which must
/// not be empty): the slowest of their moves, in ms after `since_ms`.
pub fn slowest_move(dir: &Path, held: &[(String, Vec<String>)], since_ms: u64, bound: u64) -> u64 {
    held.iter()
        .map(|(id, tasks)| {
            assert!(!tasks.is_empty(), "{id} runs tasks");
            moved_after(dir, tasks, id, since_ms, bound)
        })
        .max()
        .unwrap_or(0)
}

/// The generations of the recent beats.
pub fn recent_generations(dir: &Path) -> BTreeSet<i32> {
    let now = unix_ms();
    journals(dir)
        .values()
        .flat_map(|beats| beats.iter().filter(|b| b.unix_ms + RECENT_MS >= now))
        .map(|b| b.generation)
        .collect()
}

/// The generations of the beats after `since_ms`.
pub fn generations_since(dir: &Path, since_ms: u64) -> BTreeSet<i32> {
    journals(dir)
        .values()
        .flat_map(|beats| beats.iter().filter(|b| b.unix_ms > since_ms))
        .map(|b| b.generation)
        .collect()
}

/// The highest generation any task beat in, if any task beat.
pub fn latest_generation(dir: &Path) -> Option<i32> {
    journals(dir)
        .values()
        .flat_map(|beats| beats.iter().map(|b| b.generation))
        .max()
}

/// When `worker` last beat for any task, in Unix ms.
pub fn last_beat_of(dir: &Path, worker: &str) -> Option<u64> {
    journals(dir)
        .values()
        .flat_map(|beats| beats.iter().filter(|b| b.worker == worker))
        .map(|b| b.unix_ms)
        .max()
}

/// The index of the worker that says (in its `assigned` lines) it leads the latest generation.
pub fn leader_index(workers: &mut [Worker]) -> usize {
    poll(Duration::from_secs(10), || {
        let mut best: Option<(i64, usize)> = None;
        for (i, worker) in workers.iter_mut().enumerate() {
            worker.drain();
            let led = worker
                .seen
                .iter()
                .filter(|v| v["event"] == "assigned" && v["leader"] == true)
                .filter_map(|v| v["generation"].as_i64())
                .max();
            if let Some(g) = led
                && best.is_none_or(|(b, _)| g > b)
            {
                best = Some((g, i));
            }
        }
        best.map(|(_, i)| i)
    })
    .expect("a worker says it leads")
}

/// Waits until the group has settled (the follow-up round after the last join is done): every
/// task beats in one generation, which it returns.
pub fn settled_generation(dir: &Path) -> i32 {
    poll(Duration::from_secs(10), || {
        let generations = recent_generations(dir);
        (generations.len() == 1).then(|| generations.into_iter().next())?
    })
    .expect("the group settles in one generation")
}

/// The tasks `worker` runs.
pub fn tasks_of(owners: &BTreeMap<String, String>, worker: &str) -> Vec<String> {
    owners
        .iter()
        .filter(|(_, w)| w.as_str() == worker)
        .map(|(t, _)| t.clone())
        .collect()
}
