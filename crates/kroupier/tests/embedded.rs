//! A real worker, with no Kafka: the embedded coordinator from `kroupier::testing`, one worker
//! built as a program would build it, one task seen running and beating, then a clean shutdown.

use std::time::Duration;

use kroupier::testing::{TaskWaitError, coordinator, wait_for_task, worker_config};
use kroupier::{Kind, Task, TaskContext, TaskError, TaskSpec, TaskState, WorkerBuilder};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Beat {
    every_ms: u64,
}

impl Task for Beat {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut ticks = tokio::time::interval(Duration::from_millis(self.every_ms));
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let token = ctx.check_lease()?;
            ctx.report_progress(format!("beat with {token}"));
        }
    }
}

const BEAT: Kind<Beat> = Kind::new("beat");

#[tokio::test]
async fn a_worker_runs_its_task_on_the_embedded_coordinator() {
    let coordinator = coordinator().await.unwrap();
    let worker = WorkerBuilder::new(worker_config(&coordinator, "beats"))
        .register(BEAT)
        .typed_task(&BEAT, "beat-0", Beat { every_ms: 20 })
        // A spec read at run time, as JSON.
        .task(TaskSpec::new(
            "beat-1",
            "beat",
            serde_json::json!({ "every_ms": 20 }),
        ))
        .spawn()
        .await
        .unwrap();

    for task in ["beat-0", "beat-1"] {
        let status = wait_for_task(&worker, task, TaskState::Running, Duration::from_secs(20))
            .await
            .unwrap();
        assert!(status.generation > 0, "{status:?}");
    }
    let beating = async {
        while !worker.tasks().iter().all(|task| task.progress.is_some()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), beating)
        .await
        .expect("both tasks beat");

    worker.shutdown().await.unwrap();
    let group = coordinator.describe_group("beats").await;
    assert!(
        group.as_ref().is_none_or(|g| g.members.is_empty()),
        "the worker left the group: {group:?}"
    );
    coordinator.shutdown().await;
}

#[tokio::test]
async fn waiting_for_a_task_the_worker_never_holds_says_so() {
    let coordinator = coordinator().await.unwrap();
    let worker = WorkerBuilder::new(worker_config(&coordinator, "lonely"))
        .register(BEAT)
        .typed_task(&BEAT, "beat-0", Beat { every_ms: 20 })
        .spawn()
        .await
        .unwrap();
    let error = wait_for_task(
        &worker,
        "no-such-task",
        TaskState::Running,
        Duration::from_millis(200),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error,
        TaskWaitError {
            task_id: "no-such-task".into(),
            wanted: TaskState::Running,
            last: None,
            within: Duration::from_millis(200),
        }
    );
    assert!(
        error.to_string().contains("not held by this worker"),
        "{error}"
    );
    worker.shutdown().await.unwrap();
    coordinator.shutdown().await;
}
