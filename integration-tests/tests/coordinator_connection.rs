//! kroupier's connection layer against a real Kafka broker: version negotiation, bootstrap
//! failover, coordinator discovery, pipelining, and one full round of the group protocol
//! (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) over the coordinator connection.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest,
    SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_coordinator::observer::{GroupState, Observer};
use kroupier_integration_tests::kafka_bootstrap;

const MEMBER_ID_REQUIRED: i16 = 79;

fn unique_group(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-{test}-{}-{nanos}", std::process::id())
}

/// An address where nothing listens.
async fn dead_addr() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

#[tokio::test]
async fn negotiates_the_group_api_versions() {
    let Some(addr) = kafka_bootstrap("negotiates_the_group_api_versions") else {
        return;
    };
    let cluster = Cluster::new(ClusterConfig::new(&addr)).unwrap();
    let connection = cluster.connect(&addr).await.expect("connect and negotiate");
    for (api, least) in [
        (ApiKey::FindCoordinator, 4),
        (ApiKey::JoinGroup, 9),
        (ApiKey::SyncGroup, 5),
        (ApiKey::Heartbeat, 4),
        (ApiKey::LeaveGroup, 5),
        (ApiKey::DescribeGroups, 5),
    ] {
        let version = connection.version(api).expect("negotiated");
        assert!(version >= least, "{api:?} negotiated at v{version}");
    }
}

#[tokio::test]
async fn fails_over_a_dead_bootstrap_address_and_pipelines_requests() {
    let Some(addr) = kafka_bootstrap("fails_over_a_dead_bootstrap_address_and_pipelines_requests")
    else {
        return;
    };
    let dead = dead_addr().await;
    let cluster = Cluster::new(ClusterConfig::new(&format!("{dead},{addr}"))).unwrap();
    let connection = cluster
        .any_broker()
        .await
        .expect("fail over to the live broker");
    assert_eq!(connection.addr(), addr);
    let mut in_flight = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let connection = connection.clone();
        in_flight.spawn(async move { connection.send(&ListGroupsRequest::default()).await });
    }
    while let Some(answer) = in_flight.join_next().await {
        assert_eq!(answer.unwrap().expect("ListGroups").error_code, 0);
    }
}

#[tokio::test]
async fn one_member_joins_syncs_heartbeats_and_leaves() {
    let Some(addr) = kafka_bootstrap("one_member_joins_syncs_heartbeats_and_leaves") else {
        return;
    };
    let group = unique_group("lifecycle");
    let cluster = Cluster::new(ClusterConfig::new(&addr)).unwrap();
    let (node, coordinator) = cluster.coordinator(&group).await.expect("find coordinator");
    assert!(node.node_id >= 0);
    let group_id = GroupId(StrBytes::from_string(group.clone()));
    let mut join = JoinGroupRequest::default()
        .with_group_id(group_id.clone())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("round-robin"))
                .with_metadata(Bytes::from_static(b"meta")),
        ])
        .with_reason(Some(StrBytes::from_static_str("integration test")));
    // KIP-394: the first JoinGroup only hands out a member id.
    let first = coordinator
        .send_with_timeout(&join, Duration::from_secs(30))
        .await
        .expect("first JoinGroup");
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    join.member_id = first.member_id.clone();
    let joined = coordinator
        .send_with_timeout(&join, Duration::from_secs(30))
        .await
        .expect("second JoinGroup");
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.leader, joined.member_id, "the only member leads");
    assert_eq!(joined.members.len(), 1);
    assert_eq!(joined.members[0].metadata.as_ref(), b"meta");

    let sync = SyncGroupRequest::default()
        .with_group_id(group_id.clone())
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone())
        .with_protocol_type(Some(StrBytes::from_static_str("kroupier")))
        .with_protocol_name(joined.protocol_name.clone())
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(joined.member_id.clone())
                .with_assignment(Bytes::from_static(b"tasks")),
        ]);
    let synced = coordinator.send(&sync).await.expect("SyncGroup");
    assert_eq!(synced.error_code, 0);
    assert_eq!(synced.assignment.as_ref(), b"tasks");

    let heartbeat = HeartbeatRequest::default()
        .with_group_id(group_id.clone())
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone());
    assert_eq!(
        coordinator
            .send(&heartbeat)
            .await
            .expect("Heartbeat")
            .error_code,
        0
    );

    let leave = LeaveGroupRequest::default()
        .with_group_id(group_id)
        .with_members(vec![
            MemberIdentity::default()
                .with_member_id(joined.member_id.clone())
                .with_reason(Some(StrBytes::from_static_str("test done"))),
        ]);
    let left = coordinator.send(&leave).await.expect("LeaveGroup");
    assert_eq!(left.error_code, 0);
    assert_eq!(left.members[0].error_code, 0);
}

