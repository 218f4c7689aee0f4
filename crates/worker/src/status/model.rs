//! The status of each task this worker holds, shared between the supervisor (the only writer)
//! and the status API (readers).
//!
//! Every write carries the *incarnation* of the supervised run that made it; a write from an
//! older incarnation (a run that was replaced by a restart) is dropped, so a stale status can
//! never overwrite a fresh one.

use std::sync::Arc;

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
    pub const ALL: [TaskState; 8] = [
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
    pub fn is_active(self) -> bool {
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

/// Task statuses by id; cheap to clone (an `Arc`), safe to read from any thread.
#[derive(Debug, Clone, Default)]
pub struct TaskTable {
    tasks: Arc<DashMap<String, TaskStatus>>,
}

impl TaskTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The status of one task.
    pub fn get(&self, task_id: &str) -> Option<TaskStatus> {
        self.tasks.get(task_id).map(|entry| entry.clone())
    }

    /// The state of one task.
    pub fn state(&self, task_id: &str) -> Option<TaskState> {
        self.tasks.get(task_id).map(|entry| entry.state)
    }

    /// All statuses, sorted by task id.
    pub fn snapshot(&self) -> Vec<TaskStatus> {
        let mut all: Vec<TaskStatus> = self.tasks.iter().map(|e| e.value().clone()).collect();
        all.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        all
    }

    /// How many tasks are in each state (every state listed, zeros included).
    pub fn counts(&self) -> Vec<(TaskState, usize)> {
        let mut counts: Vec<(TaskState, usize)> = TaskState::ALL.iter().map(|&s| (s, 0)).collect();
        for entry in self.tasks.iter() {
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == entry.state) {
                slot.1 += 1;
            }
        }
        counts
    }

    /// Starts a new incarnation of a task's record.
    pub(crate) fn begin(
        &self,
        task_id: &str,
        kind: Option<String>,
        generation: i32,
        incarnation: u64,
    ) {
        let mut entry = self
            .tasks
            .entry(task_id.to_owned())
            .or_insert_with(|| TaskStatus {
                task_id: task_id.to_owned(),
                kind: None,
                state: TaskState::Starting,
                generation,
                restarts: 0,
                consecutive_failures: 0,
                last_error: None,
                since_ms: unix_ms(),
                last_progress_ms: None,
                progress: None,
                incarnation,
            });
        let status = entry.value_mut();
        status.kind = kind;
        status.generation = generation;
        status.incarnation = incarnation;
        status.consecutive_failures = 0;
        status.state = TaskState::Starting;
        status.since_ms = unix_ms();
    }

    /// Applies `change` if the record belongs to `incarnation`.
    pub(crate) fn update(
        &self,
        task_id: &str,
        incarnation: u64,
        change: impl FnOnce(&mut TaskStatus),
    ) {
        if let Some(mut entry) = self.tasks.get_mut(task_id) {
            if entry.incarnation == incarnation {
                change(entry.value_mut());
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
        self.tasks
            .remove_if(task_id, |_, status| status.incarnation == incarnation);
    }
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
}
