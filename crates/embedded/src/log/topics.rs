//! The topics clients create and their logs, shared by every connection: in memory, or kept
//! in a data directory across restarts.
//!
//! Layout of the data directory:
//!
//! ```text
//! topics.catalogue     one entry per topic created (name, id, configs)
//! <topic>-0.log        partition 0's batches, one entry each, with their offsets
//! ```
//!
//! Both are framed files (see [`frame`](super::frame)): at start every file is read back, a
//! damaged tail is truncated with a warning, and a partition whose file is missing starts
//! empty. Only one coordinator may use a data directory at a time.
//!
//! One lock guards every topic, and file writes happen under it on the task that serves the
//! Produce: appends to the task store and checkpoints are small and rare, and this keeps the
//! file and memory in the same order. One watch counts appends to any topic: a waiting Fetch
//! wakes on every append and looks again, which costs little at the scale of a few hundred
//! waiting readers.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use tokio::sync::watch;
use uuid::Uuid;

use super::batch::{Batch, BatchError};
use super::catalogue::{self, TopicEntry};
use super::error::LogError;
use super::frame::{self, AppendFile};
use super::partition::{Partition, ReadSlice};
use super::spec::NewTopic;

/// The default `cleanup.policy` of a topic created without one (Kafka's default).
pub(crate) const DEFAULT_CLEANUP_POLICY: &str = "delete";

/// The topics and their logs; cheap to clone (shared).
#[derive(Debug, Clone)]
pub(crate) struct Topics {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// Counts appends, so that a Fetch waiting for data wakes when one lands.
    appended: watch::Sender<u64>,
    dir: Option<PathBuf>,
    limits: Limits,
}

/// What the store holds at most (see [`Config`](crate::Config) for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The largest batch a Produce may carry, unless a topic's `max.message.bytes` says
    /// otherwise.
    pub(crate) max_message_bytes: usize,
    /// How many topics may exist.
    pub(crate) max_topics: usize,
}

#[derive(Debug, Default)]
struct State {
    topics: BTreeMap<String, Topic>,
    ids: HashMap<Uuid, String>,
    catalogue: Option<AppendFile>,
}

#[derive(Debug)]
struct Topic {
    entry: TopicEntry,
    partition: Partition,
}

/// A topic as Metadata and CreateTopics describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicInfo {
    /// Its name.
    pub(crate) name: String,
    /// Its id.
    pub(crate) id: Uuid,
    /// The configs it was created with.
    pub(crate) configs: BTreeMap<String, Option<String>>,
}

impl TopicInfo {
    /// `cleanup.policy`, as created or Kafka's default (`delete`).
    pub(crate) fn cleanup_policy(&self) -> &str {
        self.configs
            .get("cleanup.policy")
            .and_then(Option::as_deref)
            .unwrap_or(DEFAULT_CLEANUP_POLICY)
    }
}

/// How a request names a topic: by name, or (Fetch v13+, Produce v13, Metadata v12+) by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopicRef<'a> {
    /// By name.
    Name(&'a str),
    /// By id.
    Id(Uuid),
}

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    /// The offset of the batch's first record.
    pub(crate) base_offset: i64,
    /// The log start offset.
    pub(crate) log_start: i64,
}

/// The file of a topic's partition 0 inside the data directory.
fn partition_file(dir: &Path, topic: &str) -> PathBuf {
    dir.join(format!("{topic}-0.log"))
}

impl Topics {
    /// No topics, kept in memory only.
    pub(crate) fn in_memory(limits: Limits) -> Self {
        Self::with(State::default(), None, limits)
    }

