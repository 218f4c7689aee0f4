//! The catalogue: every task instance the group runs (id, kind, JSON config, weight).
//!
//! All workers of a group should hold the same catalogue. Its [`fingerprint`](Catalogue::fingerprint)
//! travels in each member's metadata, so a mismatch (a rolling upgrade, a stale config file) shows
//! in status and logs instead of causing ping-pong.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

/// One task instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Unique id (`task-0`), held to the task id rule when a catalogue takes it
    /// (`store::validate_id`): 1 to 249 ASCII letters, digits, `.`, `_` and `-`. Ids ending in a decimal number encode most compactly on
    /// the wire (see `docs/protocol.md`).
    pub id: String,
    /// The registered kind that runs it.
    pub kind: String,
    /// The config handed to the kind's constructor.
    #[serde(default)]
    pub config: serde_json::Value,
    /// Relative cost for weight-aware assignors; 1 by default.
    #[serde(default = "default_weight")]
    pub weight: u32,
}

fn default_weight() -> u32 {
    1
}

impl TaskSpec {
    /// A task of weight 1.
    pub fn new(id: impl Into<String>, kind: impl Into<String>, config: serde_json::Value) -> Self {
        TaskSpec {
            id: id.into(),
            kind: kind.into(),
            config,
            weight: 1,
        }
    }

    /// The same task with another weight.
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }
}

/// Why a catalogue was refused. Its message names the task; [`kind`](Self::kind) sorts it for
/// code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct CatalogueError(pub(crate) CatalogueDetail);

/// What kind of [`CatalogueError`] happened, for code that acts on it (the message says the
/// rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    not(feature = "unstable"),
    allow(unreachable_pub, dead_code, clippy::enum_variant_names)
)]
pub enum CatalogueErrorKind {
    /// Two tasks share an id.
    DuplicateId,
    /// A task has an empty id.
    EmptyId,
    /// A task id breaks the task id rule: 1 to 249 ASCII letters, digits, `.`, `_` or `-`.
    InvalidId,
}

#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub, dead_code))]
impl CatalogueError {
    /// What kind of error this is.
    pub fn kind(&self) -> CatalogueErrorKind {
        match &self.0 {
            CatalogueDetail::DuplicateId(_) => CatalogueErrorKind::DuplicateId,
            CatalogueDetail::EmptyId { .. } => CatalogueErrorKind::EmptyId,
            CatalogueDetail::InvalidId { .. } => CatalogueErrorKind::InvalidId,
        }
    }
}

impl From<CatalogueDetail> for CatalogueError {
    fn from(detail: CatalogueDetail) -> Self {
        Self(detail)
    }
}

/// The error itself, with the fields its message is made of (crate-internal: the catalogue
/// constructs it; users see the message and the [`CatalogueErrorKind`]).
// The variants keep the names of the kinds they map to (each is about an id).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CatalogueDetail {
    /// Two tasks share an id.
    #[error("task id `{0}` appears twice in the catalogue; give every task a unique id")]
    DuplicateId(String),
    /// A task has an empty id.
    #[error("a task of kind `{kind}` has an empty id; give every task a non-empty id")]
    EmptyId {
        /// The kind of the task without an id.
        kind: String,
    },
    /// A task id breaks the task id rule (`store::validate_id`).
    #[error("a task of kind `{kind}`: {message}")]
    InvalidId {
        /// The id, as given.
        id: String,
        /// The kind of the task.
        kind: String,
        /// Which rule it breaks, and what an id may hold.
        message: String,
    },
}

/// Holds `spec`'s id to the task id rule that every entry shares (`store::validate_id`).
fn check_id(spec: &TaskSpec) -> Result<(), CatalogueError> {
    if spec.id.is_empty() {
        return Err(CatalogueDetail::EmptyId {
            kind: spec.kind.clone(),
        }
        .into());
    }
    crate::task_id::check(&spec.id).map_err(|error| {
        CatalogueError::from(CatalogueDetail::InvalidId {
            id: spec.id.clone(),
            kind: spec.kind.clone(),
            message: error.to_string(),
        })
    })
}

/// The set of task instances, sorted by id.
///
/// Specs are shared (`Arc`): cloning a catalogue, as the worker does for every change of its
/// task store, copies no config. They are kept by their own id, not under a copy of it.
///
/// Its two fingerprints are computed once and kept until the catalogue changes: a worker sends
/// one with every JoinGroup, and hashing 100,000 configs each time was a visible part of a
/// rebalance.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct Catalogue {
    tasks: BTreeSet<ById>,
    fingerprint: OnceLock<u64>,
    placement: OnceLock<u64>,
}

