//! Checkpoint administration through the status API, on the embedded coordinator (and on the
//! Kafka broker named by `KROUPIER_KAFKA_BOOTSTRAP` when set): a task saves checkpoints; a set
//! while it runs is refused with 409; paused, its checkpoint is set, and resumed it starts from
//! the value set; paused again and reset, it starts with no checkpoint.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use serde_json::json;

use super::test_support::{config, http, kafka_or_embedded, state, unique, until};
use crate::store::{DesiredState, TaskRecord, TaskStore};
use crate::{Task, TaskContext, TaskError, TaskState, WorkerBuilder};

/// Each start of each task: the checkpoint it read.
static STARTS: Mutex<BTreeMap<String, Vec<Option<u64>>>> = Mutex::new(BTreeMap::new());

/// Counts from its checkpoint, saving each step.
#[derive(serde::Deserialize)]
struct Counter {}

impl Task for Counter {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let start = ctx
            .last_checkpoint::<u64>()
            .await
            .map_err(TaskError::failed)?;
        STARTS
            .lock()
            .unwrap()
            .entry(ctx.task_id().to_owned())
            .or_default()
            .push(start);
        let mut n = start.unwrap_or(0);
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            ctx.check_lease()?;
            n += 1;
            ctx.save_checkpoint(&n).await.map_err(TaskError::failed)?;
        }
    }
}

fn starts(id: &str) -> Vec<Option<u64>> {
    STARTS.lock().unwrap().get(id).cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_tasks_checkpoint_is_set_and_reset_through_the_status_api() {
    let (bootstrap, _coordinator) = kafka_or_embedded().await;
    let group = format!("checkpoint-admin-{}", unique());
    let mut config = config(&bootstrap, &group, "w1");
    config.tasks.store.enabled = true;
    config.status.addr = Some("127.0.0.1:0".parse().unwrap());
    let worker = WorkerBuilder::new(config)
        .register::<Counter>("counter")
        .spawn()
        .await
        .expect("the worker starts");
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(&bootstrap)).unwrap());
    let store = TaskStore::open(cluster, crate::store::tasks_topic(&group).unwrap(), true)
        .await
        .unwrap();
    store
        .put("c", TaskRecord::new("counter", json!({})))
        .await
        .unwrap();
    let addr = worker.status_addr().unwrap();
    let saved = |min: u64| {
        let (code, body) = http(addr, "GET", "/tasks/c/checkpoint", None);
        code == 200 && body["state"].as_u64().is_some_and(|n| n >= min)
    };
    until("c saved 5 checkpoints", || saved(5)).await;
    assert_eq!(starts("c"), [None]);

    // Running: refused, saying why.
    let (code, body) = http(addr, "PUT", "/tasks/c/checkpoint", Some("1000"));
    assert_eq!(code, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not paused"),
        "{body}"
    );
    assert_eq!(body["status"], 409);
    let (code, _) = http(addr, "DELETE", "/tasks/c/checkpoint", None);
    assert_eq!(code, 409);

    // Paused: set, then resumed from the value set.
    store.set_state("c", DesiredState::Paused).await.unwrap();
    until("c paused", || {
        state(&worker, "c") == Some(TaskState::Paused)
    })
    .await;
    let (code, body) = http(addr, "PUT", "/tasks/c/checkpoint", Some("1000"));
    assert_eq!(code, 200, "{body}");
    let (_, body) = http(addr, "GET", "/tasks/c/checkpoint", None);
    assert_eq!(body["state"], 1000, "{body}");
    assert_eq!(body["member"], "operator", "{body}");
    store.set_state("c", DesiredState::Running).await.unwrap();
    until("c resumed", || starts("c").len() == 2).await;
    assert_eq!(starts("c")[1], Some(1000));
    until("c counts on from 1000", || saved(1003)).await;

    // Paused again: reset, and resumed with no checkpoint.
    store.set_state("c", DesiredState::Paused).await.unwrap();
    until("c paused again", || {
        state(&worker, "c") == Some(TaskState::Paused)
    })
    .await;
    let (code, body) = http(addr, "DELETE", "/tasks/c/checkpoint", None);
    assert_eq!(code, 200, "{body}");
    let (code, _) = http(addr, "GET", "/tasks/c/checkpoint", None);
    assert_eq!(code, 404);
    store.set_state("c", DesiredState::Running).await.unwrap();
    until("c resumed again", || starts("c").len() == 3).await;
    assert_eq!(starts("c")[2], None);
    until("c counts from 1 again", || saved(3)).await;
    let (_, body) = http(addr, "GET", "/tasks/c/checkpoint", None);
    assert!(body["state"].as_u64().unwrap() < 1000, "{body}");
    worker.shutdown().await.expect("clean shutdown");
}
