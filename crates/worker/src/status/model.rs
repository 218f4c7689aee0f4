//! The status of each task this worker holds, shared between the supervisor (the only writer)
//! and the status API (readers).
//!
//! Every write carries the *incarnation* of the supervised run that made it; a write from an
//! older incarnation (a run that was replaced by a restart) is dropped, so a stale status can
//! never overwrite a fresh one.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dashmap::DashMap;
use serde::Serialize;

/// The lifecycle state of a task on this worker.
///
/// `RUNNING` means the task's `run` future is alive right now; the supervisor leaves that state
/// before anything else when the future returns, panics or is aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum TaskState {
    /// Spawned; its config is being built.
    Starting,
    /// Its `run` future is alive.
    Running,
    /// It failed and waits out its backoff before the next attempt.
    Restarting,
    /// It was cancelled (revoked or shutting down) and has not finished yet.
    Stopping,
    /// It stopped: cancelled, or its lease check failed. Started again when assigned again.
    Stopped,
    /// `run` returned `Ok(())` on its own.
    Completed,
    /// Its config is invalid, or it failed the configured number of times in a row. It stays
    /// `FAILED` until a restart request.
    Failed,
    /// Its desired state in the task store is `paused`: assigned to this worker, but not run
    /// (and not restarted) until it is resumed. It keeps its place: pausing and resuming
    /// move nothing.
    Paused,
}

impl TaskState {
    /// Every state, in display order.
    pub(crate) const ALL: [TaskState; 8] = [
        TaskState::Starting,
        TaskState::Running,
        TaskState::Restarting,
        TaskState::Stopping,
        TaskState::Stopped,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Paused,
    ];

    /// The state's name as the status API spells it (`RUNNING`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Starting => "STARTING",
            TaskState::Running => "RUNNING",
            TaskState::Restarting => "RESTARTING",
            TaskState::Stopping => "STOPPING",
            TaskState::Stopped => "STOPPED",
            TaskState::Completed => "COMPLETED",
            TaskState::Failed => "FAILED",
            TaskState::Paused => "PAUSED",
        }
    }

    /// Whether a supervised run is still alive in this state.
    pub(crate) fn is_active(self) -> bool {
        matches!(
            self,
            TaskState::Starting | TaskState::Running | TaskState::Restarting | TaskState::Stopping
        )
    }
}

/// One task's status on this worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskStatus {
    /// The task id.
    pub task_id: String,
    /// Its kind, when the catalogue knows the task.
    pub kind: Option<String>,
    /// Its state.
    pub state: TaskState,
    /// The generation this worker was granted the task in.
    pub generation: i32,
    /// Restarts after failures since the task was assigned (not reset by a restart request).
    pub restarts: u32,
    /// Failures in a row; reset by a restart request or a run that lasted long enough.
    pub consecutive_failures: u32,
    /// The last error (failure message, panic message, config error, lease loss).
    pub last_error: Option<String>,
    /// When the task entered `state`, Unix milliseconds.
    pub since_ms: u64,
    /// When the task last reported progress, Unix milliseconds.
    pub last_progress_ms: Option<u64>,
    /// The last progress note the task reported.
    pub progress: Option<String>,
    #[serde(skip)]
    pub(crate) incarnation: u64,
}

/// Status timestamps use the journal's clock, so that they compare with journal lines.
pub(crate) use crate::journal::unix_ms;

/// One task's record in the table: what its [`TaskStatus`] shows, kept small because a worker
/// holds one per task, tens of thousands of them. The id is the table's key and the kind the
/// registry's copy (both shared, not copied per task); the notes, rarely set, are boxed.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The task's kind, when the catalogue knows the task.
    pub(crate) kind: Option<Arc<str>>,
    /// See [`TaskStatus::state`].
    pub(crate) state: TaskState,
    /// See [`TaskStatus::generation`].
    pub(crate) generation: i32,
    /// See [`TaskStatus::restarts`].
    pub(crate) restarts: u32,
    /// See [`TaskStatus::consecutive_failures`].
    pub(crate) consecutive_failures: u32,
    /// See [`TaskStatus::since_ms`].
    pub(crate) since_ms: u64,
    /// The supervised run that owns the record.
    pub(crate) incarnation: u64,
    notes: Option<Box<Notes>>,
}

