//! An operator's checkpoint writes: set a paused task's checkpoint to a value, or reset it so
//! that the task starts with none (`kroupier tasks checkpoint set|reset`, `PUT` and `DELETE
//! /tasks/{id}/checkpoint`).
//!
//! # Where the write goes, and why it keeps the fencing rule
//! Readers keep, per task, the record of the highest generation, then the highest offset
//! (see [`checkpoint`](super)). An operator's record is written under the key
//! `<task>@<G>`, where `G` is the highest generation of any record of the task already in the
//! topic, or the current owner's granted generation when the caller knows it and it is higher.
//!
//! - **A zombie cannot overwrite it.** A worker that lost the task was granted it in an older
//!   generation than its next owner; every record it writes carries that generation, which is
//!   at most `G`. One of a lower generation ranks below the operator's record wherever it
//!   lands. One of generation `G` itself can only come from the task's owner of generation
//!   `G`, and it ranks below the operator's record if it landed before it.
//! - **The next owner wins with its later writes.** A task is granted in the generation of the
//!   rebalance that gives it to a worker, so its current (or next) owner's generation is at
//!   least that of every record written before: equal when the owner kept the task through
//!   the pause and resume (pause and resume do not rebalance), higher when the task moved.
//!   Equal: its writes come after the operator's in the log, at higher offsets, and win.
//!   Higher: they win by generation. Either way, the first thing the resumed task reads with
//!   `last_checkpoint` is the operator's value, then its own.
//! - **A reset stays a reset.** A reset is a record with `"reset": true` under the same key,
//!   which readers take as "no checkpoint". Tombstones would not do: once compaction removed
//!   the newest generation's record, an older generation's record would be the newest again.
//!
//! Assumptions: the task is paused and stopped on its owner when the operator writes (the CLI
//! and the status API refuse otherwise), so its owner writes nothing meanwhile; a produce that
//! a task issued before it stopped has landed by then (produces are bounded by the request
//! timeout, and the owner reports `PAUSED` only once the task returned); and, as for every
//! checkpoint, the group's generations only grow.

use std::sync::PoisonError;

use kroupier_coordinator::log::LogRecord;

use super::record::{CheckpointValue, key};
use super::store::{CheckpointDetail, CheckpointError, Checkpoints, MAX_CHECKPOINT_BYTES};
use super::view::{Checkpoint, CheckpointView};

/// The `member` field of an operator's records.
const OPERATOR: &str = "operator";

/// The generation an operator's record of `task_id` is written under: the highest of the
/// task's records in `view` and `owner_generation`; 0 when neither says anything (any owner
/// is granted the task in a generation of at least 1, and wins).
pub(crate) fn operator_generation(
    view: &CheckpointView,
    task_id: &str,
    owner_generation: Option<i32>,
) -> i32 {
    view.top_generation(task_id)
        .max(owner_generation)
        .unwrap_or(0)
}

impl Checkpoints {
    unstable_pub! {
    /// The newest checkpoint of `task_id` as a record (generation, offset, writer, state),
    /// read up to the topic's end as of the call; `None` when it has none (or it was reset).
    ///
    /// # Errors
    /// `Log` when the end of the topic cannot be learned.
    pub async fn newest_record(
        &self,
        task_id: &str,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        self.read_to_end().await?;
        let view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(view.newest(task_id).cloned())
    }
    }

    unstable_pub! {
    /// Writes `state` as `task_id`'s checkpoint on an operator's behalf, and returns the
    /// offset it landed at. `owner_generation` is the generation in which the task's current
    /// owner was granted it, when the caller knows it. Only for a paused, stopped task: the
    /// caller checks that. Why the write keeps the fencing rule: `checkpoint/admin.rs`, and docs/tasks.md.
    ///
    /// # Errors
    /// `TooLarge`, `Log`, `Write`.
    pub async fn set(
        &self,
        task_id: &str,
        state: serde_json::Value,
        owner_generation: Option<i32>,
    ) -> Result<i64, CheckpointError> {
        self.operator_write(task_id, state, false, owner_generation)
            .await
    }
    }

    unstable_pub! {
    /// Resets `task_id`'s checkpoint on an operator's behalf: its next start reads none.
    /// Returns the offset of the reset record; as [`set`](Self::set) otherwise.
    ///
    /// # Errors
    /// As [`set`](Self::set).
    pub async fn reset(
        &self,
        task_id: &str,
        owner_generation: Option<i32>,
    ) -> Result<i64, CheckpointError> {
        self.operator_write(task_id, serde_json::Value::Null, true, owner_generation)
            .await
    }
    }

    async fn operator_write(
        &self,
        task_id: &str,
        state: serde_json::Value,
        reset: bool,
        owner_generation: Option<i32>,
    ) -> Result<i64, CheckpointError> {
        self.read_to_end().await?;
        let generation = {
            let view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
            operator_generation(&view, task_id, owner_generation)
        };
        let value = CheckpointValue {
            member: OPERATOR.to_owned(),
            state,
            reset,
        };
        let bytes = serde_json::to_vec(&value).map_err(|e| CheckpointDetail::Serde {
            task: task_id.to_owned(),
            message: e.to_string(),
        })?;
        if bytes.len() > MAX_CHECKPOINT_BYTES {
            return Err(CheckpointDetail::TooLarge {
                task: task_id.to_owned(),
                bytes: bytes.len(),
                max: MAX_CHECKPOINT_BYTES,
            }
            .into());
        }
        let offset = self
            .write(LogRecord {
                key: key(task_id, generation),
                value: Some(bytes.into()),
            })
            .await?;
        tracing::info!(
            task = task_id,
            generation,
            offset,
            reset,
            "operator wrote a checkpoint"
        );
        Ok(offset)
    }
}
