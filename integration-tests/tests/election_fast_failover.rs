//! The `leader_election` example with `--fast-failover`, against real Kafka (or the embedded
//! coordinator): SIGKILL of the leader's process → a new leader in milliseconds, at Kafka's
//! default session and heartbeat, never two leaders at once; SIGSTOP of the leader (its
//! process lives, its sockets stay open) → no new leader before its session ends, as without
//! fast failover.
//!
//! A live leader removed by a third party (LeaveGroup naming it, as `kafka-consumer-groups
//! --delete-members` does): nothing proves it gone, so the next leader holds its role back
//! until the old leader's session has passed; the old one stops at its next heartbeat, first.
//!
//! Across network namespaces (root and `ip netns`, as `multi_host.rs`; skipped without them):
//! candidates whose endpoints listen on their namespace's address fail over in round trips;
//! candidates whose endpoints listen on their own loopback, under one shared host name, prove
//! nothing about each other (another namespace's loopback is not theirs) and wait for the
//! session.
//!
//! Needs the example built (`cargo build -p kroupier-examples`). Prints `MEASURE name=ms`
//! lines; `KROUPIER_FAILOVER_ROUNDS` sets how many leaders the SIGKILL test kills (default 5).

use std::time::Duration;

use kroupier_coordinator::codec::Versioned;
use kroupier_coordinator::election::ElectionMetadata;
use kroupier_integration_tests::admin::{member_id_where, remove_member};
use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::netns::Network;
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::roles::{self, Line, Lines, assert_one_leader_at_a_time};

/// Kafka's defaults (`session.timeout.ms` before 3.0, `heartbeat.interval.ms`).
const SESSION_MS: u64 = 10_000;
const HEARTBEAT_MS: u64 = 3_000;
/// A new leader after SIGKILL, well under the session: generous, so a busy machine passes.
const FAST_BOUND_MS: u64 = 2_000;

struct Candidates {
    bootstrap: String,
    group: String,
    session_ms: u64,
    heartbeat_ms: u64,
    processes: Vec<Process>,
    ids: Vec<String>,
    lines: Lines,
}

impl Candidates {
    fn new(bootstrap: &str, group: &str, session_ms: u64, heartbeat_ms: u64) -> Self {
        Self {
            bootstrap: bootstrap.to_owned(),
            group: group.to_owned(),
            session_ms,
            heartbeat_ms,
            processes: Vec::new(),
            ids: Vec::new(),
            lines: Lines::new(),
        }
    }

    /// Starts one more candidate with `id`; returns its index.
    fn add(&mut self, id: &str) -> usize {
        self.add_under(&[], id, &[])
    }

    /// Starts one more candidate with `id` under `wrapper` (a network namespace), with `extra`
    /// arguments; returns its index.
    fn add_under(&mut self, wrapper: &[String], id: &str, extra: &[String]) -> usize {
        let i = self.processes.len();
        let mut args: Vec<String> = [
            "--bootstrap",
            &self.bootstrap,
            "--group",
            &self.group,
            "--id",
            id,
            "--session-timeout-ms",
            &self.session_ms.to_string(),
            "--heartbeat-interval-ms",
            &self.heartbeat_ms.to_string(),
            "--fast-failover",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().cloned());
        let mut process = Process::spawn_under(wrapper, "leader_election", &args, None, &[]);
        self.lines.read(&mut process, i, None);
        self.processes.push(process);
        self.ids.push(id.to_owned());
        i
    }
}

/// How long the candidates may take to lead after a leader that nothing proved gone: its
/// session, the survivors' next heartbeat, the rebalance, then the new leader's hold (the
/// session again and 250 ms: the old leader may have been removed while it lives), and slack.
fn until_a_leader_without_proof(session_ms: u64, heartbeat_ms: u64) -> u64 {
    2 * session_ms + 250 + 2 * heartbeat_ms + 5_000
}

