//! Fault scenarios with `quickstart` worker processes, each in its own group, each fault applied
//! twice (two rounds in one group). The task journals, read by kroupier's one journal checker,
//! are the witness that no task ever runs on two workers at once and that every task runs
//! exactly once when the group has settled again.
//!
//! - **Kill the leader**: SIGKILL the worker that leads the generation (the `assigned` line
//!   with `"leader": true`); its tasks run elsewhere within session + 2 heartbeats + 1 s and a
//!   survivor leads the next generation.
//! - **Kill during a rebalance**: a fourth worker joins; as soon as DescribeGroups shows the
//!   group preparing the rebalance, SIGKILL one of the three others. The rebalance completes
//!   without it, and its tasks run elsewhere within the same bound.
//! - **Rolling restart of dynamic workers**: SIGTERM and restart each worker in turn; no task is
//!   down for 2 s or more, at any point of the restart.
//! - **Static takeover while the old process is cut off**: `w1` (`--instance-id pod-1`) reaches
//!   the broker through a [`FaultProxy`]; the proxy cuts it, a new process with the same
//!   instance id starts directly, and the cut heals 2 s later. The new process gets the old
//!   one's assignment in the same generation at once, but starts it only one session after it
//!   joined; the old one stops at its lease deadline or at its first heartbeat after the heal
//!   (FENCED_INSTANCE_ID), whichever comes first.
//! - **Static takeover during a rebalance while the old process is cut off**: as above, but a
//!   third worker joins first, and the new process joins while the group prepares that
//!   rebalance: its assignment is computed for its own member id, and some of the old
//!   process's tasks go to the third worker. Nothing of them starts anywhere before the old
//!   process has stopped.
//!
//! Timeouts: session 3 s, heartbeat 500 ms. Needs the example built (`cargo build -p
//! kroupier-examples`). Runs against Kafka or the embedded coordinator through
//! `KROUPIER_KAFKA_BOOTSTRAP`. Prints `MEASURE name=ms` lines (`scripts/scenarios-measure`
//! collects them).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{DescribeGroupsRequest, GroupId};
use kafka_protocol::protocol::StrBytes;
use kroupier_integration_tests::fault::{FaultProxy, Scope};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::{
    Group, HEARTBEAT_MS, SESSION_MS, SLACK_MS, TempDir, Worker, assert_no_overlap, journals,
    moved_after, poll, settled_generation, tasks_of, wait_balanced_since,
};
use kroupier_integration_tests::wire::Connection;

const TASKS: usize = 12;
const ROUNDS: usize = 2;
/// How soon a crashed worker's tasks must run elsewhere.
const FAILOVER_BOUND_MS: u64 = SESSION_MS + 2 * HEARTBEAT_MS + SLACK_MS;
/// How long a task may run nowhere during a rolling restart of dynamic workers.
const ROLLING_DOWN_BOUND_MS: u64 = 2_000;
/// How long the static takeover's old process stays cut off.
const CUT_FOR_MS: u64 = 2_000;

/// The longest time any of `tasks` ran nowhere around and after `fault_ms`, counted from its
/// last beat before the fault (tasks beat every 100 ms).
fn longest_unowned(dir: &TempDir, tasks: &[String], fault_ms: u64) -> u64 {
    let from_ms = fault_ms.saturating_sub(200);
    let all = journals(&dir.0);
    tasks
        .iter()
        .filter_map(|task| all.get(task))
        .map(|beats| journal::longest_unowned(beats, from_ms))
        .max()
        .unwrap_or(0)
}

/// The index of the worker that leads a generation at or after `generation`, from the
/// `assigned` lines the workers print (the latest generation with a leader wins).
fn leader_index(workers: &mut [Worker], generation: i32) -> usize {
    poll(Duration::from_secs(10), || {
        let mut best: Option<(i64, usize)> = None;
        for (i, worker) in workers.iter_mut().enumerate() {
            worker.drain();
            let led = worker
                .seen
                .iter()
                .filter(|v| v["event"] == "assigned" && v["leader"] == true)
                .filter_map(|v| v["generation"].as_i64())
                .filter(|g| *g >= i64::from(generation))
                .max();
            if let Some(g) = led
                && best.is_none_or(|(b, _)| g > b)
            {
                best = Some((g, i));
            }
        }
        best.map(|(_, i)| i)
    })
    .unwrap_or_else(|| panic!("no worker says it leads generation {generation} or later"))
}

