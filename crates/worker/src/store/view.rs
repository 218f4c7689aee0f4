//! The store as a reader sees it: every task's latest record, as of an offset.
//!
//! A view is built by applying the topic's records in offset order. The rule is Kafka's own
//! compaction rule, so a view read from a compacted topic equals one read before compaction:
//! the latest record per key wins, a tombstone deletes. A task's version is the offset its
//! latest record landed at, unique and growing, so "has this task changed" is one comparison.
//!
//! Applying is idempotent: a record below [`StoreView::offset`] has been applied already and
//! is ignored, so a reader that re-reads from an older offset (after a retry, or a tailer
//! restarted from a snapshot) ends with the same view.
//!
//! A record that is not a task record (see [`record`](super::record)) does not stop the reader:
//! its task leaves [`StoreView::tasks`] (its latest record is not runnable) and shows in
//! [`StoreView::invalid`] with the reason, until a valid record or a tombstone replaces it.
//!
//! Generators' records (claims and removal markers, see [generated tasks](super#generated-tasks)) are
//! applied too, and one rule comes on top of the last write: a task record or removal marker
//! written by a generator under a generation older than the newest claim of that generator is
//! ignored (the module guide of [`store`](super) argues why).

use std::collections::BTreeMap;

use kroupier_coordinator::log::ReadRecord;

use super::lineage::{Fenced, Lineage, RemovedValue, parse_claim_key};
use super::record::{GeneratedBy, TaskRecord, validate_id};
use crate::catalogue::TaskSpec;

/// A task as stored, with its version.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    /// The task id (the record's key).
    pub id: String,
    /// Its latest record.
    pub record: TaskRecord,
    /// The offset that record landed at.
    pub version: i64,
}

impl StoredTask {
    /// The task's catalogue entry (desired state and restart apart).
    pub fn to_spec(&self) -> TaskSpec {
        self.record.to_spec(&self.id)
    }
}

/// A record a reader skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct InvalidRecord {
    /// Its offset.
    pub offset: i64,
    /// Why it is not a task record.
    pub reason: String,
}

/// Every task's latest record, as of [`offset`](Self::offset).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreView {
    /// Every record below this offset has been read (0: nothing read yet).
    pub offset: i64,
    /// The stored tasks by id.
    pub tasks: BTreeMap<String, StoredTask>,
    /// Tasks whose latest record is not a task record, by id (a key that is not UTF-8 shows
    /// with its bytes replaced as by [`String::from_utf8_lossy`]). The status API and the
    /// worker's log report them.
    pub(crate) invalid: BTreeMap<String, InvalidRecord>,
    /// What the store holds of generators: claims, removed children, ignored writes.
    pub(crate) lineage: Lineage,
}

impl StoreView {
    unstable_pub! {
        /// Tasks whose latest record is not a task record, by id (for kroupier's tests).
        pub fn invalid(&self) -> &BTreeMap<String, InvalidRecord> {
            &self.invalid
        }
    }

    unstable_pub! {
    /// An empty view at offset 0.
    pub fn new() -> Self {
        Self::default()
    }
    }

    /// Applies one record read from the topic; ignored when its offset is below
    /// [`offset`](Self::offset). Records must come in offset order.
    pub(crate) fn apply(&mut self, record: ReadRecord) {
        self.apply_parts(record.offset, &record.key, record.value.as_deref());
    }

