//! The task store's client against the embedded coordinator: catching a view up, and a tail
//! that outlives a broker outage and ends when dropped.

use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_embedded::EmbeddedCoordinator;
use serde_json::json;
use tokio::time::timeout;

use super::*;

/// A client that gives up on an unreachable broker after half a second, so that the tail's
/// own retries are what bridges an outage.
fn cluster(bootstrap: &str) -> Arc<Cluster> {
    let mut config = ClusterConfig::new(bootstrap);
    config.coordinator_lookup_timeout = Duration::from_millis(500);
    Arc::new(Cluster::new(config).unwrap())
}

fn beat() -> TaskRecord {
    TaskRecord::new("beat", json!({ "every_ms": 100 }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catches_a_view_up_to_the_end() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let store = TaskStore::open(cluster(&coordinator.bootstrap()), "kroupier-tasks-t", true)
        .await
        .unwrap();
    let first = store.put("t-0", beat()).await.unwrap();
    let mut view = store.read_all().await.unwrap();
    assert_eq!(view.offset, first + 1);
    let second = store.put("t-1", beat().with_weight(4)).await.unwrap();
    store.catch_up(&mut view).await.unwrap();
    assert_eq!(view.offset, second + 1);
    assert_eq!(view.tasks["t-1"].record.weight, 4);
    assert_eq!(view, store.read_all().await.unwrap());
    // A restart of a paused task keeps it paused.
    store.set_state("t-0", DesiredState::Paused).await.unwrap();
    store.restart("t-0").await.unwrap();
    let record = &store.read_all().await.unwrap().tasks["t-0"].record;
    assert_eq!((record.state, record.restart), (DesiredState::Paused, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_outlives_a_broker_outage_and_ends_when_dropped() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bootstrap = coordinator.bootstrap();
    let reader = TaskStore::open(cluster(&bootstrap), "kroupier-tasks-t", true)
        .await
        .unwrap();
    let writer = TaskStore::open(cluster(&bootstrap), "kroupier-tasks-t", false)
        .await
        .unwrap();
    let mut tail = reader.tail(StoreView::new());
    let first = writer.put("t-0", beat()).await.unwrap();
    timeout(Duration::from_secs(2), tail.wait_for(first + 1))
        .await
        .expect("the tail sees the first put");

    // The broker goes away: the tail's reads fail, it backs off and tries again.
    coordinator.stop().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(tail.view().offset, first + 1);
    coordinator.restart().await.unwrap();
    let second = writer.put("t-1", beat()).await.unwrap();
    let view = timeout(Duration::from_secs(10), tail.wait_for(second + 1))
        .await
        .expect("the tail reads again once the broker is back");
    assert_eq!(view.tasks.keys().collect::<Vec<_>>(), ["t-0", "t-1"]);

    // Dropping the tail ends its task: a receiver kept past it sees the sender go.
    let mut receiver = tail.receiver.clone();
    drop(tail);
    timeout(Duration::from_secs(1), async {
        while receiver.changed().await.is_ok() {}
    })
    .await
    .expect("the tail's task ended with it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_many_tasks_in_batches_that_fit_a_record() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let store = TaskStore::open(cluster(&coordinator.bootstrap()), "kroupier-tasks-t", true)
        .await
        .unwrap();
    // 1.2 MB in all, over the broker's 1 MiB record limit: it goes in batches.
    let big = |i| {
        let config = json!("x".repeat(200 * 1024));
        (format!("big-{i}"), TaskRecord::new("beat", config))
    };
    let versions = store.put_all((0..6).map(big)).await.unwrap();
    assert_eq!(versions.len(), 6);
    assert!(versions.windows(2).all(|v| v[0] < v[1]), "{versions:?}");
    let view = store.read_all().await.unwrap();
    for (i, version) in versions.iter().enumerate() {
        assert_eq!(view.tasks[&format!("big-{i}")].version, *version);
    }

    // One bad task among good ones: nothing is written.
    let tasks = vec![
        ("ok".to_owned(), beat()),
        ("bad".to_owned(), beat().with_weight(0)),
    ];
    match store.put_all(tasks).await {
        Err(e) if e.kind() == StoreErrorKind::InvalidRecord => {
            assert_eq!(e.task_id(), Some("bad"))
        }
        other => panic!("expected InvalidRecord, got {other:?}"),
    }
    assert_eq!(store.read_all().await.unwrap(), view);
    assert_eq!(store.put_all(Vec::new()).await.unwrap(), Vec::<i64>::new());
}
