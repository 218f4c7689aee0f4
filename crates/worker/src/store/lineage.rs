//! The task store's bookkeeping of generators: their claims, the children they removed, and
//! the writes readers ignore because an older owner of the generator made them.
//!
//! Two records besides task records (the module guide of [`store`](super) says why):
//! - a **claim**, key `<generator id>@<generation>`, value `{"member":"<member id>"}`: the
//!   generator's worker was granted it in that generation and is about to declare children. A
//!   tombstone withdraws it. `@` is not allowed in task ids, so a claim's key is never a
//!   task's;
//! - a **removal marker**, key `<child id>`, value
//!   `{"removed_by":{"generator":"<id>","generation":N}}`: the generator no longer declares the
//!   child. It is a record, not a tombstone, so that it carries the generator's token and can be
//!   ignored like any other late write. It has no `kind`, so a build from before generators
//!   reports it as an unreadable record and never runs it.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::record::{GeneratedBy, validate_id};

/// The key of `generator`'s claim in `generation`.
pub(crate) fn claim_key(generator: &str, generation: i32) -> Bytes {
    Bytes::from(format!("{generator}@{generation}"))
}

/// The generator id and generation of a claim's key; `None` for any other key.
pub(crate) fn parse_claim_key(key: &[u8]) -> Option<(&str, i32)> {
    let key = std::str::from_utf8(key).ok()?;
    let (generator, generation) = key.rsplit_once('@')?;
    let generation = generation.parse().ok()?;
    validate_id(generator).ok()?;
    Some((generator, generation))
}

/// A claim's value.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ClaimValue {
    /// The member that claimed, for people reading the topic.
    pub(crate) member: String,
}

/// A removal marker's value.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RemovedValue {
    /// The generator that removed the child, with its token.
    pub(crate) removed_by: GeneratedBy,
}

impl RemovedValue {
    /// The marker's value for a child `generator` removed in `generation`.
    pub(crate) fn encode(generator: &str, generation: i32) -> Bytes {
        let value = RemovedValue {
            removed_by: GeneratedBy {
                generator: generator.to_owned(),
                generation,
            },
        };
        // A struct of a string and an integer always serializes.
        Bytes::from(serde_json::to_vec(&value).unwrap_or_default())
    }

    /// The generator of a removal marker; `None` for any other value.
    pub(crate) fn decode(value: &[u8]) -> Option<GeneratedBy> {
        let value: RemovedValue = serde_json::from_slice(value).ok()?;
        validate_id(&value.removed_by.generator).ok()?;
        Some(value.removed_by)
    }
}

/// A write a reader ignored: it came from a generator token older than the newest claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fenced {
    /// Where it landed.
    pub(crate) offset: i64,
    /// Its generator and token.
    pub(crate) by: GeneratedBy,
}

/// What a [`StoreView`](super::StoreView) knows of generators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lineage {
    /// Per generator, the generations whose claims the topic holds.
    pub(crate) claims: BTreeMap<String, BTreeSet<i32>>,
    /// Children whose latest (heeded) record is their generator's removal marker.
    pub(crate) removed: BTreeMap<String, GeneratedBy>,
    /// Keys whose latest record was ignored, with it: the generator's current owner writes
    /// them again, so that compaction, which keeps the latest record of a key, keeps a heeded
    /// one.
    pub(crate) fenced: BTreeMap<String, Fenced>,
}

impl Lineage {
    /// The newest generation `generator` claimed, if any claim is in the topic.
    pub(crate) fn newest_claim(&self, generator: &str) -> Option<i32> {
        self.claims.get(generator)?.last().copied()
    }

    /// Whether a write carrying `by` comes from an older owner of its generator than the
    /// newest claim: readers ignore it.
    pub(crate) fn fences(&self, by: &GeneratedBy) -> bool {
        self.newest_claim(&by.generator)
            .is_some_and(|newest| by.generation < newest)
    }

    /// Applies a claim's record (a `None` value withdraws it).
    pub(crate) fn apply_claim(&mut self, generator: &str, generation: i32, present: bool) {
        if present {
            self.claims
                .entry(generator.to_owned())
                .or_default()
                .insert(generation);
        } else if let Some(claims) = self.claims.get_mut(generator) {
            claims.remove(&generation);
            if claims.is_empty() {
                self.claims.remove(generator);
            }
        }
    }

    /// A heeded record landed at `id`: it is no longer removed or fenced.
    pub(crate) fn heeded(&mut self, id: &str) {
        self.removed.remove(id);
        self.fenced.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_keys_round_trip_and_are_never_task_ids() {
        let key = claim_key("files", 12);
        assert_eq!(&key[..], b"files@12");
        assert_eq!(parse_claim_key(&key), Some(("files", 12)));
        assert!(validate_id("files@12").is_err());
        for key in [&b"files"[..], b"@3", b"a@b", b"a b@3", b"\xff@1", b"x@"] {
            assert_eq!(parse_claim_key(key), None, "{key:?}");
        }
    }

    #[test]
    fn removal_markers_round_trip_and_are_not_task_records() {
        let value = RemovedValue::encode("files", 4);
        assert_eq!(
            std::str::from_utf8(&value).unwrap(),
            r#"{"removed_by":{"generator":"files","generation":4}}"#
        );
        let by = RemovedValue::decode(&value).unwrap();
        assert_eq!((by.generator.as_str(), by.generation), ("files", 4));
        assert!(super::super::TaskRecord::decode(&value).is_err());
        assert_eq!(RemovedValue::decode(br#"{"kind":"beat"}"#), None);
        assert_eq!(
            RemovedValue::decode(br#"{"removed_by":{"generator":"a/b","generation":1}}"#),
            None
        );
    }

    #[test]
    fn only_writes_older_than_the_newest_claim_are_fenced() {
        let mut lineage = Lineage::default();
        let by = |generation| GeneratedBy {
            generator: "g".into(),
            generation,
        };
        // No claim: nothing to compare with, nothing fenced.
        assert!(!lineage.fences(&by(1)));
        lineage.apply_claim("g", 5, true);
        lineage.apply_claim("g", 3, true);
        assert_eq!(lineage.newest_claim("g"), Some(5));
        assert!(lineage.fences(&by(4)));
        assert!(!lineage.fences(&by(5)));
        assert!(!lineage.fences(&by(6)));
        lineage.apply_claim("g", 5, false);
        assert!(!lineage.fences(&by(4)));
        lineage.apply_claim("g", 3, false);
        assert!(lineage.claims.is_empty());
    }
}
