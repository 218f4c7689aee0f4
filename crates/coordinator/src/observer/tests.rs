//! Tests of the observer against a fake broker that is its own cluster and coordinator.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::connection::ClusterConfig;
use crate::connection::Detail;
use crate::connection::tests::fake_broker::{FakeBroker, Reply, answer, kafka_4_1};
use crate::wire::RequestBody;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A member whose assignment is `generation:leader:tasks`, a toy format for the decoder hook.
fn member(id: &str, instance: Option<&str>, assignment: &'static str) -> DescribedGroupMember {
    DescribedGroupMember::default()
        .with_member_id(s(id))
        .with_group_instance_id(instance.map(s))
        .with_client_id(s("kroupier"))
        .with_client_host(s("/127.0.0.1"))
        .with_member_metadata(Bytes::from_static(b"meta"))
        .with_member_assignment(Bytes::from_static(assignment.as_bytes()))
}

fn stable_group(group: &str) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(GroupId(s(group)))
        .with_group_state(s("Stable"))
        .with_protocol_type(s("kroupier"))
        .with_protocol_data(s("sticky"))
        .with_members(vec![
            member("m-1", Some("worker-1"), "7:m-1:task-0,task-1"),
            member("m-2", None, "7:m-1:task-2"),
            member("m-3", None, "garbage"),
        ])
}

/// A fake single-broker cluster; `describe` answers DescribeGroups (the n-th call gets n).
async fn cluster_of_one(
    describe: impl Fn(usize, &str) -> DescribedGroup + Send + Sync + 'static,
) -> (FakeBroker, Observer) {
    let self_addr: Arc<std::sync::OnceLock<(String, i32)>> = Arc::default();
    let me = self_addr.clone();
    let calls = AtomicUsize::new(0);
    let broker = FakeBroker::start(kafka_4_1(move |header, body| {
        let (host, port) = me.get().cloned().unwrap_or_default();
        match body {
            RequestBody::Metadata(_) => answer(
                header,
                &MetadataResponse::default().with_brokers(vec![
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s(&host))
                        .with_port(port),
                ]),
            ),
            RequestBody::FindCoordinator(request) => answer(
                header,
                &FindCoordinatorResponse::default().with_coordinators(
                    request
                        .coordinator_keys
                        .iter()
                        .map(|k| {
                            Coordinator::default()
                                .with_key(k.clone())
                                .with_node_id(BrokerId(1))
                                .with_host(s(&host))
                                .with_port(port)
                        })
                        .collect(),
                ),
            ),
            RequestBody::ListGroups(_) => answer(
                header,
                &ListGroupsResponse::default().with_groups(vec![
                    ListedGroup::default()
                        .with_group_id(GroupId(s("workers")))
                        .with_protocol_type(s("kroupier"))
                        .with_group_state(s("Stable"))
                        .with_group_type(s("classic")),
                    ListedGroup::default()
                        .with_group_id(GroupId(s("audit")))
                        .with_protocol_type(s("consumer"))
                        .with_group_state(s("Empty"))
                        .with_group_type(s("classic")),
                ]),
            ),
            RequestBody::DescribeGroups(request) => {
                let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
                let group = request.groups[0].as_str().to_owned();
                answer(
                    header,
                    &DescribeGroupsResponse::default().with_groups(vec![describe(n, &group)]),
                )
            }
            RequestBody::LeaveGroup(request) => {
                // Knows `m-1` only, and only with instance id `worker-1` (or none named).
                let members = request
                    .members
                    .iter()
                    .map(|m| {
                        let known = m.member_id.as_str() == "m-1"
                            && m.group_instance_id
                                .as_ref()
                                .is_none_or(|i| i.as_str() == "worker-1");
                        let code = if m
                            .group_instance_id
                            .as_ref()
                            .is_some_and(|i| i.as_str() != "worker-1")
                        {
                            82 // FENCED_INSTANCE_ID
                        } else if known {
                            0
                        } else {
                            25
                        };
                        leave_group_response::MemberResponse::default()
                            .with_member_id(m.member_id.clone())
                            .with_group_instance_id(m.group_instance_id.clone())
                            .with_error_code(code)
                    })
                    .collect();
                answer(header, &LeaveGroupResponse::default().with_members(members))
            }
            _ => Reply::Close,
        }
    }))
    .await;
    let (host, port) = broker.addr.rsplit_once(':').unwrap();
    let _ = self_addr.set((host.to_owned(), port.parse().unwrap()));
    let config = ClusterConfig {
        retry_backoff: Duration::from_millis(1),
        retry_backoff_max: Duration::from_millis(2),
        ..ClusterConfig::new(&broker.addr)
    };
    let observer = Observer::new(Arc::new(Cluster::new(config).unwrap()));
    (broker, observer)
}

#[tokio::test]
async fn lists_the_groups_of_every_broker() {
    let (broker, observer) = cluster_of_one(|_, g| stable_group(g)).await;
    let groups = observer.list_groups().await.unwrap();
    assert_eq!(
        groups,
        [
            GroupListing {
                group_id: "audit".into(),
                protocol_type: "consumer".into(),
                state: Some(GroupState::Empty),
                group_type: Some("classic".into()),
            },
            GroupListing {
                group_id: "workers".into(),
                protocol_type: "kroupier".into(),
                state: Some(GroupState::Stable),
                group_type: Some("classic".into()),
            },
        ]
    );
    let received = broker.received();
    assert!(received.contains(&(ApiKey::Metadata, 13)));
    assert!(received.contains(&(ApiKey::ListGroups, 5)));
}

