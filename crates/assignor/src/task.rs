//! The task set: every task the group should run, interned to dense indices.
//!
//! Assignors never touch task ids on their hot path. A [`TaskSet`] interns each task id to a
//! [`TaskIndex`] (a dense `u32`) once, when the catalogue changes, and the assignors work on
//! `Vec`s indexed by it. Kinds are interned the same way to [`KindIndex`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::AssignorError;
use crate::error::Repr;

/// A task's dense index in its [`TaskSet`] (`0..tasks.len()`), in the order the tasks were pushed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskIndex(pub u32);

impl TaskIndex {
    /// The index as a `usize`, for indexing `Vec`s.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// A task kind's dense index in its [`TaskSet`], in the order the kinds were first seen.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindIndex(pub u16);

impl KindIndex {
    /// The index as a `usize`, for indexing `Vec`s.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// A search over a [`TaskSet`]'s ids that is fast when they are looked up in sorted order
/// (see `TaskSet::cursor`).
#[derive(Debug)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub, dead_code))]
pub struct IdCursor<'a> {
    tasks: &'a TaskSet,
    /// Where the next search starts: one past the last id found (or passed).
    at: usize,
}

impl IdCursor<'_> {
    unstable_pub! {
    /// The index of task `id`, if present.
    pub fn index_of(&mut self, id: &str) -> Option<TaskIndex> {
        let ids = &self.tasks.ids;
        let behind = self.at > 0 && *ids[self.at - 1] >= *id;
        if self.tasks.unsorted || behind {
            return self.tasks.index_of(id);
        }
        // Gallop: double the step until an id not below `id`, then halve within the last step.
        let mut step = 1;
        let mut low = self.at;
        while low + step <= ids.len() && *ids[low + step - 1] < *id {
            low += step;
            step *= 2;
        }
        let high = (low + step).min(ids.len());
        match ids[low..high].binary_search_by(|probe| (**probe).cmp(id)) {
            Ok(offset) => {
                self.at = low + offset + 1;
                Some(TaskIndex((low + offset) as u32))
            }
            Err(offset) => {
                self.at = low + offset;
                None
            }
        }
    }
    }
}

/// Every task of the group: id, kind and weight, interned to dense indices.
///
/// Push tasks in a deterministic order (for example sorted by id): assignors place tasks in
/// index order, so the same catalogue pushed in the same order gives the same plan everywhere.
#[derive(Clone, Debug, Default)]
pub struct TaskSet {
    ids: Vec<Arc<str>>,
    kinds: Vec<KindIndex>,
    weights: Vec<u32>,
    kind_names: Vec<Arc<str>>,
    by_kind: Vec<Vec<TaskIndex>>,
    max_weight_by_kind: Vec<u32>,
    index: HashMap<Arc<str>, TaskIndex>,
    weighted: bool,
    /// Some task was pushed after one with a greater or equal id: `IdCursor` looks ids up
    /// by hash instead of searching forward.
    unsorted: bool,
}

impl TaskSet {
    /// An empty task set.
    pub fn new() -> Self {
        Self::default()
    }

    /// `count` tasks of one kind, weight 1, named `task-0` .. `task-{count-1}` (benchmarks, demos).
    pub fn uniform(count: u32, kind: &str) -> Self {
        let mut set = Self::new();
        set.ids.reserve(count as usize);
        set.index.reserve(count as usize);
        for i in 0..count {
            // Ids are unique by construction and the count fits a `u32`, so this cannot fail.
            let _ = set.push(format!("task-{i}"), kind, 1);
        }
        set
    }

    /// Adds a task and returns its index.
    ///
    /// `weight` is the task's share of a member's capacity (1 for tasks that cost the same).
    /// Errors if the id is already present, the weight is 0, or the set is full.
    pub fn push(
        &mut self,
        id: impl Into<Arc<str>>,
        kind: &str,
        weight: u32,
    ) -> Result<TaskIndex, AssignorError> {
        let id: Arc<str> = id.into();
        if weight == 0 {
            return Err(Repr::ZeroWeight { task: id }.into());
        }
        if self.index.contains_key(&id) {
            return Err(Repr::DuplicateTask { task: id }.into());
        }
        let index = u32::try_from(self.ids.len())
            .ok()
            .filter(|i| *i < u32::MAX - 8)
            .ok_or(AssignorError(Repr::TooManyTasks))?;
        let kind = self.intern_kind(kind)?;
        let task = TaskIndex(index);
        self.unsorted |= self.ids.last().is_some_and(|last| **last >= *id);
        self.index.insert(id.clone(), task);
        self.ids.push(id);
        self.kinds.push(kind);
        self.weights.push(weight);
        self.by_kind[kind.get()].push(task);
        let max = &mut self.max_weight_by_kind[kind.get()];
        *max = (*max).max(weight);
        self.weighted |= weight != 1;
        Ok(task)
    }