/// The group's state as DescribeGroups tells it (`Stable`, `PreparingRebalance`, ...).
fn group_state(bootstrap: &str, group: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut connection = Connection::connect(bootstrap).await.expect("connect");
        let request = DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_string(group.to_owned()))]);
        let response = connection.send(&request, 5).await.expect("DescribeGroups");
        let described = response.groups.into_iter().next().expect("one group");
        described.group_state.to_string()
    })
}

/// The group's workers: 12 tasks, the tests' timeouts, `count` dynamic workers `w1` ...
fn start_group(bootstrap: &str, name: &str, count: usize) -> (TempDir, Group, Vec<Worker>) {
    let dir = TempDir::new(name);
    let group = Group::new(bootstrap, name, TASKS, &dir.0);
    let workers = (1..=count).map(|n| group.start(&format!("w{n}"))).collect();
    (dir, group, workers)
}

#[test]
fn killing_the_leader_moves_its_tasks_within_a_session_and_a_survivor_leads() {
    let Some(bootstrap) = kafka_bootstrap("scenarios: kill the leader") else {
        return;
    };
    let (dir, group, mut workers) = start_group(&bootstrap, "kill-leader", 3);
    let mut since = 0;
    for round in 1..=ROUNDS {
        let owners = wait_balanced_since(&dir.0, TASKS, 3, since);
        let generation = settled_generation(&dir.0);
        let leader = leader_index(&mut workers, generation);
        let victim = workers.remove(leader);
        let held = tasks_of(&owners, &victim.id);
        assert!(!held.is_empty(), "the leader {} runs tasks", victim.id);

        let killed_ms = unix_ms();
        victim.process.signal(Signal::Kill);
        let moved = moved_after(&dir.0, &held, &victim.id, killed_ms, FAILOVER_BOUND_MS);
        wait_balanced_since(&dir.0, TASKS, 2, killed_ms);
        let unowned = longest_unowned(&dir, &held, killed_ms);
        println!(
            "MEASURE kill_leader_round{round}_running_elsewhere_ms={moved} \
             kill_leader_round{round}_longest_unowned_ms={unowned} (leader {}, bound \
             {FAILOVER_BOUND_MS} ms)",
            victim.id
        );
        assert!(
            moved <= FAILOVER_BOUND_MS,
            "round {round}: the leader's tasks ran elsewhere after {moved} ms, bound \
             {FAILOVER_BOUND_MS} ms"
        );
        let next = leader_index(&mut workers, generation + 1);
        assert_ne!(workers[next].id, victim.id, "a survivor leads");
        assert_no_overlap(&dir.0);

        workers.push(group.start(&format!("w{}", 3 + round)));
        since = unix_ms();
    }
    wait_balanced_since(&dir.0, TASKS, 3, since);
    assert_no_overlap(&dir.0);
}

#[test]
fn a_worker_killed_during_a_rebalance_loses_no_task_and_overlaps_none() {
    let Some(bootstrap) = kafka_bootstrap("scenarios: kill during a rebalance") else {
        return;
    };
    let (dir, group, mut workers) = start_group(&bootstrap, "kill-rebalance", 3);
    let mut since = 0;
    for round in 1..=ROUNDS {
        let owners = wait_balanced_since(&dir.0, TASKS, 3, since);
        // The victim: the longest-running worker, whichever role it has.
        let victim = workers.remove(0);
        let held = tasks_of(&owners, &victim.id);
        let newcomer = format!("w{}", 3 + round);
        workers.push(group.start(&newcomer));
        // The newcomer's JoinGroup starts a rebalance; kill as soon as the group shows it.
        // With fast failover the members rejoin at once, so the rebalance lasts only round
        // trips: look without pausing.
        let deadline = Instant::now() + Duration::from_secs(10);
        let state = loop {
            let state = group_state(&bootstrap, &group.group);
            if state != "Stable" {
                break state;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: {newcomer} started no rebalance"
            );
        };
        let killed_ms = unix_ms();
        victim.process.signal(Signal::Kill);

        let moved = moved_after(&dir.0, &held, &victim.id, killed_ms, FAILOVER_BOUND_MS);
        wait_balanced_since(&dir.0, TASKS, 3, killed_ms);
        let unowned = longest_unowned(&dir, &held, killed_ms);
        println!(
            "MEASURE kill_in_rebalance_round{round}_running_elsewhere_ms={moved} \
             kill_in_rebalance_round{round}_longest_unowned_ms={unowned} (killed {} in state \
             {state}, bound {FAILOVER_BOUND_MS} ms)",
            victim.id
        );
        assert!(
            moved <= FAILOVER_BOUND_MS,
            "round {round}: {}'s tasks ran elsewhere after {moved} ms, bound \
             {FAILOVER_BOUND_MS} ms",
            victim.id
        );
        assert_no_overlap(&dir.0);
        since = unix_ms();
    }
}

