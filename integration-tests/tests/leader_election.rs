//! The `leader_election` example binary, three processes against real Kafka: never two
//! leaders at once, and a new leader within session timeout + 2 heartbeat intervals
//! after the leader's SIGKILL; a graceful handover on SIGTERM.
//!
//! Needs the example built (`scripts/test` builds all targets; locally
//! `cargo build -p kroupier-examples`). Prints `MEASURE name=ms` lines.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use kroupier_integration_tests::journal::{self, Role, RoleChange, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, Signal};
use serde_json::Value;

const SESSION_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;

/// One printed line.
#[derive(Debug, Clone)]
struct Line {
    process: usize,
    ts_ms: u64,
    id: String,
    event: String,
    generation: Option<i64>,
}

struct Candidates {
    processes: Vec<Process>,
    lines: Receiver<Line>,
    seen: Vec<Line>,
}

impl Candidates {
    fn start(bootstrap: &str, group: &str, ids: &[&str]) -> Self {
        let (tx, lines) = channel();
        let processes = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let args: Vec<String> = [
                    "--bootstrap",
                    bootstrap,
                    "--group",
                    group,
                    "--id",
                    id,
                    "--session-timeout-ms",
                    &SESSION_MS.to_string(),
                    "--heartbeat-interval-ms",
                    &HEARTBEAT_MS.to_string(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                let mut process = Process::spawn("leader_election", &args);
                let out = process.stdout_lines();
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for raw in out {
                        let v: Value = serde_json::from_str(&raw)
                            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {raw}"));
                        let line = Line {
                            process: i,
                            ts_ms: v["ts_ms"].as_u64().expect("ts_ms"),
                            id: v["id"].as_str().expect("id").to_owned(),
                            event: v["event"].as_str().expect("event").to_owned(),
                            generation: v["generation"].as_i64(),
                        };
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                });
                process
            })
            .collect();
        Self {
            processes,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until `done` holds for the lines seen so far, or panics after `within`.
    fn wait_until(&mut self, within: Duration, what: &str, done: impl Fn(&[Line]) -> bool) {
        let deadline = Instant::now() + within;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    println!("{line:?}");
                    self.seen.push(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{what}: not within {within:?}; lines: {:#?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{what}: every process ended; lines: {:#?}", self.seen)
                }
            }
        }
    }
}

/// The last event of each process among `lines`.
fn latest(lines: &[Line], processes: usize) -> Vec<Option<&Line>> {
    (0..processes)
        .map(|p| lines.iter().rev().find(|l| l.process == p))
        .collect()
}

/// Exactly one leader among `alive`, all in the same generation.
fn settled(lines: &[Line], alive: &[usize], processes: usize) -> Option<usize> {
    let last = latest(lines, processes);
    let roles: Vec<&Line> = alive.iter().filter_map(|p| last[*p]).collect();
    if roles.len() != alive.len() {
        return None;
    }
    let generation = roles[0].generation?;
    if roles.iter().any(|l| l.generation != Some(generation)) {
        return None;
    }
    let leaders: Vec<&&Line> = roles.iter().filter(|l| l.event == "leader").collect();
    (leaders.len() == 1 && roles.iter().all(|l| l.event != "lost")).then(|| leaders[0].process)
}

/// The lines as the journal checker's election events.
fn events(lines: &[Line]) -> Vec<RoleChange> {
    lines
        .iter()
        .map(|l| RoleChange {
            ts_ms: l.ts_ms,
            id: l.id.clone(),
            event: Role::from_name(&l.event)
                .unwrap_or_else(|| panic!("unknown event {:?}", l.event)),
            generation: l
                .generation
                .map(|g| i32::try_from(g).expect("generation fits an i32")),
        })
        .collect()
}

