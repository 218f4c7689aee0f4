use bytes::Bytes;
use kroupier_coordinator::observer::{GroupDescription, GroupState, MemberDescription};
use kroupier_worker::protocol::{Assignment, MemberMetadata};

use super::*;

fn member(id: &str, worker: &str, assignment: Option<Assignment>) -> MemberDescription {
    MemberDescription {
        member_id: id.into(),
        group_instance_id: None,
        client_id: format!("kroupier-{worker}"),
        client_host: "/127.0.0.1".into(),
        metadata: Bytes::from(MemberMetadata::new(worker).encode()),
        assignment: assignment.map_or_else(Bytes::new, |a| Bytes::from(a.encode())),
    }
}

fn assignment(leader: &str, generation: i32, tasks: &[&str]) -> Assignment {
    let mut a = Assignment::new(leader, generation);
    a.tasks = tasks.iter().map(|t| t.to_string()).collect();
    a
}

fn group(protocol_type: &str, members: Vec<MemberDescription>) -> GroupDescription {
    GroupDescription {
        group_id: "g".into(),
        state: GroupState::Stable,
        protocol_type: protocol_type.into(),
        protocol: "sticky".into(),
        members,
    }
}

#[test]
fn kroupier_group_json_has_the_contract_fields_and_decoded_tasks() {
    let view = build_view(group(
        "kroupier",
        vec![
            member("m-b", "worker-b", Some(assignment("m-a", 4, &["task-2"]))),
            member(
                "m-a",
                "worker-a",
                Some(assignment("m-a", 4, &["task-1", "task-0"])),
            ),
        ],
    ));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "group": "g", "state": "Stable", "generation": 4, "protocol_type": "kroupier",
            "protocol": "sticky", "leader": "m-a",
            "members": [
                {"member_id": "m-a", "instance_id": null, "client_id": "kroupier-worker-a",
                 "host": "/127.0.0.1", "tasks": ["task-0", "task-1"]},
                {"member_id": "m-b", "instance_id": null, "client_id": "kroupier-worker-b",
                 "host": "/127.0.0.1", "tasks": ["task-2"]},
            ]
        })
    );
    assert_eq!(view.members[0].name(), "worker-a");
}

#[test]
fn newest_generation_wins_and_rebalancing_members_have_no_tasks() {
    let view = build_view(group(
        "kroupier",
        vec![
            member("m-a", "a", Some(assignment("m-old", 3, &["task-0"]))),
            member("m-b", "b", Some(assignment("m-b", 5, &["task-1"]))),
            member("m-c", "c", None),
        ],
    ));
    assert_eq!(view.generation, Some(5));
    assert_eq!(view.leader.as_deref(), Some("m-b"));
    assert_eq!(view.members[2].tasks, Some(vec![]));
}

#[test]
fn other_protocol_types_are_not_decoded() {
    let mut consumer = member("m-1", "ignored", None);
    consumer.metadata = Bytes::from_static(b"\x00\x01 consumer bytes");
    let view = build_view(group("consumer", vec![consumer]));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["protocol_type"], "consumer");
    assert_eq!(json["members"][0]["tasks"], serde_json::Value::Null);
    assert_eq!(json["generation"], serde_json::Value::Null);
    assert_eq!(json["leader"], serde_json::Value::Null);
    assert_eq!(view.members[0].name(), "kroupier-ignored");
}

#[test]
fn an_undecodable_kroupier_member_has_unknown_tasks() {
    let mut broken = member("m-x", "x", None);
    broken.assignment = Bytes::from_static(b"\xff\xff");
    let view = build_view(group(
        "kroupier",
        vec![
            broken,
            member("m-a", "a", Some(assignment("m-a", 2, &["task-0"]))),
        ],
    ));
    let broken = view.members.iter().find(|m| m.member_id == "m-x").unwrap();
    assert_eq!(broken.tasks, None);
    assert_eq!(view.generation, Some(2));
}