    fn with(state: State, dir: Option<PathBuf>, limits: Limits) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                appended: watch::Sender::new(0),
                dir,
                limits,
            }),
        }
    }

    /// The topics kept in `dir` (created if missing), read back from its files.
    ///
    /// # Errors
    /// When the directory or a file cannot be created, read or truncated. Damaged tails are
    /// not errors: they are truncated with a warning.
    /// Topics read back count against [`Limits::max_topics`] for creating more, but all of them
    /// are served.
    pub(crate) fn open(dir: &Path, limits: Limits) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let catalogue_path = dir.join(catalogue::FILE_NAME);
        let mut entries: Vec<TopicEntry> = Vec::new();
        let len = frame::recover(&catalogue_path, |payload| {
            let entry = TopicEntry::decode(&payload)?;
            if entries
                .iter()
                .any(|e| e.name == entry.name || e.id == entry.id)
            {
                return Err(format!("topic {} recorded twice", entry.name));
            }
            entries.push(entry);
            Ok(())
        })?;
        let mut state = State {
            catalogue: Some(AppendFile::open(&catalogue_path, len, false)?),
            ..State::default()
        };
        let mut records = 0;
        for entry in entries {
            let partition = Partition::open(&partition_file(dir, &entry.name), false)?;
            records += partition.end();
            state.ids.insert(entry.id, entry.name.clone());
            state
                .topics
                .insert(entry.name.clone(), Topic { entry, partition });
        }
        warn_orphans(dir, &state);
        tracing::info!(
            dir = %dir.display(),
            topics = state.topics.len(),
            offsets = records,
            "topics read back from the data directory"
        );
        Ok(Self::with(state, Some(dir.to_path_buf()), limits))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates `topic` (or, with `validate_only`, only checks that it could be created).
    ///
    /// # Errors
    /// The checks of [`NewTopic::validate`], [`LogError::TopicExists`],
    /// [`LogError::TooManyTopics`], or [`LogError::Storage`] when the data directory refuses the
    /// new files.
    pub(crate) fn create(
        &self,
        topic: &NewTopic,
        node_id: i32,
        validate_only: bool,
    ) -> Result<TopicInfo, LogError> {
        let configs = topic.validate(node_id)?;
        let mut state = self.lock();
        if state.topics.contains_key(&topic.name) {
            return Err(LogError::TopicExists(topic.name.clone()));
        }
        if state.topics.len() >= self.inner.limits.max_topics {
            return Err(LogError::TooManyTopics {
                max: self.inner.limits.max_topics,
            });
        }
        let mut id = Uuid::from_u128(rand::random());
        while id.is_nil() || state.ids.contains_key(&id) {
            id = Uuid::from_u128(rand::random());
        }
        let entry = TopicEntry {
            name: topic.name.clone(),
            id,
            configs,
        };
        let info = info(&entry);
        if validate_only {
            // Nothing was created, so there is no id to report (Kafka answers the zero id).
            return Ok(TopicInfo {
                id: Uuid::nil(),
                ..info
            });
        }
        let storage = |e: io::Error| LogError::Storage(format!("creating {}: {e}", topic.name));
        let partition = match &self.inner.dir {
            None => Partition::in_memory(),
            Some(dir) => {
                Partition::open(&partition_file(dir, &topic.name), true).map_err(storage)?
            }
        };
        if let Some(catalogue) = &mut state.catalogue {
            catalogue.append(&entry.encode()).map_err(storage)?;
        }
        state.ids.insert(id, topic.name.clone());
        state
            .topics
            .insert(topic.name.clone(), Topic { entry, partition });
        tracing::info!(topic = %topic.name, %id, "topic created");
        Ok(info)
    }

    /// The topic `topic` names.
    ///
    /// # Errors
    /// [`LogError::UnknownTopic`] or [`LogError::UnknownTopicId`].
    pub(crate) fn topic(&self, topic: TopicRef<'_>) -> Result<TopicInfo, LogError> {
        let state = self.lock();
        find(&state, topic).map(|t| info(&t.entry))
    }

    /// Every topic, by name.
    pub(crate) fn list(&self) -> Vec<TopicInfo> {
        self.lock()
            .topics
            .values()
            .map(|t| info(&t.entry))
            .collect()
    }

    /// Appends the one batch of a Produce partition's `records` to `topic`'s `partition`.
    ///
    /// # Errors
    /// [`LogError::Corrupt`] or [`LogError::InvalidRecord`] for a batch refused as it is,
    /// [`LogError::TooLarge`] over `max.message.bytes`, unknown topic or partition,
    /// [`LogError::Storage`] when the data directory fails the write.
    pub(crate) fn append(
        &self,
        topic: TopicRef<'_>,
        partition: i32,
        records: Option<Bytes>,
    ) -> Result<Appended, LogError> {
        let appended = {
            let mut state = self.lock();
            let t = find_mut(&mut state, topic)?;
            check_partition(&t.entry, partition)?;
            let records = records.ok_or_else(|| {
                LogError::InvalidRecord("a Produce partition without records".to_string())
            })?;
            let max = max_message_bytes(&t.entry, self.inner.limits.max_message_bytes);
            if records.len() > max {
                return Err(LogError::TooLarge {
                    bytes: records.len(),
                    max,
                });
            }
            let batch = Batch::from_produce(records).map_err(|e| match e {
                BatchError::Corrupt(_) => LogError::Corrupt(e.to_string()),
                BatchError::Refused(_) => LogError::InvalidRecord(e.to_string()),
            })?;
            let base_offset = t.partition.append(&batch)?;
            Appended {
                base_offset,
                log_start: t.partition.log_start(),
            }
        };
        self.inner.appended.send_modify(|n| *n = n.wrapping_add(1));
        Ok(appended)
    }

    /// Batches of `topic`'s `partition` from the one holding `from`, up to `max_bytes` but at
    /// least one; with the topic's name (a Fetch may name it by id).
    ///
    /// # Errors
    /// Unknown topic or partition, [`LogError::OffsetOutOfRange`].
    pub(crate) fn read(
        &self,
        topic: TopicRef<'_>,
        partition: i32,
        from: i64,
        max_bytes: usize,
    ) -> Result<ReadSlice, LogError> {
        let state = self.lock();
        let t = find(&state, topic)?;
        check_partition(&t.entry, partition)?;
        t.partition.read(from, max_bytes)
    }

    /// The log start and end offsets of `topic`'s `partition`.
    ///
    /// # Errors
    /// Unknown topic or partition.
    pub(crate) fn offsets(
        &self,
        topic: TopicRef<'_>,
        partition: i32,
    ) -> Result<(i64, i64), LogError> {
        let state = self.lock();
        let t = find(&state, topic)?;
        check_partition(&t.entry, partition)?;
        Ok((t.partition.log_start(), t.partition.end()))
    }

    /// The largest batch a Produce may carry, unless a topic's `max.message.bytes` says
    /// otherwise.
    pub(crate) fn max_message_bytes(&self) -> usize {
        self.inner.limits.max_message_bytes
    }

    /// A receiver that changes whenever a batch is appended to any topic.
    pub(crate) fn appends(&self) -> watch::Receiver<u64> {
        self.inner.appended.subscribe()
    }
}