impl PartialEq for Catalogue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// A shared spec, ordered and looked up by its id.
#[derive(Debug, Clone)]
struct ById(Arc<TaskSpec>);

impl Borrow<str> for ById {
    fn borrow(&self) -> &str {
        &self.0.id
    }
}

impl PartialEq for ById {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ById {}

impl PartialOrd for ById {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ById {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.id.cmp(&other.0.id)
    }
}

#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
impl Catalogue {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }

    /// A catalogue of `specs`; refuses duplicate ids and ids that break the task id rule
    /// (`store::validate_id`).
    pub fn from_specs(specs: impl IntoIterator<Item = TaskSpec>) -> Result<Self, CatalogueError> {
        let mut specs: Vec<TaskSpec> = specs.into_iter().collect();
        specs.iter().try_for_each(check_id)?;
        // Sorted once and built in bulk: a lookup and an insert per spec cost twice as many id
        // comparisons, a tenth of a worker's start-up at 100,000 tasks.
        specs.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        if let Some(twice) = specs.windows(2).position(|pair| pair[0].id == pair[1].id) {
            return Err(CatalogueDetail::DuplicateId(specs.swap_remove(twice).id).into());
        }
        Ok(Catalogue::from_sorted_shared(
            specs.into_iter().map(Arc::new),
        ))
    }

    /// Adds `spec`, replacing (and returning) a task with the same id; refuses an id that
    /// breaks the task id rule (`store::validate_id`).
    pub fn insert(&mut self, spec: TaskSpec) -> Result<Option<TaskSpec>, CatalogueError> {
        check_id(&spec)?;
        self.changed();
        let old = self.tasks.replace(ById(Arc::new(spec)));
        Ok(old.map(|old| Arc::unwrap_or_clone(old.0)))
    }

    /// A catalogue of shared specs, sorted by id with unique, non-empty ids (the caller's
    /// promise: a task store view's ids are).
    pub(crate) fn from_sorted_shared(specs: impl IntoIterator<Item = Arc<TaskSpec>>) -> Self {
        Catalogue {
            tasks: specs.into_iter().map(ById).collect(),
            ..Catalogue::default()
        }
    }

    /// Adds a shared spec with a non-empty id, replacing a task with the same id.
    pub(crate) fn insert_shared(&mut self, spec: Arc<TaskSpec>) {
        self.changed();
        self.tasks.replace(ById(spec));
    }

    /// Removes a task.
    pub fn remove(&mut self, task_id: &str) -> Option<TaskSpec> {
        self.changed();
        self.tasks
            .take(task_id)
            .map(|old| Arc::unwrap_or_clone(old.0))
    }

    /// The task with this id.
    pub fn get(&self, task_id: &str) -> Option<&TaskSpec> {
        self.tasks.get(task_id).map(|spec| spec.0.as_ref())
    }

    /// All tasks' shared specs, sorted by id.
    pub(crate) fn iter_shared(&self) -> impl Iterator<Item = &Arc<TaskSpec>> {
        self.tasks.iter().map(|spec| &spec.0)
    }

    /// The shared spec of the task with this id.
    pub(crate) fn get_shared(&self, task_id: &str) -> Option<&Arc<TaskSpec>> {
        self.tasks.get(task_id).map(|spec| &spec.0)
    }

    /// Whether the catalogue holds `task_id`.
    pub fn contains(&self, task_id: &str) -> bool {
        self.tasks.contains(task_id)
    }

