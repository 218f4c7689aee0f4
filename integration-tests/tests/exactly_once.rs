//! The `exactly_once` example through faults, on Kafka: `numbers` tasks write numbered records
//! in transactions, each with its position as the checkpoint, while their workers are
//! SIGKILLed, paused past their session (SIGSTOP, then SIGCONT: the zombie's produce and
//! commit must be fenced), removed from the group by a third party's LeaveGroup, and joined by
//! a new worker (a rebalance that moves a task while its transaction is open). A
//! read-committed reader must then see every number of every task exactly once, in order,
//! with no gap: kroupier's reader and a Java `KafkaConsumer` at
//! `isolation.level=read_committed` (kafka-clients of the broker's version, built as the
//! consumer interop tests build theirs; with `KROUPIER_KAFKA_STATE` set, as `scripts/test`
//! does in its Kafka phases).
//!
//! On a 3-node cluster of its own (`KROUPIER_KAFKA_CLUSTER=1`), the same through a restart of
//! the broker that coordinates a task's transactions.
//!
//! On a broker without transactions (the embedded coordinator) the test checks that the
//! task fails saying so, naming Apache Kafka.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use kroupier_coordinator::log::{TopicLog, TopicSpec};
use kroupier_integration_tests::admin::{member_id_of, remove_member};
use kroupier_integration_tests::java::{java_class, java_program, real_kafka};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::quickstart::unique;
use kroupier_integration_tests::topics::{self, client, kafka_script, killable_cluster};
use serde_json::Value;

const TASKS: usize = 2;
const SESSION_MS: u64 = 6_000;

struct Worker {
    id: String,
    process: Process,
    lines: Receiver<String>,
    /// The tasks of its latest assignment.
    tasks: Vec<String>,
}