/// Warns about partition files no catalogue entry names: a topic whose creation was cut short
/// by a crash before its catalogue entry was written (it was never acknowledged).
fn warn_orphans(dir: &Path, state: &State) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(topic) = name.to_str().and_then(|n| n.strip_suffix("-0.log")) else {
            continue;
        };
        if !state.topics.contains_key(topic) {
            tracing::warn!(
                file = %entry.path().display(),
                "a partition file of a topic the catalogue does not know (its creation was not \
                 completed); it is ignored, and emptied if the topic is created again"
            );
        }
    }
}

fn info(entry: &TopicEntry) -> TopicInfo {
    TopicInfo {
        name: entry.name.clone(),
        id: entry.id,
        configs: entry.configs.clone(),
    }
}

fn find<'s>(state: &'s State, topic: TopicRef<'_>) -> Result<&'s Topic, LogError> {
    let name = match topic {
        TopicRef::Name(name) => name,
        TopicRef::Id(id) => state
            .ids
            .get(&id)
            .map(String::as_str)
            .ok_or_else(|| LogError::UnknownTopicId(id.to_string()))?,
    };
    state
        .topics
        .get(name)
        .ok_or_else(|| LogError::UnknownTopic(name.to_string()))
}

fn find_mut<'s>(state: &'s mut State, topic: TopicRef<'_>) -> Result<&'s mut Topic, LogError> {
    let name = match topic {
        TopicRef::Name(name) => name.to_string(),
        TopicRef::Id(id) => state
            .ids
            .get(&id)
            .cloned()
            .ok_or_else(|| LogError::UnknownTopicId(id.to_string()))?,
    };
    state
        .topics
        .get_mut(&name)
        .ok_or(LogError::UnknownTopic(name))
}

fn check_partition(entry: &TopicEntry, partition: i32) -> Result<(), LogError> {
    if partition == 0 {
        Ok(())
    } else {
        Err(LogError::UnknownPartition {
            topic: entry.name.clone(),
            partition,
        })
    }
}

/// The topic's `max.message.bytes` if it set one, else the coordinator's.
fn max_message_bytes(entry: &TopicEntry, default: usize) -> usize {
    entry
        .configs
        .get("max.message.bytes")
        .and_then(Option::as_deref)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(default)
}
