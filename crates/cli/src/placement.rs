//! Where each task of a group's task store runs: the store (what should run, and in which
//! state) joined with DescribeGroups (which member holds it, or why none does) and with what
//! that member's status API reports of it (its actual state). Shared by `kroupier tasks list`
//! and `kroupier describe`.

use std::collections::{BTreeSet, HashMap};

use kroupier_worker::store::{DesiredState, StoreView};
use serde::Serialize;

use crate::actual::Reports;
use crate::group_view::{GroupView, MemberView};

/// One stored task and where it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Placed {
    /// The task id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// The generator that declared it, if one did.
    pub generated_by: Option<String>,
    /// Its actual state: what its owner's status API reports (`RUNNING`, `FAILED`, `PAUSED`,
    /// ...), [`UNASSIGNED`] when no worker holds it, [`UNKNOWN`] when its owner did not say.
    pub state: String,
    /// Its desired state, from the store.
    pub desired: DesiredState,
    /// Its owner's last error for it, when the owner reports one.
    pub error: Option<String>,
    /// Its version (the offset of its record).
    pub version: i64,
    /// The worker whose assignment holds it, if any.
    pub owner: Option<String>,
    /// Why the leader placed it nowhere (`no_eligible_member`: no worker registers its kind;
    /// `no_capacity`), when it says so.
    pub unplaced: Option<String>,
}

/// The actual state of a task no worker holds (Kafka Connect's word).
pub(crate) const UNASSIGNED: &str = "UNASSIGNED";
/// The actual state of a task whose owner did not say: it advertises no status API, serves it
/// over TLS or behind a token, did not answer, or has not started the task yet.
pub(crate) const UNKNOWN: &str = "UNKNOWN";

/// Every task of `store`, sorted by id, with its owner in `group` or why it has none, and its
/// actual state as its owner reports it in `reports`.
pub(crate) fn place(store: &StoreView, group: &GroupView, reports: &Reports) -> Vec<Placed> {
    // Looked up once per task: a map, not a scan of every member's tasks.
    let mut owners: HashMap<&str, &str> = HashMap::new();
    for member in &group.members {
        for task in member.tasks.iter().flatten() {
            owners.entry(task.as_str()).or_insert(member.name());
        }
    }
    let mut reasons: HashMap<&str, &str> = HashMap::new();
    for (reason, tasks) in &group.unplaced {
        for task in tasks {
            reasons.entry(task.as_str()).or_insert(reason.as_str());
        }
    }
    store
        .tasks
        .values()
        .map(|task| {
            let owner = owners.get(task.id.as_str()).map(|o| (*o).to_owned());
            let unplaced = reasons.get(task.id.as_str()).map(|r| (*r).to_owned());
            let reported = owner
                .as_ref()
                .and_then(|owner| reports.get(owner)?.get(&task.id));
            let state = match (&owner, reported) {
                (None, _) => UNASSIGNED.to_owned(),
                (Some(_), None) => UNKNOWN.to_owned(),
                (Some(_), Some(reported)) => reported.state.clone(),
            };
            Placed {
                id: task.id.clone(),
                kind: task.record.kind.clone(),
                generated_by: task
                    .record
                    .generated_by
                    .as_ref()
                    .map(|b| b.generator.clone()),
                state,
                desired: task.record.state,
                error: reported.and_then(|r| r.error.clone()),
                version: task.version,
                owner,
                unplaced,
            }
        })
        .collect()
}

/// The table `kroupier describe` and `kroupier tasks list` print (cells as [`crate::table`]
/// writes them): `STATE` is the actual state (see [`Placed::state`]), `DESIRED` the store's
/// `running` or `paused`, `OWNER` the worker that holds the task, `UNPLACED` why none does when
/// the leader says; both `-` for a task no assignment mentions yet. `PARENT` is the generator
/// that declared the task (`-` for none).
pub(crate) fn table(placed: &[Placed]) -> String {
    use crate::table::{cell, optional};
    let rows: Vec<[String; 8]> = placed
        .iter()
        .map(|p| {
            [
                cell(&p.id),
                cell(&p.kind),
                optional(p.generated_by.as_deref()),
                cell(&p.state),
                p.desired.to_string(),
                p.version.to_string(),
                optional(p.owner.as_deref()),
                optional(p.unplaced.as_deref()),
            ]
        })
        .collect();
    crate::table::render(
        [
            "TASK", "KIND", "PARENT", "STATE", "DESIRED", "VERSION", "OWNER", "UNPLACED",
        ],
        &rows,
    )
}