/// The example's arguments for worker `id`.
fn args(bootstrap: &str, group: &str, topic: &str, id: &str) -> Vec<String> {
    [
        "--bootstrap",
        bootstrap,
        "--group",
        group,
        "--worker-id",
        id,
        "--tasks",
        &TASKS.to_string(),
        "--topic",
        topic,
        "--per-commit",
        "10",
        "--every-ms",
        "50",
        "--session-timeout-ms",
        &SESSION_MS.to_string(),
        "--heartbeat-interval-ms",
        "1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl Worker {
    fn start(bootstrap: &str, group: &str, topic: &str, id: &str) -> Worker {
        let mut process = Process::spawn("exactly_once", &args(bootstrap, group, topic, id));
        let lines = process.stdout_lines();
        Worker {
            id: id.to_owned(),
            process,
            lines,
            tasks: Vec::new(),
        }
    }

    /// Reads the lines printed so far; the latest assignment wins.
    fn drain(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            let Ok(line) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if line["event"] == "assigned" {
                self.tasks = line["tasks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect();
            }
        }
    }
}

/// Every number each task has committed, in topic order, read with read-committed isolation.
async fn committed(log: &TopicLog) -> BTreeMap<String, Vec<u64>> {
    let mut numbers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut next = 0;
    loop {
        let batch = log
            .read_committed(next, Duration::from_millis(200))
            .await
            .expect("read committed");
        for record in &batch.records {
            let value =
                String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned();
            let (task, n) = value.split_once(' ').expect("`<task> <n>`");
            numbers
                .entry(task.to_owned())
                .or_default()
                .push(n.parse().expect("a number"));
        }
        next = batch.next_offset;
        if next >= batch.end_offset {
            return numbers;
        }
    }
}

/// Asserts that each task's numbers are 0, 1, 2, ... with no gap and no repeat.
fn assert_exactly_once(numbers: &BTreeMap<String, Vec<u64>>) {
    for (task, seen) in numbers {
        for (i, n) in seen.iter().enumerate() {
            assert_eq!(
                *n,
                i as u64,
                "task {task}: number #{i} is {n}; around it: {:?}",
                &seen[i.saturating_sub(3)..(i + 3).min(seen.len())]
            );
        }
    }
}

/// Waits until every task has committed at least `more` numbers beyond `since`; the counts.
async fn progress(
    log: &TopicLog,
    since: &BTreeMap<String, usize>,
    more: usize,
    what: &str,
) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let numbers = committed(log).await;
        assert_exactly_once(&numbers);
        let counts: BTreeMap<String, usize> =
            numbers.iter().map(|(t, n)| (t.clone(), n.len())).collect();
        let moved = counts.len() == TASKS
            && counts
                .iter()
                .all(|(t, c)| *c >= since.get(t).copied().unwrap_or(0) + more);
        if moved {
            return counts;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the tasks did not go on writing within 60 s: {counts:?} (before: {since:?})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Kafka's own consumer at `isolation.level=read_committed` reads `numbers` from `topic` (when
/// the broker is one `scripts/kafka` started: its kafka-clients are known).
fn assert_java_reads(
    test: &str,
    bootstrap: &str,
    topic: &str,
    numbers: &BTreeMap<String, Vec<u64>>,
) {
    let Some(kafka) = real_kafka(test) else {
        return;
    };
    let java = java_program(&kafka, Path::new(env!("CARGO_TARGET_TMPDIR")));
    let output = java_class(&java, "128m", "dev.kroupier.interop.ReadCommitted")
        .args(["--bootstrap", bootstrap, "--topic", topic])
        .output()
        .expect("run the Java reader");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut java_numbers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let (task, n) = line.split_once(' ').expect("`<task> <n>`");
        java_numbers
            .entry(task.to_owned())
            .or_default()
            .push(n.parse().expect("a number"));
    }
    assert_eq!(
        &java_numbers, numbers,
        "a Java KafkaConsumer at read_committed reads what kroupier's reader reads"
    );
}

fn holder(workers: &mut [Worker], task: &str) -> Option<usize> {
    for w in workers.iter_mut() {
        w.drain();
    }
    workers
        .iter()
        .position(|w| w.tasks.iter().any(|t| t == task))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_are_written_exactly_once_through_kills_pauses_removals_and_moves() {
    let test = "numbers_are_written_exactly_once_through_kills_pauses_removals_and_moves";
    let Some(bootstrap) = kafka_bootstrap(test) else {
        return;
    };
    let cluster = client(&bootstrap);
    let topic = unique("eos-numbers");
    let group = unique("eos");
    let broker = cluster.any_broker().await.expect("connect");
    if broker.versions().get(ApiKey::InitProducerId).is_none() {
        // The embedded coordinator: the task must fail, saying that transactions need Kafka.
        let path = std::env::temp_dir().join(format!("{group}.stderr"));
        let stderr = std::fs::File::create(&path).expect("a log file");
        let mut process = Process::spawn_logged(
            "exactly_once",
            &args(&bootstrap, &group, &topic, "w-0"),
            Some(stderr),
            &[],
        );
        let started = Instant::now();
        let said = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.contains("does not serve Kafka transactions") {
                break true;
            }
            if started.elapsed() > Duration::from_secs(30) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        process.signal(Signal::Kill);
        process.wait();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert!(said, "the task's failure names Kafka transactions: {text}");
        assert!(text.contains("Apache Kafka"), "{text}");
        return;
    }
    let log = TopicLog::open(cluster.clone(), TopicSpec::new(&topic), true)
        .await
        .expect("the output topic");

    let mut workers = vec![
        Worker::start(&bootstrap, &group, &topic, "w-a"),
        Worker::start(&bootstrap, &group, &topic, "w-b"),
    ];
    let mut counts = progress(&log, &BTreeMap::new(), 50, "start").await;

    // 1. SIGKILL the owner of numbers-0: its successor resumes from the last commit.
    let victim = holder(&mut workers, "numbers-0").expect("someone holds numbers-0");
    workers[victim].process.signal(Signal::Kill);
    let killed = workers.remove(victim);
    drop(killed);
    counts = progress(&log, &counts, 50, "after a SIGKILL").await;

    // 2. A new worker joins: the cooperative assignor moves a task to it, mid-transaction.
    workers.push(Worker::start(&bootstrap, &group, &topic, "w-c"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    counts = progress(&log, &counts, 50, "after a join").await;

    // 3. SIGSTOP a worker that holds a task past its session, then SIGCONT: its
    //    transaction in flight is aborted by the new owner's fencing, its commit refused.
    let paused = holder(&mut workers, "numbers-1")
        .or_else(|| holder(&mut workers, "numbers-0"))
        .expect("someone holds a task");
    workers[paused].process.signal(Signal::Stop);
    tokio::time::sleep(Duration::from_millis(SESSION_MS + 3_000)).await;
    counts = progress(&log, &counts, 50, "while one worker is paused").await;
    workers[paused].process.signal(Signal::Cont);
    tokio::time::sleep(Duration::from_secs(2)).await;
    counts = progress(&log, &counts, 50, "after the paused worker resumed").await;

    // 4. A third party removes a worker that holds a task from the group.
    let removed = holder(&mut workers, "numbers-0")
        .or_else(|| holder(&mut workers, "numbers-1"))
        .expect("someone holds a task");
    let member = member_id_of(&bootstrap, &group, &workers[removed].id).await;
    remove_member(&bootstrap, &group, &member, None).await;
    counts = progress(&log, &counts, 50, "after a removal").await;

    // Stop everything, then check the whole topic once more.
    for w in &workers {
        w.process.signal(Signal::Term);
    }
    for w in &mut workers {
        w.process.wait();
    }
    let numbers = committed(&log).await;
    assert_exactly_once(&numbers);
    assert_eq!(numbers.len(), TASKS, "{numbers:?}");
    for (task, seen) in &numbers {
        assert!(
            seen.len() >= counts[task],
            "{task}: {} < {}",
            seen.len(),
            counts[task]
        );
    }
    assert_java_reads(test, &bootstrap, &topic, &numbers);
    eprintln!(
        "{test}: exactly once through a kill, a join, a pause and a removal: {:?}",
        numbers
            .iter()
            .map(|(t, n)| (t, n.len()))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_are_written_exactly_once_through_a_restart_of_the_transaction_coordinator() {
    let test = "numbers_are_written_exactly_once_through_a_restart_of_the_transaction_coordinator";
    let Some(bootstrap) = killable_cluster(test) else {
        return;
    };
    let cluster = client(&bootstrap);
    let topic = unique("eos-coordinator");
    let group = unique("eos-coordinator");
    let log = TopicLog::open(cluster.clone(), TopicSpec::new(&topic), true)
        .await
        .expect("the output topic");
    let workers = vec![
        Worker::start(&bootstrap, &group, &topic, "w-a"),
        Worker::start(&bootstrap, &group, &topic, "w-b"),
    ];
    let counts = progress(&log, &BTreeMap::new(), 50, "start").await;

    // The broker that coordinates numbers-0's transactions goes down mid-stream, then comes
    // back.
    let node =
        topics::transaction_coordinator(&cluster, &format!("kroupier-{group}-numbers-0")).await;
    kafka_script(&["kill-node", &node.to_string()]);
    tokio::time::sleep(Duration::from_secs(5)).await;
    kafka_script(&["start-node", &node.to_string()]);
    let counts = progress(&log, &counts, 50, "after the coordinator's restart").await;

    for w in &workers {
        w.process.signal(Signal::Term);
    }
    for mut w in workers {
        w.process.wait();
    }
    let numbers = committed(&log).await;
    assert_exactly_once(&numbers);
    for (task, seen) in &numbers {
        assert!(seen.len() >= counts[task], "{task}");
    }
    assert_java_reads(test, &bootstrap, &topic, &numbers);
}
