//! Kafka clients' view: version negotiation, discovery, and a group's whole life over TCP.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, DescribeGroupsRequest, FindCoordinatorRequest,
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest,
    MetadataRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire;

use super::{Client, PATIENCE, framed, join_request, start};
use crate::SUPPORTED_VERSIONS;

const MEMBER_ID_REQUIRED: i16 = 79;
const REBALANCE_IN_PROGRESS: i16 = 27;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[tokio::test]
async fn api_versions_metadata_and_find_coordinator() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    for version in 3..=4 {
        let r = c.call(&ApiVersionsRequest::default(), version).await;
        assert_eq!(
            r.error_code,
            ResponseError::InvalidRequest.code(),
            "v{version} without a client software name"
        );
        assert!(r.api_keys.is_empty());
    }
    for version in 0..=4 {
        let r = c.call(&super::api_versions_request(), version).await;
        assert_eq!(r.error_code, 0, "v{version}");
        let mut ranges: Vec<_> = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        let mut expected: Vec<_> = SUPPORTED_VERSIONS
            .iter()
            .map(|(k, min, max)| (*k as i16, *min, *max))
            .collect();
        ranges.sort();
        expected.sort();
        assert_eq!(ranges, expected);
    }
    let port = i32::from(handle.local_addr().port());
    for version in [1, 4, 9, 12, 13] {
        let topic = MetadataRequestTopic::default().with_name(Some(TopicName(s("t"))));
        let r = c
            .call(
                &MetadataRequest::default().with_topics(Some(vec![topic])),
                version,
            )
            .await;
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            (
                r.brokers[0].node_id.0,
                r.brokers[0].host.as_str(),
                r.brokers[0].port
            ),
            (0, "127.0.0.1", port)
        );
        assert_eq!(r.topics.len(), 1);
        assert_eq!(
            r.topics[0].error_code,
            ResponseError::UnknownTopicOrPartition.code()
        );
    }
    let r = c.call(&MetadataRequest::default(), 0).await;
    assert!(r.topics.is_empty(), "no topics unless asked");
    for version in 0..=3 {
        let r = c
            .call(&FindCoordinatorRequest::default().with_key(s("g")), version)
            .await;
        assert_eq!(
            (r.error_code, r.node_id.0, r.host.as_str(), r.port),
            (0, 0, "127.0.0.1", port),
            "v{version}"
        );
    }
    for version in 4..=6 {
        let req = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g"), s("h")]);
        let r = c.call(&req, version).await;
        assert_eq!(r.coordinators.len(), 2, "v{version}");
        assert!(
            r.coordinators
                .iter()
                .all(|k| k.error_code == 0 && k.port == port)
        );
    }
    let txn = FindCoordinatorRequest::default()
        .with_key(s("txn"))
        .with_key_type(1);
    let r = c.call(&txn, 3).await;
    assert_eq!(r.error_code, ResponseError::CoordinatorNotAvailable.code());
    handle.shutdown().await;
}

#[tokio::test]
async fn unsupported_api_versions_version_gets_a_v0_answer_with_the_ranges() {
    let handle = start().await;
    let mut stream = super::raw(&handle).await;
    // ApiVersions v9, header v2: key, version, correlation id, null client id, no tagged fields.
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&9i16.to_be_bytes());
    body.extend_from_slice(&77i32.to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes());
    body.push(0);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(&framed(&body)).await.unwrap();
    let len = tokio::time::timeout(PATIENCE, stream.read_i32())
        .await
        .unwrap()
        .unwrap();
    let mut frame = vec![0u8; len as usize];
    stream.read_exact(&mut frame).await.unwrap();
    let (header, r) = wire::decode_response::<ApiVersionsResponse>(Bytes::from(frame), 0).unwrap();
    assert_eq!(header.correlation_id, 77);
    assert_eq!(r.error_code, ResponseError::UnsupportedVersion.code());
    assert_eq!(r.api_keys.len(), SUPPORTED_VERSIONS.len());
    handle.shutdown().await;
}

