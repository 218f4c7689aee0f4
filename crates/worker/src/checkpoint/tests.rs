//! The checkpoint view: the newest generation wins whatever the order records land in.

use bytes::Bytes;
use kroupier_coordinator::log::ReadRecord;
use proptest::prelude::*;

use super::record::{key, parse_key};
use super::view::CheckpointView;

fn record(offset: i64, task: &str, generation: i32, state: Option<i64>) -> ReadRecord {
    ReadRecord {
        offset,
        key: key(task, generation),
        value: state.map(|n| {
            Bytes::from(
                serde_json::to_vec(&serde_json::json!({"member": "m", "state": n})).unwrap(),
            )
        }),
    }
}

#[test]
fn keys_carry_the_task_and_its_generation() {
    assert_eq!(parse_key(&key("task-7", 12)), Some(("task-7", 12)));
    // A task id may itself hold '@': the generation is after the last one.
    assert_eq!(parse_key(&key("a@b", 3)), Some(("a@b", 3)));
    assert_eq!(parse_key(b"no-generation"), None);
    assert_eq!(parse_key(b"@4"), None);
    assert_eq!(parse_key(b"task@x"), None);
    assert_eq!(parse_key(&[0xff, b'@', b'1']), None);
}

#[test]
fn a_zombie_record_landing_after_the_new_owners_is_ignored_and_marked_stale() {
    let mut view = CheckpointView::default();
    view.apply(&record(0, "t", 3, Some(10)));
    // The new owner (generation 5) writes; then the old owner's held produce lands.
    view.apply(&record(1, "t", 5, Some(20)));
    view.apply(&record(2, "t", 3, Some(11)));
    let newest = view.newest("t").unwrap();
    assert_eq!((newest.generation, newest.offset), (5, 1));
    assert_eq!(*newest.state, serde_json::json!(20));
    assert_eq!(view.stale_generations("t"), vec![3]);
    // The owner's tombstone of the stale key clears it and leaves the newest alone.
    view.apply(&ReadRecord {
        offset: 3,
        key: key("t", 3),
        value: None,
    });
    assert!(view.stale_generations("t").is_empty());
    assert_eq!(view.newest("t").unwrap().generation, 5);
}

