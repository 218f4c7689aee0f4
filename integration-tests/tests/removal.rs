//! Ways Kafka removes a member while it still runs, end to end with `quickstart` workers: the
//! task journals must never show a task on two workers at once.
//!
//! - A third party's LeaveGroup naming a busy worker (`kafka-consumer-groups --delete-members`,
//!   Admin `removeMembersFromConsumerGroup`): the survivors get its tasks at once, the removed
//!   worker learns only at its next heartbeat.
//!
//! - A static takeover: a second process with the same `group.instance.id` gets the first
//!   one's assignment in the same generation, while the first is frozen for less than its
//!   session and then resumes.
//!
//! Every test uses its own group and journal directory. Runs against Kafka or the embedded
//! coordinator through `KROUPIER_KAFKA_BOOTSTRAP`. Prints `MEASURE name=ms` lines.

use std::time::Duration;

use kroupier_integration_tests::admin::{member_id_of, remove_member};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_worker_removed_by_a_third_party_never_overlaps_its_successors() {
    let Some(bootstrap) = kafka_bootstrap("removal: third-party LeaveGroup") else {
        return;
    };
    let dir = TempDir::new("removed");
    let group = Group::new(&bootstrap, "removed", 12, &dir.0);
    // The victim heartbeats every 2 s: it learns of its removal up to 2 s late, while the
    // others (every 500 ms) rebalance within one of theirs.
    let mut slow = group.clone();
    slow.session_ms = 6_000;
    slow.heartbeat_ms = 2_000;
    let victim = "w1";
    let _workers: Vec<Worker> = tokio::task::block_in_place(|| {
        vec![slow.start(victim), group.start("w2"), group.start("w3")]
    });
    let mut owners = tokio::task::block_in_place(|| wait_balanced(&dir.0, 12, 3));
    for round in 0..2 {
        let held = tasks_of(&owners, victim);
        let before = tokio::task::block_in_place(|| settled_generation(&dir.0));
        let member_id = member_id_of(&bootstrap, &group.group, victim).await;
        let removed_ms = unix_ms();
        remove_member(&bootstrap, &group.group, &member_id, None).await;
        // The removed worker stops them, their next owners (possibly the removed worker
        // itself, rejoined as a new member) start them, and the group is balanced again.
        owners = tokio::task::block_in_place(|| {
            poll(Duration::from_secs(30), || {
                (settled_generation(&dir.0) > before).then_some(())
            })
            .expect("the group moves to a new generation");
            wait_balanced_since(&dir.0, 12, 3, removed_ms)
        });
        tokio::task::block_in_place(|| assert_no_overlap(&dir.0));
        let all = journals(&dir.0);
        let unowned = held
            .iter()
            .map(|task| journal::longest_unowned(&all[task], removed_ms))
            .max()
            .unwrap_or(0);
        println!("MEASURE removal_round{round}_longest_unowned={unowned}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::task::block_in_place(|| assert_no_overlap(&dir.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_takeover_waits_for_the_frozen_old_process_lease() {
    let Some(bootstrap) = kafka_bootstrap("removal: static takeover") else {
        return;
    };
    let dir = TempDir::new("takeover");
    let mut group = Group::new(&bootstrap, "takeover", 12, &dir.0);
    group.session_ms = 6_000;
    group.heartbeat_ms = 1_000;
    let statics = |worker: &str, instance: &str| {
        let mut g = group.clone();
        g.extra = vec!["--instance-id".into(), instance.into()];
        tokio::task::block_in_place(|| g.start(worker))
    };
    let mut old = statics("w1-old", "pod-1");
    let _w2 = statics("w2", "pod-2");
    let owners = tokio::task::block_in_place(|| wait_balanced(&dir.0, 12, 2));
    let held = tasks_of(&owners, "w1-old");

    for round in 0..2 {
        // The old process freezes (a pod cut off, a long GC pause) for less than its session;
        // meanwhile its replacement starts with the same instance id and takes its assignment.
        old.process.signal(Signal::Stop);
        let frozen_ms = unix_ms();
        let new_id = format!("w1-new{round}");
        let new = statics(&new_id, "pod-1");
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        // The old process resumes: it may beat until it learns it was fenced, but the new one
        // must not have started yet.
        old.process.signal(Signal::Cont);
        let exit = tokio::task::block_in_place(|| old.process.wait());
        assert_ne!(
            exit,
            Some(0),
            "the replaced process stops on FENCED_INSTANCE_ID"
        );
        // Its replacement runs them, never at the same time as the old process.
        let started = tokio::task::block_in_place(|| {
            let started = moved_after(&dir.0, &held, &old.id, frozen_ms, 10_000);
            wait_balanced_since(&dir.0, 12, 2, frozen_ms + started);
            assert_no_overlap(&dir.0);
            started
        });
        println!("MEASURE static_takeover_round{round}_new_started_after={started}");
        old = new;
    }
}