fn sync_request(
    member_id: &str,
    generation: i32,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
        .with_protocol_type(Some(s("kroupier")))
        .with_protocol_name(Some(s("p")))
        .with_assignments(
            assignments
                .iter()
                .map(|(id, a)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(id))
                        .with_assignment(Bytes::from_static(a))
                })
                .collect(),
        )
}

fn heartbeat(member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
}

/// Heartbeats until the answer is REBALANCE_IN_PROGRESS (every other answer must be NONE).
async fn until_rebalance(c: &mut Client, member_id: &str, generation: i32) {
    let seen = tokio::time::timeout(PATIENCE, async {
        loop {
            match c
                .call(&heartbeat(member_id, generation), 4)
                .await
                .error_code
            {
                REBALANCE_IN_PROGRESS => return,
                code => assert_eq!(code, 0),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(seen.is_ok(), "the rebalance should start");
}

/// Joins with KIP-394 (v9): MEMBER_ID_REQUIRED first, then the real join is sent (not awaited).
async fn join_v9(c: &mut Client, metadata: &'static [u8], session_ms: i32) -> (String, i32) {
    let first = c.call(&join_request("", metadata, session_ms), 9).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let id = first.member_id.to_string();
    let correlation = c.send(&join_request(&id, metadata, session_ms), 9).await;
    (id, correlation)
}

#[tokio::test]
async fn two_members_join_sync_heartbeat_and_leave() {
    let handle = start().await;
    let mut a = Client::connect(&handle).await;
    let mut b = Client::connect(&handle).await;

    let (a_id, corr) = join_v9(&mut a, b"meta-a", 10_000).await;
    let joined = a.receive::<JoinGroupRequest>(corr, 9).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    assert_eq!(joined.leader.as_str(), a_id);
    let r = a.call(&sync_request(&a_id, 1, &[(&a_id, b"a1")]), 5).await;
    assert_eq!((r.error_code, &r.assignment[..]), (0, &b"a1"[..]));
    assert_eq!(r.protocol_name.as_ref().map(|n| n.as_str()), Some("p"));

    // B joins: its JoinGroup parks on its own connection; A's connection keeps being served.
    let (b_id, b_corr) = join_v9(&mut b, b"meta-b", 10_000).await;
    // Requests on different connections race: A learns of the rebalance once B's join is in.
    until_rebalance(&mut a, &a_id, 1).await;
    let a_join = a.call(&join_request(&a_id, b"meta-a", 10_000), 9).await;
    let b_join = b.receive::<JoinGroupRequest>(b_corr, 9).await;
    assert_eq!((a_join.generation_id, b_join.generation_id), (2, 2));
    assert_eq!(a_join.leader.as_str(), a_id);
    let mut seen: Vec<_> = a_join
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.metadata.clone()))
        .collect();
    seen.sort();
    let mut expected = vec![
        (a_id.clone(), Bytes::from_static(b"meta-a")),
        (b_id.clone(), Bytes::from_static(b"meta-b")),
    ];
    expected.sort();
    assert_eq!(seen, expected, "the leader gets every member's metadata");
    assert!(b_join.members.is_empty());

    // B's SyncGroup waits for the leader's.
    let b_sync = b.send(&sync_request(&b_id, 2, &[]), 5).await;
    let a_sync = a
        .call(
            &sync_request(&a_id, 2, &[(&a_id, b"a2"), (&b_id, b"b2")]),
            5,
        )
        .await;
    let b_sync = b.receive::<SyncGroupRequest>(b_sync, 5).await;
    assert_eq!(&a_sync.assignment[..], b"a2");
    assert_eq!(&b_sync.assignment[..], b"b2");
    assert_eq!(a.call(&heartbeat(&a_id, 2), 4).await.error_code, 0);
    assert_eq!(b.call(&heartbeat(&b_id, 2), 0).await.error_code, 0);

    let d = a
        .call(
            &DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(s("g")), GroupId(s("nope"))]),
            5,
        )
        .await;
    assert_eq!(d.groups[0].group_state.as_str(), "Stable");
    assert_eq!(d.groups[0].protocol_data.as_str(), "p");
    assert_eq!(d.groups[0].members.len(), 2);
    assert_eq!(d.groups[1].group_state.as_str(), "Dead");
    let d6 = a
        .call(
            &DescribeGroupsRequest::default().with_groups(vec![GroupId(s("nope"))]),
            6,
        )
        .await;
    assert_eq!(
        d6.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    let l = a
        .call(
            &ListGroupsRequest::default().with_states_filter(vec![s("stable")]),
            5,
        )
        .await;
    assert_eq!(l.groups.len(), 1);
    assert_eq!(
        (
            l.groups[0].group_id.as_str(),
            l.groups[0].group_type.as_str()
        ),
        ("g", "classic")
    );
    let l = a
        .call(
            &ListGroupsRequest::default().with_states_filter(vec![s("Empty")]),
            4,
        )
        .await;
    assert!(l.groups.is_empty());

    // B leaves: the group rebalances and A carries on alone.
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_members(vec![
            MemberIdentity::default()
                .with_member_id(s(&b_id))
                .with_reason(Some(s("bye"))),
        ]);
    let left = b.call(&leave, 5).await;
    assert_eq!((left.error_code, left.members[0].error_code), (0, 0));
    assert_eq!(
        a.call(&heartbeat(&a_id, 2), 4).await.error_code,
        REBALANCE_IN_PROGRESS
    );
    let alone = a.call(&join_request(&a_id, b"meta-a", 10_000), 9).await;
    assert_eq!((alone.generation_id, alone.members.len()), (3, 1));
    handle.shutdown().await;
}

#[tokio::test]
async fn old_versions_work_end_to_end() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    // v0: no KIP-394, no rebalance timeout (the session timeout stands in).
    let joined = c
        .call(
            &join_request("", b"m", 10_000).with_rebalance_timeout_ms(-1),
            0,
        )
        .await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    assert_eq!(joined.protocol_name.as_ref().map(|n| n.as_str()), Some("p"));
    let id = joined.member_id.to_string();
    let mut sync = sync_request(&id, 1, &[(&id, b"x")]);
    sync.protocol_type = None;
    sync.protocol_name = None;
    assert_eq!(&c.call(&sync, 0).await.assignment[..], b"x");
    assert_eq!(c.call(&heartbeat(&id, 1), 0).await.error_code, 0);
    let d = c
        .call(
            &DescribeGroupsRequest::default().with_groups(vec![GroupId(s("g"))]),
            0,
        )
        .await;
    assert_eq!(&d.groups[0].members[0].member_assignment[..], b"x");
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_member_id(s(&id));
    assert_eq!(c.call(&leave, 0).await.error_code, 0);
    let leave_again = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_member_id(s(&id));
    assert_eq!(
        c.call(&leave_again, 2).await.error_code,
        ResponseError::UnknownMemberId.code()
    );
    // Static membership needs v5.
    let static_join = join_request("", b"m", 10_000).with_group_instance_id(Some(s("i-1")));
    let r = c.call(&static_join, 5).await;
    assert_eq!(r.error_code, 0);
    assert!(r.member_id.starts_with("i-1-"));
    handle.shutdown().await;
}

