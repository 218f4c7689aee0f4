//! The `leader_election` example binary, three processes against real Kafka: never two
//! leaders at once, and a new leader within session timeout + 2 heartbeat intervals
//! after the leader's SIGKILL; a graceful handover on SIGTERM.
//!
//! Needs the example built (`scripts/test` builds all targets; locally
//! `cargo build -p kroupier-examples`). Prints `MEASURE name=ms` lines.

use std::time::Duration;

use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::roles::{self, Lines, assert_one_leader_at_a_time, settled};

const SESSION_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;

struct Candidates {
    processes: Vec<Process>,
    lines: Lines,
}

impl Candidates {
    fn start(bootstrap: &str, group: &str, ids: &[&str]) -> Self {
        let mut lines = Lines::new();
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
                lines.read(&mut process, i, Some(id));
                process
            })
            .collect();
        Self { processes, lines }
    }
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

    let mut leader =
        c.lines
            .wait_settled(Duration::from_secs(30), "four candidates settle", &alive);
    let first_leader = c
        .lines
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
        let next = c.lines.wait_settled(
            Duration::from_millis(bound + 5_000),
            "a new leader after SIGKILL",
            &alive,
        );
        let led_at = roles::led_at(&c.lines.seen, next, killed_at).expect("the new leader's line");
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
    c.lines
        .wait_until(Duration::from_secs(10), "the handover after SIGTERM", |l| {
            l.iter()
                .any(|x| x.process == next && x.event == "lost" && x.ts_ms >= term_at)
                && settled(l, &[last]).is_some()
        });
    let handover =
        roles::led_at(&c.lines.seen, last, term_at).expect("the last candidate leads") - term_at;
    println!("MEASURE election_sigterm_handover={handover}ms");
    ends[next] = unix_ms();

    c.processes[last].signal(Signal::Term);
    assert_eq!(c.processes[last].wait(), Some(0), "exit 0 after SIGTERM");
    ends[last] = unix_ms();
    // Read what is left.
    c.lines.drain(Duration::from_millis(500));

    // Never two leaders at once, and no generation led twice.
    let reigns = roles::reigns(&c.lines.seen, &ids, &ends);
    assert!(reigns.len() >= 4, "four reigns: {reigns:?}");
    assert_one_leader_at_a_time(&c.lines.seen, &ids, &ends);
}