    unstable_pub! {
    /// Applies the record at `offset` (a `value` of `None` is a tombstone); ignored when
    /// `offset` is below [`offset`](Self::offset). Records must come in offset order.
    pub fn apply_parts(&mut self, offset: i64, key: &[u8], value: Option<&[u8]>) {
        if offset < self.offset {
            return;
        }
        self.offset = offset + 1;
        if let Some((generator, generation)) = parse_claim_key(key) {
            self.lineage
                .apply_claim(generator, generation, value.is_some());
            return;
        }
        let id = match std::str::from_utf8(key) {
            Ok(id) => id,
            Err(_) => {
                let id = String::from_utf8_lossy(key).into_owned();
                return self.skip(id, offset, value, "its key is not UTF-8".to_owned());
            }
        };
        if let Err(error) = validate_id(id) {
            let reason = format!("its key is not a task id: {error}");
            return self.skip(id.to_owned(), offset, value, reason);
        }
        let Some(value) = value else {
            self.tasks.remove(id);
            self.invalid.remove(id);
            self.lineage.heeded(id);
            return;
        };
        match TaskRecord::decode(value) {
            Ok(record) => {
                if let Some(by) = &record.generated_by
                    && self.fence(id, offset, by)
                {
                    return;
                }
                self.invalid.remove(id);
                self.lineage.heeded(id);
                let task = StoredTask {
                    id: id.to_owned(),
                    record,
                    version: offset,
                };
                self.tasks.insert(id.to_owned(), task);
            }
            Err(reason) => {
                if let Some(by) = RemovedValue::decode(value) {
                    if self.fence(id, offset, &by) {
                        return;
                    }
                    self.tasks.remove(id);
                    self.invalid.remove(id);
                    self.lineage.heeded(id);
                    self.lineage.removed.insert(id.to_owned(), by);
                    return;
                }
                self.tasks.remove(id);
                self.lineage.heeded(id);
                self.skip(id.to_owned(), offset, Some(value), reason);
            }
        }
    }
    }

    /// Whether the write at `offset` to `id` comes from an older owner of its generator than
    /// the newest claim; if so it is ignored, and kept in the lineage for the generator's
    /// current owner to overwrite.
    fn fence(&mut self, id: &str, offset: i64, by: &GeneratedBy) -> bool {
        if !self.lineage.fences(by) {
            return false;
        }
        tracing::warn!(
            task = id,
            offset,
            generator = %by.generator,
            generation = by.generation,
            newest = ?self.lineage.newest_claim(&by.generator),
            "ignored a write of a generator's older owner (a zombie's late write)"
        );
        let fenced = Fenced {
            offset,
            by: by.clone(),
        };
        self.lineage.fenced.insert(id.to_owned(), fenced);
        true
    }

