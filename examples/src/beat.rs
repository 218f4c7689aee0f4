//! The `beat` task of the quickstart: a Rust struct whose config comes from the catalogue
//! through serde. Copy it and put your own work where the journal line is written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kroupier::worker::journal::Writer;
use kroupier::{Kind, Task, TaskContext, TaskError};
use serde::{Deserialize, Serialize};

/// The `beat` kind: its name, and its config type, checked by the compiler wherever a `beat`
/// task is registered or added to the catalogue.
pub const BEAT: Kind<BeatConfig> = Kind::new("beat");

/// One `beat` task's config, as written in the catalogue (the same on every worker).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeatConfig {
    /// How often the task beats, in milliseconds.
    pub every_ms: u64,
    /// Panic instead of beating (to watch restarts with backoff, then `FAILED`).
    #[serde(default)]
    pub panic: bool,
    /// Save the beat count as the task's checkpoint every this many beats, and resume from
    /// the newest checkpoint when starting (wherever the task ran before). 0 (the default):
    /// never; needs the worker's task store (`tasks.store.enabled=true`).
    #[serde(default)]
    pub checkpoint_every: u64,
}

/// What a `beat` task needs from its worker (not part of the catalogue: it differs per worker).
#[derive(Debug, Clone)]
pub struct BeatEnv {
    /// This worker's id, written into every journal line.
    pub worker_id: Arc<str>,
    /// Where each task appends `<unix_ms> <worker-id> <generation>` lines, if anywhere.
    pub journal_dir: Option<PathBuf>,
}

/// A task that beats every `every_ms` while this worker holds it.
#[derive(Debug)]
pub struct Beat {
    /// Its config from the catalogue.
    pub config: BeatConfig,
    /// Its worker's environment.
    pub env: BeatEnv,
}

impl Task for Beat {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        if self.config.panic {
            panic!("task {} is configured to panic", ctx.task_id());
        }
        // One file per task, opened for appending: each line is a single write.
        let mut journal = match &self.env.journal_dir {
            Some(dir) => Some(
                Writer::create(dir, ctx.task_id(), &self.env.worker_id)
                    .map_err(TaskError::failed)?,
            ),
            None => None,
        };
        let mut ticks = tokio::time::interval(Duration::from_millis(self.config.every_ms));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut beats = if self.config.checkpoint_every > 0 {
            // The count the task's last owner saved: it goes on from there.
            ctx.last_checkpoint::<u64>()
                .await
                .map_err(TaskError::failed)?
                .unwrap_or(0)
        } else {
            0
        };
        loop {
            tokio::select! {
                // Revoked, or the worker is shutting down: return at once.
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            // The side effect happens only while this worker surely holds the task: the check
            // fails once the task is revoked or the membership may be lost (self-fencing).
            let token = ctx.check_lease()?;
            if let Some(journal) = journal.as_mut() {
                journal
                    .beat(token.generation_id)
                    .map_err(TaskError::failed)?;
            }
            beats += 1;
            if self.config.checkpoint_every > 0 && beats % self.config.checkpoint_every == 0 {
                ctx.save_checkpoint(&beats)
                    .await
                    .map_err(TaskError::failed)?;
            }
            ctx.report_progress(format!("{beats} beats"));
        }
    }
}