#[tokio::test]
async fn session_expiry_removes_a_dropped_member() {
    let handle = start().await;
    let mut a = Client::connect(&handle).await;
    let mut b = Client::connect(&handle).await;
    let a_join = a.call(&join_request("", b"a", 60_000), 3).await;
    let a_id = a_join.member_id.to_string();
    a.call(&sync_request(&a_id, 1, &[]), 3).await;
    let b_corr = b.send(&join_request("", b"b", 1_000), 3).await;
    until_rebalance(&mut a, &a_id, 1).await;
    let a_join = a.call(&join_request(&a_id, b"a", 60_000), 3).await;
    assert_eq!(a_join.members.len(), 2);
    let b_join = b.receive::<JoinGroupRequest>(b_corr, 3).await;
    let b_id = b_join.member_id.to_string();
    let b_sync = b.send(&sync_request(&b_id, 2, &[]), 3).await;
    a.call(&sync_request(&a_id, 2, &[]), 3).await;
    b.receive::<SyncGroupRequest>(b_sync, 3).await;
    drop(b); // B crashes: no LeaveGroup, no heartbeats.

    // A heartbeats until the coordinator notices B is gone (its 1 s session expires).
    let noticed = tokio::time::timeout(PATIENCE, async {
        loop {
            let code = a.call(&heartbeat(&a_id, 2), 3).await.error_code;
            if code == REBALANCE_IN_PROGRESS {
                return;
            }
            assert_eq!(code, 0);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(noticed.is_ok(), "B's session should expire");
    let alone = a.call(&join_request(&a_id, b"a", 60_000), 3).await;
    assert_eq!((alone.generation_id, alone.members.len()), (3, 1));
    let d = handle.describe_group("g").await.unwrap();
    assert_eq!(d.members.len(), 1);
    handle.shutdown().await;
}

/// Every version of every group API, on its success path, answers with a frame the guarded
/// decoder accepts at that version (`Client::receive` decodes it).
#[tokio::test]
async fn every_served_version_answers_decodably() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    for join_version in 0..=9i16 {
        let group = format!("g-{join_version}");
        let with_group = |r: JoinGroupRequest| r.with_group_id(GroupId(s(&group)));
        let mut req = with_group(join_request("", b"m", 10_000));
        if join_version >= 5 {
            req = req.with_group_instance_id(Some(s("i-1")));
        }
        let mut joined = c.call(&req, join_version).await;
        if joined.error_code == MEMBER_ID_REQUIRED {
            joined = c
                .call(&req.with_member_id(joined.member_id), join_version)
                .await;
        }
        assert_eq!(joined.error_code, 0, "JoinGroup v{join_version}");
        assert_eq!(joined.members.len(), 1);
        let id = joined.member_id.to_string();
        let instance = (join_version >= 5).then(|| s("i-1"));
        // SyncGroup at a version that can carry the instance id, then the others in Stable.
        for sync_version in (if join_version >= 5 { 3 } else { 0 })..=5 {
            let mut sync = sync_request(&id, joined.generation_id, &[(&id, b"x")])
                .with_group_id(GroupId(s(&group)))
                .with_group_instance_id(instance.clone());
            if sync_version < 5 {
                sync.protocol_type = None;
                sync.protocol_name = None;
            }
            let r = c.call(&sync, sync_version).await;
            assert_eq!(
                (r.error_code, &r.assignment[..]),
                (0, &b"x"[..]),
                "SyncGroup v{sync_version}"
            );
        }
        for hb_version in (if join_version >= 5 { 3 } else { 0 })..=4 {
            let hb = heartbeat(&id, joined.generation_id)
                .with_group_id(GroupId(s(&group)))
                .with_group_instance_id(instance.clone());
            assert_eq!(
                c.call(&hb, hb_version).await.error_code,
                0,
                "Heartbeat v{hb_version}"
            );
        }
        for describe_version in 0..=6 {
            let d = c
                .call(
                    &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                    describe_version,
                )
                .await;
            assert_eq!(
                d.groups[0].members.len(),
                1,
                "DescribeGroups v{describe_version}"
            );
        }
    }
    for list_version in 0..=5 {
        let l = c.call(&ListGroupsRequest::default(), list_version).await;
        assert_eq!(l.groups.len(), 10, "ListGroups v{list_version}");
    }
    for leave_version in 0..=5i16 {
        let group = format!("g-{leave_version}");
        let leave = if leave_version >= 3 {
            let who = MemberIdentity::default()
                .with_member_id(s("nobody"))
                .with_reason(None);
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(&group)))
                .with_members(vec![who])
        } else {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(&group)))
                .with_member_id(s("nobody"))
        };
        let r = c.call(&leave, leave_version).await;
        let code = r.members.first().map_or(r.error_code, |m| m.error_code);
        assert_eq!(
            code,
            ResponseError::UnknownMemberId.code(),
            "LeaveGroup v{leave_version}"
        );
    }
    handle.shutdown().await;
}
