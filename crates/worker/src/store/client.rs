//! [`TaskStore`]: reads and writes a group's task store topic.
//!
//! Writes append one record; they never wait for a worker. The read-modify-write operations
//! ([`set_state`](TaskStore::set_state), [`restart`](TaskStore::restart),
//! [`delete`](TaskStore::delete)) first read the topic to its end, so they act on every write
//! that landed before they started. Two writers racing on one task: the last record to land
//! wins, as for any compacted topic (a restart racing another may count once).
//!
//! [`TaskStore::tail`] keeps a [`StoreView`] up to date in the background for the worker loop.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kroupier_coordinator::backoff::Backoff;
use kroupier_coordinator::connection::Cluster;
use kroupier_coordinator::log::{LogRecord, ReadBatch, TopicLog, TopicSpec};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::lineage::claim_key;
use super::record::{DesiredState, MAX_VALUE_BYTES, TaskRecord, validate_id};
use super::view::StoreView;
use super::{StoreDetail, StoreError};

/// How long a tail's read waits for new records at the broker (Fetch's `max_wait_ms`).
pub(crate) const TAIL_WAIT: Duration = Duration::from_millis(500);

/// How long [`TaskStore::read_all`] waits for records below the end offset it was told
/// before it gives up with `Incomplete`.
const CATCH_UP_STALL: Duration = Duration::from_secs(10);

/// A tail's backoff between failed reads.
const TAIL_BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// A read that returns at once with nothing is repeated no sooner than this (a broker that
/// does not honour the long poll must not make the tail spin).
const EMPTY_READ_PAUSE: Duration = Duration::from_millis(100);

/// A client of one group's task store topic. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TaskStore {
    log: TopicLog,
}

impl TaskStore {
    /// Opens the store in `topic`; when it is missing and `create` is true, creates it
    /// (compacted, one partition, the broker's default replication factor).
    ///
    /// # Errors
    /// `Log`: the topic is missing (and `create` is false), or the principal may
    /// not describe or create it, or no broker answered.
    pub async fn open(
        cluster: Arc<Cluster>,
        topic: impl Into<String>,
        create: bool,
    ) -> Result<Self, StoreError> {
        let spec = TopicSpec {
            name: topic.into(),
            replication_factor: None,
        };
        Ok(Self::from_log(TopicLog::open(cluster, spec, create).await?))
    }

    /// The store over a topic opened already (e.g. created with a replication factor of its
    /// own).
    pub(crate) fn from_log(log: TopicLog) -> Self {
        TaskStore { log }
    }

    /// The store's topic.
    pub fn topic(&self) -> &str {
        self.log.topic()
    }

    /// Every stored task, read up to the topic's end offset (as of the call).
    ///
    /// # Errors
    /// `Log` if a read fails; `Incomplete` if records below the
    /// end offset do not come.
    pub async fn read_all(&self) -> Result<StoreView, StoreError> {
        let mut view = StoreView::new();
        self.catch_up(&mut view).await?;
        Ok(view)
    }

    /// Reads from `view`'s offset up to the topic's end offset (as of the call) into `view`.
    ///
    /// # Errors
    /// As [`read_all`](Self::read_all).
    pub(crate) async fn catch_up(&self, view: &mut StoreView) -> Result<(), StoreError> {
        let end = self.log.end_offset().await?;
        if end < view.offset {
            reset(view, self.topic(), end);
        }
        let mut stalled_since = None;
        while view.offset < end {
            let from = view.offset;
            let wait = if stalled_since.is_some() {
                EMPTY_READ_PAUSE
            } else {
                Duration::ZERO
            };
            let batch = self.log.read(from, wait).await?;
            apply(view, batch, self.topic());
            if view.offset != from {
                stalled_since = None;
                continue;
            }
            let since = *stalled_since.get_or_insert_with(tokio::time::Instant::now);
            if since.elapsed() >= CATCH_UP_STALL {
                return Err(StoreDetail::Incomplete {
                    topic: self.topic().to_owned(),
                    offset: from,
                    end,
                }
                .into());
            }
        }
        Ok(())
    }

