//! The `numbers` task of the exactly-once example: a source that writes numbered records to a
//! Kafka topic, each transaction with its position as the task's checkpoint, so that a
//! read-committed reader sees every number exactly once, in order, whichever worker wrote it
//! and however often the task moved.

use std::time::Duration;

use kroupier::{Kind, Task, TaskContext, TaskError};
use serde::{Deserialize, Serialize};

/// The `numbers` kind, exactly-once: before each run of a `numbers` task, the worker fences
/// every earlier owner of the task (Kafka's InitProducerId for its transactional id).
pub const NUMBERS: Kind<NumbersConfig> = Kind::new("numbers").exactly_once();

/// One `numbers` task's config, as written in the catalogue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumbersConfig {
    /// The topic the numbers go to (created with one partition when missing).
    pub topic: String,
    /// How many numbers one transaction carries.
    pub per_commit: u64,
    /// How often the task commits, in milliseconds.
    pub every_ms: u64,
    /// Stop writing after this many numbers (the task then idles until revoked); `None`:
    /// never.
    #[serde(default)]
    pub until: Option<u64>,
}

/// A task that writes `<task id> <n>` (key `<task id>-<n>`, unique, so that a compacted topic
/// keeps them all) for n = 0, 1, 2, ... in transactions.
#[derive(Debug)]
pub struct Numbers(pub NumbersConfig);

impl Task for Numbers {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        // The producer the worker fenced the earlier owners with; then where they got to.
        let mut output = ctx.exactly_once().await?;
        let topic = output.output(&self.0.topic).await?;
        let mut next = ctx
            .last_checkpoint::<u64>()
            .await
            .map_err(TaskError::failed)?
            .unwrap_or(0);
        let mut ticks = tokio::time::interval(Duration::from_millis(self.0.every_ms.max(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let end = match self.0.until {
                Some(until) if next >= until => continue,
                Some(until) => (next + self.0.per_commit).min(until),
                None => next + self.0.per_commit,
            };
            let task = ctx.task_id().to_owned();
            let mut transaction = output.begin().await?;
            transaction
                .send(
                    &topic,
                    (next..end).map(|n| (format!("{task}-{n}"), format!("{task} {n}"))),
                )
                .await?;
            // The records and the position the next owner resumes from, in one commit.
            transaction.commit(&end).await?;
            next = end;
        }
    }
}
