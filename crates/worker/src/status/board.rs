//! The status board: the worker's last stable view of the group, the live task table, and the
//! metrics behind `/metrics`. The runtime writes it; the HTTP API reads it.
//!
//! The group view is replaced only when a rebalance completes. While one is in progress, readers
//! get the last stable view with `rebalancing: true`, never an error (Kafka Connect answers 409).

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

use super::metrics::Metrics;
use super::model::{TaskStatus, TaskTable, unix_ms};

/// The group as this worker last saw it after a completed rebalance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupView {
    /// The member id the coordinator gave this worker.
    pub member_id: Option<String>,
    /// The generation of the last completed rebalance.
    pub generation: Option<i32>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// The leader's catalogue fingerprint (hex), from the assignment.
    pub leader_catalogue_fingerprint: Option<String>,
    /// Whether this worker's catalogue differs from the leader's (a rolling upgrade, a stale
    /// config): tasks this worker does not know go only to workers that do.
    pub catalogue_mismatch: bool,
}

/// One task as `/status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskView {
    /// The task's status.
    #[serde(flatten)]
    pub status: TaskStatus,
    /// The worker that holds it (this one).
    pub owner: String,
}

/// The body of `GET /status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerStatus {
    /// This worker's id.
    pub worker_id: String,
    /// The group id.
    pub group_id: String,
    /// This worker's catalogue fingerprint (hex).
    pub catalogue_fingerprint: String,
    /// Whether a rebalance is in progress; the group fields are then the last stable ones.
    pub rebalancing: bool,
    /// Whether this worker is shutting down.
    pub shutting_down: bool,
    /// The last stable group view.
    #[serde(flatten)]
    pub group: GroupView,
    /// The tasks this worker holds, sorted by id.
    pub tasks: Vec<TaskView>,
}

#[derive(Debug)]
struct Inner {
    worker_id: String,
    group_id: String,
    catalogue_fingerprint: AtomicU64,
    tasks: TaskTable,
    /// The fingerprint of the effective catalogue, once one was published: computed when a
    /// reader asks for it (it hashes every config), by the runtime that owns the catalogue.
    fingerprint_source: RwLock<Option<FingerprintSource>>,
    /// Tasks the last assignment reported unplaced, with why.
    unplaced: RwLock<Arc<BTreeMap<String, String>>>,
    group: watch::Sender<GroupView>,
    rebalancing: AtomicBool,
    shutting_down: AtomicBool,
    rebalance_started: Mutex<Option<Instant>>,
    /// Why the member cannot reach Kafka, while it cannot (its `MemberStatus::unreachable`).
    unreachable: RwLock<Option<String>>,
    metrics: Metrics,
}

/// What the status shows the fingerprint of: the effective catalogue, which the runtime owns.
/// Hashed when the status is read, not each time the catalogue changes.
pub(crate) trait Fingerprinted: std::fmt::Debug + Send + Sync {
    /// The catalogue's fingerprint.
    fn fingerprint(&self) -> u64;
}

/// The catalogue whose fingerprint the status shows.
pub(crate) type FingerprintSource = Arc<dyn Fingerprinted>;

/// Shared status of one worker. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct StatusBoard {
    inner: Arc<Inner>,
}

impl StatusBoard {
    /// A board for `worker_id` in `group_id`, reading task statuses from `tasks`.
    pub(crate) fn new(
        worker_id: impl Into<String>,
        group_id: impl Into<String>,
        catalogue_fingerprint: u64,
        tasks: TaskTable,
    ) -> Self {
        StatusBoard {
            inner: Arc::new(Inner {
                worker_id: worker_id.into(),
                group_id: group_id.into(),
                catalogue_fingerprint: AtomicU64::new(catalogue_fingerprint),
                tasks,
                fingerprint_source: RwLock::new(None),
                unplaced: RwLock::new(Arc::default()),
                group: watch::Sender::new(GroupView::default()),
                rebalancing: AtomicBool::new(false),
                shutting_down: AtomicBool::new(false),
                rebalance_started: Mutex::new(None),
                unreachable: RwLock::new(None),
                metrics: Metrics::new(),
            }),
        }
    }

    /// This worker's id.
    pub(crate) fn worker_id(&self) -> &str {
        &self.inner.worker_id
    }

    /// The task table.
    pub(crate) fn tasks(&self) -> &TaskTable {
        &self.inner.tasks
    }

    /// Shows the fingerprint `source` computes from now on: the effective catalogue's, which
    /// the runtime owns and publishes here each time it changes.
    pub(crate) fn set_catalogue_fingerprint(&self, source: FingerprintSource) {
        *self
            .inner
            .fingerprint_source
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(source);
    }

