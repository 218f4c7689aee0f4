//! `kroupier describe` of a KIP-848 `consumer` group (a Java consumer with
//! `group.protocol=consumer`): what ConsumerGroupDescribe shows, as a table or as JSON.
//!
//! DescribeGroups answers for classic groups only, so such a group used to show as `Dead` with
//! no members. Shown: the state, the group and assignment epochs, the server-side assignor, and
//! per member its epoch, subscriptions and partitions (owned and target). Not shown, because the
//! protocol has none: a leader and a generation; nor committed offsets and lag, which are not
//! part of group membership (`kafka-consumer-groups.sh --describe` shows them).

use kroupier_coordinator::observer::{ConsumerGroupDescription, ConsumerMember, TopicPartitions};
use serde::Serialize;

use crate::table::{cell, list, optional};

/// What the table's last line says it cannot show.
pub(super) const NOT_SHOWN: &str = "a KIP-848 consumer group: it has no leader and no generation (the \
     coordinator assigns partitions, epoch by epoch); committed offsets and lag are not shown \
     (kafka-consumer-groups.sh --describe --group GROUP shows them)";

/// A `consumer` group as `kroupier describe --json` prints it.
#[derive(Debug, Serialize)]
pub(super) struct ConsumerGroupView {
    group: String,
    /// Always `consumer`: what tells this object from a classic group's.
    group_type: &'static str,
    state: String,
    group_epoch: i32,
    assignment_epoch: i32,
    assignor: String,
    members: Vec<ConsumerMemberView>,
}

/// One member in [`ConsumerGroupView`].
#[derive(Debug, Serialize)]
struct ConsumerMemberView {
    member_id: String,
    instance_id: Option<String>,
    rack_id: Option<String>,
    client_id: String,
    host: String,
    member_epoch: i32,
    subscribed_topics: Vec<String>,
    subscribed_regex: Option<String>,
    /// `topic-partition` names, sorted.
    assignment: Vec<String>,
    /// `topic-partition` names, sorted.
    target_assignment: Vec<String>,
}

/// The view of a described `consumer` group, members sorted by client id, then member id.
pub(super) fn view(description: ConsumerGroupDescription) -> ConsumerGroupView {
    let mut members: Vec<ConsumerMemberView> =
        description.members.into_iter().map(member_view).collect();
    members.sort_by(|a, b| (&a.client_id, &a.member_id).cmp(&(&b.client_id, &b.member_id)));
    ConsumerGroupView {
        group: description.group_id,
        group_type: "consumer",
        state: description.state,
        group_epoch: description.group_epoch,
        assignment_epoch: description.assignment_epoch,
        assignor: description.assignor,
        members,
    }
}

fn member_view(m: ConsumerMember) -> ConsumerMemberView {
    ConsumerMemberView {
        member_id: m.member_id,
        instance_id: m.instance_id,
        rack_id: m.rack_id,
        client_id: m.client_id,
        host: m.client_host,
        member_epoch: m.member_epoch,
        subscribed_topics: m.subscribed_topics,
        subscribed_regex: m.subscribed_regex,
        assignment: names(&m.assignment),
        target_assignment: names(&m.target_assignment),
    }
}

/// `topic-partition` names, sorted by topic, then partition.
fn names(assignment: &[TopicPartitions]) -> Vec<String> {
    let mut pairs: Vec<(&str, i32)> = assignment
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic.as_str(), *p)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs.into_iter().map(|(t, p)| format!("{t}-{p}")).collect()
}

