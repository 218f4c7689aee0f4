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
