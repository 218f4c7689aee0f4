//! Writes a seed corpus for `request_path`: every served API at every version it serves, plus a
//! few whole group conversations, so fuzzing starts inside valid requests.
//!
//! Usage: `cargo run --bin seed_corpus -- corpus/request_path`

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiVersionsRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, MetadataRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One record per frame: `[u16 length][frame]` (the inverse of `input::client_stream`).
fn record(frame: &[u8]) -> Vec<u8> {
    let len = u16::try_from(frame.len()).unwrap_or(u16::MAX);
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(&frame[..usize::from(len)]);
    out
}

fn frames<R: WireRequest>(req: &R) -> Vec<Vec<u8>> {
    (R::VERSIONS.min..=R::VERSIONS.max)
        .filter_map(|v| wire::encode_request(req, v, i32::from(v) + 1, Some("seed")).ok())
        .map(|f| record(&f))
        .collect()
}

fn join(member: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_group_instance_id(instance.map(s))
        .with_protocol_type(s("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("sticky"))
                .with_metadata(Bytes::from_static(b"\x00\x01meta")),
            JoinGroupRequestProtocol::default()
                .with_name(s("round-robin"))
                .with_metadata(Bytes::new()),
        ])
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus/request_path".to_string());
    std::fs::create_dir_all(&dir)?;
    let mut seeds: Vec<Vec<Vec<u8>>> = Vec::new();
    seeds.push(frames(&ApiVersionsRequest::default()));
    seeds.push(frames(&MetadataRequest::default()));
    seeds.push(frames(&FindCoordinatorRequest::default().with_key(s("g"))));
    seeds.push(frames(
        &FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g"), s("h")]),
    ));
    seeds.push(frames(&join("", None)));
    seeds.push(frames(&join("", Some("i-1"))));
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_generation_id(1)
        .with_member_id(s("m"))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s("m"))
                .with_assignment(Bytes::from_static(b"a")),
        ]);
    seeds.push(frames(&sync));
    seeds.push(frames(
        &HeartbeatRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_generation_id(1)
            .with_member_id(s("m")),
    ));
    seeds.push(frames(
        &LeaveGroupRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_member_id(s("m")),
    ));
    seeds.push(frames(
        &LeaveGroupRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_members(vec![MemberIdentity::default().with_member_id(s("m"))]),
    ));
    seeds.push(frames(
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(s("g"))]),
    ));
    seeds.push(frames(&ListGroupsRequest::default()));
    let mut n = 0;
    for api in &seeds {
        // Each version alone, and the whole API's versions as one conversation.
        for frame in api {
            std::fs::write(format!("{dir}/seed-{n:04}"), frame)?;
            n += 1;
        }
        std::fs::write(format!("{dir}/seed-{n:04}"), api.concat())?;
        n += 1;
    }
    // A group conversation: join (v3, no KIP-394), sync, heartbeat, describe, leave.
    let conversation = [
        frames(&join("", None)).get(3).cloned().unwrap_or_default(),
        frames(&sync).get(3).cloned().unwrap_or_default(),
        frames(&DescribeGroupsRequest::default().with_groups(vec![GroupId(s("g"))]))
            .get(5)
            .cloned()
            .unwrap_or_default(),
    ]
    .concat();
    std::fs::write(format!("{dir}/seed-{n:04}"), conversation)?;
    println!("wrote {} seeds to {dir}", n + 1);
    Ok(())
}
