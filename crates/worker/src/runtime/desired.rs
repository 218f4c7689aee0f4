//! The effective catalogue: the tasks defined in code merged with the task store, each with its
//! desired state, and what changed between two of them.
//!
//! Sans-IO: the worker loop builds a new [`Desired`] whenever the store's view moves, compares
//! it with the last one ([`Desired::changes_since`]) and acts on the [`Changes`]:
//!
//! | Change | Who acts | What |
//! |---|---|---|
//! | a task added or deleted, or its kind or weight changed | the leader | a rebalance (placement changed) |
//! | a task deleted | its owner | stops it at once, without waiting for the rebalance |
//! | paused / resumed | its owner | stops it (`PAUSED`) / starts it; no rebalance |
//! | config, kind or weight changed | its owner | restarts it with the new spec |
//! | restart counter changed | its owner | restarts it |
//!
//! A task whose entry did not change is never touched.
//!
//! A store task with the id of a task defined in code replaces it: the store is what operators
//! change at run time, so it has the last word.
//!
//! A generated task lives and pauses with its generator: a child whose generator (or one up
//! its line) is gone from both the store and the code is not in the catalogue, and a child of
//! a paused generator is paused (its own record keeps its own state, which counts again once
//! the generator resumes).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::catalogue::Catalogue;
use crate::store::{DesiredState, StoreView, StoredTask};

/// How far up a generated task's line of generators its state is looked for (a longer line,
/// or a cycle put by hand, stops there).
const MAX_LINE: usize = 16;

/// Where a task of the effective catalogue comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Defined in code (the builder's catalogue).
    Code,
    /// The task store, with the task's version (the offset its record landed at).
    Store {
        /// The offset of the task's latest record.
        version: i64,
    },
}

/// One task's desired state besides its spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Running or paused.
    pub(crate) state: DesiredState,
    /// The store's restart counter (0 for code tasks).
    pub(crate) restart: u64,
    /// Where it comes from.
    pub(crate) source: Source,
}

/// The effective catalogue and every task's desired state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Desired {
    /// Every task, code and store merged.
    pub(crate) catalogue: Arc<Catalogue>,
    /// Per task id from the task store: desired state, restart counter, source. A task defined
    /// in code alone has no entry of its own (its entry is [`CODE`]: a worker running only code
    /// tasks keeps no second copy of every id); see [`entry`](Self::entry).
    pub(crate) entries: BTreeMap<String, Entry>,
    /// The store offset the view was read up to; `None` without a store.
    pub(crate) offset: Option<i64>,
    /// Store records that are not task records, by task id, with why (shown by `GET /tasks`).
    pub(crate) invalid: BTreeMap<String, String>,
    /// The generator of each generated task, by task id.
    pub(crate) parents: BTreeMap<String, String>,
    /// The catalogue's placement fingerprint, computed once (reset it when changing the
    /// catalogue in place).
    pub(crate) placement: OnceLock<u64>,
    /// The catalogue's fingerprint, computed once when asked (reset it too).
    pub(crate) fingerprint: OnceLock<u64>,
}

/// The desired state of every task defined in code alone: running, never restarted.
pub(crate) const CODE: Entry = Entry {
    state: DesiredState::Running,
    restart: 0,
    source: Source::Code,
};

/// What changed between two [`Desired`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Tasks that appeared.
    pub(crate) added: BTreeSet<String>,
    /// Tasks that disappeared.
    pub(crate) removed: BTreeSet<String>,
    /// Tasks whose desired state became paused.
    pub(crate) paused: BTreeSet<String>,
    /// Tasks whose desired state became running.
    pub(crate) resumed: BTreeSet<String>,
    /// Tasks whose kind, config or weight changed.
    pub(crate) reconfigured: BTreeSet<String>,
    /// Tasks whose restart counter changed.
    pub(crate) restarted: BTreeSet<String>,
    /// Whether the placement fingerprint (ids, kinds, weights) changed: the leader rebalances.
    pub(crate) placement: bool,
}

impl Changes {
    /// The tasks whose owner restarts them (a paused task restarts into `PAUSED`).
    pub(crate) fn to_restart(&self) -> BTreeSet<String> {
        let mut tasks: BTreeSet<String> = self
            .paused
            .iter()
            .chain(&self.resumed)
            .chain(&self.reconfigured)
            .chain(&self.restarted)
            .cloned()
            .collect();
        tasks.retain(|t| !self.removed.contains(t));
        tasks
    }

    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Changes::default()
    }
}

impl crate::status::Fingerprinted for Desired {
    fn fingerprint(&self) -> u64 {
        Desired::fingerprint(self)
    }
}