    /// Stores `record` as task `id` (adding or replacing it) and returns its version: the
    /// offset the record landed at.
    ///
    /// # Errors
    /// `InvalidId`, `InvalidRecord` or `TooLarge`
    /// before anything is written; `Log` if the write fails.
    pub async fn put(&self, id: &str, record: TaskRecord) -> Result<i64, StoreError> {
        let value = record.encode(id)?;
        self.append(id, Some(value)).await
    }

    /// Stores many tasks at once (importing a catalogue, seeding a large store) and returns
    /// their versions, in order. Every record is checked before anything is written; records
    /// then go in batches of at most [`MAX_VALUE_BYTES`] of keys and values, so each batch fits
    /// a broker's default `max.message.bytes`. Batches land in order; if one fails, the
    /// batches before it stay written (put them again: a put is idempotent).
    ///
    /// # Errors
    /// As [`put`](Self::put), for the first task at fault.
    pub async fn put_all(
        &self,
        tasks: impl IntoIterator<Item = (String, TaskRecord)>,
    ) -> Result<Vec<i64>, StoreError> {
        let mut records = Vec::new();
        for (id, record) in tasks {
            let value = record.encode(&id)?;
            records.push(LogRecord {
                key: Bytes::from(id),
                value: Some(value),
            });
        }
        self.append_batched(records).await
    }

    /// Appends `records` in order, in batches of at most [`MAX_VALUE_BYTES`] of keys and
    /// values, and returns their offsets, in order.
    pub(crate) async fn append_batched(
        &self,
        records: Vec<LogRecord>,
    ) -> Result<Vec<i64>, StoreError> {
        let mut batches = Vec::new();
        let mut current = Vec::new();
        let mut current_bytes = 0;
        for record in records {
            let bytes = record.key.len() + record.value.as_ref().map_or(0, Bytes::len);
            if !current.is_empty() && current_bytes + bytes > MAX_VALUE_BYTES {
                batches.push(std::mem::take(&mut current));
                current_bytes = 0;
            }
            current_bytes += bytes;
            current.push(record);
        }
        if !current.is_empty() {
            batches.push(current);
        }
        let mut versions = Vec::with_capacity(batches.iter().map(Vec::len).sum::<usize>());
        for batch in batches {
            let count = batch.len() as i64;
            let first = self.log.append(batch).await?;
            versions.extend(first..first + count);
        }
        Ok(versions)
    }

    /// Deletes task `id` (writes a tombstone) and returns the tombstone's offset. A task whose
    /// latest record is unreadable can be deleted too. A generator is deleted with every task
    /// it declared (and theirs, for children that generate), which are tombstoned first.
    ///
    /// # Errors
    /// `NotFound` if the store does not hold the task; as [`put`](Self::put)
    /// otherwise.
    pub async fn delete(&self, id: &str) -> Result<i64, StoreError> {
        validate_id(id)?;
        let view = self.read_all().await?;
        if !view.tasks.contains_key(id) && !view.invalid.contains_key(id) {
            return Err(self.not_found(id));
        }
        // A generator's children, theirs in turn, their markers and claims go first, in one
        // produce where they fit: its children never outlive it in the store.
        let mut records: Vec<LogRecord> = descendants(&view, id)
            .into_iter()
            .map(|key| LogRecord { key, value: None })
            .collect();
        records.push(LogRecord {
            key: Bytes::copy_from_slice(id.as_bytes()),
            value: None,
        });
        let offsets = self.append_batched(records).await?;
        Ok(offsets.last().copied().unwrap_or_default())
    }

    /// Sets task `id` running or paused and returns its version. A task already in `state`
    /// is not written again: its current version is returned.
    ///
    /// # Errors
    /// `NotFound` if the store does not hold the task,
    /// `Unreadable` if its latest record is not a task record; as
    /// [`put`](Self::put) otherwise.
    pub async fn set_state(&self, id: &str, state: DesiredState) -> Result<i64, StoreError> {
        let (mut record, version) = self.current(id).await?;
        if record.state == state {
            return Ok(version);
        }
        record.state = state;
        self.put(id, record).await
    }