/// What a record says besides its state: set by failures and progress reports only.
#[derive(Debug, Clone, Default)]
pub(crate) struct Notes {
    /// See [`TaskStatus::last_error`].
    pub(crate) last_error: Option<String>,
    /// See [`TaskStatus::last_progress_ms`].
    pub(crate) last_progress_ms: Option<u64>,
    /// See [`TaskStatus::progress`].
    pub(crate) progress: Option<String>,
}

impl Record {
    /// The notes, made on first write.
    pub(crate) fn notes_mut(&mut self) -> &mut Notes {
        self.notes.get_or_insert_with(Box::default)
    }

    fn status(&self, task_id: &str) -> TaskStatus {
        let notes = self.notes.as_deref();
        TaskStatus {
            task_id: task_id.to_owned(),
            kind: self.kind.as_deref().map(str::to_owned),
            state: self.state,
            generation: self.generation,
            restarts: self.restarts,
            consecutive_failures: self.consecutive_failures,
            last_error: notes.and_then(|n| n.last_error.clone()),
            since_ms: self.since_ms,
            last_progress_ms: notes.and_then(|n| n.last_progress_ms),
            progress: notes.and_then(|n| n.progress.clone()),
            incarnation: self.incarnation,
        }
    }
}

/// Task statuses by id; cheap to clone (an `Arc`), safe to read from any thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskTable {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tasks: DashMap<Arc<str>, Record>,
    /// The ids whose record is `STOPPED`, kept as records change: a heartbeat restarts the
    /// held ones that stopped on an expired lease without visiting every task.
    stopped: Mutex<BTreeSet<Arc<str>>>,
}

impl TaskTable {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The status of one task.
    pub(crate) fn get(&self, task_id: &str) -> Option<TaskStatus> {
        self.inner
            .tasks
            .get(task_id)
            .map(|entry| entry.status(entry.key()))
    }

    /// The state of one task.
    pub(crate) fn state(&self, task_id: &str) -> Option<TaskState> {
        self.inner.tasks.get(task_id).map(|entry| entry.state)
    }

    /// All statuses, sorted by task id.
    ///
    /// With 100,000 tasks a snapshot is megabytes: it is made at its final size and sorted in
    /// place (ids are unique, so an unstable sort orders them the same), so that it leaves no
    /// grown-out copies behind for the allocator to keep.
    pub(crate) fn snapshot(&self) -> Vec<TaskStatus> {
        let mut all = Vec::with_capacity(self.inner.tasks.len());
        all.extend(self.inner.tasks.iter().map(|e| e.value().status(e.key())));
        all.sort_unstable_by(|a, b| a.task_id.cmp(&b.task_id));
        all
    }

