//! A generator on two workers (real time), on the embedded coordinator and on the Kafka broker
//! named by `KROUPIER_KAFKA_BOOTSTRAP`: children start and stop within a second of their
//! declaration; an older owner's writes change nothing; after the generator's worker dies
//! abruptly the generator runs again on the other worker and reconciles without rewriting a
//! child or restarting one that kept running; pausing and deleting the generator pause and
//! delete its children.
//!
//! Each worker runs on its own tokio runtime, so that one can be killed: shutting its runtime
//! down drops every task of it at once, with no LeaveGroup and no orderly stop (as a SIGKILL,
//! but in-process).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_coordinator::log::LogRecord;
use serde_json::json;

use super::test_support::{config, embedded, kafka_or_skip, unique, until_within};
use crate::store::lineage::RemovedValue;
use crate::store::{DesiredState, GeneratedBy, StoreView, TaskRecord, TaskStore};
use crate::{Task, TaskContext, TaskError, TaskSpec, TaskState, WorkerBuilder, WorkerHandle};

/// The files each generator's source holds, by source name.
static SOURCES: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());
/// When each child was last declared (added or removed), by child id.
static DECLARED: Mutex<BTreeMap<String, Instant>> = Mutex::new(BTreeMap::new());
/// Every `set_children` call: (source, generation granted, records written).
static WRITES: Mutex<Vec<(String, i32, usize)>> = Mutex::new(Vec::new());
/// Per child id: how many runs started, and how many are running now.
static LEAVES: Mutex<BTreeMap<String, (u32, u32)>> = Mutex::new(BTreeMap::new());

/// A generator: one `leaf` child per file of its source, declared each time the list changes.
#[derive(serde::Deserialize)]
struct Dir {
    source: String,
}

impl Task for Dir {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut last: Option<Vec<String>> = None;
        loop {
            let files = SOURCES
                .lock()
                .unwrap()
                .get(&self.source)
                .cloned()
                .unwrap_or_default();
            if last.as_ref() != Some(&files) {
                let before: BTreeSet<&String> = last.iter().flatten().collect();
                let now: BTreeSet<&String> = files.iter().collect();
                let at = Instant::now();
                {
                    let mut declared = DECLARED.lock().unwrap();
                    for changed in before.symmetric_difference(&now) {
                        declared.insert((*changed).clone(), at);
                    }
                }
                let children = files
                    .iter()
                    .map(|f| TaskSpec::new(f.as_str(), "leaf", json!({ "file": f })));
                let written = ctx
                    .set_children(children)
                    .await
                    .map_err(TaskError::failed)?;
                let generation = ctx.granted().generation_id;
                WRITES
                    .lock()
                    .unwrap()
                    .push((self.source.clone(), generation, written));
                last = Some(files);
            }
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    }
}

/// A child: counts its runs, and whether it runs.
#[derive(serde::Deserialize)]
struct Leaf {}

struct Running(String);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(leaf) = LEAVES.lock().unwrap().get_mut(&self.0) {
            leaf.1 -= 1;
        }
    }
}

impl Task for Leaf {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let id = ctx.task_id().to_owned();
        {
            let mut leaves = LEAVES.lock().unwrap();
            let leaf = leaves.entry(id.clone()).or_default();
            leaf.0 += 1;
            leaf.1 += 1;
        }
        let _running = Running(id);
        ctx.cancelled().await;
        Ok(())
    }
}

fn leaf(id: &str) -> (u32, u32) {
    LEAVES.lock().unwrap().get(id).copied().unwrap_or_default()
}

/// One worker on a runtime of its own.
struct Worker {
    handle: WorkerHandle,
    runtime: tokio::runtime::Runtime,
}

async fn worker(bootstrap: &str, group: &str, id: &str) -> Worker {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut config = config(bootstrap, group, id);
    config.tasks.store.enabled = true;
    // The status API, as in a deployment: peers then hear of a rebalance (and of a dead peer)
    // at once, not at their next heartbeat (see `group::failover`).
    config.status.addr = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let builder = WorkerBuilder::new(config)
        .register::<Dir>("dir")
        .register::<Leaf>("leaf");
    let handle = runtime
        .spawn(builder.spawn())
        .await
        .unwrap()
        .expect("the worker starts");
    Worker { handle, runtime }
}