    /// Asks the owner to restart task `id` (its `restart` count goes up by one) and returns
    /// the new version.
    ///
    /// # Errors
    /// As [`set_state`](Self::set_state).
    pub async fn restart(&self, id: &str) -> Result<i64, StoreError> {
        let (mut record, _) = self.current(id).await?;
        record.restart = record.restart.wrapping_add(1);
        self.put(id, record).await
    }

    unstable_pub! {
        /// Starts reading on from `from` in the background (a tokio task, long polls of
        /// 500 ms); the returned [`StoreTail`] sees a new view each time the offset
        /// advances. Read errors are logged and retried with backoff. The task ends when the
        /// [`StoreTail`] is dropped.
        ///
        /// # Panics
        /// Outside a tokio runtime.
        pub fn tail(&self, from: StoreView) -> StoreTail {
            let (sender, receiver) = watch::channel(Arc::new(from));
            let task = tokio::spawn(follow(self.log.clone(), sender));
            StoreTail { receiver, task }
        }
    }

    /// The task's latest record and version, read to the end.
    async fn current(&self, id: &str) -> Result<(TaskRecord, i64), StoreError> {
        validate_id(id)?;
        let mut view = self.read_all().await?;
        if let Some(task) = view.tasks.remove(id) {
            return Ok((task.record, task.version));
        }
        match view.invalid.remove(id) {
            Some(invalid) => Err(StoreDetail::Unreadable {
                id: id.to_owned(),
                topic: self.topic().to_owned(),
                offset: invalid.offset,
                reason: invalid.reason,
            }
            .into()),
            None => Err(self.not_found(id)),
        }
    }

    async fn append(&self, id: &str, value: Option<Bytes>) -> Result<i64, StoreError> {
        let record = LogRecord {
            key: Bytes::copy_from_slice(id.as_bytes()),
            value,
        };
        Ok(self.log.append(vec![record]).await?)
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreDetail::NotFound {
            id: id.to_owned(),
            topic: self.topic().to_owned(),
        }
        .into()
    }
}

/// The keys to tombstone with generator `id`: its children (and theirs, for children that
/// generate), the removal markers and ignored writes they left, and their claims.
fn descendants(view: &StoreView, id: &str) -> Vec<Bytes> {
    let lineage = &view.lineage;
    let mut generators = vec![id.to_owned()];
    let mut keys = Vec::new();
    let mut seen = std::collections::BTreeSet::from([id.to_owned()]);
    while let Some(generator) = generators.pop() {
        let of = |by: &super::GeneratedBy| by.generator == generator;
        let children = view.children_of(&generator).map(|t| t.id.clone());
        let removed = lineage.removed.iter().filter(|(_, by)| of(by));
        let fenced = lineage.fenced.iter().filter(|(_, f)| of(&f.by));
        let fenced = fenced.filter(|(key, _)| !view.tasks.contains_key(*key));
        let ids: Vec<String> = children
            .chain(removed.map(|(key, _)| key.clone()))
            .chain(fenced.map(|(key, _)| key.clone()))
            .collect();
        for child in ids {
            if seen.insert(child.clone()) {
                keys.push(Bytes::from(child.clone()));
                generators.push(child);
            }
        }
        for generation in lineage.claims.get(&generator).into_iter().flatten() {
            keys.push(claim_key(&generator, *generation));
        }
    }
    keys
}

/// A view of the store that a background task keeps up to date. Dropping it stops the task.
#[derive(Debug)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct StoreTail {
    /// The latest view; changes each time the offset advances. A clone outlives the tail but
    /// sees no change after it is dropped.
    pub(crate) receiver: watch::Receiver<Arc<StoreView>>,
    task: JoinHandle<()>,
}

impl StoreTail {
    unstable_pub! {
        /// The channel the latest view travels on (for tests that watch every change).
        pub fn receiver(&self) -> &watch::Receiver<Arc<StoreView>> {
            &self.receiver
        }
    }

    unstable_pub! {
        /// The latest view.
        pub fn view(&self) -> Arc<StoreView> {
            self.receiver.borrow().clone()
        }
    }