    /// The tasks `generator` declared, as the view holds them.
    pub(crate) fn children_of<'a>(
        &'a self,
        generator: &'a str,
    ) -> impl Iterator<Item = &'a StoredTask> + 'a {
        self.tasks.values().filter(move |task| {
            task.record
                .generated_by
                .as_ref()
                .is_some_and(|by| by.generator == generator)
        })
    }

    /// Records that a read reached `next_offset` (past records compaction removed, too).
    /// Never moves the offset back.
    pub(crate) fn advance_to(&mut self, next_offset: i64) {
        self.offset = self.offset.max(next_offset);
    }

    /// A record that is not a task record: warned about once (it is applied once), kept in
    /// [`invalid`](Self::invalid); a tombstone under a bad key just clears it.
    fn skip(&mut self, id: String, offset: i64, value: Option<&[u8]>, reason: String) {
        if value.is_none() {
            self.invalid.remove(&id);
            return;
        }
        tracing::warn!(task = %id, offset, %reason, "task store record skipped");
        self.invalid.insert(id, InvalidRecord { offset, reason });
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const BEAT: &[u8] = br#"{"kind":"beat","config":{"n":1}}"#;

    #[test]
    fn puts_replace_and_tombstones_delete() {
        let mut view = StoreView::new();
        view.apply_parts(0, b"a", Some(BEAT));
        view.apply_parts(1, b"b", Some(BEAT));
        view.apply_parts(2, b"a", Some(br#"{"kind":"beat","state":"paused"}"#));
        view.apply_parts(3, b"b", None);
        assert_eq!(view.offset, 4);
        assert_eq!(view.tasks.keys().collect::<Vec<_>>(), ["a"]);
        let a = view.tasks.get("a").unwrap();
        assert_eq!(a.version, 2);
        assert_eq!(a.record.state, super::super::DesiredState::Paused);
        assert_eq!(a.to_spec().kind, "beat");
    }

    #[test]
    fn re_reading_older_records_changes_nothing() {
        let mut view = StoreView::new();
        view.apply_parts(5, b"a", Some(BEAT));
        view.apply_parts(6, b"a", None);
        let before = view.clone();
        view.apply_parts(5, b"a", Some(BEAT));
        assert_eq!(view, before);
        view.advance_to(3);
        assert_eq!(view.offset, 7);
        view.advance_to(10);
        assert_eq!(view.offset, 10);
    }

    #[test]
    fn skips_and_reports_records_that_are_not_task_records() {
        let mut view = StoreView::new();
        view.apply_parts(0, b"a", Some(BEAT));
        view.apply_parts(1, b"a", Some(b"{oops"));
        view.apply_parts(2, b"\xff", Some(BEAT));
        view.apply_parts(3, b"", Some(BEAT));
        assert!(view.tasks.is_empty());
        assert_eq!(view.invalid["a"].offset, 1);
        assert!(view.invalid["a"].reason.contains("not a task record"));
        assert!(view.invalid["\u{fffd}"].reason.contains("not UTF-8"));
        assert!(view.invalid[""].reason.contains("empty"));
        // A valid record or a tombstone clears the report.
        view.apply_parts(4, b"a", Some(BEAT));
        view.apply_parts(5, b"\xff", None);
        assert_eq!(view.tasks.get("a").unwrap().version, 4);
        assert_eq!(view.invalid.keys().collect::<Vec<_>>(), [""]);
    }

    /// One generated record: a key among a few (one not UTF-8, one empty) and a value that is
    /// a tombstone, a valid record or garbage.
    fn records() -> impl Strategy<Value = Vec<(u8, Option<u8>, i64)>> {
        prop::collection::vec((0u8..6, prop::option::of(0u8..4), 1i64..4), 0..40)
    }

    fn key(k: u8) -> Vec<u8> {
        match k {
            4 => b"\xff".to_vec(),
            5 => Vec::new(),
            k => format!("task-{k}").into_bytes(),
        }
    }

    fn value(v: u8) -> Vec<u8> {
        match v {
            0 => b"garbage".to_vec(),
            v => format!(r#"{{"kind":"k","weight":{v}}}"#).into_bytes(),
        }
    }

    proptest! {
        /// Any sequence of records, applied in offset order (with gaps, as after compaction)
        /// and then again from any point, gives the model: per key the last record wins, a
        /// tombstone deletes, a bad record reports.
        #[test]
        fn a_view_equals_last_write_wins(records in records(), replay_from in 0usize..40) {
            let mut with_offsets = Vec::new();
            let mut offset = 0;
            for (k, v, gap) in records {
                offset += gap;
                with_offsets.push((offset, key(k), v.map(value)));
            }
            let mut view = StoreView::new();
            for (offset, key, value) in &with_offsets {
                view.apply_parts(*offset, key, value.as_deref());
            }
            let once = view.clone();
            for (offset, key, value) in with_offsets.iter().skip(replay_from) {
                view.apply_parts(*offset, key, value.as_deref());
            }
            prop_assert_eq!(&view, &once);

            let mut last = BTreeMap::new();
            for (offset, key, value) in &with_offsets {
                last.insert(key.clone(), (*offset, value.clone()));
            }
            let mut tasks = BTreeMap::new();
            let mut invalid = BTreeMap::new();
            for (key, (offset, value)) in last {
                let id = String::from_utf8_lossy(&key).into_owned();
                let valid_key = !key.is_empty() && key != b"\xff";
                match value {
                    None => {}
                    Some(value) if valid_key && value != b"garbage" => {
                        let record = TaskRecord::decode(&value).unwrap();
                        tasks.insert(id.clone(), StoredTask { id, record, version: offset });
                    }
                    Some(_) => {
                        invalid.insert(id, offset);
                    }
                }
            }
            prop_assert_eq!(view.offset, with_offsets.last().map_or(0, |(o, _, _)| o + 1));
            prop_assert_eq!(&view.tasks, &tasks);
            let reported: BTreeMap<_, _> =
                view.invalid.iter().map(|(id, r)| (id.clone(), r.offset)).collect();
            prop_assert_eq!(reported, invalid);
        }
    }
}