#[test]
fn one_leader_at_a_time_and_a_new_one_after_the_leader_dies() {
    let Some(bootstrap) =
        kafka_bootstrap("one_leader_at_a_time_and_a_new_one_after_the_leader_dies")
    else {
        return;
    };
    let group = format!("kroupier-it-election-{}-{}", std::process::id(), unix_ms());
    let ids = ["a", "b", "c", "d"];
    let n = ids.len();
    let mut c = Candidates::start(&bootstrap, &group, &ids);
    let mut alive: Vec<usize> = (0..n).collect();
    let mut ends = vec![u64::MAX; n];

    c.wait_until(Duration::from_secs(30), "four candidates settle", |l| {
        settled(l, &[0, 1, 2, 3], n).is_some()
    });
    let mut leader = settled(&c.seen, &alive, n).expect("settled");
    let first_leader = c
        .seen
        .iter()
        .find(|l| l.event == "leader")
        .expect("a leader line");
    assert_eq!(
        first_leader.process, leader,
        "leadership is sticky: the first process to lead keeps leading"
    );

    // SIGKILL the leader, twice: no LeaveGroup; the broker notices after the session timeout.
    for round in 1..=2 {
        let killed_at = unix_ms();
        c.processes[leader].signal(Signal::Kill);
        let _ = c.processes[leader].wait();
        ends[leader] = killed_at;
        alive.retain(|p| *p != leader);
        // The bound. The broker expires the dead leader at most one session timeout
        // after its last heartbeat (sent at most one interval before the kill); the rebalance
        // that follows takes milliseconds, so the second interval is the room left for a busy
        // machine.
        let bound = SESSION_MS + 2 * HEARTBEAT_MS;
        let survivors = alive.clone();
        c.wait_until(
            Duration::from_millis(bound + 5_000),
            "a new leader after SIGKILL",
            |l| settled(l, &survivors, n).is_some(),
        );
        let next = settled(&c.seen, &alive, n).expect("settled");
        let led_at = c
            .seen
            .iter()
            .find(|l| l.process == next && l.event == "leader" && l.ts_ms >= killed_at)
            .expect("the new leader's line")
            .ts_ms;
        let latency = led_at - killed_at;
        println!(
            "MEASURE election_leader_kill_round{round}_to_new_leader={latency}ms (bound {bound}ms)"
        );
        assert!(
            latency <= bound,
            "round {round}: new leader after {latency} ms, bound {bound} ms"
        );
        leader = next;
    }
    let next = leader;

    // SIGTERM the new leader: it resigns (lost), leaves, exits 0; the last one leads.
    let term_at = unix_ms();
    c.processes[next].signal(Signal::Term);
    assert_eq!(c.processes[next].wait(), Some(0), "exit 0 after SIGTERM");
    alive.retain(|p| *p != next);
    let last = alive[0];
    c.wait_until(Duration::from_secs(10), "the handover after SIGTERM", |l| {
        l.iter()
            .any(|x| x.process == next && x.event == "lost" && x.ts_ms >= term_at)
            && settled(l, &[last], n).is_some()
    });
    let handover = c
        .seen
        .iter()
        .find(|l| l.process == last && l.event == "leader" && l.ts_ms >= term_at)
        .expect("the last candidate leads")
        .ts_ms
        - term_at;
    println!("MEASURE election_sigterm_handover={handover}ms");
    ends[next] = unix_ms();

    c.processes[last].signal(Signal::Term);
    assert_eq!(c.processes[last].wait(), Some(0), "exit 0 after SIGTERM");
    ends[last] = unix_ms();
    // Read what is left.
    while let Ok(line) = c.lines.recv_timeout(Duration::from_millis(500)) {
        c.seen.push(line);
    }

    for l in &c.seen {
        assert_eq!(l.id, ids[l.process], "each process prints its own id");
    }
    // Never two leaders at once, and no generation led twice.
    let ends: BTreeMap<String, u64> = ids.iter().map(|id| id.to_string()).zip(ends).collect();
    let reigns = journal::reigns(&events(&c.seen), &ends);
    assert!(reigns.len() >= 4, "four reigns: {reigns:?}");
    let overlapping = journal::two_leaders(&reigns);
    assert!(
        overlapping.is_empty(),
        "overlapping leaders {overlapping:?}"
    );
    let mut led: Vec<(i64, usize)> = c
        .seen
        .iter()
        .filter(|l| l.event == "leader")
        .filter_map(|l| l.generation.map(|g| (g, l.process)))
        .collect();
    led.sort_unstable();
    led.dedup();
    for w in led.windows(2) {
        assert!(
            w[0].0 != w[1].0,
            "generation {} led by two processes",
            w[0].0
        );
    }
}
