//! A kind declared exactly-once is fenced by the worker before each run: on the embedded
//! coordinator, which serves no transactions, the fencing fails, so the task's `run` never
//! starts, and the task's last error says that transactions need Apache Kafka.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::test_support::{config, embedded, until};
use crate::{Kind, Task, TaskContext, TaskError, WorkerBuilder};

/// How many times a `Guarded` run started.
static RUNS: AtomicUsize = AtomicUsize::new(0);

#[derive(serde::Serialize, serde::Deserialize)]
struct Guarded {}

impl Task for Guarded {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        ctx.cancelled().await;
        Ok(())
    }
}

const GUARDED: Kind<Guarded> = Kind::new("guarded").exactly_once();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_kind_does_not_run_where_its_older_owners_cannot_be_fenced() {
    let coordinator = embedded().await;
    let bootstrap = coordinator.bootstrap();
    let mut config = config(&bootstrap, "exactly-once-guard", "w1");
    config.tasks.store.enabled = true;
    let worker = WorkerBuilder::new(config)
        .register(GUARDED)
        .typed_task(&GUARDED, "guarded-0", Guarded {})
        .spawn()
        .await
        .expect("the worker starts");
    let mut last_error = String::new();
    until("the fencing failure is the task's last error", || {
        last_error = worker
            .tasks()
            .into_iter()
            .find(|t| t.task_id == "guarded-0")
            .and_then(|t| t.last_error)
            .unwrap_or_default();
        !last_error.is_empty()
    })
    .await;
    assert!(
        last_error.contains("does not serve Kafka transactions")
            && last_error.contains("Apache Kafka"),
        "{last_error}"
    );
    assert_eq!(
        RUNS.load(Ordering::SeqCst),
        0,
        "the run never starts unfenced"
    );
    worker.shutdown().await.expect("clean shutdown");
}