fn rounds() -> usize {
    std::env::var("KROUPIER_FAILOVER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5)
}

#[test]
fn sigkill_of_the_leader_elects_another_in_milliseconds() {
    let Some(bootstrap) = kafka_bootstrap("sigkill_of_the_leader_elects_another_in_milliseconds")
    else {
        return;
    };
    let group = format!(
        "kroupier-it-fast-election-{}-{}",
        std::process::id(),
        unix_ms()
    );
    let mut c = Candidates::new(&bootstrap, &group, SESSION_MS, HEARTBEAT_MS);
    let mut alive: Vec<usize> = ["a", "b", "c"].iter().map(|id| c.add(id)).collect();
    let mut ends: Vec<u64> = vec![u64::MAX; 3];
    let mut leader =
        c.lines
            .wait_settled(Duration::from_secs(30), "three candidates settle", &alive);
    let mut latencies = Vec::new();
    for round in 1..=rounds() {
        // The followers link to the leader as soon as they learn their role.
        std::thread::sleep(Duration::from_millis(300));
        let killed_at = unix_ms();
        c.processes[leader].signal(Signal::Kill);
        let _ = c.processes[leader].wait();
        ends[leader] = killed_at;
        alive.retain(|p| *p != leader);
        let next = c.lines.wait_settled(
            Duration::from_millis(SESSION_MS + 2 * HEARTBEAT_MS + 5_000),
            "a new leader after SIGKILL",
            &alive,
        );
        let led_at = roles::led_at(&c.lines.seen, next, killed_at).expect("the new leader's line");
        let latency = led_at - killed_at;
        println!("MEASURE election_fast_failover_kill_round{round}_to_new_leader={latency}ms");
        latencies.push(latency);
        // A replacement, so that every round kills the leader of a group of three.
        let id = format!("r{round}");
        alive.push(c.add(&id));
        ends.push(u64::MAX);
        leader = c
            .lines
            .wait_settled(Duration::from_secs(30), "the replacement joins", &alive);
    }
    latencies.sort_unstable();
    let median = latencies[latencies.len() / 2];
    println!(
        "MEASURE election_fast_failover_kill_median={median}ms over {} runs (all: {latencies:?}; \
         session {SESSION_MS} ms, heartbeat {HEARTBEAT_MS} ms)",
        latencies.len()
    );
    // SIGTERM of the leader: it resigns (its endpoint closes after its `lost`), and a
    // follower leads before the LeaveGroup would have reached it at its next heartbeat.
    let term_at = unix_ms();
    c.processes[leader].signal(Signal::Term);
    assert_eq!(c.processes[leader].wait(), Some(0), "exit 0 after SIGTERM");
    ends[leader] = unix_ms();
    alive.retain(|p| *p != leader);
    let next = c.lines.wait_settled(
        Duration::from_secs(10),
        "a new leader after SIGTERM",
        &alive,
    );
    let handover =
        roles::led_at(&c.lines.seen, next, term_at).expect("the new leader's line") - term_at;
    println!("MEASURE election_fast_failover_sigterm_handover={handover}ms");
    for p in alive.clone() {
        c.processes[p].signal(Signal::Term);
        assert_eq!(c.processes[p].wait(), Some(0), "exit 0 after SIGTERM");
        ends[p] = unix_ms();
    }
    c.lines.drain(Duration::from_millis(500));
    assert_one_leader_at_a_time(&c.lines.seen, &c.ids, &ends);
    assert!(
        handover < FAST_BOUND_MS,
        "a new leader {handover} ms after the leader's SIGTERM"
    );
    for (round, latency) in latencies.iter().enumerate() {
        assert!(
            *latency < FAST_BOUND_MS,
            "run {round}: a new leader after {latency} ms, bound {FAST_BOUND_MS} ms (the \
             session is {SESSION_MS} ms); all: {latencies:?}"
        );
    }
}

#[test]
fn sigstop_of_the_leader_waits_for_its_session() {
    let Some(bootstrap) = kafka_bootstrap("sigstop_of_the_leader_waits_for_its_session") else {
        return;
    };
    // Kafka's smallest session by default (group.min.session.timeout.ms), to keep the test short.
    let (session_ms, heartbeat_ms) = (6_000, 1_000);
    let group = format!(
        "kroupier-it-fast-election-stop-{}-{}",
        std::process::id(),
        unix_ms()
    );
    let mut c = Candidates::new(&bootstrap, &group, session_ms, heartbeat_ms);
    let alive: Vec<usize> = ["a", "b", "c"].iter().map(|id| c.add(id)).collect();
    let leader = c
        .lines
        .wait_settled(Duration::from_secs(30), "three candidates settle", &alive);
    std::thread::sleep(Duration::from_millis(300));
    let stopped_at = unix_ms();
    c.processes[leader].signal(Signal::Stop);
    let others: Vec<usize> = alive.iter().copied().filter(|p| *p != leader).collect();
    let next = c.lines.wait_settled(
        Duration::from_millis(until_a_leader_without_proof(session_ms, heartbeat_ms)),
        "a new leader after the frozen leader's session",
        &others,
    );
    let led_at = roles::led_at(&c.lines.seen, next, stopped_at).expect("the new leader's line");
    let waited = led_at - stopped_at;
    println!(
        "MEASURE election_fast_failover_stop_to_new_leader={waited}ms (session {session_ms} ms)"
    );
    // Kafka expires the session at most one heartbeat interval early (the last heartbeat was
    // sent up to one interval before the freeze); fast failover must not shorten it.
    assert!(
        waited + heartbeat_ms >= session_ms,
        "a frozen leader was replaced after {waited} ms, before its session of {session_ms} ms"
    );
    // Thawed, the old leader reports that it lost its generation before anything else: it
    // leads nothing while the new leader leads.
    let thawed_at = unix_ms();
    c.processes[leader].signal(Signal::Cont);
    c.lines.wait_until(
        Duration::from_secs(10),
        "the thawed leader reports lost",
        |l| {
            l.iter()
                .any(|x| x.process == leader && x.ts_ms >= stopped_at && x.event == "lost")
        },
    );
    let after_thaw: Vec<&Line> = c
        .lines
        .seen
        .iter()
        .filter(|l| l.process == leader && l.ts_ms >= stopped_at)
        .collect();
    assert_eq!(
        after_thaw[0].event, "lost",
        "first, it stops: {after_thaw:?}"
    );
    let mut ends = vec![u64::MAX; c.processes.len()];
    for p in alive.clone() {
        c.processes[p].signal(Signal::Term);
        assert_eq!(c.processes[p].wait(), Some(0), "exit 0 after SIGTERM");
        ends[p] = unix_ms();
    }
    c.lines.drain(Duration::from_millis(500));
    // The frozen leader acted on nothing from its freeze to its `lost` line: its reign ends at
    // the freeze, and no other reign began before its session could have expired.
    let mut lines: Vec<Line> = c.lines.seen.clone();
    if let Some(lost) = lines
        .iter_mut()
        .find(|l| l.process == leader && l.ts_ms >= thawed_at.min(stopped_at))
    {
        lost.ts_ms = stopped_at;
    }
    assert_one_leader_at_a_time(&lines, &c.ids, &ends);
}

/// Three candidates, each in a network namespace of its own (a host), all named `node`, their
/// endpoints on `listen(namespace address)`; SIGKILL of the leader: the time to a new leader.
fn kill_across_namespaces(
    test: &str,
    loopback: bool,
    session_ms: u64,
    heartbeat_ms: u64,
) -> Option<u64> {
    let bootstrap = kafka_bootstrap(test)?;
    let network = Network::for_test(test, 3, &bootstrap)?;
    let group = format!(
        "kroupier-it-fast-election-ns-{}-{}",
        std::process::id(),
        unix_ms()
    );
    let mut c = Candidates::new(&bootstrap, &group, session_ms, heartbeat_ms);
    let alive: Vec<usize> = network
        .namespaces()
        .iter()
        .zip(["a", "b", "c"])
        .map(|(ns, id)| {
            let listen = if loopback {
                "127.0.0.1:0".to_owned()
            } else {
                format!("{}:0", ns.address())
            };
            c.add_under(
                &ns.wrapper("node"),
                id,
                &["--fast-failover-listen".to_owned(), listen],
            )
        })
        .collect();
    let leader = c
        .lines
        .wait_settled(Duration::from_secs(30), "three candidates settle", &alive);
    std::thread::sleep(Duration::from_millis(300));
    let killed_at = unix_ms();
    c.processes[leader].signal(Signal::Kill);
    let _ = c.processes[leader].wait();
    let others: Vec<usize> = alive.iter().copied().filter(|p| *p != leader).collect();
    let next = c.lines.wait_settled(
        Duration::from_millis(until_a_leader_without_proof(session_ms, heartbeat_ms)),
        "a new leader after SIGKILL",
        &others,
    );
    let latency =
        roles::led_at(&c.lines.seen, next, killed_at).expect("the new leader's line") - killed_at;
    let mut ends = vec![u64::MAX; c.processes.len()];
    ends[leader] = killed_at;
    for p in others {
        c.processes[p].signal(Signal::Term);
        assert_eq!(c.processes[p].wait(), Some(0), "exit 0 after SIGTERM");
        ends[p] = unix_ms();
    }
    c.lines.drain(Duration::from_millis(500));
    assert_one_leader_at_a_time(&c.lines.seen, &c.ids, &ends);
    drop(c);
    drop(network);
    Some(latency)
}

#[test]
fn a_crash_across_namespaces_fails_over_in_round_trips() {
    let test = "a_crash_across_namespaces_fails_over_in_round_trips";
    let Some(latency) = kill_across_namespaces(test, false, SESSION_MS, HEARTBEAT_MS) else {
        return;
    };
    println!("MEASURE election_fast_failover_netns_kill_to_new_leader={latency}ms");
    assert!(
        latency < FAST_BOUND_MS,
        "a new leader after {latency} ms, bound {FAST_BOUND_MS} ms (session {SESSION_MS} ms)"
    );
}

#[test]
fn loopback_endpoints_in_separate_namespaces_sharing_a_host_name_prove_nothing() {
    let test = "loopback_endpoints_in_separate_namespaces_sharing_a_host_name_prove_nothing";
    let (session_ms, heartbeat_ms) = (6_000, 1_000);
    let Some(latency) = kill_across_namespaces(test, true, session_ms, heartbeat_ms) else {
        return;
    };
    println!("MEASURE election_fast_failover_netns_loopback_kill_to_new_leader={latency}ms");
    assert!(
        latency + heartbeat_ms >= session_ms,
        "a new leader after {latency} ms, before the session of {session_ms} ms: a follower \
         trusted another namespace's loopback"
    );
}

#[test]
fn a_live_leader_removed_by_a_third_party_leads_nothing_once_another_leads() {
    let Some(bootstrap) =
        kafka_bootstrap("a_live_leader_removed_by_a_third_party_leads_nothing_once_another_leads")
    else {
        return;
    };
    let session_ms = SESSION_MS;
    let group = format!(
        "kroupier-it-fast-election-removed-{}-{}",
        std::process::id(),
        unix_ms()
    );
    // The leader (`a`, the lowest id) heartbeats every 3 s, the others every 500 ms: after the
    // removal the others rejoin long before the leader learns it was removed.
    let mut c = Candidates::new(&bootstrap, &group, session_ms, 3_000);
    let mut alive = vec![c.add("a")];
    // `a` leads first, so it keeps leading (the choice is sticky) when the others join.
    c.lines.wait_until(Duration::from_secs(30), "a leads", |l| {
        l.iter().any(|x| x.event == "leader" && x.id == "a")
    });
    c.heartbeat_ms = 500;
    alive.extend([c.add("b"), c.add("c")]);
    let leader = c
        .lines
        .wait_settled(Duration::from_secs(30), "three candidates settle", &alive);
    assert_eq!(leader, 0, "a leads");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let leader_member = runtime.block_on(member_id_where(&bootstrap, &group, "a", |metadata| {
        ElectionMetadata::decode(metadata).is_ok_and(|meta| meta.id == "a")
    }));
    // The operator's removal: `a` lives, its links stay open, so nothing proves it gone.
    let removed_at = unix_ms();
    runtime.block_on(remove_member(&bootstrap, &group, &leader_member, None));
    c.lines.wait_until(
        Duration::from_millis(2 * session_ms + 10_000),
        "another leader, and the removed one lost",
        |l| {
            let others = l
                .iter()
                .any(|x| x.process != 0 && x.event == "leader" && x.ts_ms >= removed_at);
            let lost = l
                .iter()
                .any(|x| x.process == 0 && x.event == "lost" && x.ts_ms >= removed_at);
            others && lost
        },
    );
    let lost_at = c
        .lines
        .seen
        .iter()
        .find(|x| x.process == 0 && x.event == "lost" && x.ts_ms >= removed_at)
        .expect("a's lost line")
        .ts_ms;
    let led_at = c
        .lines
        .seen
        .iter()
        .find(|x| x.process != 0 && x.event == "leader" && x.ts_ms >= removed_at)
        .expect("the next leader's line")
        .ts_ms;
    println!(
        "MEASURE election_fast_failover_removed_leader_lost_ms={} next_leader_ms={} (session \
         {session_ms} ms)",
        lost_at - removed_at,
        led_at - removed_at
    );
    assert!(
        lost_at < led_at,
        "the removed leader stopped {} ms after the removal, the next one led after {} ms",
        lost_at - removed_at,
        led_at - removed_at
    );
    let mut ends = vec![u64::MAX; c.processes.len()];
    for p in alive {
        c.processes[p].signal(Signal::Term);
        assert_eq!(c.processes[p].wait(), Some(0), "exit 0 after SIGTERM");
        ends[p] = unix_ms();
    }
    c.lines.drain(Duration::from_millis(500));
    assert_one_leader_at_a_time(&c.lines.seen, &c.ids, &ends);
}