    unstable_pub! {
    /// The index of kind `name`, interning it if new (so members can name kinds with no task yet).
    pub fn intern_kind(&mut self, name: &str) -> Result<KindIndex, AssignorError> {
        if let Some(kind) = self.kind_index(name) {
            return Ok(kind);
        }
        let index =
            u16::try_from(self.kind_names.len()).map_err(|_| AssignorError(Repr::TooManyKinds))?;
        self.kind_names.push(name.into());
        self.by_kind.push(Vec::new());
        self.max_weight_by_kind.push(0);
        Ok(KindIndex(index))
    }
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tasks.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    unstable_pub! {
    /// The number of kinds.
    pub fn kind_count(&self) -> usize {
        self.kind_names.len()
    }
    }

    /// The index of task `id`, if present.
    pub fn index_of(&self, id: &str) -> Option<TaskIndex> {
        self.index.get(id).copied()
    }

    unstable_pub! {
    /// A lookup for ids that come in increasing order (a member's sorted claims): with tasks
    /// pushed in id order, each id is found by searching forward from the last one found,
    /// which touches memory in order instead of a hash table at random, several times faster
    /// over 100,000 ids. Ids out of order, or a set not pushed in id order, are looked up by
    /// hash: the answers are [`index_of`](Self::index_of)'s in every case.
    pub fn cursor(&self) -> IdCursor<'_> {
        IdCursor { tasks: self, at: 0 }
    }
    }

    /// The index of kind `name`, if present.
    pub fn kind_index(&self, name: &str) -> Option<KindIndex> {
        self.kind_names
            .iter()
            .position(|k| &**k == name)
            .map(|i| KindIndex(i as u16))
    }

    /// The id of `task`, if in range.
    pub fn id(&self, task: TaskIndex) -> Option<&str> {
        self.ids.get(task.get()).map(|s| &**s)
    }

    unstable_pub! {
    /// The id of `task`, if in range, shared: a copy of it costs a reference count.
    pub fn shared_id(&self, task: TaskIndex) -> Option<&Arc<str>> {
        self.ids.get(task.get())
    }
    }

    /// The name of `kind`, if in range.
    pub fn kind_name(&self, kind: KindIndex) -> Option<&str> {
        self.kind_names.get(kind.get()).map(|s| &**s)
    }

    /// The kind of `task`; callers pass indices already checked against `len()`.
    pub(crate) fn kind_of(&self, task: usize) -> KindIndex {
        self.kinds[task]
    }

    /// The weight of `task`, if in range.
    pub fn weight(&self, task: TaskIndex) -> Option<u32> {
        self.weights.get(task.get()).copied()
    }

    /// The weight of `task`; callers pass indices already checked against `len()`.
    pub(crate) fn weight_of(&self, task: usize) -> u32 {
        self.weights[task]
    }

    /// The kind of `task`, if in range.
    pub fn kind(&self, task: TaskIndex) -> Option<KindIndex> {
        self.kinds.get(task.get()).copied()
    }

    /// The tasks of `kind`, in index order (empty for an unknown kind).
    pub fn tasks_of_kind(&self, kind: KindIndex) -> &[TaskIndex] {
        self.by_kind.get(kind.get()).map_or(&[], |v| v.as_slice())
    }

    unstable_pub! {
    /// The largest weight among the tasks of `kind` (0 when it has none).
    pub fn max_weight(&self, kind: KindIndex) -> u32 {
        self.max_weight_by_kind
            .get(kind.get())
            .copied()
            .unwrap_or(0)
    }
    }

    unstable_pub! {
    /// Whether any task has a weight other than 1 (then balance is measured by weight).
    pub fn is_weighted(&self) -> bool {
        self.weighted
    }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_tasks_and_kinds() {
        let mut set = TaskSet::new();
        let a = set.push("a", "sink", 1).unwrap();
        let b = set.push("b", "source", 3).unwrap();
        let c = set.push("c", "sink", 1).unwrap();
        assert_eq!((a, b, c), (TaskIndex(0), TaskIndex(1), TaskIndex(2)));
        assert_eq!(set.index_of("b"), Some(b));
        assert_eq!(set.kind_count(), 2);
        let sink = set.kind_index("sink").unwrap();
        assert_eq!(set.tasks_of_kind(sink), &[a, c]);
        assert_eq!(set.max_weight(set.kind(b).unwrap()), 3);
        assert!(set.is_weighted());
    }

    #[test]
    fn rejects_duplicates_and_zero_weight() {
        let mut set = TaskSet::new();
        set.push("a", "k", 1).unwrap();
        assert!(matches!(
            set.push("a", "k", 1).map_err(|e| e.0),
            Err(Repr::DuplicateTask { .. })
        ));
        assert!(matches!(
            set.push("b", "k", 0).map_err(|e| e.0),
            Err(Repr::ZeroWeight { .. })
        ));
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn uniform_names_tasks_in_order() {
        let set = TaskSet::uniform(3, "k");
        assert_eq!(set.id(TaskIndex(2)), Some("task-2"));
        assert!(!set.is_weighted());
    }

    proptest::proptest! {
        /// A cursor answers as `index_of` does, whatever the order of the pushes and of the
        /// ids asked (increasing, repeated or not).
        #[test]
        fn a_cursor_answers_as_index_of(
            pushed in proptest::collection::vec("[a-d]{1,3}", 0..40),
            asked in proptest::collection::vec("[a-d]{1,3}", 0..40),
            sort_pushed: bool,
            sort_asked: bool,
        ) {
            let mut pushed = pushed;
            if sort_pushed {
                pushed.sort();
            }
            let mut set = TaskSet::new();
            for id in &pushed {
                let _ = set.push(id.as_str(), "k", 1);
            }
            let mut asked = asked;
            if sort_asked {
                asked.sort();
            }
            let mut cursor = set.cursor();
            for id in &asked {
                proptest::prop_assert_eq!(cursor.index_of(id), set.index_of(id), "{}", id);
            }
        }
    }
}