#[test]
fn undecodable_records_are_skipped_and_re_reads_change_nothing() {
    let mut view = CheckpointView::default();
    view.apply(&ReadRecord {
        offset: 0,
        key: Bytes::from_static(b"not a checkpoint"),
        value: Some(Bytes::from_static(b"{}")),
    });
    view.apply(&ReadRecord {
        offset: 1,
        key: key("t", 1),
        value: Some(Bytes::from_static(b"not json")),
    });
    assert_eq!(view.skipped, 2);
    assert!(view.is_empty());
    view.apply(&record(2, "t", 1, Some(1)));
    view.apply(&record(3, "t", 1, Some(2)));
    // Offsets already applied are ignored.
    view.apply(&record(2, "t", 1, Some(1)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(2));
    assert_eq!(view.offset, 4);
}

proptest! {
    /// Whatever order the writes of several owners land in, the answer is the last write of
    /// the highest generation.
    #[test]
    fn the_highest_generation_wins_in_any_landing_order(
        writes in proptest::collection::vec((0i32..6, 0i64..1000), 1..40),
    ) {
        let mut view = CheckpointView::default();
        for (offset, (generation, state)) in writes.iter().enumerate() {
            view.apply(&record(offset as i64, "t", *generation, Some(*state)));
        }
        let top = writes.iter().map(|(g, _)| *g).max().unwrap();
        let (offset, (_, state)) = writes
            .iter()
            .enumerate()
            .rfind(|(_, (g, _))| *g == top)
            .unwrap();
        let newest = view.newest("t").unwrap();
        prop_assert_eq!(newest.generation, top);
        prop_assert_eq!(newest.offset, offset as i64);
        prop_assert_eq!(&*newest.state, &serde_json::json!(state));
        let older: std::collections::BTreeSet<i32> =
            writes.iter().map(|(g, _)| *g).filter(|g| *g < top).collect();
        prop_assert_eq!(view.stale_generations("t"), older.into_iter().collect::<Vec<_>>());
    }
}

/// An operator's record (`set` or `reset`) of `task` under `generation`.
fn operator(offset: i64, task: &str, generation: i32, state: Option<i64>) -> ReadRecord {
    let value = match state {
        Some(n) => serde_json::json!({"member": "operator", "state": n}),
        None => serde_json::json!({"member": "operator", "state": null, "reset": true}),
    };
    ReadRecord {
        offset,
        key: key(task, generation),
        value: Some(Bytes::from(serde_json::to_vec(&value).unwrap())),
    }
}

#[test]
fn an_operators_set_outranks_zombies_and_yields_to_the_owners_later_writes() {
    let mut view = CheckpointView::default();
    view.apply(&record(0, "t", 2, Some(10)));
    view.apply(&record(1, "t", 3, Some(20)));
    // Paused; the operator writes under the highest generation present.
    let generation = super::admin::operator_generation(&view, "t", None);
    assert_eq!(generation, 3);
    view.apply(&operator(2, "t", generation, Some(100)));
    // A zombie of generation 2 lands late: ignored.
    view.apply(&record(3, "t", 2, Some(11)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(100));
    assert_eq!(view.newest("t").unwrap().member, "operator");
    // Resumed on the same owner, same generation (no rebalance): its next write wins.
    view.apply(&record(4, "t", 3, Some(101)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(101));
}

#[test]
fn the_owners_granted_generation_lifts_the_operators_key() {
    let mut view = CheckpointView::default();
    view.apply(&record(0, "t", 2, Some(10)));
    // The task moved to an owner granted in generation 6 that has not saved yet.
    assert_eq!(super::admin::operator_generation(&view, "t", Some(6)), 6);
    assert_eq!(super::admin::operator_generation(&view, "t", Some(1)), 2);
    assert_eq!(super::admin::operator_generation(&view, "new", None), 0);
    view.apply(&operator(1, "t", 6, Some(50)));
    // The old owner (generation 2) is a zombie now: it cannot win.
    view.apply(&record(2, "t", 2, Some(12)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(50));
}

#[test]
fn a_reset_reads_as_no_checkpoint_until_the_owner_saves_again() {
    let mut view = CheckpointView::default();
    view.apply(&record(0, "t", 2, Some(10)));
    view.apply(&record(1, "t", 4, Some(20)));
    view.apply(&operator(2, "t", 4, None));
    assert!(view.newest("t").is_none());
    assert!(view.is_empty());
    assert_eq!(view.top_generation("t"), Some(4));
    // An older generation's record (a zombie's, or one compaction kept) does not resurface.
    view.apply(&record(3, "t", 2, Some(11)));
    assert!(view.newest("t").is_none());
    // A set after a reset is the newest.
    view.apply(&operator(4, "t", 4, Some(7)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(7));
    view.apply(&operator(5, "t", 4, None));
    view.apply(&record(6, "t", 4, Some(1)));
    assert_eq!(*view.newest("t").unwrap().state, serde_json::json!(1));
    assert_eq!(view.len(), 1);
}

proptest! {
    /// Whatever the history, an operator's record written under the highest generation
    /// present (or the owner's) is the answer until the owner writes again: a later record of
    /// any lower generation never replaces it, and the owner's next write always does.
    #[test]
    fn an_operators_record_holds_against_older_generations_and_yields_to_the_owner(
        before in proptest::collection::vec((1i32..6, 0i64..1000), 0..20),
        zombies in proptest::collection::vec((0i32..6, 0i64..1000), 0..20),
        owner_bump in 0i32..3,
        reset in any::<bool>(),
    ) {
        let mut view = CheckpointView::default();
        let mut offset = 0;
        for (generation, state) in &before {
            view.apply(&record(offset, "t", *generation, Some(*state)));
            offset += 1;
        }
        let owner = view.top_generation("t").unwrap_or(1) + owner_bump;
        let generation = super::admin::operator_generation(&view, "t", Some(owner));
        prop_assert_eq!(generation, owner);
        view.apply(&operator(offset, "t", generation, (!reset).then_some(-1)));
        offset += 1;
        for (g, state) in &zombies {
            // Zombies: earlier owners, granted in a lower generation than the current one.
            let g = (*g).min(owner - 1);
            view.apply(&record(offset, "t", g, Some(*state)));
            offset += 1;
            match view.newest("t") {
                None => prop_assert!(reset),
                Some(c) => {
                    prop_assert!(!reset);
                    prop_assert_eq!(&*c.state, &serde_json::json!(-1));
                }
            }
        }
        view.apply(&record(offset, "t", owner, Some(5000)));
        prop_assert_eq!(&*view.newest("t").unwrap().state, &serde_json::json!(5000));
    }
}
