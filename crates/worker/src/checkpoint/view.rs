//! What a worker knows of the checkpoint topic: per task, the newest checkpoint, and the
//! keys of older generations still to delete.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kroupier_coordinator::log::ReadRecord;

use super::record::{CheckpointValue, parse_key};

/// One task's newest checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The generation in which its writer was granted the task.
    pub generation: i32,
    /// The offset the record landed at.
    pub offset: i64,
    /// The member that wrote it.
    pub member: String,
    /// The saved state.
    pub state: Arc<serde_json::Value>,
}

/// The checkpoint topic as read up to [`offset`](Self::offset).
#[derive(Debug, Default, Clone)]
pub struct CheckpointView {
    /// Every record below this offset has been applied.
    pub offset: i64,
    /// The winning record of each task, reset records included (then `.1` is true).
    newest: HashMap<String, (Checkpoint, bool)>,
    /// Older generations of each task whose keys still hold a record.
    stale: HashMap<String, BTreeSet<i32>>,
    /// Records that were not checkpoints kroupier wrote (skipped with a warning).
    pub skipped: u64,
}

impl CheckpointView {
    /// The newest checkpoint of `task_id`; `None` when it has none, or when an operator's
    /// reset is the newest record.
    pub fn newest(&self, task_id: &str) -> Option<&Checkpoint> {
        self.newest
            .get(task_id)
            .and_then(|(checkpoint, reset)| (!reset).then_some(checkpoint))
    }

    /// The highest generation any record of `task_id` in the topic was written under (reset
    /// records included): where an operator's write goes (see
    /// [`Checkpoints::set`](super::Checkpoints::set)).
    pub(crate) fn top_generation(&self, task_id: &str) -> Option<i32> {
        let newest = self.newest.get(task_id).map(|(c, _)| c.generation);
        let stale = self.stale.get(task_id).and_then(|g| g.last().copied());
        newest.max(stale)
    }

    /// The older generations of `task_id` whose records are still in the topic.
    pub fn stale_generations(&self, task_id: &str) -> Vec<i32> {
        self.stale
            .get(task_id)
            .map(|g| g.iter().copied().collect())
            .unwrap_or_default()
    }

    /// How many tasks have a checkpoint.
    pub fn len(&self) -> usize {
        self.newest.values().filter(|(_, reset)| !reset).count()
    }

    /// Whether no task has a checkpoint.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies one record read at `record.offset`; records below [`offset`](Self::offset)
    /// were applied already and are ignored, so reading a stretch twice changes nothing.
    pub(crate) fn apply(&mut self, record: &ReadRecord) {
        if record.offset < self.offset {
            return;
        }
        self.offset = record.offset + 1;
        let Some((task, generation)) = parse_key(&record.key) else {
            self.skipped += 1;
            tracing::warn!(
                offset = record.offset,
                "a record that is not a kroupier checkpoint key; skipped"
            );
            return;
        };
        let Some(value) = &record.value else {
            // A tombstone: the record of that generation is gone.
            if let Some(stale) = self.stale.get_mut(task) {
                stale.remove(&generation);
                if stale.is_empty() {
                    self.stale.remove(task);
                }
            }
            if self
                .newest
                .get(task)
                .is_some_and(|(c, _)| c.generation == generation)
            {
                self.newest.remove(task);
            }
            return;
        };
        let value: CheckpointValue = match serde_json::from_slice(value) {
            Ok(value) => value,
            Err(error) => {
                self.skipped += 1;
                tracing::warn!(offset = record.offset, task, %error, "a checkpoint that does not decode; skipped");
                return;
            }
        };
        let reset = value.reset;
        let candidate = Checkpoint {
            generation,
            offset: record.offset,
            member: value.member,
            state: Arc::new(value.state),
        };
        match self.newest.get(task).map(|(c, _)| c) {
            // A record of an older owner, landed late: kept aside, never the answer.
            Some(current) if generation < current.generation => {
                self.stale
                    .entry(task.to_owned())
                    .or_default()
                    .insert(generation);
            }
            Some(current) => {
                if current.generation < generation {
                    let older = current.generation;
                    self.stale.entry(task.to_owned()).or_default().insert(older);
                }
                self.newest.insert(task.to_owned(), (candidate, reset));
            }
            None => {
                self.newest.insert(task.to_owned(), (candidate, reset));
            }
        }
    }
}