#[test]
fn a_dead_group_has_nulls_and_no_members() {
    let view = build_view(GroupDescription {
        group_id: "gone".into(),
        state: GroupState::Dead,
        protocol_type: String::new(),
        protocol: String::new(),
        members: vec![],
    });
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"group": "gone", "state": "Dead", "generation": null,
            "protocol_type": null, "protocol": null, "leader": null, "members": []})
    );
    assert!(table(&view).contains("no members"));
}

/// The table's lines, split into words.
fn words(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

#[test]
fn the_table_marks_the_leader_and_lists_tasks() {
    let view = build_view(group(
        "kroupier",
        vec![member(
            "m-a",
            "worker-a",
            Some(assignment("m-a", 1, &["task-0", "task-1"])),
        )],
    ));
    let text = table(&view);
    let rows = words(&text);
    assert_eq!(
        rows[1],
        [
            "WORKER",
            "MEMBER_ID",
            "CLIENT_ID",
            "HOST",
            "INSTANCE_ID",
            "LEADER",
            "TASKS",
            "TASK_IDS"
        ],
        "{text}"
    );
    assert_eq!(
        rows[2],
        [
            "worker-a",
            "m-a",
            "kroupier-worker-a",
            "/127.0.0.1",
            "-",
            "*",
            "2",
            "task-0,task-1"
        ],
        "{text}"
    );
    assert!(text.contains("generation 1"), "{text}");
    assert!(!text.contains("(* leader)"), "{text}");
}

#[test]
fn no_row_is_marked_leader_when_no_assignment_names_one() {
    let mut consumer = member("m-1", "ignored", None);
    consumer.metadata = Bytes::from_static(b"consumer bytes");
    let text = table(&build_view(group("consumer", vec![consumer])));
    let rows = words(&text);
    assert_eq!(rows[2][5], "-", "{text}");
    assert_eq!(&rows[2][6..], ["-", "-"], "tasks unknown: {text}");
    assert!(!text.contains('*') && !text.contains("leader)"), "{text}");
}

#[test]
fn every_value_is_one_word_of_the_table() {
    let mut spaced = member("m 1", "worker one", Some(assignment("m 1", 2, &[])));
    spaced.client_id = "my client".into();
    spaced.group_instance_id = Some(String::new());
    let mut view = build_view(group("kroupier", vec![spaced]));
    view.group = "a group".into();
    let text = table(&view);
    assert!(
        text.starts_with(
            "group a%20group  state Stable  protocol kroupier/sticky  generation 2  leader m%201\n"
        ),
        "{text}"
    );
    let rows = words(&text);
    for row in &rows[1..] {
        assert_eq!(row.len(), 8, "{text}");
    }
    assert_eq!(
        rows[2],
        [
            "worker%20one",
            "m%201",
            "my%20client",
            "/127.0.0.1",
            "-",
            "*",
            "0",
            "-"
        ],
        "{text}"
    );
}

/// The group docs/operations.md shows as an example.
fn documented_group() -> GroupView {
    let mut one = member(
        "kroupier-w1-3f2c…",
        "w1",
        Some(assignment("kroupier-w1-3f2c…", 4, &["task-0", "task-2"])),
    );
    one.client_id = "kroupier-w1".into();
    let mut two = member(
        "kroupier-w2-81aa…",
        "w2",
        Some(assignment("kroupier-w1-3f2c…", 4, &["task-1"])),
    );
    two.client_id = "kroupier-w2".into();
    let mut description = group("kroupier", vec![two, one]);
    description.group_id = "beats".into();
    description.protocol = "cooperative".into();
    build_view(description)
}

const OPERATIONS: &str = include_str!("../../../../docs/operations.md");

#[test]
fn the_documented_table_and_json_are_what_describe_prints() {
    let view = documented_group();
    let text = table(&view);
    assert!(
        OPERATIONS.contains(&text),
        "docs/operations.md shows:\n{text}"
    );
    let json = OPERATIONS
        .split("`--json` prints one object on one line instead:\n\n```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/operations.md has describe's JSON example");
    let documented: serde_json::Value = serde_json::from_str(json).expect("the example parses");
    assert_eq!(documented, serde_json::to_value(&view).unwrap());
}
