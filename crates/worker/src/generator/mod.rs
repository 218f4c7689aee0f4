//! Generators: tasks that declare child tasks (Kafka Connect's connector and its
//! `taskConfigs`), and the worker side that keeps the task store equal to what they declare.
//!
//! A generator calls [`TaskContext::set_children`](crate::TaskContext::set_children) whenever
//! its source changes. The worker computes the difference with the store ([`diff`]), checks the
//! generator's lease, and writes it in one go: its claim first (once per generation), then the
//! puts and removal markers. From then on, until the generator stops, a background reconciler
//! keeps the store equal to the last declaration: each time the store's view moves it computes
//! the difference again, which is empty unless someone else changed one of the children (an
//! operator deleted one, or an older owner's write landed late and was ignored). The store's
//! module guide says why an older owner's write never counts.

mod diff;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use kroupier_coordinator::log::LogRecord;
use tokio::sync::watch;

use crate::catalogue::{Catalogue, TaskSpec};
use crate::lease::TaskLease;
use crate::store::DesiredState;
use crate::store::lineage::{ClaimValue, RemovedValue, claim_key};
use crate::store::{StoreDetail, StoreError, StoreView, TaskStore};

/// How long a write waits for this worker's view of the store to show it, so that the next
/// difference is computed against it. Past it the write stands; the next difference may write
/// some of it again (a put is idempotent).
const SEEN_WAIT: Duration = Duration::from_secs(5);

/// The task store as the tasks of a worker reach it: a writer and the worker's view.
#[derive(Debug, Clone)]
pub(crate) struct StoreAccess {
    /// Writes go through it.
    pub(crate) store: TaskStore,
    /// The worker's view, kept current by the store's tail.
    pub(crate) views: watch::Receiver<Arc<StoreView>>,
    /// The tasks defined in code (a generator may be one).
    pub(crate) code: Arc<Catalogue>,
}

/// The generators of one worker that declared children, by task id.
#[derive(Debug, Default)]
pub(crate) struct Generators {
    runs: Mutex<HashMap<Arc<str>, Arc<Run>>>,
}

/// One generator's declaration on this worker, and its reconciler.
#[derive(Debug)]
struct Run {
    /// The last declaration (none before the first); its lock also makes writes one at a
    /// time.
    declared: tokio::sync::Mutex<Option<Vec<TaskSpec>>>,
    /// The lease the reconciler writes under; it ends when the lease does.
    lease: TaskLease,
}

impl Generators {
    /// The run of `lease`'s task, made (with its reconciler) when it has none or its last one
    /// was granted under another token.
    fn run(&self, access: &StoreAccess, lease: &TaskLease) -> Arc<Run> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let id: Arc<str> = lease.task_id().into();
        if let Some(run) = runs.get(&id)
            && run.lease.granted() == lease.granted()
            && run.lease.is_valid()
        {
            return Arc::clone(run);
        }
        let run = Arc::new(Run {
            declared: tokio::sync::Mutex::new(None),
            lease: lease.clone(),
        });
        runs.insert(id, Arc::clone(&run));
        tokio::spawn(reconcile_on_change(access.clone(), Arc::clone(&run)));
        run
    }
}

/// Declares `children` as the generator's of `lease`: checks them, writes the difference with
/// the store, and keeps the store equal to them until the generator stops. Returns how many
/// child records were written.
pub(crate) async fn declare(
    generators: &Generators,
    access: Option<&StoreAccess>,
    lease: &TaskLease,
    children: Vec<TaskSpec>,
) -> Result<usize, StoreError> {
    let access = access.ok_or(StoreDetail::Disabled)?;
    diff::check(lease.task_id(), &children)?;
    let run = generators.run(access, lease);
    let mut declared = run.declared.lock().await;
    let children = declared.insert(children);
    reconcile(access, &run.lease, children, true).await
}

/// The reconciler: after each move of the view, writes what differs from the declaration.
/// Ends when the generator's lease does.
async fn reconcile_on_change(access: StoreAccess, run: Arc<Run>) {
    let mut views = access.views.clone();
    views.borrow_and_update();
    loop {
        tokio::select! {
            _ = run.lease.lost() => break,
            changed = views.changed() => if changed.is_err() { break },
        }
        let declared = run.declared.lock().await;
        let Some(children) = declared.as_deref() else {
            continue;
        };
        if let Err(error) = reconcile(&access, &run.lease, children, false).await {
            tracing::warn!(generator = run.lease.task_id(), %error, "reconciling children failed");
        }
    }
    tracing::debug!(
        generator = run.lease.task_id(),
        "the generator's reconciler stopped"
    );
}

/// Writes the difference between `declared` and the worker's view; returns how many child
/// records it wrote.
async fn reconcile(
    access: &StoreAccess,
    lease: &TaskLease,
    declared: &[TaskSpec],
    report: bool,
) -> Result<usize, StoreError> {
    let generator = lease.task_id();
    let generation = lease.granted().generation_id;
    let view = access.views.borrow().clone();
    // A generator deleted or paused in the store is being stopped: it writes nothing more (a
    // child put now would outlive it).
    let live = match view.tasks.get(generator) {
        Some(task) => task.record.state == DesiredState::Running,
        None => access.code.contains(generator),
    };
    if !live {
        return Ok(0);
    }
    let fenced = |reason: String| -> StoreError {
        StoreDetail::Fenced {
            task: generator.to_owned(),
            reason,
        }
        .into()
    };
    let plan = match diff::plan(&view, generator, generation, declared) {
        Ok(plan) => plan,
        Err(diff::Refusal::Superseded { newest }) => {
            return Err(fenced(format!(
                "it was granted in generation {generation}, and its owner of generation \
                 {newest} claimed it since"
            )));
        }
    };
    if report && !plan.conflicts.is_empty() {
        tracing::warn!(
            generator,
            ids = ?plan.conflicts,
            "declared children whose ids are tasks the generator did not declare: left alone \
             (delete those tasks, or give the children other ids)"
        );
    }
    if plan.is_empty() {
        return Ok(0);
    }
    let token = lease.check().map_err(|e| fenced(e.to_string()))?;
    let mut records = Vec::new();
    if plan.claim {
        let claim = ClaimValue {
            member: token.member_id.to_string(),
        };
        records.push(LogRecord {
            key: claim_key(generator, generation),
            value: serde_json::to_vec(&claim).ok().map(Bytes::from),
        });
        for stale in &plan.stale_claims {
            records.push(LogRecord {
                key: claim_key(generator, *stale),
                value: None,
            });
        }
    }
    let written = plan.puts.len() + plan.removes.len();
    for (id, record) in &plan.puts {
        let value = record.encode(id)?;
        records.push(LogRecord {
            key: Bytes::copy_from_slice(id.as_bytes()),
            value: Some(value),
        });
    }
    for id in &plan.removes {
        records.push(LogRecord {
            key: Bytes::copy_from_slice(id.as_bytes()),
            value: Some(RemovedValue::encode(generator, generation)),
        });
    }
    let offsets = access.store.append_batched(records).await?;
    tracing::info!(
        generator,
        generation,
        claimed = plan.claim,
        put = plan.puts.len(),
        removed = plan.removes.len(),
        "wrote the generator's children"
    );
    if let Some(last) = offsets.last() {
        let mut views = access.views.clone();
        let seen = async {
            while views.borrow_and_update().offset <= *last {
                if views.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(SEEN_WAIT, seen).await;
    }
    Ok(written)
}
