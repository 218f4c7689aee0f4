//! The demo's last step: a task added at run time through the group's task store (docs/tasks.md)
//! runs on one worker, and once deleted runs nowhere — no worker restarted, no config file
//! edited.

use std::time::{Duration, Instant};

use kroupier_coordinator::connection::Security;
use kroupier_worker::store::{TaskRecord, TaskStore, tasks_topic};

use super::Follow;
use crate::describe;

/// The id of the task the demo adds.
pub(super) const TASK: &str = "added-at-runtime";

/// What the step saw.
#[derive(Debug, Clone)]
pub(super) struct RuntimeTask {
    /// The task store's topic.
    pub topic: String,
    /// The worker that ran the added task.
    pub owner: String,
    /// From the put to DescribeGroups showing the task on a worker.
    pub placed: Duration,
    /// From the delete to DescribeGroups showing it on none.
    pub removed: Duration,
}

/// Adds [`TASK`] to the group's task store, waits until a worker holds it, deletes it, and
/// waits until none does.
///
/// # Errors
/// When the store cannot be written, or the group does not follow it before the demo's
/// deadline.
pub(super) async fn add_and_delete(
    follow: &mut Follow<'_>,
    security: Security,
) -> Result<RuntimeTask, String> {
    let topic = tasks_topic(follow.group).map_err(|e| e.to_string())?;
    let cluster = describe::cluster(follow.bootstrap, security, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let store = TaskStore::open(cluster, topic.clone(), true)
        .await
        .map_err(|e| format!("cannot open the task store: {e}"))?;
    let put = Instant::now();
    store
        .put(
            TASK,
            TaskRecord::new("beat", serde_json::json!({"every_ms": 100})),
        )
        .await
        .map_err(|e| format!("cannot add a task: {e}"))?;
    follow.progress.note(format!(
        "added task {TASK} through the task store ({topic})"
    ));
    let owner = loop {
        follow.poll("the added task to run").await?;
        if let Some(owner) = holder(follow) {
            break owner;
        }
    };
    let placed = put.elapsed();
    follow.progress.note(format!(
        "{TASK} running on {owner} {:.2} s after it was added",
        placed.as_secs_f64()
    ));
    let delete = Instant::now();
    store
        .delete(TASK)
        .await
        .map_err(|e| format!("cannot delete the task: {e}"))?;
    loop {
        follow.poll("the deleted task to stop").await?;
        if follow.latest.is_some() && holder(follow).is_none() {
            break;
        }
    }
    let removed = delete.elapsed();
    follow.progress.note(format!(
        "{TASK} deleted: on no worker {:.2} s later",
        removed.as_secs_f64()
    ));
    Ok(RuntimeTask {
        topic,
        owner,
        placed,
        removed,
    })
}

/// The member the latest description shows holding [`TASK`].
fn holder(follow: &Follow<'_>) -> Option<String> {
    let view = follow.latest.as_ref()?;
    view.members
        .iter()
        .find(|m| m.tasks.iter().flatten().any(|t| t == TASK))
        .map(|m| m.name().to_owned())
}