impl Desired {
    /// The tasks defined in code alone (no store), sharing `code`: no copy of its specs or ids.
    pub(crate) fn from_code(code: &Arc<Catalogue>) -> Self {
        Desired {
            catalogue: Arc::clone(code),
            entries: BTreeMap::new(),
            offset: None,
            invalid: BTreeMap::new(),
            parents: BTreeMap::new(),
            placement: OnceLock::new(),
            fingerprint: OnceLock::new(),
        }
    }

    /// The catalogue's fingerprint ([`Catalogue::fingerprint`]), computed on first use: it
    /// hashes every config, so it is not computed for views nobody asks about.
    pub(crate) fn fingerprint(&self) -> u64 {
        *self
            .fingerprint
            .get_or_init(|| self.catalogue.fingerprint())
    }

    /// The catalogue's placement fingerprint (ids, kinds, weights).
    pub(crate) fn placement(&self) -> u64 {
        *self
            .placement
            .get_or_init(|| self.catalogue.placement_fingerprint())
    }

    /// The tasks defined in code merged with the store's `view`; a store task replaces a code
    /// task with the same id.
    pub(crate) fn merge(code: &Catalogue, view: &StoreView) -> Self {
        Self::merge_after(&Desired::default(), code, view)
    }

    /// [`merge`](Self::merge), reusing the specs of `prev` for the stored tasks whose version
    /// did not change: a store change costs the worker loop one pass over the ids, not a copy
    /// (and a comparison, in [`changes_since`](Self::changes_since)) of every config.
    pub(crate) fn merge_after(prev: &Desired, code: &Catalogue, view: &StoreView) -> Self {
        let mut specs = Vec::with_capacity(view.tasks.len());
        let mut entries = Vec::with_capacity(view.tasks.len());
        // The previous specs and entries, walked in step with the view (all sorted by id).
        let (prev_specs, prev_entries) = (spec_list(prev), entry_list(prev));
        let (mut i, mut j) = (0, 0);
        let mut parents = BTreeMap::new();
        for task in view.tasks.values() {
            let Some(state) = line_state(view, code, task) else {
                continue;
            };
            if let Some(by) = &task.record.generated_by {
                parents.insert(task.id.clone(), by.generator.clone());
            }
            let entry = Entry {
                state,
                restart: task.record.restart,
                source: Source::Store {
                    version: task.version,
                },
            };
            while prev_entries
                .get(j)
                .is_some_and(|(id, _)| *id < task.id.as_str())
            {
                j += 1;
            }
            while prev_specs
                .get(i)
                .is_some_and(|(id, _)| *id < task.id.as_str())
            {
                i += 1;
            }
            let same = prev_entries
                .get(j)
                .is_some_and(|(id, e)| *id == task.id && e.source == entry.source);
            let spec = match prev_specs.get(i).filter(|(id, _)| same && *id == task.id) {
                Some((_, spec)) => Arc::clone(spec),
                None => Arc::new(task.to_spec()),
            };
            specs.push(spec);
            entries.push((task.id.clone(), entry));
        }
        // Sorted by id already (a view is a sorted map): both maps are built in bulk.
        let mut catalogue = Catalogue::from_sorted_shared(specs);
        let entries: BTreeMap<String, Entry> = entries.into_iter().collect();
        for spec in code.iter_shared() {
            if catalogue.contains(&spec.id) {
                continue;
            }
            // Its entry is `CODE`, implied.
            catalogue.insert_shared(spec.clone());
        }
        Desired {
            catalogue: Arc::new(catalogue),
            entries,
            offset: Some(view.offset),
            invalid: view
                .invalid
                .iter()
                .map(|(id, invalid)| (id.clone(), invalid.reason.clone()))
                .collect(),
            parents,
            placement: OnceLock::new(),
            fingerprint: OnceLock::new(),
        }
    }

    /// The generator of task `id`, when a generator declared it.
    pub(crate) fn parent(&self, id: &str) -> Option<&str> {
        self.parents.get(id).map(String::as_str)
    }

    /// The desired state of task `id`: its store entry, [`CODE`] for a task defined in code
    /// alone, `None` for a task not in the catalogue.
    pub(crate) fn entry(&self, id: &str) -> Option<Entry> {
        match self.entries.get(id) {
            Some(entry) => Some(*entry),
            None => self.catalogue.contains(id).then_some(CODE),
        }
    }

