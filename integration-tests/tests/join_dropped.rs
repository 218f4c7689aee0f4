//! Kafka removes a member whose JoinGroup does not arrive within the rebalance timeout, even
//! while its heartbeats are answered (REBALANCE_IN_PROGRESS). End to end with `quickstart`
//! workers: `w3` reaches the broker through a [`FaultProxy`] that drops its JoinGroup requests
//! and nothing else; a new worker starts a rebalance; the broker completes it without `w3` at
//! the rebalance timeout and hands `w3`'s tasks to the others.
//!
//! The guarantee under test: `w3`'s lease ends a self-fencing margin before the broker can
//! remove it, so it stops its tasks *before* the generation formed without it is assigned —
//! not at its next heartbeat after the removal — and no task runs on two workers at once.
//! After the heal every task runs exactly once, `w3` included in the group again.
//!
//! Timeouts, every worker: session 3 s, heartbeat 500 ms, rebalance 6 s (the shortest the
//! quickstart accepts: its graceful stop, 5 s, plus the abort timeout must fit in the rebalance
//! timeout minus the self-fencing margin). Needs the example
//! built (`cargo build -p kroupier-examples`; `KROUPIER_BIN_DIR` points at another build).
//! Runs against Kafka or the embedded coordinator through `KROUPIER_KAFKA_BOOTSTRAP`. Prints
//! `MEASURE name=ms` lines.

use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kroupier_integration_tests::fault::{FaultProxy, Scope};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::quickstart::{
    Group, SESSION_MS, SLACK_MS, TempDir, Worker, assert_no_overlap, journals, moved_after,
    settled_generation, tasks_of, wait_balanced_since,
};

const TASKS: usize = 12;
const ROUNDS: usize = 2;
/// `--rebalance-timeout-ms` of every worker.
const REBALANCE_MS: u64 = 6_000;
/// The worker whose JoinGroup requests are dropped.
const VICTIM: &str = "w3";
/// How soon the victim's tasks must run elsewhere after the rebalance starts: the rebalance
/// timeout, the hold on a vanished member's tasks (a heartbeat plus a round trip), slack.
const MOVED_BOUND_MS: u64 = REBALANCE_MS + SESSION_MS + SLACK_MS;

/// The earliest `assigned` line, at or after `since_ms` and in a generation after `generation`,
/// printed by any worker but the victim: when the generation formed without it was handed out.
fn first_assignment_after(workers: &mut [Worker], generation: i32, since_ms: u64) -> u64 {
    workers
        .iter_mut()
        .filter(|w| w.id != VICTIM)
        .filter_map(|w| {
            w.drain();
            w.seen
                .iter()
                .filter(|v| v["event"] == "assigned")
                .filter(|v| v["generation"].as_i64() > Some(i64::from(generation)))
                .filter_map(|v| v["ts_ms"].as_u64())
                .filter(|ts| *ts >= since_ms)
                .min()
        })
        .min()
        .expect("the others were assigned a new generation")
}

#[test]
fn a_member_whose_join_never_arrives_stops_its_tasks_before_the_broker_removes_it() {
    let Some(bootstrap) = kafka_bootstrap("join dropped: removal at the rebalance timeout") else {
        return;
    };
    let dir = TempDir::new("join-dropped");
    let proxy = FaultProxy::start(&bootstrap).expect("the fault proxy listens");
    let mut direct = Group::new(&bootstrap, "join-dropped", TASKS, &dir.0);
    direct.extra = vec!["--rebalance-timeout-ms".into(), REBALANCE_MS.to_string()];
    let proxied = Group {
        bootstrap: proxy.bootstrap(),
        ..direct.clone()
    };
    let mut workers = vec![
        direct.start("w1"),
        direct.start("w2"),
        proxied.start(VICTIM),
    ];
    let mut since = 0;
    for round in 1..=ROUNDS {
        let members = workers.len();
        let owners = wait_balanced_since(&dir.0, TASKS, members, since);
        let generation = settled_generation(&dir.0);
        let held = tasks_of(&owners, VICTIM);
        assert!(!held.is_empty(), "{VICTIM} runs tasks: {owners:?}");

        // w3's JoinGroup never reaches the broker from now on; its heartbeats still do.
        proxy.drop_requests(ApiKey::JoinGroup);
        let dropped_before = proxy.stats().requests_dropped;
        let rebalance_ms = unix_ms();
        workers.push(direct.start(&format!("w{}", 3 + round)));

        let moved = moved_after(&dir.0, &held, VICTIM, rebalance_ms, MOVED_BOUND_MS);
        wait_balanced_since(&dir.0, TASKS, members, rebalance_ms + moved);
        let assigned_ms = first_assignment_after(&mut workers, generation, rebalance_ms);
        let dropped = proxy.stats().requests_dropped - dropped_before;
        assert!(dropped >= 1, "round {round}: {VICTIM} sent no JoinGroup");
        assert_no_overlap(&dir.0);
        let all = journals(&dir.0);
        let victim_last = held
            .iter()
            .flat_map(|task| all[task].iter())
            .filter(|b| b.worker == VICTIM && b.unix_ms >= rebalance_ms)
            .map(|b| b.unix_ms)
            .max()
            .unwrap_or(rebalance_ms);
        let unowned = held
            .iter()
            .map(|task| journal::longest_unowned(&all[task], rebalance_ms))
            .max()
            .unwrap_or(0);
        println!(
            "MEASURE join_dropped_round{round}_victim_stopped_ms={} \
             join_dropped_round{round}_others_assigned_ms={} \
             join_dropped_round{round}_running_elsewhere_ms={moved} \
             join_dropped_round{round}_longest_unowned_ms={unowned} (from the rebalance's \
             start; rebalance timeout {REBALANCE_MS} ms, {dropped} JoinGroup dropped)",
            victim_last - rebalance_ms,
            assigned_ms - rebalance_ms,
        );
        assert!(
            victim_last < assigned_ms,
            "round {round}: {VICTIM} ran its tasks until {} ms after the rebalance started, \
             after the broker had removed it and assigned the next generation ({} ms)",
            victim_last - rebalance_ms,
            assigned_ms - rebalance_ms
        );
        assert!(
            moved <= MOVED_BOUND_MS,
            "round {round}: {VICTIM}'s tasks ran elsewhere after {moved} ms"
        );

        // Heal. The JoinGroup the proxy swallowed is never answered: close w3's connections
        // once so that it does not wait out its request timeout, then forward everything.
        proxy.cut(Scope::All);
        std::thread::sleep(Duration::from_millis(200));
        let healed_ms = unix_ms();
        proxy.heal();
        wait_balanced_since(&dir.0, TASKS, members + 1, healed_ms);
        since = unix_ms();
        println!(
            "MEASURE join_dropped_round{round}_heal_to_balanced_ms={}",
            since - healed_ms
        );
        assert_no_overlap(&dir.0);
    }
}
