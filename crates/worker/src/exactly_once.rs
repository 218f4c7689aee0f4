//! Exactly-once output: a task's records and its checkpoint in one Kafka transaction (see
//! [`ExactlyOnce`]).

use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::log::{
    LogRecord, TopicLog, TopicSpec, Transaction, TransactionError, TransactionalProducer,
};
use serde::Serialize;

use crate::checkpoint::{CheckpointError, Checkpoints};
use crate::lease::{LeaseError, TaskLease};

/// How long Kafka lets a task's transaction stay open before it aborts it. A new owner's
/// fencing aborts it sooner; this bounds how long an owner that vanished without a
/// successor holds back read-committed readers.
pub(crate) const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// Why exactly-once output failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExactlyOnceError {
    /// The task may no longer own its lease: it must stop writing.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// The transaction failed, or a newer owner fenced this one (kind
    /// [`Fenced`](kroupier_coordinator::log::TransactionErrorKind::Fenced)): stop, the task runs
    /// again where the group assigns it.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// The checkpoint could not be built (serde, size) or the worker has no checkpoint topic.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

/// A task's exactly-once output: its records and its checkpoint committed in one Kafka
/// transaction, older owners fenced.
///
/// A task that writes to Kafka opens its output with
/// [`TaskContext::exactly_once`](crate::TaskContext::exactly_once), first thing in its run.
/// That starts a transactional producer whose id is the same for the task wherever it runs
/// (`<prefix><task id>`, the prefix `kroupier-<group id>-` unless
/// `tasks.transactional.id.prefix` says otherwise), and Kafka fences every older producer of
/// that id: an earlier owner that still runs (paused past its session, cut off by a network
/// partition, removed by an operator) has its open transaction aborted and every later
/// produce and commit refused. The task then writes in transactions: records to its output
/// topics, and, with the commit, its checkpoint to the checkpoint topic. Readers with
/// read-committed isolation (the checkpoint reader does so) see the records and the
/// checkpoint together or not at all, so a task resumed from its last checkpoint neither
/// skips nor repeats output.
///
/// Needs Apache Kafka (2.5 or later; kroupier's embedded coordinator serves no transactions
/// and refuses with an error saying so) and the task store (for the checkpoint topic).
#[derive(Debug)]
pub struct ExactlyOnce {
    producer: TransactionalProducer,
    checkpoints: Arc<Checkpoints>,
    lease: TaskLease,
}

/// A topic an exactly-once task writes to (partition 0), from
/// [`ExactlyOnce::output`].
#[derive(Debug, Clone)]
pub struct OutputTopic {
    log: TopicLog,
}

/// One transaction of an exactly-once task: records go to output topics with
/// [`send`](Self::send); [`commit`](Self::commit) saves the checkpoint with them. Dropped
/// without a commit, it is aborted (by the next [`ExactlyOnce::begin`], in the background when
/// the task's `ExactlyOnce` is dropped, by the next owner's fencing, or by Kafka at the
/// transaction timeout, 60 s): none of its records is ever read.
#[derive(Debug)]
pub struct TaskTransaction<'a> {
    transaction: Transaction<'a>,
    checkpoints: &'a Checkpoints,
    lease: &'a TaskLease,
}

impl ExactlyOnce {
    /// Starts the task's transactional producer, which fences every older producer of the
    /// task.
    pub(crate) async fn open(
        checkpoints: Arc<Checkpoints>,
        lease: TaskLease,
    ) -> Result<Self, ExactlyOnceError> {
        lease.check()?;
        let id = format!("{}{}", checkpoints.transactional_prefix, lease.task_id());
        let producer =
            TransactionalProducer::init(checkpoints.cluster.clone(), id, TRANSACTION_TIMEOUT)
                .await?;
        Ok(ExactlyOnce {
            producer,
            checkpoints,
            lease,
        })
    }

    /// Opens the topic `name` to write to, creating it (one partition, compacted) when
    /// missing. Records are written to partition 0, in the order sent.
    ///
    /// # Errors
    /// The topic's errors (an ACL, an invalid name), as a [`TransactionError`] of kind
    /// [`Log`](kroupier_coordinator::log::TransactionErrorKind::Log).
    pub async fn output(&self, name: &str) -> Result<OutputTopic, ExactlyOnceError> {
        let log = TopicLog::open(self.checkpoints.cluster.clone(), TopicSpec::new(name), true)
            .await
            .map_err(TransactionError::from)?;
        Ok(OutputTopic { log })
    }

    /// Begins a transaction, after checking the task's lease.
    ///
    /// # Errors
    /// [`ExactlyOnceError::Lease`] when the task may have lost its lease;
    /// [`ExactlyOnceError::Transaction`] when a newer owner fenced this one.
    pub async fn begin(&mut self) -> Result<TaskTransaction<'_>, ExactlyOnceError> {
        self.lease.check()?;
        let transaction = self.producer.begin().await?;
        Ok(TaskTransaction {
            transaction,
            checkpoints: &self.checkpoints,
            lease: &self.lease,
        })
    }
}

impl TaskTransaction<'_> {
    /// Sends `records` (key, value) to `topic` in this transaction, in one batch; the offset
    /// of the first. Read-committed readers see them only once the transaction commits.
    ///
    /// # Errors
    /// [`ExactlyOnceError::Transaction`]; after an error the transaction never commits.
    pub async fn send<K, V>(
        &mut self,
        topic: &OutputTopic,
        records: impl IntoIterator<Item = (K, V)>,
    ) -> Result<i64, ExactlyOnceError>
    where
        K: Into<bytes::Bytes>,
        V: Into<bytes::Bytes>,
    {
        let records: Vec<LogRecord> = records
            .into_iter()
            .map(|(key, value)| LogRecord::new(key, value))
            .collect();
        Ok(self.transaction.append(&topic.log, records).await?)
    }

    /// Saves `checkpoint` as the task's checkpoint in this transaction and commits: the
    /// records sent and the checkpoint become visible together. The lease is checked first;
    /// a task that may have lost it aborts instead.
    ///
    /// # Errors
    /// [`ExactlyOnceError::Lease`] (the transaction is aborted); [`ExactlyOnceError::Checkpoint`]
    /// for a state that does not serialize or is too large (aborted too);
    /// [`ExactlyOnceError::Transaction`] when the commit failed or was fenced.
    pub async fn commit<T: Serialize>(mut self, checkpoint: &T) -> Result<(), ExactlyOnceError> {
        if let Err(error) = self.lease.check() {
            let _ = self.transaction.abort().await;
            return Err(error.into());
        }
        // Keyed by the generation the task was granted in, as every checkpoint is.
        let (record, stale) =
            match self
                .checkpoints
                .records(self.lease.task_id(), self.lease.granted(), checkpoint)
            {
                Ok(records) => records,
                Err(error) => {
                    let _ = self.transaction.abort().await;
                    return Err(error.into());
                }
            };
        let mut records = vec![record];
        records.extend(stale);
        self.transaction
            .append(self.checkpoints.log(), records)
            .await?;
        Ok(self.transaction.commit().await?)
    }

    /// Aborts: none of the records sent in this transaction is ever read.
    ///
    /// # Errors
    /// [`ExactlyOnceError::Transaction`] (the next [`ExactlyOnce::begin`] aborts it then).
    pub async fn abort(self) -> Result<(), ExactlyOnceError> {
        Ok(self.transaction.abort().await?)
    }
}