/// Waits (up to 30 s, asking every 5 ms) until `done` holds; returns how long it took.
async fn until(what: &str, done: impl FnMut() -> bool) -> Duration {
    let (within, every) = (Duration::from_secs(30), Duration::from_millis(5));
    until_within(what, within, every, done).await
}

fn set_source(source: &str, files: &[&str]) {
    let files = files.iter().map(|f| format!("{source}.{f}")).collect();
    SOURCES.lock().unwrap().insert(source.to_owned(), files);
}

/// How long after its declaration `child` satisfies `done`.
async fn after_declared(what: &str, child: &str, done: impl FnMut() -> bool) -> Duration {
    until(what, done).await;
    let declared = DECLARED.lock().unwrap()[child];
    declared.elapsed()
}

/// The generator's children in `view`, with their versions.
fn children(view: &StoreView, generator: &str) -> BTreeMap<String, i64> {
    view.children_of(generator)
        .map(|t| (t.id.clone(), t.version))
        .collect()
}

fn running_on(worker: &WorkerHandle, id: &str) -> bool {
    worker
        .tasks()
        .iter()
        .any(|t| t.task_id == id && t.state == TaskState::Running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generator_on_the_embedded_coordinator() {
    let coordinator = embedded().await;
    generator(&coordinator.bootstrap(), "gen-embedded").await;
}

/// The same on the Kafka broker named by `KROUPIER_KAFKA_BOOTSTRAP`; skipped with a printed
/// line without one, unless `CI` says a broker is required.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generator_on_kafka() {
    let Some(bootstrap) = kafka_or_skip("a_generator_on_kafka") else {
        return;
    };
    generator(&bootstrap, &format!("gen-kafka-{}", unique())).await;
}

async fn generator(bootstrap: &str, group: &str) {
    let src = group;
    let id = |f: &str| format!("{src}.{f}");
    let gen_id = format!("{src}.gen");
    let a = worker(bootstrap, group, "a").await;
    let b = worker(bootstrap, group, "b").await;
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(bootstrap)).unwrap());
    let store = TaskStore::open(cluster, format!("kroupier-tasks-{group}"), false)
        .await
        .expect("the workers created the topic");

    // The generator and its first two children.
    set_source(src, &["f1", "f2"]);
    store
        .put(&gen_id, TaskRecord::new("dir", json!({ "source": src })))
        .await
        .unwrap();
    for f in ["f1", "f2"] {
        let took = after_declared("a first child runs", &id(f), || leaf(&id(f)).1 == 1).await;
        eprintln!("{src}: {f} declared -> running: {took:?}");
    }

    // A file appears, another goes.
    set_source(src, &["f2", "f3"]);
    // Both watched at once: each time is from the declaration to the first poll that sees it.
    let (mut added, mut removed) = (None, None);
    until("the added child runs and the removed one stops", || {
        let Some(declared) = DECLARED.lock().unwrap().get(&id("f3")).copied() else {
            return false;
        };
        if added.is_none() && leaf(&id("f3")).1 == 1 {
            added = Some(declared.elapsed());
        }
        if removed.is_none() && leaf(&id("f1")).1 == 0 {
            removed = Some(declared.elapsed());
        }
        added.is_some() && removed.is_some()
    })
    .await;
    let (added, removed) = (added.unwrap(), removed.unwrap());
    eprintln!("{src}: added child declared -> running: {added:?}");
    eprintln!("{src}: removed child declared -> stopped everywhere: {removed:?}");
    assert!(
        added < Duration::from_secs(1),
        "added child ran after {added:?}"
    );
    assert!(
        removed < Duration::from_secs(1),
        "removed child stopped after {removed:?}"
    );
    let view = store.read_all().await.unwrap();
    assert_eq!(
        children(&view, &gen_id).keys().cloned().collect::<Vec<_>>(),
        [id("f2"), id("f3")]
    );
    let claim = view
        .lineage
        .newest_claim(&gen_id)
        .expect("the generator claimed");

    // An older owner's late writes (simulated through the store with an older token): a
    // changed child, a new one and a removal. The view and the children do not change.
    let runs_before = (leaf(&id("f2")), leaf(&id("f3")));
    let older = GeneratedBy {
        generator: gen_id.clone(),
        generation: claim - 1,
    };
    let mut changed = TaskRecord::new("leaf", json!({ "file": "other" }));
    changed.generated_by = Some(older.clone());
    let mut zombie = TaskRecord::new("leaf", json!({ "file": "zombie" }));
    zombie.generated_by = Some(older.clone());
    let zombie_id = id("zombie");
    let records = vec![
        LogRecord {
            key: Bytes::from(id("f2")),
            value: Some(changed.encode(&id("f2")).unwrap()),
        },
        LogRecord {
            key: Bytes::from(zombie_id.clone()),
            value: Some(zombie.encode(&zombie_id).unwrap()),
        },
        LogRecord {
            key: Bytes::from(id("f3")),
            value: Some(RemovedValue::encode(&gen_id, older.generation)),
        },
    ];
    let written = store.append_batched(records).await.unwrap();
    let after = store.read_all().await.unwrap();
    assert!(after.offset > *written.last().unwrap());
    for child in [id("f2"), id("f3")] {
        assert_eq!(
            after.tasks[&child].record, view.tasks[&child].record,
            "{child}"
        );
    }
    assert!(!after.tasks.contains_key(&zombie_id));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!((leaf(&id("f2")), leaf(&id("f3"))), runs_before);
    assert_eq!(leaf(&zombie_id), (0, 0), "the zombie's child never ran");
    // The generator's owner wrote every key the ignored writes were latest on.
    let repaired = store.read_all().await.unwrap();
    assert!(
        repaired.lineage.fenced.is_empty(),
        "{:?}",
        repaired.lineage.fenced
    );
    assert!(repaired.lineage.removed.contains_key(&zombie_id));

    // The generator's worker dies abruptly: the generator runs again on the other worker,
    // claims, and writes no child.
    let (dead, alive) = if a.handle.owned().contains_key(&gen_id) {
        (a, b)
    } else {
        (b, a)
    };
    let kept: Vec<String> = [id("f2"), id("f3")]
        .into_iter()
        .filter(|c| running_on(&alive.handle, c))
        .collect();
    let kept_runs: Vec<(u32, u32)> = kept.iter().map(|c| leaf(c)).collect();
    let versions = children(&store.read_all().await.unwrap(), &gen_id);
    let writes_before = WRITES.lock().unwrap().len();
    let killed = Instant::now();
    dead.runtime.shutdown_background();
    drop(dead.handle);
    until("the generator runs on the other worker", || {
        running_on(&alive.handle, &gen_id)
    })
    .await;
    until("the moved generator declared", || {
        WRITES.lock().unwrap().len() > writes_before
    })
    .await;
    eprintln!(
        "{src}: killed -> running elsewhere and declared: {:?}",
        killed.elapsed()
    );
    for c in [id("f2"), id("f3")] {
        until("every child runs on the survivor", || {
            running_on(&alive.handle, &c)
        })
        .await;
    }
    let last = WRITES.lock().unwrap().last().cloned().unwrap();
    assert!(
        last.1 > claim,
        "the generator runs in a newer generation: {last:?}"
    );
    assert_eq!(last.2, 0, "the moved generator rewrote no child");
    let view = store.read_all().await.unwrap();
    assert_eq!(
        children(&view, &gen_id),
        versions,
        "no child record rewritten"
    );
    assert_eq!(view.lineage.newest_claim(&gen_id), Some(last.1));
    let runs_now: Vec<(u32, u32)> = kept.iter().map(|c| leaf(c)).collect();
    assert_eq!(
        runs_now, kept_runs,
        "children on the survivor kept running: {kept:?}"
    );
    for c in [id("f2"), id("f3")] {
        assert_eq!(leaf(&c).1, 1, "{c} runs once");
    }

    // Pausing the generator pauses its children; deleting it deletes them.
    store
        .set_state(&gen_id, DesiredState::Paused)
        .await
        .unwrap();
    until("the children pause", || {
        [id("f2"), id("f3")].iter().all(|c| leaf(c).1 == 0)
    })
    .await;
    store
        .set_state(&gen_id, DesiredState::Running)
        .await
        .unwrap();
    until("the children resume", || {
        [id("f2"), id("f3")].iter().all(|c| leaf(c).1 == 1)
    })
    .await;
    store.delete(&gen_id).await.unwrap();
    until("the children stop", || {
        [id("f2"), id("f3")].iter().all(|c| leaf(c).1 == 0)
    })
    .await;
    let view = store.read_all().await.unwrap();
    assert!(view.tasks.is_empty(), "{:?}", view.tasks.keys());
    assert!(view.lineage.claims.is_empty() && view.lineage.removed.is_empty());
    alive.handle.shutdown().await.expect("clean shutdown");
    alive.runtime.shutdown_background();
}