    /// The ids of `sorted_ids` (in increasing order) that the catalogue does not hold, found
    /// in one walk beside the catalogue's own sorted ids: an assignment of tens of thousands of
    /// tasks is checked against it at every rebalance, and a lookup per task costs several
    /// times more.
    pub(crate) fn missing<'a>(
        &self,
        sorted_ids: impl IntoIterator<Item = &'a str>,
    ) -> Vec<&'a str> {
        let mut own = self.tasks.iter().map(|spec| spec.0.id.as_str()).peekable();
        let mut missing = Vec::new();
        for id in sorted_ids {
            while own.next_if(|held| *held < id).is_some() {}
            if own.peek() != Some(&id) {
                missing.push(id);
            }
        }
        missing
    }

    /// All tasks, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &TaskSpec> {
        self.tasks.iter().map(|spec| spec.0.as_ref())
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether there are no tasks.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// A 64-bit FNV-1a hash of the sorted `(id, kind, config, weight)` entries.
    ///
    /// Deterministic across processes, platforms and versions: JSON objects are hashed with
    /// their keys sorted, whatever the map's own order, and no seeded hasher is involved.
    pub(crate) fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| self.compute_fingerprint())
    }

    fn compute_fingerprint(&self) -> u64 {
        let mut hash = Fnv1a::new();
        hash.write_len(self.tasks.len());
        for spec in self.iter() {
            hash.write_str(&spec.id);
            hash.write_str(&spec.kind);
            hash.write_json(&spec.config);
            hash.write(&spec.weight.to_be_bytes());
        }
        hash.finish()
    }

    /// A 64-bit FNV-1a hash of what placement depends on: the sorted `(id, kind, weight)`
    /// entries, configs apart. Two catalogues with the same placement fingerprint are assigned
    /// alike, so a change that keeps it (a new config) needs no rebalance.
    pub(crate) fn placement_fingerprint(&self) -> u64 {
        *self
            .placement
            .get_or_init(|| self.compute_placement_fingerprint())
    }

    /// Forgets the fingerprints: the tasks are about to change.
    fn changed(&mut self) {
        self.fingerprint = OnceLock::new();
        self.placement = OnceLock::new();
    }

    fn compute_placement_fingerprint(&self) -> u64 {
        let mut hash = Fnv1a::new();
        hash.write_len(self.tasks.len());
        for spec in self.iter() {
            hash.write_str(&spec.id);
            hash.write_str(&spec.kind);
            hash.write(&spec.weight.to_be_bytes());
        }
        hash.finish()
    }
}

impl<'a> IntoIterator for &'a Catalogue {
    type Item = &'a TaskSpec;
    type IntoIter = CatalogueIter<'a>;

    fn into_iter(self) -> CatalogueIter<'a> {
        CatalogueIter(self.tasks.iter())
    }
}

/// The tasks of a [`Catalogue`], sorted by id.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct CatalogueIter<'a>(std::collections::btree_set::Iter<'a, ById>);

impl<'a> Iterator for CatalogueIter<'a> {
    type Item = &'a TaskSpec;

    fn next(&mut self) -> Option<&'a TaskSpec> {
        self.0.next().map(|spec| spec.0.as_ref())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for CatalogueIter<'_> {}

/// FNV-1a, 64 bits, with length-prefixed fields so that ("ab","c") and ("a","bc") differ.
struct Fnv1a(u64);

/// A number's text, formatted without a heap allocation (serde_json's numbers print in at
/// most 24 bytes).
#[derive(Default)]
struct StackText {
    bytes: [u8; 32],
    len: usize,
}

impl StackText {
    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv1a(Self::OFFSET)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn write_len(&mut self, len: usize) {
        self.write(&(len as u64).to_be_bytes());
    }

    fn write_str(&mut self, s: &str) {
        self.write_len(s.len());
        self.write(s.as_bytes());
    }

    fn write_json(&mut self, value: &serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::Null => self.write(b"n"),
            Value::Bool(b) => self.write(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                self.write(b"#");
                // Formatted on the stack: a catalogue of 100,000 configs has as many numbers.
                let mut text = StackText::default();
                if write!(text, "{n}").is_ok() {
                    self.write_str(text.as_str());
                } else {
                    self.write_str(&n.to_string());
                }
            }
            Value::String(s) => {
                self.write(b"s");
                self.write_str(s);
            }
            Value::Array(items) => {
                self.write(b"[");
                self.write_len(items.len());
                for item in items {
                    self.write_json(item);
                }
            }
            Value::Object(map) => {
                self.write(b"{");
                self.write_len(map.len());
                // Hashed in key order; serde_json's map iterates in it already unless a crate
                // turns on its `preserve_order` feature.
                if map.keys().is_sorted() {
                    for (key, item) in map {
                        self.write_str(key);
                        self.write_json(item);
                    }
                } else {
                    let mut entries: Vec<_> = map.iter().collect();
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                    for (key, item) in entries {
                        self.write_str(key);
                        self.write_json(item);
                    }
                }
            }
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Kind, TaskConfigDetail};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn spec(id: &str, config: serde_json::Value) -> TaskSpec {
        TaskSpec::new(id, "copy", config)
    }