    /// The fingerprint of the catalogue this worker runs from.
    fn catalogue_fingerprint(&self) -> u64 {
        let source = self
            .inner
            .fingerprint_source
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match source {
            Some(source) => source.fingerprint(),
            None => self.inner.catalogue_fingerprint.load(Ordering::Acquire),
        }
    }

    /// The tasks the last assignment reported unplaced, with why.
    pub(crate) fn unplaced(&self) -> Arc<BTreeMap<String, String>> {
        self.inner
            .unplaced
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records the tasks the last assignment reported unplaced.
    pub(crate) fn set_unplaced(&self, unplaced: BTreeMap<String, String>) {
        *self
            .inner
            .unplaced
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(unplaced);
    }

    /// The last stable group view.
    pub(crate) fn group(&self) -> GroupView {
        self.inner.group.borrow().clone()
    }

    /// Whether a rebalance is in progress.
    pub(crate) fn is_rebalancing(&self) -> bool {
        self.inner.rebalancing.load(Ordering::Acquire)
    }

    /// Why the worker is not ready (`/readyz` answers 503 with it), or `None` when it has a
    /// stable assignment, reaches Kafka and is not shutting down.
    pub(crate) fn not_ready(&self) -> Option<String> {
        if self.inner.shutting_down.load(Ordering::Acquire) {
            return Some("the worker is shutting down".to_owned());
        }
        let unreachable = self
            .inner
            .unreachable
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if unreachable.is_some() {
            return unreachable;
        }
        if self.inner.group.borrow().generation.is_none() {
            return Some(
                "the worker has not joined its group yet (no assignment); it is joining".to_owned(),
            );
        }
        None
    }

    /// Why the member cannot reach Kafka, or `None` once it can.
    pub(crate) fn set_unreachable(&self, why: Option<&str>) {
        let mut unreachable = self
            .inner
            .unreachable
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if unreachable.as_deref() != why {
            *unreachable = why.map(str::to_owned);
        }
    }

    /// A rebalance began (the member is about to rejoin).
    pub(crate) fn rebalance_started(&self) {
        self.rebalance_start().get_or_insert_with(Instant::now);
        self.inner.rebalancing.store(true, Ordering::Release);
    }

    /// The assignment of a rebalance arrived; the member's own measure, `member_took`, runs
    /// from the rebalance's start (its rejoin, or its first JoinGroup) to now. A rebalance this
    /// board did not see start (the first join: no revocation precedes it) starts that long ago.
    pub(crate) fn rebalance_arrived(&self, member_took: Option<Duration>) {
        let mut start = self.rebalance_start();
        if start.is_none() {
            let now = Instant::now();
            *start = Some(member_took.map_or(now, |took| now.checked_sub(took).unwrap_or(now)));
        }
    }

    /// A rebalance completed with `view`: counted and its latency recorded once per generation
    /// (the first join included), from its start to the assignment applied.
    pub(crate) fn rebalance_completed(&self, view: GroupView) {
        let started = self.rebalance_start().take();
        let new_generation = self.inner.group.borrow().generation != view.generation;
        if new_generation {
            let took = started.map_or(Duration::ZERO, |started| started.elapsed());
            self.inner.metrics.rebalance_completed(took.as_secs_f64());
        }
        self.inner.group.send_replace(view);
        self.inner.rebalancing.store(false, Ordering::Release);
    }

    /// This worker took over tasks after its first assignment (someone else lost them).
    pub(crate) fn record_failover(&self) {
        self.inner.metrics.failover_at(unix_ms());
    }

    /// The worker began shutting down; `/readyz` fails from now on.
    pub(crate) fn set_shutting_down(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
    }

    /// What `GET /status` returns.
    pub(crate) fn snapshot(&self) -> WorkerStatus {
        let owner = &self.inner.worker_id;
        WorkerStatus {
            worker_id: owner.clone(),
            group_id: self.inner.group_id.clone(),
            catalogue_fingerprint: format!("{:016x}", self.catalogue_fingerprint()),
            rebalancing: self.is_rebalancing(),
            shutting_down: self.inner.shutting_down.load(Ordering::Acquire),
            group: self.group(),
            tasks: self
                .inner
                .tasks
                .snapshot()
                .into_iter()
                .map(|status| TaskView {
                    status,
                    owner: owner.clone(),
                })
                .collect(),
        }
    }

    /// The board's metrics in the OpenMetrics text format (`GET /metrics`).
    pub(crate) fn render_metrics(&self) -> String {
        let tasks = self.tasks().counts();
        let restarts = self
            .tasks()
            .snapshot()
            .iter()
            .map(|s| u64::from(s.restarts))
            .sum();
        let group = self.group();
        self.metrics().encode(
            &tasks,
            restarts,
            self.is_rebalancing(),
            group.generation,
            group.catalogue_mismatch,
        )
    }

    /// The metrics behind `/metrics`.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    fn rebalance_start(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.inner
            .rebalance_started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