#[tokio::test]
async fn describes_a_group_with_raw_member_bytes() {
    let (_broker, observer) = cluster_of_one(|_, g| stable_group(g)).await;
    let group = observer.describe_group("workers").await.unwrap();
    assert_eq!(group.group_id, "workers");
    assert_eq!(group.state, GroupState::Stable);
    assert_eq!(group.protocol_type, "kroupier");
    assert_eq!(group.protocol, "sticky");
    assert_eq!(group.members.len(), 3);
    let first = &group.members[0];
    assert_eq!(first.member_id, "m-1");
    assert_eq!(first.group_instance_id.as_deref(), Some("worker-1"));
    assert_eq!(first.client_id, "kroupier");
    assert_eq!(first.client_host, "/127.0.0.1");
    assert_eq!(first.metadata.as_ref(), b"meta");
    assert_eq!(first.assignment.as_ref(), b"7:m-1:task-0,task-1");
    assert_eq!(group.members[1].group_instance_id, None);
}

/// Reads the toy `generation:leader:tasks` assignments.
struct Toy;

impl AssignmentDecoder for Toy {
    type Member = (i32, String, Vec<String>);
    type Error = String;

    fn decode(&self, protocol: &str, _: &[u8], assignment: &[u8]) -> Result<Self::Member, String> {
        assert_eq!(protocol, "sticky");
        let text = std::str::from_utf8(assignment).map_err(|e| e.to_string())?;
        let mut parts = text.splitn(3, ':');
        let (Some(generation), Some(leader), Some(tasks)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("not an assignment: {text}"));
        };
        let generation = generation
            .parse()
            .map_err(|_| "bad generation".to_owned())?;
        let tasks = tasks.split(',').map(str::to_owned).collect();
        Ok((generation, leader.to_owned(), tasks))
    }

    fn leader(&self, member: &Self::Member) -> Option<String> {
        Some(member.1.clone())
    }

    fn generation(&self, member: &Self::Member) -> Option<i32> {
        Some(member.0)
    }
}

#[tokio::test]
async fn the_decoder_hook_recovers_leader_generation_and_work() {
    let (_broker, observer) = cluster_of_one(|_, g| stable_group(g)).await;
    let decoded = observer.describe_decoded("workers", &Toy).await.unwrap();
    assert_eq!(decoded.generation, Some(7));
    assert_eq!(decoded.leader.as_deref(), Some("m-1"));
    assert_eq!(decoded.members[1].as_ref().unwrap().2, ["task-2"]);
    assert!(
        decoded.members[2].is_err(),
        "one bad member does not spoil the rest"
    );
    assert_eq!(decoded.description.members.len(), 3);
}

#[tokio::test]
async fn a_moved_coordinator_is_looked_up_again() {
    let (broker, observer) = cluster_of_one(|n, g| {
        if n == 1 {
            // NOT_COORDINATOR, then the real answer.
            DescribedGroup::default()
                .with_group_id(GroupId(s(g)))
                .with_error_code(16)
        } else {
            stable_group(g)
        }
    })
    .await;
    let group = observer.describe_group("workers").await.unwrap();
    assert_eq!(group.state, GroupState::Stable);
    let lookups = broker
        .received()
        .iter()
        .filter(|r| r.0 == ApiKey::FindCoordinator)
        .count();
    assert_eq!(lookups, 2);
}

#[tokio::test]
async fn a_missing_group_is_dead_and_a_denied_one_is_an_error() {
    let (_broker, observer) = cluster_of_one(|_, g| {
        let code = if g == "secret" { 30 } else { 69 };
        DescribedGroup::default()
            .with_group_id(GroupId(s(g)))
            .with_error_code(code)
    })
    .await;
    let missing = observer.describe_group("nobody").await.unwrap();
    assert_eq!(missing.state, GroupState::Dead);
    assert!(missing.members.is_empty());
    let err = observer.describe_group("secret").await.unwrap_err();
    assert!(
        matches!(err.detail(), Detail::Kafka { code: 30, .. }),
        "{err}"
    );
}

#[test]
fn group_states_round_trip_kafka_spelling() {
    for state in [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
        "Assigning",
    ] {
        assert_eq!(GroupState::parse(state).as_str(), state);
    }
    assert_eq!(GroupState::parse(""), GroupState::Dead);
}

#[tokio::test]
async fn removes_another_member_by_leave_group() {
    let (broker, observer) = cluster_of_one(|_, g| stable_group(g)).await;
    let removed = observer
        .remove_member("workers", "m-1", Some("worker-1"), "gone")
        .await;
    assert_eq!(removed.unwrap(), Removal::Removed);
    let unknown = observer.remove_member("workers", "m-9", None, "gone").await;
    assert_eq!(unknown.unwrap(), Removal::Unknown);
    let fenced = observer
        .remove_member("workers", "m-1", Some("other"), "gone")
        .await;
    assert!(
        matches!(
            fenced.as_ref().map_err(ConnectionError::detail),
            Err(Detail::Kafka { code: 82, .. })
        ),
        "{fenced:?}"
    );
    drop(broker);
}