    #[test]
    fn typed_specs_take_the_kinds_name_and_serialized_config() {
        #[derive(Serialize)]
        struct Copy {
            table: &'static str,
        }
        const COPY: Kind<Copy> = Kind::new("copy");
        let spec = TaskSpec::typed(&COPY, "copy-0", &Copy { table: "orders" }).unwrap();
        assert_eq!(
            spec,
            TaskSpec::new("copy-0", "copy", json!({"table": "orders"}))
        );

        // A map with non-string keys has no JSON form: a clear error, not a panic.
        let odd: Kind<BTreeMap<(u8, u8), u8>> = Kind::named("odd");
        let err = TaskSpec::typed(&odd, "odd-0", &BTreeMap::from([((1, 2), 3)])).unwrap_err();
        assert!(
            matches!(&err.0, TaskConfigDetail::InvalidConfig { task_id, kind, .. }
                if task_id == "odd-0" && kind == "odd"),
            "{err:?}"
        );
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        let mut h = Fnv1a::new();
        h.write(b"");
        assert_eq!(h.finish(), 0xcbf2_9ce4_8422_2325);
        let mut h = Fnv1a::new();
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
        let mut h = Fnv1a::new();
        h.write(b"foobar");
        assert_eq!(h.finish(), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn missing_names_the_ids_the_catalogue_lacks() {
        let c = Catalogue::from_specs([spec("b", json!(1)), spec("d", json!(2))]).unwrap();
        assert_eq!(c.missing(["a", "b", "c", "d", "e"]), ["a", "c", "e"]);
        assert!(c.missing(["b", "d"]).is_empty());
        assert!(c.missing([]).is_empty());
    }

    #[test]
    fn fingerprint_ignores_insertion_and_key_order() {
        let a = Catalogue::from_specs([
            spec("t1", json!({"a": 1, "b": [true, null]})),
            spec("t2", json!("x")),
        ])
        .unwrap();
        let b = Catalogue::from_specs([
            spec("t2", json!("x")),
            spec(
                "t1",
                serde_json::from_str(r#"{"b":[true,null],"a":1}"#).unwrap(),
            ),
        ])
        .unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
    }

    #[test]
    fn fingerprint_is_stable_across_releases() {
        // A fixed value: changing the fingerprint breaks mixed-version groups.
        let c = Catalogue::from_specs([spec("task-0", json!({"n": 1}))]).unwrap();
        assert_eq!(
            c.fingerprint(),
            0xcce4_e9ce_daaf_d06a,
            "{:#x}",
            c.fingerprint()
        );
    }

    #[test]
    fn fingerprint_sees_every_field() {
        let base = Catalogue::from_specs([spec("t1", json!({"a": 1}))]).unwrap();
        let others = [
            spec("t2", json!({"a": 1})),
            TaskSpec::new("t1", "move", json!({"a": 1})),
            spec("t1", json!({"a": 2})),
            spec("t1", json!({"a": 1})).with_weight(2),
        ];
        for other in others {
            let other = Catalogue::from_specs([other]).unwrap();
            assert_ne!(base.fingerprint(), other.fingerprint(), "{other:?}");
        }
    }

    #[test]
    fn kept_fingerprints_follow_every_change() {
        let mut catalogue = Catalogue::from_specs([spec("t1", json!({"a": 1}))]).unwrap();
        let (before, placement_before) =
            (catalogue.fingerprint(), catalogue.placement_fingerprint());
        let fresh = |c: &Catalogue| Catalogue::from_specs(c.iter().cloned()).unwrap();
        catalogue.insert(spec("t2", json!({"b": 2}))).unwrap();
        assert_ne!(catalogue.fingerprint(), before);
        assert_eq!(catalogue.fingerprint(), fresh(&catalogue).fingerprint());
        assert_eq!(
            catalogue.placement_fingerprint(),
            fresh(&catalogue).placement_fingerprint()
        );
        catalogue.insert(spec("t2", json!({"b": 3}))).unwrap();
        assert_eq!(catalogue.fingerprint(), fresh(&catalogue).fingerprint());
        catalogue.remove("t2");
        assert_eq!(catalogue.fingerprint(), before);
        assert_eq!(catalogue.placement_fingerprint(), placement_before);
        // A computed fingerprint does not make two equal catalogues differ.
        assert_eq!(catalogue, fresh(&catalogue));
    }

    #[test]
    fn placement_fingerprint_ignores_configs_only() {
        let base = Catalogue::from_specs([spec("t1", json!({"a": 1}))]).unwrap();
        let new_config = Catalogue::from_specs([spec("t1", json!({"a": 2}))]).unwrap();
        assert_eq!(
            base.placement_fingerprint(),
            new_config.placement_fingerprint()
        );
        let others = [
            spec("t2", json!({"a": 1})),
            TaskSpec::new("t1", "move", json!({"a": 1})),
            spec("t1", json!({"a": 1})).with_weight(2),
        ];
        for other in others {
            let other = Catalogue::from_specs([other]).unwrap();
            assert_ne!(
                base.placement_fingerprint(),
                other.placement_fingerprint(),
                "{other:?}"
            );
        }
    }

    proptest::proptest! {
        /// Every number serde_json holds formats on the stack exactly as `to_string` does, so
        /// the fingerprint is the same as before numbers were formatted there.
        #[test]
        fn numbers_format_on_the_stack_as_to_string_does(
            int in proptest::num::i64::ANY,
            uint in proptest::num::u64::ANY,
            float in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL,
        ) {
            for n in [serde_json::Number::from(int), serde_json::Number::from(uint)]
                .into_iter()
                .chain(serde_json::Number::from_f64(float))
            {
                let mut text = StackText::default();
                write!(text, "{n}").unwrap();
                proptest::prop_assert_eq!(text.as_str(), n.to_string());
            }
        }

        #[test]
        fn missing_is_a_lookup_per_id(
            held in proptest::collection::btree_set("[a-c]{1,3}", 0..30),
            asked in proptest::collection::btree_set("[a-c]{1,3}", 0..30),
        ) {
            let catalogue =
                Catalogue::from_specs(held.iter().map(|id| spec(id, json!(null)))).unwrap();
            let expected: Vec<&str> = asked
                .iter()
                .map(String::as_str)
                .filter(|id| !catalogue.contains(id))
                .collect();
            proptest::prop_assert_eq!(catalogue.missing(asked.iter().map(String::as_str)), expected);
        }

        #[test]
        fn from_specs_is_inserting_each_spec_once(
            ids in proptest::collection::vec("[a-c]{0,3}", 0..40),
        ) {
            let specs: Vec<TaskSpec> = ids
                .iter()
                .enumerate()
                .map(|(n, id)| spec(id, json!(n)))
                .collect();
            let mut one_by_one = Catalogue::new();
            let mut expected = Ok(());
            for spec in specs.iter().cloned() {
                if spec.id.is_empty() {
                    expected = Err(CatalogueError::from(CatalogueDetail::EmptyId { kind: spec.kind.clone() }));
                    break;
                }
                if one_by_one.contains(&spec.id) {
                    expected = Err(CatalogueError::from(CatalogueDetail::DuplicateId(spec.id.clone())));
                }
                one_by_one.insert(spec).unwrap();
            }
            match (Catalogue::from_specs(specs), expected) {
                (Ok(built), Ok(())) => proptest::prop_assert_eq!(built, one_by_one),
                (Err(error), Err(_)) if ids.iter().any(String::is_empty) => {
                    let refused = matches!(error.0, CatalogueDetail::EmptyId { .. });
                    proptest::prop_assert!(refused, "{error:?}");
                }
                (Err(error), Err(_)) => {
                    let CatalogueDetail::DuplicateId(id) = &error.0 else {
                        return Err(proptest::test_runner::TestCaseError::fail(format!("{error:?}")));
                    };
                    let count = ids.iter().filter(|i| *i == id).count();
                    proptest::prop_assert!(count > 1, "{id} is listed {count} times");
                }
                (built, expected) => {
                    return Err(proptest::test_runner::TestCaseError::fail(format!(
                        "{built:?} where inserting one by one gave {expected:?}"
                    )));
                }
            }
        }
    }

    #[test]
    fn duplicate_and_empty_ids_are_refused() {
        assert_eq!(
            Catalogue::from_specs([spec("t", json!(1)), spec("t", json!(2))]),
            Err(CatalogueError::from(CatalogueDetail::DuplicateId(
                "t".into()
            )))
        );
        assert_eq!(
            Catalogue::from_specs([spec("", json!(1))]),
            Err(CatalogueError::from(CatalogueDetail::EmptyId {
                kind: "copy".into()
            }))
        );
    }

    #[test]
    fn ids_that_break_the_id_rule_are_refused() {
        for id in ["x/y", "✓\n", "a b"] {
            let error =
                Catalogue::from_specs([spec("ok", json!(1)), spec(id, json!(2))]).expect_err(id);
            assert!(
                matches!(&error.0, CatalogueDetail::InvalidId { id: bad, kind, .. }
                    if bad == id && kind == "copy"),
                "{id:?}: {error:?}"
            );
            assert!(error.to_string().contains("ASCII letters"), "{error}");
            let error = Catalogue::new().insert(spec(id, json!(1))).unwrap_err();
            assert!(
                matches!(error.0, CatalogueDetail::InvalidId { .. }),
                "{error:?}"
            );
        }
    }

    #[test]
    fn spec_deserializes_with_defaults() {
        let spec: TaskSpec = serde_json::from_value(json!({"id": "t", "kind": "k"})).unwrap();
        assert_eq!(spec, TaskSpec::new("t", "k", serde_json::Value::Null));
    }
}