/// The human-readable form: a line of the group's facts, a table of its members (cells as
/// [`crate::table`] writes them), and a line saying what is not shown.
pub(super) fn table(view: &ConsumerGroupView) -> String {
    let mut out = format!(
        "group {}  type consumer  state {}  group_epoch {}  assignment_epoch {}  assignor {}\n",
        cell(&view.group),
        cell(&view.state),
        view.group_epoch,
        view.assignment_epoch,
        cell(&view.assignor),
    );
    if view.members.is_empty() {
        out.push_str("no members\n");
    } else {
        let rows: Vec<[String; 8]> = view
            .members
            .iter()
            .map(|m| {
                [
                    cell(&m.member_id),
                    cell(&m.client_id),
                    cell(&m.host),
                    optional(m.instance_id.as_deref()),
                    optional(m.rack_id.as_deref()),
                    m.member_epoch.to_string(),
                    list(m.assignment.iter().map(String::as_str)),
                    list(m.target_assignment.iter().map(String::as_str)),
                ]
            })
            .collect();
        out.push_str(&crate::table::render(
            [
                "MEMBER_ID",
                "CLIENT_ID",
                "HOST",
                "INSTANCE_ID",
                "RACK",
                "EPOCH",
                "PARTITIONS",
                "TARGET",
            ],
            &rows,
        ));
    }
    out.push_str(NOT_SHOWN);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, client: &str, owned: &[i32], target: &[i32]) -> ConsumerMember {
        let of = |partitions: &[i32]| {
            vec![TopicPartitions {
                topic: "orders".into(),
                partitions: partitions.to_vec(),
            }]
        };
        ConsumerMember {
            member_id: id.into(),
            instance_id: None,
            rack_id: None,
            member_epoch: 5,
            client_id: client.into(),
            client_host: "/127.0.0.1".into(),
            subscribed_topics: vec!["orders".into()],
            subscribed_regex: None,
            assignment: of(owned),
            target_assignment: of(target),
        }
    }

    fn described(members: Vec<ConsumerMember>) -> ConsumerGroupDescription {
        ConsumerGroupDescription {
            group_id: "orders-app".into(),
            state: "Stable".into(),
            group_epoch: 5,
            assignment_epoch: 5,
            assignor: "uniform".into(),
            members,
        }
    }

    #[test]
    fn a_consumer_group_shows_its_members_and_partitions_and_says_what_it_cannot() {
        let view = view(described(vec![
            member("m-2", "consumer-b", &[2], &[2]),
            member("m-1", "consumer-a", &[1, 0], &[0, 1]),
        ]));
        let text = table(&view);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows[0],
            [
                "group",
                "orders-app",
                "type",
                "consumer",
                "state",
                "Stable",
                "group_epoch",
                "5",
                "assignment_epoch",
                "5",
                "assignor",
                "uniform"
            ]
        );
        assert_eq!(
            rows[1],
            [
                "MEMBER_ID",
                "CLIENT_ID",
                "HOST",
                "INSTANCE_ID",
                "RACK",
                "EPOCH",
                "PARTITIONS",
                "TARGET"
            ]
        );
        assert_eq!(
            rows[2],
            [
                "m-1",
                "consumer-a",
                "/127.0.0.1",
                "-",
                "-",
                "5",
                "orders-0,orders-1",
                "orders-0,orders-1"
            ],
            "{text}"
        );
        assert_eq!(rows[3][0], "m-2", "{text}");
        assert!(text.ends_with(&format!("{NOT_SHOWN}\n")), "{text}");
        assert!(NOT_SHOWN.contains("no leader and no generation"));

        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["group_type"], "consumer");
        assert_eq!(json["state"], "Stable");
        assert_eq!(json["group_epoch"], 5);
        assert_eq!(json["assignor"], "uniform");
        assert_eq!(
            json["members"][0]["assignment"],
            serde_json::json!(["orders-0", "orders-1"])
        );
        assert_eq!(json["members"][1]["member_id"], "m-2");
    }

    /// docs/operations.md shows this group's table and JSON, as `describe` prints them.
    #[test]
    fn the_documented_consumer_group_is_what_describe_prints() {
        const OPERATIONS: &str = include_str!("../../../../docs/operations.md");
        let view = view(described(vec![
            member("m-2", "consumer-b", &[2], &[2]),
            member("m-1", "consumer-a", &[0, 1], &[0, 1]),
        ]));
        let text = table(&view);
        assert!(
            OPERATIONS.contains(&text),
            "docs/operations.md shows:\n{text}"
        );
        let json = OPERATIONS
            .split("`\"group_type\":\"consumer\"` (partitions\nas `topic-partition`, sorted):\n\n```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/operations.md has the consumer group's JSON example");
        let documented: serde_json::Value = serde_json::from_str(json).expect("it parses");
        assert_eq!(documented, serde_json::to_value(&view).unwrap());
    }

    #[test]
    fn an_empty_consumer_group_says_so() {
        let text = table(&view(described(Vec::new())));
        assert!(text.contains("\nno members\n"), "{text}");
    }
}