/// The owners of `store`'s tasks in `group`: the workers to ask for their tasks' states.
pub(crate) fn owners<'a>(store: &StoreView, group: &'a GroupView) -> BTreeSet<&'a str> {
    group
        .members
        .iter()
        .filter(|m| {
            m.tasks
                .iter()
                .flatten()
                .any(|t| store.tasks.contains_key(t))
        })
        .map(MemberView::name)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use kroupier_worker::store::{StoreView, TaskRecord};

    use super::*;
    use crate::actual::Reported;

    fn member(worker: &str, tasks: &[&str]) -> MemberView {
        MemberView {
            member_id: format!("{worker}-id"),
            instance_id: None,
            client_id: worker.to_owned(),
            host: "/127.0.0.1".to_owned(),
            tasks: Some(tasks.iter().map(|t| (*t).to_owned()).collect()),
            worker_id: Some(worker.to_owned()),
        }
    }

    #[test]
    fn tasks_get_their_owner_or_the_reason_they_have_none() {
        let mut store = StoreView::new();
        let put = |store: &mut StoreView, offset: i64, id: &str, record: TaskRecord| {
            let value = record.encode(id).unwrap();
            store.apply_parts(offset, id.as_bytes(), Some(&value));
        };
        put(
            &mut store,
            0,
            "a",
            TaskRecord::new("beat", serde_json::json!({})),
        );
        put(
            &mut store,
            1,
            "b",
            TaskRecord::new("beat", serde_json::json!({})).with_state(DesiredState::Paused),
        );
        put(
            &mut store,
            2,
            "c",
            TaskRecord::new("mystery", serde_json::json!({})),
        );
        put(
            &mut store,
            3,
            "d",
            TaskRecord::new("beat", serde_json::json!({})),
        );
        let group = GroupView {
            group: "g".into(),
            state: "Stable".into(),
            generation: Some(3),
            protocol_type: Some("kroupier".into()),
            protocol: Some("cooperative".into()),
            leader: None,
            members: vec![member("w1", &["a"]), member("w2", &["b"])],
            unplaced: BTreeMap::from([(
                "no_eligible_member".to_owned(),
                BTreeSet::from(["c".to_owned()]),
            )]),
        };
        assert_eq!(owners(&store, &group), BTreeSet::from(["w1", "w2"]));
        // w1 reports `a` FAILED; w2 did not answer.
        let reports = Reports::from([(
            "w1".to_owned(),
            HashMap::from([(
                "a".to_owned(),
                Reported {
                    state: "FAILED".into(),
                    error: Some("boom".into()),
                    generation: Some(1),
                },
            )]),
        )]);
        let placed = place(&store, &group, &reports);
        let owners: Vec<(&str, Option<&str>, Option<&str>)> = placed
            .iter()
            .map(|p| (p.id.as_str(), p.owner.as_deref(), p.unplaced.as_deref()))
            .collect();
        assert_eq!(
            owners,
            vec![
                ("a", Some("w1"), None),
                ("b", Some("w2"), None),
                ("c", None, Some("no_eligible_member")),
                ("d", None, None),
            ]
        );
        assert_eq!(placed[1].desired, DesiredState::Paused);
        assert_eq!(placed[0].error.as_deref(), Some("boom"));
        let table = table(&placed);
        let rows: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows[0],
            [
                "TASK", "KIND", "PARENT", "STATE", "DESIRED", "VERSION", "OWNER", "UNPLACED"
            ]
        );
        // The actual state first: a FAILED task that should run says FAILED, not running.
        assert_eq!(
            rows[1],
            ["a", "beat", "-", "FAILED", "running", "0", "w1", "-"],
            "{table}"
        );
        assert_eq!(
            rows[2],
            ["b", "beat", "-", "UNKNOWN", "paused", "1", "w2", "-"],
            "{table}"
        );
        assert_eq!(
            rows[3],
            [
                "c",
                "mystery",
                "-",
                "UNASSIGNED",
                "running",
                "2",
                "-",
                "no_eligible_member"
            ],
            "{table}"
        );
        assert_eq!(
            rows[4],
            ["d", "beat", "-", "UNASSIGNED", "running", "3", "-", "-"],
            "{table}"
        );
    }
}