    /// The ids whose desired state is paused.
    pub(crate) fn paused(&self) -> BTreeSet<String> {
        self.entries
            .iter()
            .filter(|(_, e)| e.state == DesiredState::Paused)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// What changed from `old` to `self`: one ordered pass over both (no lookups).
    pub(crate) fn changes_since(&self, old: &Desired) -> Changes {
        let mut changes = Changes {
            placement: old.placement() != self.placement(),
            ..Changes::default()
        };
        join(&spec_list(old), &spec_list(self), |id, then, now| {
            match (then, now) {
                (Some(_), None) => {
                    changes.removed.insert(id.to_owned());
                }
                (None, Some(_)) => {
                    changes.added.insert(id.to_owned());
                }
                // A spec reused from the last view is the same record: no config to compare.
                (Some(then), Some(now)) if !Arc::ptr_eq(then, now) && then != now => {
                    changes.reconfigured.insert(id.to_owned());
                }
                _ => {}
            }
        });
        join(&entry_list(old), &entry_list(self), |id, then, now| {
            let (Some(then), Some(now)) = (then, now) else {
                return;
            };
            match (then.state, now.state) {
                (DesiredState::Running, DesiredState::Paused) => {
                    changes.paused.insert(id.to_owned());
                }
                (DesiredState::Paused, DesiredState::Running) => {
                    changes.resumed.insert(id.to_owned());
                }
                _ => {}
            }
            if now.restart != then.restart {
                changes.restarted.insert(id.to_owned());
            }
        });
        changes
    }
}

/// A stored task's desired state with its line of generators: `None` when a generator up the
/// line is in neither the store nor `code` (the task is not run), paused when one is paused,
/// its own state otherwise.
fn line_state(view: &StoreView, code: &Catalogue, task: &StoredTask) -> Option<DesiredState> {
    let mut state = task.record.state;
    let mut by = task.record.generated_by.as_ref();
    for _ in 0..MAX_LINE {
        let Some(generator) = by.map(|b| b.generator.as_str()) else {
            break;
        };
        match view.tasks.get(generator) {
            Some(parent) => {
                if parent.record.state == DesiredState::Paused {
                    state = DesiredState::Paused;
                }
                by = parent.record.generated_by.as_ref();
            }
            None => return code.contains(generator).then_some(state),
        }
    }
    Some(state)
}

fn spec_list(d: &Desired) -> Vec<(&str, &Arc<crate::catalogue::TaskSpec>)> {
    d.catalogue
        .iter_shared()
        .map(|spec| (spec.id.as_str(), spec))
        .collect()
}

/// Every task's entry, sorted by id, code tasks' implied ones included: one pass over the
/// catalogue and the store's entries together (every entry's id is in the catalogue).
fn entry_list(d: &Desired) -> Vec<(&str, &Entry)> {
    let mut stored = d.entries.iter().peekable();
    d.catalogue
        .iter()
        .map(|spec| {
            let id = spec.id.as_str();
            while stored.next_if(|(other, _)| other.as_str() < id).is_some() {}
            match stored.next_if(|(other, _)| other.as_str() == id) {
                Some((_, entry)) => (id, entry),
                None => (id, &CODE),
            }
        })
        .collect()
}

/// Walks two lists sorted by id together, calling `each` with every id and its value on
/// either side.
fn join<T>(
    old: &[(&str, T)],
    new: &[(&str, T)],
    mut each: impl FnMut(&str, Option<&T>, Option<&T>),
) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some((a, x)), Some((b, y))) if a == b => {
                each(a, Some(x), Some(y));
                i += 1;
                j += 1;
            }
            (Some((a, x)), Some((b, _))) if a < b => {
                each(a, Some(x), None);
                i += 1;
            }
            (Some((a, x)), None) => {
                each(a, Some(x), None);
                i += 1;
            }
            (_, Some((b, y))) => {
                each(b, None, Some(y));
                j += 1;
            }
            (None, None) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalogue::TaskSpec;
    use crate::store::TaskRecord;

    fn code() -> Catalogue {
        Catalogue::from_specs([
            TaskSpec::new("code-0", "beat", json!({"every_ms": 100})),
            TaskSpec::new("code-1", "beat", json!({"every_ms": 100})),
        ])
        .unwrap()
    }

    /// A view with `records` applied in order, one offset each.
    fn view(records: &[(&str, Option<TaskRecord>)]) -> StoreView {
        let mut view = StoreView::new();
        for (offset, (id, record)) in records.iter().enumerate() {
            let value = record.as_ref().map(|r| r.encode(id).unwrap());
            view.apply_parts(offset as i64, id.as_bytes(), value.as_deref());
        }
        view
    }

    fn beat(every_ms: u64) -> TaskRecord {
        TaskRecord::new("beat", json!({ "every_ms": every_ms }))
    }

    fn ids(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn store_tasks_join_the_code_catalogue_and_override_same_ids() {
        let desired = Desired::merge(
            &code(),
            &view(&[("s-0", Some(beat(5))), ("code-1", Some(beat(7)))]),
        );
        let all: Vec<&str> = desired.catalogue.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(all, ["code-0", "code-1", "s-0"]);
        assert_eq!(
            desired.catalogue.get("code-1").unwrap().config,
            json!({"every_ms": 7})
        );
        assert_eq!(
            desired.entry("code-1").map(|e| e.source),
            Some(Source::Store { version: 1 })
        );
        assert_eq!(
            desired.entry("code-0").map(|e| e.source),
            Some(Source::Code)
        );
        assert!(!desired.entries.contains_key("code-0"), "implied, not kept");
        assert_eq!(desired.entry("nowhere"), None);
        assert_eq!(desired.offset, Some(2));
    }

    #[test]
    fn unchanged_tasks_are_never_touched() {
        let before = Desired::merge(&code(), &view(&[("s-0", Some(beat(5)))]));
        // A record rewritten with the same content lands at a new offset: a new version, but
        // nothing to do.
        let after = Desired::merge(
            &code(),
            &view(&[("s-0", Some(beat(5))), ("s-0", Some(beat(5)))]),
        );
        let changes = after.changes_since(&before);
        assert!(changes.is_empty(), "{changes:?}");
        assert!(changes.to_restart().is_empty());
    }

    #[test]
    fn pause_resume_config_and_restart_need_the_owner_alone() {
        let base = [
            ("s-0", Some(beat(5))),
            ("s-1", Some(beat(5))),
            ("s-2", Some(beat(5))),
        ];
        let before = Desired::merge(&code(), &view(&base));
        let mut next = base.to_vec();
        next.push(("s-0", Some(beat(5).with_state(DesiredState::Paused))));
        next.push(("s-1", Some(beat(9))));
        let mut restarted = beat(5);
        restarted.restart = 1;
        next.push(("s-2", Some(restarted)));
        let after = Desired::merge(&code(), &view(&next));
        let changes = after.changes_since(&before);
        assert_eq!(changes.paused, ids(&["s-0"]));
        assert_eq!(changes.reconfigured, ids(&["s-1"]));
        assert_eq!(changes.restarted, ids(&["s-2"]));
        assert!(!changes.placement, "no rebalance: {changes:?}");
        assert_eq!(changes.to_restart(), ids(&["s-0", "s-1", "s-2"]));
        assert_eq!(after.paused(), ids(&["s-0"]));

        // Resume.
        next.push(("s-0", Some(beat(5))));
        let resumed = Desired::merge(&code(), &view(&next));
        let changes = resumed.changes_since(&after);
        assert_eq!(changes.resumed, ids(&["s-0"]));
        assert_eq!(changes.to_restart(), ids(&["s-0"]));
        assert!(!changes.placement);
    }

    #[test]
    fn adds_deletes_and_kind_or_weight_changes_move_placement() {
        let before = Desired::merge(&code(), &view(&[("s-0", Some(beat(5)))]));
        let added = Desired::merge(
            &code(),
            &view(&[("s-0", Some(beat(5))), ("s-1", Some(beat(5)))]),
        );
        let changes = added.changes_since(&before);
        assert_eq!(changes.added, ids(&["s-1"]));
        assert!(changes.placement);
        assert!(changes.to_restart().is_empty());

        let deleted = Desired::merge(&code(), &view(&[("s-0", Some(beat(5))), ("s-0", None)]));
        let changes = deleted.changes_since(&before);
        assert_eq!(changes.removed, ids(&["s-0"]));
        assert!(changes.placement);
        assert!(changes.to_restart().is_empty());

        let heavier = Desired::merge(&code(), &view(&[("s-0", Some(beat(5).with_weight(3)))]));
        let changes = heavier.changes_since(&before);
        assert!(changes.placement);
        assert_eq!(changes.to_restart(), ids(&["s-0"]));

        // Deleting a store task that overrode a code task brings the code task back.
        let overridden = Desired::merge(&code(), &view(&[("code-0", Some(beat(1)))]));
        let back = Desired::merge(
            &code(),
            &view(&[("code-0", Some(beat(1))), ("code-0", None)]),
        );
        let changes = back.changes_since(&overridden);
        assert!(changes.removed.is_empty());
        assert_eq!(changes.reconfigured, ids(&["code-0"]));
    }

    #[test]
    fn an_incremental_merge_shares_unchanged_specs_and_sees_every_change() {
        let code = code();
        let mut records = vec![("s-0", Some(beat(5))), ("s-1", Some(beat(5)))];
        let before = Desired::merge(&code, &view(&records));
        records.push(("s-1", Some(beat(6))));
        records.push(("s-2", Some(beat(1))));
        let after = Desired::merge_after(&before, &code, &view(&records));
        let shared = |id: &str| {
            Arc::ptr_eq(
                before.catalogue.get_shared(id).unwrap(),
                after.catalogue.get_shared(id).unwrap(),
            )
        };
        assert!(shared("s-0") && shared("code-0"));
        assert!(!shared("s-1"));
        let changes = after.changes_since(&before);
        assert_eq!(changes.reconfigured, ids(&["s-1"]));
        assert_eq!(changes.added, ids(&["s-2"]));
        // The same as a merge from scratch.
        let scratch = Desired::merge(&code, &view(&records));
        assert_eq!(scratch.catalogue, after.catalogue);
        assert_eq!(scratch.entries, after.entries);
    }

    #[test]
    fn records_that_are_not_tasks_are_listed_with_why() {
        let mut v = StoreView::new();
        v.apply_parts(0, b"bad", Some(b"not json"));
        let desired = Desired::merge(&code(), &v);
        assert!(!desired.catalogue.contains("bad"));
        assert!(desired.invalid["bad"].contains("not a task record"));
    }

    fn child_of(generator: &str) -> TaskRecord {
        let mut record = beat(5);
        record.generated_by = Some(crate::store::GeneratedBy {
            generator: generator.into(),
            generation: 1,
        });
        record
    }

    #[test]
    fn generated_tasks_live_and_pause_with_their_generator() {
        let gen_ = beat(1);
        let running = Desired::merge(
            &code(),
            &view(&[
                ("gen", Some(gen_.clone())),
                ("c1", Some(child_of("gen"))),
                ("c2", Some(child_of("c1"))),
                ("of-code", Some(child_of("code-0"))),
            ]),
        );
        assert_eq!(running.parent("c1"), Some("gen"));
        assert_eq!(running.parent("gen"), None);
        assert_eq!(running.paused(), ids(&[]));
        assert!(running.catalogue.contains("of-code"));
        // Pausing the generator pauses its line; no placement change.
        let paused = Desired::merge(
            &code(),
            &view(&[
                ("gen", Some(gen_.with_state(DesiredState::Paused))),
                ("c1", Some(child_of("gen"))),
                ("c2", Some(child_of("c1"))),
            ]),
        );
        assert_eq!(paused.paused(), ids(&["c1", "c2", "gen"]));
        // A child whose generator is gone is not run, nor are its own children.
        let orphans = Desired::merge(
            &code(),
            &view(&[("c1", Some(child_of("gen"))), ("c2", Some(child_of("c1")))]),
        );
        assert!(!orphans.catalogue.contains("c1"));
        assert!(!orphans.catalogue.contains("c2"));
        let changes = orphans.changes_since(&running);
        assert!(changes.removed.contains("c1") && changes.placement);
    }
}

