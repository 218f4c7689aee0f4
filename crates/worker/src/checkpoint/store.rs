//! [`Checkpoints`]: one worker's client of the checkpoint topic — a reader that keeps a
//! [`CheckpointView`] up to date, and a writer that batches the records of all its tasks.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kroupier_coordinator::connection::Cluster;
use kroupier_coordinator::log::{LogError, LogRecord, TopicLog, TopicSpec};
use kroupier_coordinator::membership::FencingToken;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::record::{CheckpointValue, key};
use super::view::CheckpointView;

/// How long one read of the tail waits for new records.
const TAIL_WAIT: Duration = Duration::from_millis(500);
/// The most records one produce carries.
const MAX_BATCH: usize = 500;
/// The largest checkpoint value accepted (Kafka's default record limit is 1 MiB).
pub(crate) const MAX_CHECKPOINT_BYTES: usize = 512 * 1024;

/// Why a checkpoint was not saved or read. Its message says what happened;
/// [`kind`](Self::kind) sorts it for code.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CheckpointError(CheckpointDetail);

/// What kind of [`CheckpointError`] happened, for code that acts on it (the message says the
/// rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckpointErrorKind {
    /// The task may have lost its lease: it must not write.
    Fenced,
    /// The state does not serialize to JSON, or the newest one does not deserialize into the
    /// type asked for.
    Serde,
    /// The serialized state is larger than 512 KiB (Kafka's default record limit is 1 MiB).
    TooLarge,
    /// The checkpoint topic could not be used; the message says how.
    Log,
    /// The produce that carried the checkpoint failed.
    Write,
    /// The worker stopped its checkpoint client (it is shutting down).
    Closed,
    /// This worker has no checkpoint topic configured.
    Disabled,
}

impl CheckpointError {
    /// What kind of error this is.
    pub fn kind(&self) -> CheckpointErrorKind {
        match &self.0 {
            CheckpointDetail::Fenced { .. } => CheckpointErrorKind::Fenced,
            CheckpointDetail::Serde { .. } => CheckpointErrorKind::Serde,
            CheckpointDetail::TooLarge { .. } => CheckpointErrorKind::TooLarge,
            CheckpointDetail::Log(_) => CheckpointErrorKind::Log,
            CheckpointDetail::Write { .. } => CheckpointErrorKind::Write,
            CheckpointDetail::Closed => CheckpointErrorKind::Closed,
            CheckpointDetail::Disabled => CheckpointErrorKind::Disabled,
        }
    }

    unstable_pub! {
        /// The topic log's error, for an error of kind [`Log`](CheckpointErrorKind::Log): its
        /// [`kind`](LogError::kind) says whether the topic is missing or the principal may not use
        /// it.
        pub fn log(&self) -> Option<&LogError> {
            match &self.0 {
                CheckpointDetail::Log(error) => Some(error),
                _ => None,
            }
        }
    }
}

impl From<CheckpointDetail> for CheckpointError {
    fn from(detail: CheckpointDetail) -> Self {
        Self(detail)
    }
}

impl From<LogError> for CheckpointError {
    fn from(error: LogError) -> Self {
        Self(CheckpointDetail::Log(error))
    }
}

/// The error itself, with the fields its message is made of (crate-internal: the checkpoint
/// client constructs it; users see the message and the [`CheckpointErrorKind`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckpointDetail {
    /// The task may have lost its lease: it must not write.
    #[error("task `{task}` may no longer own its lease; checkpoint not written: {reason}")]
    Fenced {
        /// The task.
        task: String,
        /// Why the lease check failed.
        reason: String,
    },
    /// The state does not serialize to JSON, or the newest one does not deserialize into the
    /// type asked for.
    #[error("checkpoint of task `{task}`: {message}")]
    Serde {
        /// The task.
        task: String,
        /// serde's message.
        message: String,
    },
    /// The serialized state is larger than [`MAX_CHECKPOINT_BYTES`].
    #[error("checkpoint of task `{task}` is {bytes} bytes; the limit is {max} bytes")]
    TooLarge {
        /// The task.
        task: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The checkpoint topic could not be used.
    #[error("checkpoint topic: {0}")]
    Log(LogError),
    /// The produce that carried the checkpoint failed.
    #[error("checkpoint not written: {message}")]
    Write {
        /// What the topic log reported.
        message: String,
    },
    /// The worker stopped its checkpoint client (it is shutting down).
    #[error("the checkpoint client has stopped")]
    Closed,
    /// This worker has no checkpoint topic configured.
    #[error("checkpoints are not enabled on this worker (set tasks.store.enabled=true)")]
    Disabled,
}