#[tokio::test]
async fn the_observer_lists_and_describes_a_joined_group() {
    let Some(addr) = kafka_bootstrap("the_observer_lists_and_describes_a_joined_group") else {
        return;
    };
    let group = unique_group("observer");
    let cluster = std::sync::Arc::new(Cluster::new(ClusterConfig::new(&addr)).unwrap());
    let (_, coordinator) = cluster.coordinator(&group).await.expect("find coordinator");
    let group_id = GroupId(StrBytes::from_string(group.clone()));
    let mut join = JoinGroupRequest::default()
        .with_group_id(group_id.clone())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_group_instance_id(Some(StrBytes::from_static_str("observed-1")))
        .with_protocol_type(StrBytes::from_static_str("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("sticky"))
                .with_metadata(Bytes::from_static(b"member-metadata")),
        ]);
    let mut joined = coordinator
        .send_with_timeout(&join, Duration::from_secs(30))
        .await
        .expect("JoinGroup");
    if joined.error_code == MEMBER_ID_REQUIRED {
        join.member_id = joined.member_id.clone();
        joined = coordinator
            .send_with_timeout(&join, Duration::from_secs(30))
            .await
            .expect("JoinGroup with member id");
    }
    assert_eq!(joined.error_code, 0);
    let sync = SyncGroupRequest::default()
        .with_group_id(group_id.clone())
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone())
        .with_group_instance_id(Some(StrBytes::from_static_str("observed-1")))
        .with_protocol_type(Some(StrBytes::from_static_str("kroupier")))
        .with_protocol_name(joined.protocol_name.clone())
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(joined.member_id.clone())
                .with_assignment(Bytes::from_static(b"member-assignment")),
        ]);
    assert_eq!(
        coordinator.send(&sync).await.expect("SyncGroup").error_code,
        0
    );

    let observer = Observer::new(cluster.clone());
    let listed = observer.list_groups().await.expect("ListGroups");
    let listing = listed
        .iter()
        .find(|g| g.group_id == group)
        .expect("the group is listed");
    assert_eq!(listing.protocol_type, "kroupier");
    assert_eq!(listing.state, Some(GroupState::Stable));

    let described = observer
        .describe_group(&group)
        .await
        .expect("DescribeGroups");
    assert_eq!(described.state, GroupState::Stable);
    assert_eq!(described.protocol_type, "kroupier");
    assert_eq!(described.protocol, "sticky");
    assert_eq!(described.members.len(), 1);
    let member = &described.members[0];
    assert_eq!(member.member_id, joined.member_id.as_str());
    assert_eq!(member.group_instance_id.as_deref(), Some("observed-1"));
    assert_eq!(member.client_id, "kroupier");
    assert!(!member.client_host.is_empty());
    assert_eq!(member.metadata.as_ref(), b"member-metadata");
    assert_eq!(member.assignment.as_ref(), b"member-assignment");

    let leave = LeaveGroupRequest::default()
        .with_group_id(group_id)
        .with_members(vec![
            MemberIdentity::default()
                .with_member_id(joined.member_id.clone())
                .with_group_instance_id(Some(StrBytes::from_static_str("observed-1"))),
        ]);
    assert_eq!(
        coordinator
            .send(&leave)
            .await
            .expect("LeaveGroup")
            .error_code,
        0
    );
    let after = observer
        .describe_group(&group)
        .await
        .expect("DescribeGroups");
    assert_eq!(after.state, GroupState::Empty);
    assert!(after.members.is_empty());
    let missing = observer
        .describe_group(&unique_group("never-joined"))
        .await
        .expect("DescribeGroups of a group that does not exist");
    assert_eq!(missing.state, GroupState::Dead);
}
