//! Quickstart workers through Kafka broker faults, on a 3-node cluster of the test's own: the
//! group coordinator's broker restarted, and killed (its group moves to another broker). The
//! task journals witness that no task ever runs on two workers at once, and that afterwards every
//! task runs exactly once again.
//!
//! These tests kill brokers, so they run only with `KROUPIER_KAFKA_CLUSTER=1` (scripts/test's
//! cluster phase: `scripts/kafka start --brokers 3`), one at a time (`--test-threads=1`). Each
//! applies its fault twice (`KROUPIER_BROKER_FAULT_ROUNDS=N` for more, to measure). Prints `MEASURE name=ms` lines: how long the tasks ran nowhere.

use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::quickstart::*;
use kroupier_integration_tests::topics::{kafka_script, killable_cluster};

const TASKS: usize = 12;

/// How many times each fault is applied: 2, or `KROUPIER_BROKER_FAULT_ROUNDS` (for measuring).
fn rounds() -> usize {
    std::env::var("KROUPIER_BROKER_FAULT_ROUNDS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(2)
}
/// How long the group may take to run every task once again after a broker fault: a dead
/// broker is fenced after the controller's `broker.session.timeout.ms` (9 s), then the group's
/// offsets partition moves, then the members rejoin.
const RECOVERY: Duration = Duration::from_secs(60);

/// The node id of the broker that coordinates `group` now, if a broker says.
fn coordinator_node(bootstrap: &str, group: &str) -> Option<i32> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let cluster = Cluster::new(ClusterConfig::new(bootstrap)).expect("cluster config");
        let lookup = cluster.find_coordinator(group);
        match tokio::time::timeout(Duration::from_secs(5), lookup).await {
            Ok(Ok(node)) => Some(node.node_id),
            _ => None,
        }
    })
}

/// Waits until every task runs on exactly one of `workers` workers, beating after `since_ms`.
fn wait_recovered(dir: &TempDir, workers: usize, since_ms: u64) {
    poll(RECOVERY, || {
        let owners = running(&dir.0, TASKS, since_ms)?;
        (counts(&owners).len() == workers).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the tasks never ran once each on {workers} workers after the fault; last view: {:?}",
            running(&dir.0, TASKS, since_ms)
        )
    });
}

/// The longest time any task ran nowhere from just before `fault_ms` on.
fn longest_unowned(dir: &TempDir, fault_ms: u64) -> u64 {
    journals(&dir.0)
        .values()
        .map(|beats| kroupier_integration_tests::journal::longest_unowned(beats, fault_ms - 200))
        .max()
        .unwrap_or(0)
}

#[test]
fn workers_run_every_task_once_through_coordinator_broker_restarts() {
    let Some(bootstrap) = killable_cluster("broker faults: coordinator restart") else {
        return;
    };
    let dir = TempDir::new("broker-restart");
    let group = Group::new(&bootstrap, "broker-restart", TASKS, &dir.0);
    let _workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    wait_balanced(&dir.0, TASKS, 3);
    for round in 1..=rounds() {
        let node = coordinator_node(&bootstrap, &group.group)
            .expect("the group's coordinator")
            .to_string();
        let fault_ms = unix_ms();
        kafka_script(&["kill-node", &node]);
        std::thread::sleep(Duration::from_secs(1));
        kafka_script(&["start-node", &node]);
        wait_recovered(&dir, 3, unix_ms());
        let unowned = longest_unowned(&dir, fault_ms);
        println!(
            "MEASURE coordinator_restart_round{round}_longest_unowned_ms={unowned} (node {node})"
        );
        assert_no_overlap(&dir.0);
    }
}

#[test]
fn workers_run_every_task_once_after_the_coordinator_broker_dies() {
    let Some(bootstrap) = killable_cluster("broker faults: coordinator killed") else {
        return;
    };
    let dir = TempDir::new("broker-kill");
    let group = Group::new(&bootstrap, "broker-kill", TASKS, &dir.0);
    let _workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    wait_balanced(&dir.0, TASKS, 3);
    for round in 1..=rounds() {
        let node = coordinator_node(&bootstrap, &group.group).expect("the group's coordinator");
        let fault_ms = unix_ms();
        kafka_script(&["kill-node", &node.to_string()]);
        // The group moves to another broker; the workers find it and run every task again.
        poll(RECOVERY, || {
            coordinator_node(&bootstrap, &group.group)
                .filter(|now| *now != node)
                .map(|_| ())
        })
        .unwrap_or_else(|| panic!("round {round}: the group never left node {node}"));
        wait_recovered(&dir, 3, unix_ms());
        let unowned = longest_unowned(&dir, fault_ms);
        println!(
            "MEASURE coordinator_killed_round{round}_longest_unowned_ms={unowned} (node {node})"
        );
        assert_no_overlap(&dir.0);
        // Back to three brokers before the next round.
        kafka_script(&["start-node", &node.to_string()]);
    }
}