/// One record to append and where to report its offset.
type Pending = (LogRecord, oneshot::Sender<Result<i64, String>>);

/// A worker's checkpoint client. Cheap to share behind an `Arc`; stops its background tasks
/// when dropped.
#[derive(Debug)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct Checkpoints {
    pub(super) log: TopicLog,
    /// The cluster, for exactly-once tasks' transactional producers.
    pub(crate) cluster: Arc<Cluster>,
    /// What exactly-once tasks' transactional ids start with.
    pub(crate) transactional_prefix: String,
    pub(super) view: Arc<Mutex<CheckpointView>>,
    read_to: watch::Receiver<i64>,
    writes: mpsc::Sender<Pending>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

// `open` and `topic` serve kroupier's command line and tests only (`unstable`).
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub, dead_code))]
impl Checkpoints {
    /// Opens (creating if missing, compacted) the checkpoint topic `topic`, reads it to its
    /// end, and keeps reading it in the background.
    ///
    /// # Errors
    /// `Log` when the topic cannot be created or read (the message names
    /// the ACL or setting to change).
    pub async fn open(
        cluster: Arc<Cluster>,
        topic: impl Into<String>,
    ) -> Result<Self, CheckpointError> {
        let topic = topic.into();
        // No worker's exactly-once tasks write through this client: the topic names them.
        let transactional_prefix = format!("{topic}-");
        Self::open_with_prefix(cluster, topic, transactional_prefix).await
    }

    /// As [`open`](Self::open), for a worker: its exactly-once tasks' transactional ids start
    /// with `transactional_prefix` (`tasks.store.transactional_id_prefix`, resolved by the
    /// worker's config).
    pub(crate) async fn open_with_prefix(
        cluster: Arc<Cluster>,
        topic: String,
        transactional_prefix: String,
    ) -> Result<Self, CheckpointError> {
        let spec = TopicSpec {
            name: topic,
            replication_factor: None,
        };
        let log = TopicLog::open(cluster.clone(), spec, true).await?;
        let mut view = CheckpointView::default();
        let end = log.end_offset().await?;
        while view.offset < end {
            let batch = log.read_committed(view.offset, TAIL_WAIT).await?;
            for record in &batch.records {
                view.apply(record);
            }
            view.offset = view.offset.max(batch.next_offset);
        }
        let (read_to_tx, read_to) = watch::channel(view.offset);
        let view = Arc::new(Mutex::new(view));
        let (writes, queue) = mpsc::channel(4 * MAX_BATCH);
        let tasks = vec![
            tokio::spawn(tail(log.clone(), view.clone(), read_to_tx)),
            tokio::spawn(append(log.clone(), queue)),
        ];
        Ok(Checkpoints {
            log,
            cluster,
            transactional_prefix,
            view,
            read_to,
            writes,
            tasks,
        })
    }

    /// The topic's name.
    pub fn topic(&self) -> &str {
        self.log.topic()
    }

    /// The checkpoint record of `state` for `task_id` under `token`, and the tombstones of the
    /// task's older generations this worker has read: what a save appends.
    pub(crate) fn records<T: Serialize>(
        &self,
        task_id: &str,
        token: &FencingToken,
        state: &T,
    ) -> Result<(LogRecord, Vec<LogRecord>), CheckpointError> {
        let serde_error = |e: serde_json::Error| CheckpointDetail::Serde {
            task: task_id.to_owned(),
            message: e.to_string(),
        };
        let value = CheckpointValue {
            member: token.member_id.to_string(),
            state: serde_json::to_value(state).map_err(serde_error)?,
            reset: false,
        };
        let bytes = serde_json::to_vec(&value).map_err(serde_error)?;
        if bytes.len() > MAX_CHECKPOINT_BYTES {
            return Err(CheckpointDetail::TooLarge {
                task: task_id.to_owned(),
                bytes: bytes.len(),
                max: MAX_CHECKPOINT_BYTES,
            }
            .into());
        }
        let record = LogRecord {
            key: key(task_id, token.generation_id),
            value: Some(bytes.into()),
        };
        let stale = {
            let view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
            view.stale_generations(task_id)
                .into_iter()
                .filter(|g| *g < token.generation_id)
                .map(|generation| LogRecord {
                    key: key(task_id, generation),
                    value: None,
                })
                .collect()
        };
        Ok((record, stale))
    }

