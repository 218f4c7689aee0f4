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
    assert!(text.contains("worker-a *"), "{text}");
    assert!(text.contains("2 task-0,task-1"), "{text}");
    assert!(text.contains("generation 1"), "{text}");
}
