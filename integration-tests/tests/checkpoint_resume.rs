//! A task resumes from its checkpoint after its worker is SIGKILLed: two `quickstart` workers
//! with the task store on run `beat` tasks that save their beat count as a checkpoint after
//! every beat; the owner of one is killed, and the task's new owner must go on counting from
//! where the killed owner's last checkpoint left it (a task starting afresh counts from 1).
//! Runs on Kafka and on the embedded coordinator.

use std::time::{Duration, Instant};

use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::{Group, TempDir, Worker, poll};
use kroupier_worker::store::{TaskRecord, TaskStore, tasks_topic};
use serde_json::{Value, json};
use std::sync::Arc;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};

const TASKS: usize = 4;

/// The beat count a worker's `/status` shows for `id` (its progress note, `N beats`), if it
/// holds the task and it has beaten.
fn beats(worker: &Worker, id: &str) -> Option<u64> {
    let status: Value = serde_json::from_str(&worker.get("/status")).ok()?;
    let task = status["tasks"]
        .as_array()?
        .iter()
        .find(|t| t["task_id"] == id && t["state"] == "RUNNING")?
        .clone();
    task["progress"]
        .as_str()?
        .strip_suffix(" beats")?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_task_resumes_from_its_checkpoint_after_a_sigkill() {
    let Some(bootstrap) =
        kafka_bootstrap("a_moved_task_resumes_from_its_checkpoint_after_a_sigkill")
    else {
        return;
    };
    let dir = TempDir::new("checkpoint-resume");
    let properties = dir.0.join("worker.properties");
    std::fs::write(&properties, "tasks.store.enabled=true\n").expect("write the properties");
    let mut group = Group::new(&bootstrap, "checkpoint-resume", 0, &dir.0);
    group.extra = vec!["--command-config".into(), properties.display().to_string()];

    // The tasks, in the store: each checkpoints its count after every beat.
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(&bootstrap)).expect("cluster"));
    let store = TaskStore::open(cluster, tasks_topic(&group.group).expect("topic"), true)
        .await
        .expect("the task store");
    for i in 0..TASKS {
        store
            .put(
                &format!("c-{i}"),
                TaskRecord::new("beat", json!({"every_ms": 50, "checkpoint_every": 1})),
            )
            .await
            .expect("put");
    }
    let mut workers: Vec<Worker> = ["w1", "w2"].iter().map(|id| group.start(id)).collect();
    tokio::task::block_in_place(|| {
        // Both hold tasks, and c-0 has counted a while.
        let owner = poll(Duration::from_secs(30), || {
            let owner = workers
                .iter()
                .position(|w| beats(w, "c-0").is_some_and(|n| n >= 20))?;
            let others =
                (0..TASKS).any(|i| beats(&workers[1 - owner], &format!("c-{i}")).is_some());
            others.then_some(owner)
        })
        .expect("c-0 counts to 20 on one worker while the other holds tasks too");
        let before = beats(&workers[owner], "c-0").expect("c-0's count");
        let killed = Instant::now();
        workers[owner].process.signal(Signal::Kill);
        let survivor = &workers[1 - owner];
        let first = poll(Duration::from_secs(30), || beats(survivor, "c-0"))
            .expect("c-0 runs on the survivor");
        let moved_ms = killed.elapsed().as_millis();
        assert!(
            first > before,
            "c-0 must resume from its checkpoint: the survivor's count {first} must be above \
             the {before} beats the killed owner had reported (a fresh start counts from 1)"
        );
        println!(
            "MEASURE checkpoint_resume: c-0 at {before} beats before the SIGKILL, resumed at \
             {first} on the survivor {moved_ms} ms later"
        );
        workers.remove(owner);
    });
}