    /// The checkpoint topic as a log, for an exactly-once task's transaction.
    pub(crate) fn log(&self) -> &TopicLog {
        &self.log
    }

    /// Saves `state` as `task_id`'s newest checkpoint, written under `token` (the generation
    /// in which this worker was granted the task), and returns the offset it landed at. Then
    /// deletes the keys of older generations of the task.
    ///
    /// Callers check the task's lease just before (see `TaskContext::save_checkpoint`).
    ///
    /// # Errors
    /// `Serde`, `TooLarge`, `Log`.
    pub async fn save<T: Serialize>(
        &self,
        task_id: &str,
        token: &FencingToken,
        state: &T,
    ) -> Result<i64, CheckpointError> {
        let (record, stale) = self.records(task_id, token, state)?;
        let offset = self.write(record).await?;
        // Older owners' records are deleted once this one has landed; a record of theirs
        // that lands later still loses to this one, and is deleted when seen.
        for tombstone in stale {
            self.write(tombstone).await?;
        }
        Ok(offset)
    }

    /// The newest checkpoint of `task_id`, as of now: waits until this worker has read the
    /// topic up to its current end, so a checkpoint written anywhere before the call is seen.
    ///
    /// # Errors
    /// `Serde` when the state does not deserialize into `T`;
    /// `Log` when the end of the topic cannot be learned.
    pub async fn newest<T: DeserializeOwned>(
        &self,
        task_id: &str,
    ) -> Result<Option<T>, CheckpointError> {
        self.read_to_end().await?;
        let state = {
            let view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
            view.newest(task_id).map(|c| c.state.clone())
        };
        match state {
            None => Ok(None),
            Some(state) => T::deserialize(&*state).map(Some).map_err(|e| {
                CheckpointDetail::Serde {
                    task: task_id.to_owned(),
                    message: e.to_string(),
                }
                .into()
            }),
        }
    }

    unstable_pub! {
    /// A copy of what this worker has read of the topic.
    pub fn view(&self) -> CheckpointView {
        self.view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
    }

    /// Waits until this client has read the topic up to its end as of the call.
    pub(super) async fn read_to_end(&self) -> Result<(), CheckpointError> {
        let end = self.log.end_offset().await?;
        let mut read_to = self.read_to.clone();
        read_to
            .wait_for(|offset| *offset >= end)
            .await
            .map_err(|_| CheckpointDetail::Closed)?;
        Ok(())
    }

    /// Queues one record for the appender and waits for its offset.
    pub(super) async fn write(&self, record: LogRecord) -> Result<i64, CheckpointError> {
        let (done, offset) = oneshot::channel();
        self.writes
            .send((record, done))
            .await
            .map_err(|_| CheckpointDetail::Closed)?;
        match offset.await {
            Ok(Ok(offset)) => Ok(offset),
            Ok(Err(message)) => Err(CheckpointDetail::Write { message }.into()),
            Err(_) => Err(CheckpointDetail::Closed.into()),
        }
    }
}

/// Reads the topic for as long as the client lives, publishing how far it has read.
async fn tail(log: TopicLog, view: Arc<Mutex<CheckpointView>>, read_to: watch::Sender<i64>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let from = *read_to.borrow();
        // Read committed: a checkpoint an exactly-once task saved in a transaction counts
        // once the transaction commits, and never if it aborts.
        match log.read_committed(from, TAIL_WAIT).await {
            Ok(batch) => {
                backoff = Duration::from_millis(100);
                let offset = {
                    let mut view = view.lock().unwrap_or_else(PoisonError::into_inner);
                    for record in &batch.records {
                        view.apply(record);
                    }
                    view.offset = view.offset.max(batch.next_offset);
                    view.offset
                };
                read_to.send_replace(offset);
            }
            Err(error) => {
                tracing::warn!(%error, topic = log.topic(), "reading the checkpoint topic failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Appends queued records: whatever queued while the previous produce was in flight goes in
/// the next one, so many tasks checkpointing at once share produces.
async fn append(log: TopicLog, mut queue: mpsc::Receiver<Pending>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let (records, waiters): (Vec<LogRecord>, Vec<_>) = batch.into_iter().unzip();
        match log.append(records).await {
            Ok(base) => {
                for (i, done) in waiters.into_iter().enumerate() {
                    let _ = done.send(Ok(base + i as i64));
                }
            }
            Err(error) => {
                let message = error.to_string();
                for done in waiters {
                    let _ = done.send(Err(message.clone()));
                }
            }
        }
    }
}