    unstable_pub! {
        /// Waits until the view has read every record below `offset` (e.g. the version a `put`
        /// returned plus one) and returns it.
        pub async fn wait_for(&mut self, offset: i64) -> Arc<StoreView> {
            loop {
                let view = self.receiver.borrow_and_update().clone();
                if view.offset >= offset {
                    return view;
                }
                // The sender lives in the task, which only ends when `self` drops: never Err here.
                if self.receiver.changed().await.is_err() {
                    return view;
                }
            }
        }
    }
}

impl Drop for StoreTail {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The tail's loop: read, apply, publish when the offset moved; back off on errors.
async fn follow(log: TopicLog, sender: watch::Sender<Arc<StoreView>>) {
    let mut backoff = Backoff::new(TAIL_BACKOFF.0, TAIL_BACKOFF.1);
    loop {
        let from = sender.borrow().offset;
        let started = tokio::time::Instant::now();
        match log.read(from, TAIL_WAIT).await {
            Ok(batch) => {
                backoff.reset();
                let moved = sender.send_if_modified(|view| {
                    if batch.records.is_empty() && batch.next_offset == view.offset {
                        return false;
                    }
                    apply(Arc::make_mut(view), batch, log.topic());
                    true
                });
                if !moved && started.elapsed() < EMPTY_READ_PAUSE {
                    tokio::time::sleep(EMPTY_READ_PAUSE).await;
                }
            }
            Err(error) => {
                let delay = backoff.next_delay();
                tracing::warn!(
                    topic = log.topic(),
                    offset = from,
                    %error,
                    retry_in_ms = delay.as_millis() as u64,
                    "reading the task store failed"
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Applies one read to `view`. A read that went back before the view's offset means the
/// topic was recreated or truncated (the log restarts from its start offset): the view starts
/// over from what the topic holds now.
fn apply(view: &mut StoreView, batch: ReadBatch, topic: &str) {
    let first = batch
        .records
        .first()
        .map_or(batch.next_offset, |r| r.offset);
    if first < view.offset {
        reset(view, topic, first);
    }
    for record in batch.records {
        view.apply(record);
    }
    view.advance_to(batch.next_offset);
}

fn reset(view: &mut StoreView, topic: &str, offset: i64) {
    tracing::warn!(
        topic,
        offset = view.offset,
        now = offset,
        "the task store topic ends before what was read (recreated or truncated?): reading it again from its start"
    );
    *view = StoreView::new();
}

#[cfg(test)]
mod tests {
    use kroupier_coordinator::log::ReadRecord;

    use super::*;

    fn put(offset: i64, id: &str) -> ReadRecord {
        ReadRecord {
            offset,
            key: Bytes::copy_from_slice(id.as_bytes()),
            value: Some(Bytes::from_static(br#"{"kind":"beat"}"#)),
        }
    }

    fn batch(records: Vec<ReadRecord>, next_offset: i64) -> ReadBatch {
        ReadBatch {
            records,
            next_offset,
            end_offset: next_offset,
        }
    }

    #[test]
    fn a_read_moves_the_offset_past_compacted_records() {
        let mut view = StoreView::new();
        apply(&mut view, batch(vec![put(3, "a"), put(7, "b")], 8), "t");
        assert_eq!(view.offset, 8);
        assert_eq!(view.tasks["b"].version, 7);
        // Nothing new: a read that returns `from` changes nothing.
        let before = view.clone();
        apply(&mut view, batch(Vec::new(), 8), "t");
        assert_eq!(view, before);
        // A batch whose last records were compacted away still moves the offset on.
        apply(&mut view, batch(vec![put(9, "c")], 12), "t");
        assert_eq!(view.offset, 12);
    }

    #[test]
    fn a_topic_that_went_back_is_read_again_from_its_start() {
        let mut view = StoreView::new();
        apply(&mut view, batch(vec![put(0, "a"), put(1, "b")], 10), "t");
        // The topic was recreated: the read restarted from its start with other records.
        apply(&mut view, batch(vec![put(0, "c")], 1), "t");
        assert_eq!(view.offset, 1);
        assert_eq!(view.tasks.keys().collect::<Vec<_>>(), ["c"]);
        // ... or it is empty now.
        apply(&mut view, batch(Vec::new(), 0), "t");
        assert_eq!(view, StoreView::new());
    }
}