#[test]
fn a_rolling_restart_of_dynamic_workers_keeps_every_task_down_under_two_seconds() {
    let Some(bootstrap) = kafka_bootstrap("scenarios: dynamic rolling restart") else {
        return;
    };
    let (dir, group, mut workers) = start_group(&bootstrap, "rolling", 3);
    let mut since = 0;
    for round in 1..=ROUNDS {
        wait_balanced_since(&dir.0, TASKS, 3, since);
        let rolling_ms = unix_ms();
        for worker in &mut workers {
            let owners = wait_balanced_since(&dir.0, TASKS, 3, since);
            let id = worker.id.clone();
            let held = tasks_of(&owners, &id);
            let stopped_ms = unix_ms();
            worker.process.signal(Signal::Term);
            assert_eq!(worker.process.wait(), Some(0), "{id} exit code");
            let moved = moved_after(&dir.0, &held, &id, stopped_ms, ROLLING_DOWN_BOUND_MS);
            *worker = group.start(&id);
            let restarted_ms = unix_ms();
            wait_balanced_since(&dir.0, TASKS, 3, restarted_ms);
            since = unix_ms();
            let down = longest_unowned(&dir, &held, stopped_ms);
            println!(
                "MEASURE rolling_round{round}_running_elsewhere_ms={moved} \
                 rolling_round{round}_tasks_down_ms={down} ({id} restarted, bound \
                 {ROLLING_DOWN_BOUND_MS} ms)"
            );
            assert!(
                down < ROLLING_DOWN_BOUND_MS,
                "round {round}: {id}'s tasks were down {down} ms when it restarted"
            );
            assert_no_overlap(&dir.0);
        }
        let tasks: Vec<String> = (0..TASKS).map(|i| format!("task-{i}")).collect();
        let down = longest_unowned(&dir, &tasks, rolling_ms);
        println!("MEASURE rolling_round{round}_longest_unowned_ms={down}");
        assert!(
            down < ROLLING_DOWN_BOUND_MS,
            "round {round}: a task was down {down} ms during the rolling restart"
        );
    }
}

/// A static worker with `--instance-id instance`, reaching the broker at `bootstrap`.
fn start_static(group: &Group, bootstrap: &str, id: &str, instance: &str) -> Worker {
    let mut g = group.clone();
    g.bootstrap = bootstrap.to_owned();
    g.extra = vec!["--instance-id".into(), instance.into()];
    g.start(id)
}

#[test]
fn a_static_takeover_while_the_old_process_is_cut_off_never_overlaps() {
    let Some(bootstrap) = kafka_bootstrap("scenarios: static takeover, old process cut off") else {
        return;
    };
    let dir = TempDir::new("takeover-cut");
    let group = Group::new(&bootstrap, "takeover-cut", TASKS, &dir.0);
    let proxies: Vec<FaultProxy> = (0..ROUNDS)
        .map(|_| FaultProxy::start(&bootstrap).expect("the fault proxy listens"))
        .collect();
    // Round r cuts off the process of pod-r, which reaches the broker through proxy r.
    let mut workers: BTreeMap<usize, Worker> = (1..=ROUNDS)
        .map(|n| {
            let id = format!("w{n}");
            let pod = format!("pod-{n}");
            (
                n,
                start_static(&group, &proxies[n - 1].bootstrap(), &id, &pod),
            )
        })
        .collect();
    let mut since = 0;
    for round in 1..=ROUNDS {
        let owners = wait_balanced_since(&dir.0, TASKS, ROUNDS, since);
        let mut old = workers.remove(&round).expect("the old process");
        let held = tasks_of(&owners, &old.id);
        let proxy = &proxies[round - 1];

        let cut_ms = unix_ms();
        let cut_at = Instant::now();
        proxy.cut(Scope::All);
        let new_id = format!("w{round}-new");
        let new = start_static(&group, &bootstrap, &new_id, &format!("pod-{round}"));
        std::thread::sleep((cut_at + Duration::from_millis(CUT_FOR_MS)) - Instant::now());
        proxy.heal();

        // The old process learns it was replaced (FENCED_INSTANCE_ID) and exits.
        old.wait_line(Duration::from_secs(15), |v| v["event"] == "stopped")
            .unwrap_or_else(|| panic!("round {round}: the replaced {} never stopped", old.id));
        assert_ne!(
            old.process.wait(),
            Some(0),
            "round {round}: the replaced process exits on FENCED_INSTANCE_ID"
        );
        let started = moved_after(&dir.0, &held, &old.id, cut_ms, 10_000);
        wait_balanced_since(&dir.0, TASKS, ROUNDS, cut_ms + started);
        let all = journals(&dir.0);
        let old_last = held
            .iter()
            .flat_map(|task| all[task].iter())
            .filter(|b| b.worker == old.id)
            .map(|b| b.unix_ms.saturating_sub(cut_ms))
            .max()
            .unwrap_or(0);
        let unowned = longest_unowned(&dir, &held, cut_ms);
        println!(
            "MEASURE static_cut_takeover_round{round}_new_started_ms={started} \
             static_cut_takeover_round{round}_old_last_beat_ms={old_last} \
             static_cut_takeover_round{round}_longest_unowned_ms={unowned} (cut {CUT_FOR_MS} \
             ms, session {SESSION_MS} ms)"
        );
        assert_no_overlap(&dir.0);
        assert!(
            started >= SESSION_MS,
            "round {round}: {new_id} started {started} ms after the cut, before one session \
             ({SESSION_MS} ms) from its join"
        );
        assert!(
            started <= SESSION_MS + CUT_FOR_MS + SLACK_MS,
            "round {round}: {new_id} waited {started} ms to start"
        );
        workers.insert(round, new);
        since = unix_ms();
    }
    wait_balanced_since(&dir.0, TASKS, ROUNDS, since);
    assert_no_overlap(&dir.0);
}

