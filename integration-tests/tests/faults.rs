//! Link faults on one worker of three: the worker `w3` reaches Kafka through a
//! [`FaultProxy`], `w1` and `w2` connect directly and stay healthy. The task journals (read by
//! kroupier's one journal checker) are the witness that no task ever runs on two workers at
//! once, and that every task runs exactly once after the fault heals.
//!
//! Scenarios, each in its own group, each fault applied twice (two rounds):
//! - a blackhole on all of `w3`'s traffic: its tasks run elsewhere within session + 2
//!   heartbeats + 1 s, `w3` stops them before its session ends, and after heal it rejoins (once
//!   the request the blackhole swallowed has timed out: up to kroupier's 30 s request timeout);
//! - `w3` cut from the group coordinator only (it can still reach the cluster): the same;
//! - `w3`'s Heartbeat responses held longer than the heartbeat interval but well within the
//!   session: nothing moves, no task stops, no rebalance.
//!
//! And the proxy itself against the broker: every FindCoordinator and Metadata version both
//! the broker and kroupier speak names proxy listeners only.
//!
//! Timeouts: session 3 s, heartbeat 500 ms. Needs the example built (`cargo build -p
//! kroupier-examples`). Run against Kafka or the embedded coordinator through
//! `KROUPIER_KAFKA_BOOTSTRAP`. Prints `MEASURE name=ms` lines.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire;
use kroupier_integration_tests::fault::{FaultProxy, Role, Scope};
use kroupier_integration_tests::journal::{self, Journals, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::quickstart::{
    self, Group, HEARTBEAT_MS, RECENT_MS, SESSION_MS, SLACK_MS, TempDir, Worker, counts, poll,
    tasks_of,
};
use kroupier_integration_tests::wire::Connection;
use serde_json::Value;

/// How soon a faulted worker's tasks must run elsewhere: its session expires, then (nothing
/// proves its process ended: it still runs, cut off) their new owners hold them for its
/// session, since the leader cannot tell this from a third party's removal.
const FAILOVER_BOUND_MS: u64 = 2 * SESSION_MS + 2 * HEARTBEAT_MS + SLACK_MS;
/// kroupier's request timeout (the default, as Kafka's `request.timeout.ms`).
const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// How soon after a cut heals every task must run exactly once on the three workers again: the
/// faulted worker's reconnect backoff, a rejoin, and the cooperative follow-up round that
/// hands tasks over.
const CUT_HEAL_BOUND_MS: u64 = 5_000;
/// The same after a blackhole heals. A request the blackhole swallowed is never answered: the
/// worker waits for its request timeout (its FindCoordinator, sent when it fenced itself, is
/// the one it waits on), then rejoins as after a cut.
const BLACKHOLE_HEAL_BOUND_MS: u64 = REQUEST_TIMEOUT_MS + CUT_HEAL_BOUND_MS;
const TASKS: usize = 12;
const ROUNDS: usize = 2;
/// The worker behind the proxy.
const VICTIM: &str = "w3";

/// Three quickstart workers of one group, `w3` behind a fault proxy.
struct Scenario {
    dir: TempDir,
    proxy: FaultProxy,
    workers: Vec<Worker>,
}

impl Scenario {
    fn start(bootstrap: &str, name: &str) -> Self {
        let dir = TempDir::new(&format!("fault-{name}"));
        let proxy = FaultProxy::start(bootstrap).expect("the fault proxy listens");
        let direct = Group::new(bootstrap, &format!("faults-{name}"), TASKS, &dir.0);
        let proxied = Group {
            bootstrap: proxy.bootstrap(),
            ..direct.clone()
        };
        let workers = vec![
            direct.start("w1"),
            direct.start("w2"),
            proxied.start(VICTIM),
        ];
        Scenario {
            dir,
            proxy,
            workers,
        }
    }

    fn journals(&self) -> Journals {
        quickstart::journals(&self.dir.0)
    }

    /// Waits until every task runs on exactly one of `workers` workers, balanced, with beats
    /// after `since_ms`; returns the owners and when that was first seen.
    fn wait_balanced(
        &self,
        workers: usize,
        since_ms: u64,
        within: Duration,
        what: &str,
    ) -> (BTreeMap<String, String>, u64) {
        let tasks: Vec<String> = (0..TASKS).map(|i| format!("task-{i}")).collect();
        let mut last = None;
        poll(within, || {
            let from = since_ms.max(unix_ms().saturating_sub(RECENT_MS));
            let owners = journal::exactly_once_since(&self.journals(), &tasks, from);
            let owners = match owners {
                Ok(owners) => owners,
                Err(problems) => {
                    last = Some(format!("{problems:?}"));
                    return None;
                }
            };
            let counts = counts(&owners);
            let (min, max) = (counts.values().min()?, counts.values().max()?);
            last = Some(format!("{counts:?}"));
            (counts.len() == workers && max - min <= 1).then(|| (owners, unix_ms()))
        })
        .unwrap_or_else(|| {
            panic!(
                "{what}: {TASKS} tasks did not run exactly once, balanced over {workers} \
                 workers, within {} ms; last view: {last:?}",
                within.as_millis()
            )
        })
    }

    /// Asserts that no task ran on two workers at once, anywhere in the journals.
    fn assert_no_overlap(&self) {
        quickstart::assert_no_overlap(&self.dir.0);
    }
}

/// The `lost` and `assigned` events `worker` printed at or after `since_ms`.
fn changes_since(worker: &mut Worker, since_ms: u64) -> Vec<Value> {
    worker.drain();
    worker
        .seen
        .iter()
        .filter(|v| v["ts_ms"].as_u64() >= Some(since_ms))
        .filter(|v| v["event"] == "lost" || v["event"] == "assigned")
        .cloned()
        .collect()
}

/// One round of a fault that takes `w3` out of the group: apply it, check that `w3`'s tasks run
/// elsewhere within the bound and that `w3` stopped them first, heal, check that every task runs
/// exactly once on the three workers again.
fn takeover_round(
    scenario: &Scenario,
    name: &str,
    round: usize,
    fault: impl Fn(&FaultProxy),
    heal_bound_ms: u64,
) {
    let (owners, _) = scenario.wait_balanced(
        3,
        0,
        Duration::from_secs(30),
        &format!("{name} round {round}: start"),
    );
    let held = tasks_of(&owners, VICTIM);
    assert!(!held.is_empty(), "{VICTIM} holds tasks: {owners:?}");
    let stats = scenario.proxy.stats();
    assert!(
        stats.coordinator_connections >= 1 && stats.rewritten >= 1,
        "{VICTIM}'s coordinator traffic goes through the proxy: {stats:?}"
    );

    let fault_ms = unix_ms();
    fault(&scenario.proxy);
    // Each held task beats on another worker; the latest first beat is the failover time.
    let moved = poll(Duration::from_millis(FAILOVER_BOUND_MS + 10_000), || {
        let journals = scenario.journals();
        held.iter().try_fold(0, |latest: u64, task| {
            let first = journals
                .get(task)?
                .iter()
                .filter(|b| b.worker != VICTIM && b.unix_ms > fault_ms)
                .map(|b| b.unix_ms)
                .min()?;
            Some(latest.max(first - fault_ms))
        })
    })
    .unwrap_or_else(|| panic!("{name} round {round}: {held:?} never ran off {VICTIM}"));
    scenario.wait_balanced(
        2,
        fault_ms,
        Duration::from_secs(10),
        &format!("{name} round {round}: {VICTIM} out"),
    );
    let journals = scenario.journals();
    let victim_stop = held
        .iter()
        .flat_map(|task| journals[task].iter())
        .filter(|b| b.worker == VICTIM)
        .map(|b| b.unix_ms.saturating_sub(fault_ms))
        .max()
        .unwrap_or(0);
    println!(
        "MEASURE {name}_round{round}_running_elsewhere_ms={moved} {name}_round{round}_victim_last_beat_ms={victim_stop} (bound {FAILOVER_BOUND_MS} ms)"
    );
    assert!(
        moved <= FAILOVER_BOUND_MS,
        "{name} round {round}: {VICTIM}'s tasks ran elsewhere after {moved} ms; bound: 2 × session \
         {SESSION_MS} + 2 × heartbeat {HEARTBEAT_MS} + {SLACK_MS} = {FAILOVER_BOUND_MS} ms"
    );
    assert!(
        victim_stop < SESSION_MS,
        "{name} round {round}: {VICTIM} beat {victim_stop} ms after the fault; it must stop \
         within its session ({SESSION_MS} ms)"
    );
    scenario.assert_no_overlap();

    let healed_ms = unix_ms();
    scenario.proxy.heal();
    let (_, balanced_ms) = scenario.wait_balanced(
        3,
        healed_ms,
        Duration::from_millis(heal_bound_ms),
        &format!("{name} round {round}: after heal (bound {heal_bound_ms} ms from heal)"),
    );
    println!(
        "MEASURE {name}_round{round}_heal_to_balanced_ms={} (bound {heal_bound_ms} ms)",
        balanced_ms - healed_ms
    );
    scenario.assert_no_overlap();
}

#[test]
fn a_blackholed_workers_tasks_run_elsewhere_without_overlap_and_come_back_once() {
    let Some(bootstrap) = kafka_bootstrap("faults: blackhole one worker") else {
        return;
    };
    let scenario = Scenario::start(&bootstrap, "blackhole");
    for round in 1..=ROUNDS {
        takeover_round(
            &scenario,
            "blackhole",
            round,
            |proxy| {
                proxy.blackhole(Scope::All);
            },
            BLACKHOLE_HEAL_BOUND_MS,
        );
    }
}

#[test]
fn a_worker_cut_from_the_coordinator_only_hands_its_tasks_over_without_overlap() {
    let Some(bootstrap) = kafka_bootstrap("faults: cut one worker from the coordinator") else {
        return;
    };
    let scenario = Scenario::start(&bootstrap, "coordinator-cut");
    for round in 1..=ROUNDS {
        takeover_round(
            &scenario,
            "coordinator_cut",
            round,
            |proxy| {
                proxy.cut(Scope::Coordinator);
            },
            CUT_HEAL_BOUND_MS,
        );
    }
}

/// Heartbeat responses held this long: twice the heartbeat interval, under half the session.
const HEARTBEAT_DELAY_MS: u64 = 2 * HEARTBEAT_MS;
/// How long the heartbeats stay slow in each round: two sessions.
const SLOW_FOR_MS: u64 = 2 * SESSION_MS;

#[test]
fn heartbeats_delayed_beyond_the_interval_but_within_the_session_move_nothing() {
    let Some(bootstrap) = kafka_bootstrap("faults: slow heartbeats") else {
        return;
    };
    let mut scenario = Scenario::start(&bootstrap, "slow-heartbeat");
    for round in 1..=ROUNDS {
        let (before, _) = scenario.wait_balanced(
            3,
            0,
            Duration::from_secs(30),
            &format!("slow heartbeats round {round}: start"),
        );
        // Settled: the follow-up round after the last join is done, one generation beats.
        let generation = quickstart::settled_generation(&scenario.dir.0);

        let slow_ms = unix_ms();
        scenario
            .proxy
            .delay_responses(ApiKey::Heartbeat, Duration::from_millis(HEARTBEAT_DELAY_MS));
        let held_before = scenario.proxy.stats().delayed;
        std::thread::sleep(Duration::from_millis(SLOW_FOR_MS));
        let held = scenario.proxy.stats().delayed - held_before;
        scenario.proxy.heal();
        // At least one Heartbeat answer held per delay and interval, all along.
        assert!(
            held >= SLOW_FOR_MS / (HEARTBEAT_DELAY_MS + HEARTBEAT_MS),
            "round {round}: only {held} Heartbeat responses to {VICTIM} were held in {SLOW_FOR_MS} ms"
        );
        std::thread::sleep(Duration::from_millis(1_000));

        let journals = scenario.journals();
        let tasks: Vec<&String> = before.keys().collect();
        let after = journal::exactly_once_since(&journals, &tasks, slow_ms).unwrap_or_else(|e| {
            panic!(
                "round {round}: with {VICTIM}'s heartbeats {HEARTBEAT_DELAY_MS} ms late \
                 (interval {HEARTBEAT_MS} ms, session {SESSION_MS} ms) tasks moved or stopped: \
                 {e:?}"
            )
        });
        assert_eq!(after, before, "round {round}: a task moved");
        let mut longest = 0;
        for (task, beats) in &journals {
            let gap = journal::longest_unowned(beats, slow_ms);
            longest = longest.max(gap);
            assert!(
                gap < RECENT_MS,
                "round {round}: {task} stopped for {gap} ms while {VICTIM}'s heartbeats were \
                 {HEARTBEAT_DELAY_MS} ms late; bound {RECENT_MS} ms (beats every 100 ms)"
            );
            let other: Vec<_> = beats
                .iter()
                .filter(|b| b.unix_ms >= slow_ms && b.generation != generation)
                .take(3)
                .collect();
            assert!(
                other.is_empty(),
                "round {round}: a rebalance left generation {generation}: {task} {other:?}"
            );
        }
        for worker in &mut scenario.workers {
            let changes = changes_since(worker, slow_ms);
            assert!(
                changes.is_empty(),
                "round {round}: {} saw membership changes with heartbeats {HEARTBEAT_DELAY_MS} \
                 ms late (interval {HEARTBEAT_MS} ms, session {SESSION_MS} ms): {changes:?}",
                worker.id
            );
        }
        println!(
            "MEASURE slow_heartbeat_round{round}_longest_unowned_ms={longest} (heartbeat \
             responses {HEARTBEAT_DELAY_MS} ms late for {SLOW_FOR_MS} ms, {held} held; bound \
             {RECENT_MS} ms)"
        );
        scenario.assert_no_overlap();
    }
}

/// FindCoordinator for group `g` at `version` through `conn`, retried while the broker has no
/// coordinator yet: the `host:port` it names.
async fn coordinator_at(conn: &mut Connection, version: i16) -> String {
    let group = StrBytes::from_static_str("faults-rewrite");
    let request = if version < 4 {
        FindCoordinatorRequest::default().with_key(group)
    } else {
        FindCoordinatorRequest::default().with_coordinator_keys(vec![group])
    };
    for _ in 0..50 {
        let response = conn
            .send(&request, version)
            .await
            .unwrap_or_else(|e| panic!("FindCoordinator v{version}: {e}"));
        let (code, host, port) = match response.coordinators.first() {
            Some(c) if version >= 4 => (c.error_code, c.host.to_string(), c.port),
            _ => (
                response.error_code,
                response.host.to_string(),
                response.port,
            ),
        };
        match code {
            0 => return format!("{host}:{port}"),
            // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE: not ready yet.
            14 | 15 => tokio::time::sleep(Duration::from_millis(200)).await,
            other => panic!("FindCoordinator v{version}: error {other}"),
        }
    }
    panic!("FindCoordinator v{version}: no coordinator within 10 s");
}

#[tokio::test]
async fn every_find_coordinator_and_metadata_version_the_broker_answers_names_the_proxy() {
    let Some(bootstrap) = kafka_bootstrap("faults: address rewrite") else {
        return;
    };
    let proxy = FaultProxy::start(&bootstrap).expect("the fault proxy listens");
    let mut conn = Connection::connect(&proxy.bootstrap())
        .await
        .expect("connect to the proxy");
    let offered = conn
        .send(&ApiVersionsRequest::default(), 0)
        .await
        .expect("ApiVersions");
    let versions = |api: ApiKey| {
        let ours = wire::versions(api).expect("kroupier speaks it");
        let theirs = offered
            .api_keys
            .iter()
            .find(|k| k.api_key == api as i16)
            .expect("the broker serves it");
        theirs.min_version.max(*ours.start())..=theirs.max_version.min(*ours.end())
    };
    let listeners = |role: Role| -> Vec<String> {
        proxy
            .listeners()
            .into_iter()
            .filter(|(r, _, _)| *r == role)
            .map(|(_, _, addr)| addr.to_string())
            .collect()
    };

    let find_coordinator = versions(ApiKey::FindCoordinator);
    let metadata = versions(ApiKey::Metadata);
    println!("rewrite checked for FindCoordinator v{find_coordinator:?}, Metadata v{metadata:?}");
    assert!(!find_coordinator.is_empty(), "{find_coordinator:?}");
    for version in find_coordinator {
        let named = coordinator_at(&mut conn, version).await;
        assert_eq!(
            listeners(Role::Coordinator),
            [named],
            "FindCoordinator v{version} names the proxy's coordinator listener"
        );
    }
    assert!(!metadata.is_empty(), "{metadata:?}");
    for version in metadata {
        let response = conn
            .send(&MetadataRequest::default(), version)
            .await
            .unwrap_or_else(|e| panic!("Metadata v{version}: {e}"));
        assert!(!response.brokers.is_empty(), "Metadata v{version}");
        let brokers = listeners(Role::Broker);
        for broker in &response.brokers {
            let named = format!("{}:{}", broker.host.as_str(), broker.port);
            assert!(
                brokers.contains(&named),
                "Metadata v{version} names {named}, not a proxy listener ({brokers:?})"
            );
        }
    }
    assert!(proxy.stats().rewritten >= 2, "{:?}", proxy.stats());
}