    /// How many tasks are in each state (every state listed, zeros included).
    pub(crate) fn counts(&self) -> Vec<(TaskState, usize)> {
        let mut counts: Vec<(TaskState, usize)> = TaskState::ALL.iter().map(|&s| (s, 0)).collect();
        for entry in self.inner.tasks.iter() {
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == entry.state) {
                slot.1 += 1;
            }
        }
        counts
    }

    /// The ids of the tasks whose record is `STOPPED`, sorted.
    pub(crate) fn stopped(&self) -> Vec<Arc<str>> {
        lock(&self.inner.stopped).iter().cloned().collect()
    }

    /// Starts a new incarnation of a task's record.
    pub(crate) fn begin(
        &self,
        task_id: impl Into<Arc<str>>,
        kind: Option<Arc<str>>,
        generation: i32,
        incarnation: u64,
    ) {
        let mut entry = self
            .inner
            .tasks
            .entry(task_id.into())
            .or_insert_with(|| Record {
                kind: None,
                state: TaskState::Starting,
                generation,
                restarts: 0,
                consecutive_failures: 0,
                since_ms: unix_ms(),
                incarnation,
                notes: None,
            });
        let was = entry.state;
        let record = entry.value_mut();
        record.kind = kind;
        record.generation = generation;
        record.incarnation = incarnation;
        record.consecutive_failures = 0;
        record.state = TaskState::Starting;
        record.since_ms = unix_ms();
        self.moved(entry.key(), was, TaskState::Starting);
    }

    /// Applies `change` if the record belongs to `incarnation`.
    pub(crate) fn update(&self, task_id: &str, incarnation: u64, change: impl FnOnce(&mut Record)) {
        if let Some(mut entry) = self.inner.tasks.get_mut(task_id) {
            if entry.incarnation == incarnation {
                let was = entry.state;
                change(entry.value_mut());
                self.moved(entry.key(), was, entry.state);
            }
        }
    }

    /// Moves the record of `incarnation` to `state`.
    pub(crate) fn set_state(&self, task_id: &str, incarnation: u64, state: TaskState) {
        self.update(task_id, incarnation, |status| {
            if status.state != state {
                status.state = state;
                status.since_ms = unix_ms();
            }
        });
    }

    /// Removes the record of `incarnation`.
    pub(crate) fn remove(&self, task_id: &str, incarnation: u64) {
        let removed = self
            .inner
            .tasks
            .remove_if(task_id, |_, status| status.incarnation == incarnation);
        if let Some((id, record)) = removed {
            if record.state == TaskState::Stopped {
                lock(&self.inner.stopped).remove(&id);
            }
        }
    }

    /// Keeps the set of `STOPPED` ids in step with a record that went from `was` to `now`.
    fn moved(&self, task_id: &Arc<str>, was: TaskState, now: TaskState) {
        if was == now {
            return;
        }
        if now == TaskState::Stopped {
            lock(&self.inner.stopped).insert(task_id.clone());
        } else if was == TaskState::Stopped {
            lock(&self.inner.stopped).remove(task_id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_incarnation_cannot_write() {
        let table = TaskTable::new();
        table.begin("t", None, 3, 1);
        table.begin("t", None, 4, 2);
        table.set_state("t", 1, TaskState::Failed);
        table.remove("t", 1);
        assert_eq!(table.state("t"), Some(TaskState::Starting));
        table.set_state("t", 2, TaskState::Running);
        assert_eq!(table.state("t"), Some(TaskState::Running));
        assert_eq!(table.get("t").map(|s| s.generation), Some(4));
    }

    #[test]
    fn counts_list_every_state() {
        let table = TaskTable::new();
        table.begin("a", None, 1, 1);
        table.begin("b", None, 1, 2);
        table.set_state("b", 2, TaskState::Running);
        let counts = table.counts();
        assert_eq!(counts.len(), TaskState::ALL.len());
        assert!(counts.contains(&(TaskState::Starting, 1)));
        assert!(counts.contains(&(TaskState::Running, 1)));
        assert!(counts.contains(&(TaskState::Failed, 0)));
    }

    #[test]
    fn stopped_ids_follow_the_records() {
        let table = TaskTable::new();
        table.begin("a", None, 1, 1);
        table.begin("b", None, 1, 2);
        table.set_state("a", 1, TaskState::Stopped);
        table.set_state("b", 2, TaskState::Stopped);
        // A stale incarnation's write changes nothing.
        table.set_state("b", 1, TaskState::Running);
        let ids = |table: &TaskTable| -> Vec<String> {
            table.stopped().iter().map(|id| id.to_string()).collect()
        };
        assert_eq!(ids(&table), ["a", "b"]);
        // Started again, or gone: no longer stopped.
        table.begin("a", None, 2, 3);
        table.remove("b", 2);
        assert!(table.stopped().is_empty());
        table.update("a", 3, |record| record.state = TaskState::Stopped);
        assert_eq!(ids(&table), ["a"]);
        table.set_state("a", 3, TaskState::Running);
        assert!(table.stopped().is_empty());
    }

    #[test]
    fn a_record_shows_its_notes_once_set() {
        let table = TaskTable::new();
        table.begin("a", Some("copy".into()), 1, 1);
        let status = table.get("a").unwrap();
        assert_eq!(status.kind.as_deref(), Some("copy"));
        assert_eq!((status.last_error, status.progress), (None, None));
        table.update("a", 1, |record| {
            record.notes_mut().last_error = Some("boom".into());
            record.notes_mut().progress = Some("half".into());
        });
        let status = table.get("a").unwrap();
        assert_eq!(status.last_error.as_deref(), Some("boom"));
        assert_eq!(status.progress.as_deref(), Some("half"));
        assert_eq!(table.snapshot(), [status]);
    }
}
