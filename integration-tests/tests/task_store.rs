//! The task store against a real broker: puts, pause, restart and delete land as records whose
//! offsets are the tasks' versions; another client's tail sees a put within a second; bad
//! requests write nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kroupier_coordinator::connection::Cluster;
use kroupier_coordinator::log::LogErrorKind;
use kroupier_integration_tests::topics::{self, unique_topic};
use kroupier_worker::store::{
    DesiredState, MAX_VALUE_BYTES, StoreErrorKind, TaskRecord, TaskStore,
};
use serde_json::json;

/// A cluster client, or `None` (after a skip line) when no broker is configured or the broker
/// does not serve Produce (a coordinator without the log APIs).
async fn cluster(test: &str) -> Option<Arc<Cluster>> {
    topics::log_broker(test).await.map(|(_, cluster)| cluster)
}

fn beat(n: u64) -> TaskRecord {
    TaskRecord::new("beat", json!({ "every_ms": n }))
}

#[tokio::test]
async fn stores_pauses_restarts_and_deletes_tasks() {
    let test = "stores_pauses_restarts_and_deletes_tasks";
    let Some(cluster) = cluster(test).await else {
        return;
    };
    let topic = unique_topic("crud");
    let store = TaskStore::open(cluster, topic.clone(), true)
        .await
        .expect("create the store's topic");
    assert_eq!(store.topic(), topic);
    assert!(store.read_all().await.unwrap().tasks.is_empty());

    let mut versions = Vec::new();
    for (id, n) in [("task-a", 1), ("task-b", 2), ("task-c", 3)] {
        versions.push(store.put(id, beat(n).with_weight(2)).await.expect("put"));
    }
    assert!(versions.windows(2).all(|v| v[0] < v[1]), "{versions:?}");

    let paused = store
        .set_state("task-b", DesiredState::Paused)
        .await
        .unwrap();
    // Already paused: nothing is written, the version stays.
    let again = store
        .set_state("task-b", DesiredState::Paused)
        .await
        .unwrap();
    assert_eq!(again, paused);
    let restarted = store.restart("task-c").await.unwrap();
    let deleted = store.delete("task-a").await.unwrap();
    assert!(versions[2] < paused && paused < restarted && restarted < deleted);

    let view = store.read_all().await.unwrap();
    assert_eq!(view.offset, deleted + 1, "read to the end");
    assert_eq!(view.tasks.keys().collect::<Vec<_>>(), ["task-b", "task-c"]);
    assert!(view.invalid().is_empty());
    let b = &view.tasks["task-b"];
    assert_eq!((b.version, b.record.state), (paused, DesiredState::Paused));
    assert_eq!(
        b.record,
        beat(2).with_weight(2).with_state(DesiredState::Paused)
    );
    let c = &view.tasks["task-c"];
    assert_eq!(
        (c.version, c.record.state, c.record.restart),
        (restarted, DesiredState::Running, 1)
    );
    assert_eq!(c.to_spec().config, json!({ "every_ms": 3 }));

    // Bad requests are refused and write nothing.
    for id in ["task-a", "never-stored"] {
        match store.delete(id).await {
            Err(e) if e.kind() == StoreErrorKind::NotFound => {
                let (missing, named) = (e.task_id().unwrap(), e.topic().unwrap());
                assert_eq!((missing, named), (id, topic.as_str()));
            }
            other => panic!("delete {id}: expected NotFound, got {other:?}"),
        }
    }
    assert!(matches!(
        store.restart("task-a").await,
        Err(e) if e.kind() == StoreErrorKind::NotFound
    ));
    let huge = TaskRecord::new("beat", json!("x".repeat(MAX_VALUE_BYTES)));
    match store.put("task-huge", huge).await {
        Err(e) if e.kind() == StoreErrorKind::TooLarge => {
            let (bytes, max) = e.too_large().unwrap();
            assert!(bytes > max && max == MAX_VALUE_BYTES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(matches!(
        store.put("", beat(1)).await,
        Err(e) if e.kind() == StoreErrorKind::InvalidId
    ));
    assert_eq!(store.read_all().await.unwrap(), view, "nothing written");
}

#[tokio::test]
async fn a_tail_sees_a_put_from_another_client_within_a_second() {
    let test = "a_tail_sees_a_put_from_another_client_within_a_second";
    let Some(reader_cluster) = cluster(test).await else {
        return;
    };
    let Some(writer_cluster) = cluster(test).await else {
        return;
    };
    let topic = unique_topic("tail");
    let reader = TaskStore::open(reader_cluster, topic.clone(), true)
        .await
        .expect("create the store's topic");
    let writer = TaskStore::open(writer_cluster, topic.clone(), false)
        .await
        .expect("open the existing topic");
    let first = writer.put("task-0", beat(1)).await.unwrap();
    let mut tail = reader.tail(reader.read_all().await.unwrap());
    assert_eq!(tail.view().offset, first + 1);

    // Let the tail settle into its long poll, then write from the other client.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let started = Instant::now();
    let version = writer.put("task-1", beat(2)).await.unwrap();
    let view = tokio::time::timeout(Duration::from_secs(1), tail.wait_for(version + 1))
        .await
        .unwrap_or_else(|_| panic!("the tail did not see offset {version} within 1 s"));
    eprintln!(
        "{test}: put seen by the tail {} ms after it was sent",
        started.elapsed().as_millis()
    );
    assert_eq!(view.tasks["task-1"].version, version);
    assert_eq!(view.tasks["task-0"].version, first);

    // A delete reaches the tail too, and the receiver saw a change.
    let mut receiver = tail.receiver().clone();
    receiver.mark_unchanged();
    let deleted = writer.delete("task-0").await.unwrap();
    let view = tokio::time::timeout(Duration::from_secs(1), tail.wait_for(deleted + 1))
        .await
        .expect("the tail sees the delete within 1 s");
    assert!(!view.tasks.contains_key("task-0"));
    assert!(receiver.has_changed().unwrap());
}

#[tokio::test]
async fn a_missing_store_is_not_created_unless_asked() {
    let test = "a_missing_store_is_not_created_unless_asked";
    let Some(cluster) = cluster(test).await else {
        return;
    };
    let topic = unique_topic("missing");
    match TaskStore::open(cluster, topic.clone(), false).await {
        Err(e) if e.log().is_some_and(|e| e.kind() == LogErrorKind::Missing) => {
            assert_eq!(e.log().unwrap().topic(), Some(topic.as_str()))
        }
        other => panic!("expected Missing, got {other:?}"),
    }
}

/// `KROUPIER_STORE_TASKS` tasks (10,000 by default) put in batches, then read whole by a new
/// client, as a worker joining the group reads the store. Prints both times and the bytes of
/// the keys and values read.
#[tokio::test]
async fn a_large_store_reads_back_whole() {
    let test = "a_large_store_reads_back_whole";
    let Some(writer_cluster) = cluster(test).await else {
        return;
    };
    let Some(reader_cluster) = cluster(test).await else {
        return;
    };
    let count: usize = std::env::var("KROUPIER_STORE_TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let topic = unique_topic("large");
    let writer = TaskStore::open(writer_cluster, topic.clone(), true)
        .await
        .unwrap();
    let tasks = (0..count).map(|i| {
        let config = json!({ "every_ms": 1000, "shard": i });
        (format!("task-{i}"), TaskRecord::new("beat", config))
    });
    let started = Instant::now();
    let versions = writer.put_all(tasks).await.expect("put every task");
    let put = started.elapsed();
    assert_eq!(versions.len(), count);

    let reader = TaskStore::open(reader_cluster, topic, false).await.unwrap();
    let started = Instant::now();
    let view = reader.read_all().await.expect("read the store");
    let read = started.elapsed();
    assert_eq!(view.tasks.len(), count);
    assert_eq!(view.offset, versions[count - 1] + 1);
    for i in [0, count / 2, count - 1] {
        let task = &view.tasks[&format!("task-{i}")];
        assert_eq!(task.version, versions[i]);
        assert_eq!(task.record.config["shard"], json!(i));
    }
    let bytes: usize = view
        .tasks
        .values()
        .map(|t| t.id.len() + serde_json::to_vec(&t.record).unwrap().len())
        .sum();
    eprintln!(
        "{test}: {count} tasks put in {} ms, read by a new client in {} ms ({bytes} bytes of keys and values)",
        put.as_millis(),
        read.as_millis()
    );
}
