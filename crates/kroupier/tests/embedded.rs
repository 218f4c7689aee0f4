//! A real worker, with no Kafka: the embedded coordinator from `kroupier::testing`, one worker
//! built as a program would build it, one task seen running, then a clean shutdown.

use std::time::Duration;

use kroupier::{Task, TaskContext, TaskError, TaskSpec, TaskState, WorkerBuilder};
use serde::Deserialize;

#[derive(Deserialize)]
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
            ctx.report_progress(format!("beat in generation {}", token.generation));
        }
    }
}

#[tokio::test]
async fn a_worker_runs_its_task_on_the_embedded_coordinator() {
    let coordinator = kroupier::testing::coordinator().await.unwrap();
    let worker = WorkerBuilder::new(kroupier::testing::worker_config(&coordinator, "beats"))
        .register::<Beat>("beat")
        .task(TaskSpec::new(
            "beat-0",
            "beat",
            serde_json::json!({ "every_ms": 20 }),
        ))
        .spawn()
        .await
        .unwrap();

    let beating = async {
        loop {
            let status = worker.runtime().board().snapshot();
            let task = status.tasks.iter().find(|t| t.status.task_id == "beat-0");
            if task.is_some_and(|t| {
                t.status.state == TaskState::Running && t.status.progress.is_some()
            }) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let status = tokio::time::timeout(Duration::from_secs(20), beating)
        .await
        .expect("beat-0 runs and beats within 20 s");
    assert!(status.group.generation.is_some());

    worker.shutdown().await.unwrap();
    let group = coordinator.describe_group("beats").await;
    assert!(
        group.as_ref().is_none_or(|g| g.members.is_empty()),
        "the worker left the group: {group:?}"
    );
    coordinator.shutdown().await;
}
