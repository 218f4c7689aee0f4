//! Checkpoints against a real broker (Kafka, or the embedded coordinator once it serves the log
//! APIs): a checkpoint written by an older owner never wins over a newer owner's, even when its
//! produce is held in the network and lands after the new owner's.
//!
//! The old owner's checkpoint client talks to the broker through a fault proxy that holds every
//! frame; the new owner writes directly while the old owner's produce is held; the held
//! produce then lands — after the new owner's, which the offsets prove — and a fresh reader,
//! and both writers, still answer with the new owner's state. The new owner's next checkpoint
//! deletes the old generation's key.

use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::membership::FencingToken;
use kroupier_integration_tests::fault::{FaultProxy, Scope};
use kroupier_integration_tests::topics::{client, log_broker, unique_topic};
use kroupier_worker::checkpoint::Checkpoints;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_checkpoint_landing_late_never_wins() {
    let test = "a_zombie_checkpoint_landing_late_never_wins";
    let Some((addr, _)) = log_broker(test).await else {
        return;
    };
    let topic = unique_topic("zombie-checkpoint");
    let proxy = FaultProxy::start(&addr).expect("the proxy listens");

    // Both owners open the topic while the network is healthy.
    let new_owner = Checkpoints::open(client(&addr), topic.clone())
        .await
        .expect("the new owner opens the checkpoint topic");
    let zombie = Arc::new(
        Checkpoints::open(client(&proxy.bootstrap()), topic.clone())
            .await
            .expect("the old owner opens it through the proxy"),
    );
    let old_token = FencingToken::new(3, "old-owner");
    let new_token = FencingToken::new(5, "new-owner");
    // The old owner's first checkpoint lands normally.
    zombie
        .save("task-1", &old_token, &10u64)
        .await
        .expect("first checkpoint");

    // Its next produce is held in the network...
    proxy.delay(Scope::All, Duration::from_millis(2_500));
    let held = {
        let zombie = zombie.clone();
        let old_token = old_token.clone();
        tokio::spawn(async move { zombie.save("task-1", &old_token, &11u64).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...while the task moves and its new owner resumes and writes.
    let resumed: Option<u64> = new_owner.newest("task-1").await.expect("read");
    assert_eq!(
        resumed,
        Some(10),
        "the new owner resumes from the last landed checkpoint"
    );
    let new_offset = new_owner
        .save("task-1", &new_token, &20u64)
        .await
        .expect("the new owner's checkpoint");
    let held_offset = held
        .await
        .expect("the held save ends")
        .expect("the held produce lands");
    proxy.heal();
    assert!(
        held_offset > new_offset,
        "the old owner's produce must land after the new owner's (held {held_offset}, new {new_offset})"
    );

    // Every reader answers with the new owner's state.
    let fresh = Checkpoints::open(client(&addr), topic.clone())
        .await
        .expect("a fresh reader");
    for (who, reader) in [
        ("fresh reader", &fresh),
        ("new owner", &new_owner),
        ("old owner", &*zombie),
    ] {
        let state: Option<u64> = reader.newest("task-1").await.expect("read");
        assert_eq!(state, Some(20), "{who} must see the new owner's checkpoint");
    }
    let view = fresh.view();
    let newest = view.newest("task-1").expect("a checkpoint");
    assert_eq!(newest.generation, 5);
    assert_eq!(view.stale_generations("task-1"), vec![3]);

    // The new owner's next checkpoint deletes the old generation's key.
    new_owner
        .save("task-1", &new_token, &21u64)
        .await
        .expect("next checkpoint");
    let state: Option<u64> = fresh.newest("task-1").await.expect("read");
    assert_eq!(state, Some(21));
    assert!(
        fresh.view().stale_generations("task-1").is_empty(),
        "the old generation's key is tombstoned"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_of_many_tasks_round_trip_and_bad_ones_are_refused() {
    let test = "checkpoints_of_many_tasks_round_trip_and_bad_ones_are_refused";
    let Some((addr, _)) = log_broker(test).await else {
        return;
    };
    let topic = unique_topic("many-checkpoints");
    let writer = Arc::new(
        Checkpoints::open(client(&addr), topic.clone())
            .await
            .expect("open"),
    );
    let token = FencingToken::new(1, "writer");
    // 500 tasks checkpoint at once: the appender batches them.
    let mut saves = Vec::new();
    for i in 0..500u64 {
        let writer = writer.clone();
        let token = token.clone();
        saves.push(tokio::spawn(async move {
            writer.save(&format!("task-{i}"), &token, &i).await
        }));
    }
    let mut offsets = Vec::new();
    for save in saves {
        offsets.push(save.await.expect("join").expect("saved"));
    }
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(
        offsets.len(),
        500,
        "every checkpoint landed at its own offset"
    );

    let reader = Checkpoints::open(client(&addr), topic)
        .await
        .expect("reader");
    assert_eq!(reader.view().len(), 500);
    for i in [0u64, 250, 499] {
        let state: Option<u64> = reader.newest(&format!("task-{i}")).await.expect("read");
        assert_eq!(state, Some(i));
    }
    let missing: Option<u64> = reader.newest("no-such-task").await.expect("read");
    assert_eq!(missing, None);
    // A state of another type is a clear error, not a panic.
    let wrong = reader.newest::<String>("task-1").await.unwrap_err();
    assert!(wrong.to_string().contains("task-1"), "{wrong}");
    // An oversized state is refused before anything is written.
    let big = "x".repeat(600 * 1024);
    let error = writer.save("task-big", &token, &big).await.unwrap_err();
    assert!(error.to_string().contains("limit"), "{error}");
}
