use std::time::{Duration, Instant};

use super::*;
use crate::group_view::MemberView;

fn view(state: &str, members: &[(&str, &[&str])]) -> GroupView {
    GroupView {
        group: "g".into(),
        state: state.into(),
        generation: Some(4),
        protocol_type: Some("kroupier".into()),
        protocol: Some("cooperative".into()),
        leader: None,
        members: members
            .iter()
            .map(|(worker, tasks)| MemberView {
                member_id: format!("{worker}-id"),
                instance_id: None,
                client_id: format!("kroupier-{worker}"),
                host: "/127.0.0.1".into(),
                tasks: Some(tasks.iter().map(|t| t.to_string()).collect()),
                worker_id: Some(worker.to_string()),
            })
            .collect(),
        unplaced: Default::default(),
    }
}

fn moved(task: &str, from: &str, to: &str, ms: u64) -> Move {
    Move {
        task: task.into(),
        from: from.into(),
        to: to.into(),
        at: Instant::now(),
        unowned_for: Duration::from_millis(ms),
    }
}

#[test]
fn plain_lines_say_each_change_once() {
    let mut changes = Changes::new();
    let stable = view("Stable", &[("w1", &["t0", "t2"]), ("w2", &["t1"])]);
    assert_eq!(
        changes.plain(Some(&stable), None, &[]),
        ["Stable generation 4: w1 2, w2 1"]
    );
    assert!(changes.plain(Some(&stable), None, &[]).is_empty());
    let rebalancing = view("PreparingRebalance", &[("w1", &[]), ("w2", &[])]);
    assert_eq!(
        changes.plain(Some(&rebalancing), None, &[]),
        ["PreparingRebalance: 2 members"]
    );
    let after = view("Stable", &[("w1", &["t0", "t1", "t2"])]);
    assert_eq!(
        changes.plain(Some(&after), None, &[moved("t1", "w2", "w1", 300)]),
        ["t1: w2 → w1 (unowned 0.30 s)", "Stable generation 4: w1 3"]
    );
    // An error is said once, and again only after a success.
    let error = Some("no answer from 127.0.0.1:1");
    assert_eq!(
        changes.plain(Some(&after), error, &[]),
        ["error: no answer from 127.0.0.1:1"]
    );
    assert!(changes.plain(Some(&after), error, &[]).is_empty());
    assert!(changes.plain(Some(&after), None, &[]).is_empty());
    assert_eq!(changes.plain(Some(&after), error, &[]).len(), 1);
}

#[test]
fn json_lines_carry_the_describe_object_moves_and_errors() {
    let mut changes = Changes::new();
    let stable = view("Stable", &[("w1", &["t0"])]);
    let lines = changes
        .json(
            7,
            Some(&stable),
            Some("boom"),
            &[moved("t0", "w2", "w1", 1500)],
        )
        .unwrap();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        values,
        [
            serde_json::json!({"event": "move", "at_ms": 7, "task": "t0", "from": "w2",
                "to": "w1", "unowned_ms": 1500}),
            serde_json::json!({"event": "error", "at_ms": 7, "error": "boom"}),
            serde_json::json!({"event": "group", "at_ms": 7,
                "group": serde_json::to_value(&stable).unwrap()}),
        ]
    );
    assert!(
        changes
            .json(8, Some(&stable), None, &[])
            .unwrap()
            .is_empty()
    );
    assert!(lines.iter().all(|l| !l.contains('\n')));
}

const OPERATIONS: &str = include_str!("../../../../../docs/operations.md");

#[test]
fn the_documented_lines_are_what_watch_prints() {
    let mut changes = Changes::new();
    let stable = view("Stable", &[("w1", &["t0", "t2"]), ("w2", &["t1"])]);
    let rebalancing = view("PreparingRebalance", &[("w1", &[]), ("w2", &[])]);
    let mut after = view("Stable", &[("w1", &["t0", "t1", "t2"])]);
    after.generation = Some(5);
    let task_1 = moved("task-1", "w2", "w1", 300);
    let printed = [
        changes.plain(Some(&stable), None, &[]),
        changes.plain(Some(&rebalancing), None, &[]),
        changes.plain(Some(&after), None, std::slice::from_ref(&task_1)),
    ]
    .concat();
    for line in printed {
        assert!(
            OPERATIONS.contains(&format!("s {line}\n")),
            "docs/operations.md shows `{line}`"
        );
    }
    let json = Changes::new()
        .json(1_796_400_003_400, None, None, &[task_1])
        .unwrap();
    assert!(
        OPERATIONS.contains(&format!("\n{}\n", json[0])),
        "{}",
        json[0]
    );
}