#[test]
fn a_static_takeover_during_a_rebalance_while_the_old_process_is_cut_off_never_overlaps() {
    let Some(bootstrap) = kafka_bootstrap("scenarios: static takeover during a rebalance") else {
        return;
    };
    let name = "takeover-rebalance";
    let dir = TempDir::new(name);
    let group = Group::new(&bootstrap, name, TASKS, &dir.0);
    let proxy = FaultProxy::start(&bootstrap).expect("the fault proxy listens");
    let _w1 = start_static(&group, &bootstrap, "w1", "pod-1");
    let mut old = start_static(&group, &proxy.bootstrap(), "w2", "pod-2");
    let owners = wait_balanced_since(&dir.0, TASKS, 2, 0);
    let held = tasks_of(&owners, "w2");

    let cut_ms = unix_ms();
    let cut_at = Instant::now();
    proxy.cut(Scope::All);
    // A third worker joins: the group prepares a rebalance, which waits for pod-2's JoinGroup.
    let _w3 = group.start("w3");
    let preparing = poll(Duration::from_secs(10), || {
        (group_state(&bootstrap, &group.group) == "PreparingRebalance").then_some(())
    });
    assert!(
        preparing.is_some(),
        "the group never prepared a rebalance for w3"
    );
    // The new process of pod-2 joins that rebalance, replacing the cut-off one.
    let _new = start_static(&group, &bootstrap, "w2-new", "pod-2");
    std::thread::sleep(
        (cut_at + Duration::from_millis(CUT_FOR_MS)).saturating_duration_since(Instant::now()),
    );
    proxy.heal();

    old.wait_line(Duration::from_secs(15), |v| v["event"] == "stopped")
        .expect("the replaced w2 stops");
    let started = moved_after(&dir.0, &held, "w2", cut_ms, 10_000);
    wait_balanced_since(&dir.0, TASKS, 3, cut_ms + started);
    let all = journals(&dir.0);
    let old_last = held
        .iter()
        .flat_map(|task| all[task].iter())
        .filter(|b| b.worker == "w2")
        .map(|b| b.unix_ms.saturating_sub(cut_ms))
        .max()
        .unwrap_or(0);
    let takers: std::collections::BTreeSet<&str> = held
        .iter()
        .flat_map(|task| all[task].iter())
        .filter(|b| b.worker != "w2" && b.unix_ms > cut_ms)
        .map(|b| b.worker.as_str())
        .collect();
    println!(
        "MEASURE static_takeover_in_rebalance_started_ms={started} \
         static_takeover_in_rebalance_old_last_beat_ms={old_last} (cut {CUT_FOR_MS} ms, \
         session {SESSION_MS} ms; the old tasks went to {takers:?})"
    );
    assert_no_overlap(&dir.0);
    assert!(
        started > old_last,
        "an old task started {started} ms after the cut, before the old process's last beat \
         ({old_last} ms)"
    );
}
