//! Workers on the embedded coordinator (Kafka's wire protocol on a local socket, real time):
//! what the leader writes into the kroupier assignment matches what SyncGroup delivered.

use std::time::Duration;

use kroupier_coordinator::membership::MemberState;
use kroupier_embedded::EmbeddedCoordinator;

use crate::protocol::Assignment;
use crate::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig, WorkerHandle};

#[derive(serde::Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

async fn worker(bootstrap: &str, id: &str) -> WorkerHandle {
    let mut config = WorkerConfig::new("assign-context");
    config.bootstrap_servers = vec![bootstrap.to_owned()];
    config.worker_id = id.to_owned();
    config.client_id = id.to_owned();
    config.session_timeout = Duration::from_secs(3);
    config.heartbeat_interval = Duration::from_millis(500);
    config.abort_timeout = Duration::from_millis(200);
    config.status_addr = None;
    let mut builder = WorkerBuilder::new(config).register::<Idle>("idle");
    for i in 0..4 {
        builder = builder.task(TaskSpec::new(
            format!("t-{i}"),
            "idle",
            serde_json::json!({}),
        ));
    }
    builder.spawn().await.expect("the worker starts")
}

/// Waits (up to 20 s of real time) until the worker's member is stable; returns its
/// generation, leader and assignment bytes.
async fn stable(worker: &WorkerHandle) -> (i32, String, bytes::Bytes) {
    for _ in 0..400 {
        let status = worker.member().current();
        if let (MemberState::Stable, Some(generation), Some(assignment)) =
            (status.state, status.generation, status.assignment)
        {
            return (generation.generation_id, generation.leader_id, assignment);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the worker never became stable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decoded_assignment_names_the_generation_and_leader_of_sync_group() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .expect("the embedded coordinator starts");
    let bootstrap = coordinator.bootstrap();

    // A first worker forms a generation and leaves: the group's generation counter moves on.
    let first = worker(&bootstrap, "w1").await;
    let (g1, _, _) = stable(&first).await;
    first.shutdown().await.expect("clean shutdown");

    // A fresh worker, which saw no earlier generation, leads the next one.
    let second = worker(&bootstrap, "w2").await;
    let (generation, leader, bytes) = stable(&second).await;
    assert!(generation > g1, "{generation} after {g1}");
    let decoded = Assignment::decode(&bytes).expect("a kroupier assignment");
    assert_eq!(decoded.generation, generation, "the SyncGroup's generation");
    assert_eq!(decoded.leader, leader, "the JoinGroup's leader");
    assert_eq!(decoded.tasks.len(), 4);
    second.shutdown().await.expect("clean shutdown");
}
