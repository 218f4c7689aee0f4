//! The difference a generator writes, and the rule that makes an older owner's write harmless.

use proptest::prelude::*;
use serde_json::json;

use super::diff::{Refusal, check, plan};
use crate::catalogue::TaskSpec;
use crate::store::lineage::{RemovedValue, claim_key};
use crate::store::{DesiredState, GeneratedBy, StoreView, TaskRecord};

fn spec(id: &str, n: u64) -> TaskSpec {
    TaskSpec::new(id, "file", json!({ "n": n }))
}

fn child(n: u64, generation: i32) -> TaskRecord {
    let mut record = TaskRecord::new("file", json!({ "n": n }));
    record.generated_by = Some(GeneratedBy {
        generator: "g".into(),
        generation,
    });
    record
}

/// Writes applied to a view in order, one offset each.
#[derive(Debug, Clone)]
enum Write {
    Claim(i32),
    Put(&'static str, TaskRecord),
    Remove(&'static str, i32),
    Tombstone(&'static str),
}

fn apply(view: &mut StoreView, writes: &[Write]) {
    for write in writes {
        let offset = view.offset;
        match write {
            Write::Claim(generation) => {
                view.apply_parts(offset, &claim_key("g", *generation), Some(b"{}"));
            }
            Write::Put(id, record) => {
                let value = record.encode(id).unwrap();
                view.apply_parts(offset, id.as_bytes(), Some(&value));
            }
            Write::Remove(id, generation) => {
                let value = RemovedValue::encode("g", *generation);
                view.apply_parts(offset, id.as_bytes(), Some(&value));
            }
            Write::Tombstone(id) => view.apply_parts(offset, id.as_bytes(), None),
        }
    }
}

fn view_of(writes: &[Write]) -> StoreView {
    let mut view = StoreView::new();
    apply(&mut view, writes);
    view
}

#[test]
fn a_first_declaration_claims_and_puts_every_child() {
    let view = view_of(&[Write::Put("g", TaskRecord::new("dir", json!({})))]);
    let plan = plan(&view, "g", 3, &[spec("b", 2), spec("a", 1)]).unwrap();
    assert!(plan.claim);
    let ids: Vec<&str> = plan.puts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(plan.puts[0].1, child(1, 3));
    assert!(plan.removes.is_empty());
}

#[test]
fn an_unchanged_declaration_writes_nothing_even_from_a_newer_owner() {
    let view = view_of(&[
        Write::Claim(3),
        Write::Put("a", child(1, 3)),
        Write::Put("b", child(2, 3)),
    ]);
    let same = [spec("a", 1), spec("b", 2)];
    assert!(plan(&view, "g", 3, &same).unwrap().is_empty());
    // The generator restarted elsewhere in generation 7: its claim, and nothing else.
    let moved = plan(&view, "g", 7, &same).unwrap();
    assert!(moved.claim);
    assert_eq!(moved.stale_claims, [3]);
    assert!(moved.puts.is_empty() && moved.removes.is_empty());
}

#[test]
fn changes_put_and_undeclared_children_are_marked_removed() {
    let mut paused = child(1, 3).with_state(DesiredState::Paused);
    paused.restart = 4;
    let view = view_of(&[
        Write::Claim(3),
        Write::Put("a", paused),
        Write::Put("b", child(2, 3)),
        Write::Put("hand", TaskRecord::new("file", json!({}))),
    ]);
    let plan = plan(
        &view,
        "g",
        3,
        &[spec("a", 9), spec("c", 3), spec("hand", 1)],
    )
    .unwrap();
    assert!(!plan.claim);
    let ids: Vec<&str> = plan.puts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);
    // An operator's pause and restart count stay; the config is the declared one.
    let a = &plan.puts[0].1;
    assert_eq!(
        (a.state, a.restart, &a.config),
        (DesiredState::Paused, 4, &json!({"n": 9}))
    );
    assert_eq!(plan.removes, ["b"]);
    // A task put by hand is nobody's child: left alone.
    assert_eq!(plan.conflicts, ["hand"]);
}

#[test]
fn a_superseded_owner_writes_nothing() {
    let view = view_of(&[Write::Claim(3), Write::Claim(7)]);
    assert_eq!(
        plan(&view, "g", 3, &[spec("a", 1)]),
        Err(Refusal::Superseded { newest: 7 })
    );
}

#[test]
fn a_declaration_is_checked_before_anything_is_written() {
    assert!(check("g", &[spec("a", 1), spec("b", 1)]).is_ok());
    for (bad, says) in [
        (vec![spec("a", 1), spec("a", 2)], "declared twice"),
        (vec![spec("g", 1)], "itself"),
        (vec![spec("a/b", 1)], "it holds"),
        (vec![TaskSpec::new("a", "", json!({}))], "kind is empty"),
    ] {
        let error = check("g", &bad).unwrap_err().to_string();
        assert!(error.contains(says), "{error}");
    }
}

#[test]
fn an_older_owners_late_writes_are_ignored_and_repaired() {
    let mut view = view_of(&[
        Write::Claim(3),
        Write::Put("a", child(1, 3)),
        Write::Put("b", child(2, 3)),
        Write::Claim(7),
    ]);
    let before = view.tasks.clone();
    // The owner of generation 3 removes `a`, changes `b` and adds `c`, late.
    apply(
        &mut view,
        &[
            Write::Remove("a", 3),
            Write::Put("b", child(5, 3)),
            Write::Put("c", child(6, 3)),
        ],
    );
    assert_eq!(view.tasks, before);
    assert_eq!(
        view.lineage.fenced.keys().collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    // The owner of generation 7 writes every key the ignored writes are latest on.
    let plan = plan(&view, "g", 7, &[spec("a", 1), spec("b", 2)]).unwrap();
    let ids: Vec<&str> = plan.puts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(plan.removes, ["c"]);
    // Its writes are heeded.
    apply(
        &mut view,
        &[
            Write::Put("a", child(1, 7)),
            Write::Put("b", child(2, 7)),
            Write::Remove("c", 7),
        ],
    );
    assert!(view.lineage.fenced.is_empty());
    assert_eq!(view.lineage.removed["c"].generation, 7);
}

/// One generated write: by the older owner (generation 3) or the newer (7), to one of three
/// children, a put of some config, a removal, or an operator's tombstone.
fn writes() -> impl Strategy<Value = Vec<(bool, u8, u8)>> {
    prop::collection::vec((any::<bool>(), 0u8..3, 0u8..5), 0..30)
}

const IDS: [&str; 3] = ["a", "b", "c"];

fn write(generation: i32, id: u8, what: u8) -> Write {
    let id = IDS[usize::from(id)];
    match what {
        0 => Write::Remove(id, generation),
        4 if generation == 7 => Write::Tombstone(id),
        n => Write::Put(id, child(u64::from(n), generation)),
    }
}

proptest! {
    /// Once the newer owner claimed the generator, any interleaving of the older owner's writes
    /// with the newer owner's (and an operator's) gives the view the newer owner's writes alone
    /// give: the older owner's writes never change what a reader sees.
    #[test]
    fn an_older_owners_writes_never_change_the_view(
        before in writes(),
        after in writes(),
    ) {
        let setup: Vec<Write> = [Write::Claim(3)]
            .into_iter()
            .chain(before.iter().map(|(_, id, what)| write(3, *id, *what)))
            .chain([Write::Claim(7)])
            .collect();
        let mixed: Vec<Write> = after
            .iter()
            .map(|(newer, id, what)| write(if *newer { 7 } else { 3 }, *id, *what))
            .collect();
        let newer_only: Vec<Write> = after
            .iter()
            .filter(|(newer, _, _)| *newer)
            .map(|(_, id, what)| write(7, *id, *what))
            .collect();
        let mut with_zombie = view_of(&setup);
        apply(&mut with_zombie, &mixed);
        let mut without = view_of(&setup);
        apply(&mut without, &newer_only);
        prop_assert_eq!(&with_zombie.tasks.keys().collect::<Vec<_>>(), &without.tasks.keys().collect::<Vec<_>>());
        for (id, task) in &with_zombie.tasks {
            prop_assert_eq!(&task.record, &without.tasks[id].record);
        }
        prop_assert_eq!(&with_zombie.lineage.removed, &without.lineage.removed);
    }
}