#[cfg(test)]
mod scale {
    use serde_json::json;

    use super::*;
    use crate::store::TaskRecord;

    /// What one store change costs the worker loop with 100,000 stored tasks (run it in
    /// release: `cargo test --release -p kroupier-worker --lib -- --ignored desired_scale`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn desired_scale_100k() {
        let mut view = StoreView::new();
        for i in 0..100_000i64 {
            let id = format!("task-{i}");
            let value = TaskRecord::new("beat", json!({"every_ms": 100, "table": format!("t{i}")}))
                .encode(&id)
                .unwrap();
            view.apply_parts(i, id.as_bytes(), Some(&value));
        }
        let code = Catalogue::new();
        let started = std::time::Instant::now();
        let before = Desired::merge(&code, &view);
        let merged = started.elapsed();
        let value = TaskRecord::new("beat", json!({"every_ms": 50}))
            .encode("task-7")
            .unwrap();
        view.apply_parts(100_000, b"task-7", Some(&value));
        before.placement();
        let started = std::time::Instant::now();
        let after = Desired::merge_after(&before, &code, &view);
        let merged_again = started.elapsed();
        let changes = after.changes_since(&before);
        let changed = started.elapsed();
        println!("100k tasks: incremental merge {merged_again:?}");
        assert_eq!(changes.reconfigured.len(), 1);
        assert_eq!(changes.to_restart().len(), 1);
        assert!(!changes.placement);
        println!("100k tasks: first merge {merged:?}; one change (merge + diff) {changed:?}");
    }
}
