//! The difference between the children a generator declares and what the task store holds:
//! pure, so that it is tested on its own.
//!
//! Only what a generator decides counts: a child's kind, config and weight. Its desired state
//! and restart counter belong to operators (`kroupier tasks pause|restart`) and are kept when a
//! child is rewritten. A declared child already stored as declared is never written again,
//! whichever generation wrote it: a generator that restarts elsewhere and declares the same
//! children writes nothing but its claim.

use std::collections::BTreeSet;

use crate::catalogue::TaskSpec;
use crate::store::view::StoreView;
use crate::store::{GeneratedBy, StoreDetail, StoreError, TaskRecord, validate_id};

/// What one reconciliation writes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Claim the generator in this generation first (no claim of it, or only older ones).
    pub(crate) claim: bool,
    /// Older claims of the generator to withdraw once the new one is written.
    pub(crate) stale_claims: Vec<i32>,
    /// Children to put (new, changed, or over an ignored write), sorted by id.
    pub(crate) puts: Vec<(String, TaskRecord)>,
    /// Children to mark removed, sorted by id.
    pub(crate) removes: Vec<String>,
    /// Declared ids held by a task that is not this generator's child: left alone.
    pub(crate) conflicts: Vec<String>,
}

impl Plan {
    /// Whether it writes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        !self.claim && self.puts.is_empty() && self.removes.is_empty()
    }
}

/// Why a declaration cannot be reconciled.
#[derive(Debug, PartialEq)]
pub(crate) enum Refusal {
    /// A newer owner of the generator claimed it: this worker is a zombie.
    Superseded {
        /// The newest claim.
        newest: i32,
    },
}

/// Checks a declaration: valid, distinct ids, none the generator's own; valid records.
pub(crate) fn check(generator: &str, declared: &[TaskSpec]) -> Result<(), StoreError> {
    let mut seen = BTreeSet::new();
    for spec in declared {
        validate_id(&spec.id)?;
        let invalid = |reason: &str| -> StoreError {
            StoreDetail::InvalidRecord {
                id: spec.id.clone(),
                reason: reason.to_owned(),
            }
            .into()
        };
        if spec.id == generator {
            return Err(invalid("a generator cannot declare itself as its child"));
        }
        if !seen.insert(spec.id.as_str()) {
            return Err(invalid("it is declared twice; child ids must be distinct"));
        }
        TaskRecord::new(spec.kind.clone(), spec.config.clone())
            .with_weight(spec.weight)
            .encode(&spec.id)?;
    }
    Ok(())
}

/// What `generator`, granted in `generation`, writes so that `view` holds exactly `declared`
/// as its children. `declared` must have passed [`check`].
pub(crate) fn plan(
    view: &StoreView,
    generator: &str,
    generation: i32,
    declared: &[TaskSpec],
) -> Result<Plan, Refusal> {
    let lineage = &view.lineage;
    let newest = lineage.newest_claim(generator);
    if let Some(newest) = newest
        && newest > generation
    {
        return Err(Refusal::Superseded { newest });
    }
    let by = GeneratedBy {
        generator: generator.to_owned(),
        generation,
    };
    let ignored = |id: &str| {
        lineage
            .fenced
            .get(id)
            .is_some_and(|f| f.by.generator == generator)
    };
    let mut plan = Plan::default();
    let mut ids = BTreeSet::new();
    for spec in declared {
        ids.insert(spec.id.as_str());
        let record = match view.tasks.get(&spec.id) {
            None => TaskRecord::new(spec.kind.clone(), spec.config.clone()),
            Some(task) => {
                let ours = task
                    .record
                    .generated_by
                    .as_ref()
                    .is_some_and(|b| b.generator == generator);
                if !ours {
                    plan.conflicts.push(spec.id.clone());
                    continue;
                }
                let same = task.record.kind == spec.kind
                    && task.record.config == spec.config
                    && task.record.weight == spec.weight;
                if same && !ignored(&spec.id) {
                    continue;
                }
                let mut record = task.record.clone();
                record.kind = spec.kind.clone();
                record.config = spec.config.clone();
                record
            }
        };
        let mut record = record.with_weight(spec.weight);
        record.generated_by = Some(by.clone());
        plan.puts.push((spec.id.clone(), record));
    }
    for child in view.children_of(generator) {
        if !ids.contains(child.id.as_str()) {
            plan.removes.push(child.id.clone());
        }
    }
    // An ignored write on a key no longer declared: a new marker, so that the latest record of
    // the key is a heeded one.
    for (id, fenced) in &lineage.fenced {
        if fenced.by.generator == generator
            && !ids.contains(id.as_str())
            && !view.tasks.contains_key(id)
        {
            plan.removes.push(id.clone());
        }
    }
    plan.puts.sort_by(|a, b| a.0.cmp(&b.0));
    plan.removes.sort();
    plan.removes.dedup();
    plan.claim = newest != Some(generation);
    if plan.claim {
        plan.stale_claims = lineage
            .claims
            .get(generator)
            .map(|claims| claims.iter().copied().filter(|g| *g < generation).collect())
            .unwrap_or_default();
    }
    Ok(plan)
}
