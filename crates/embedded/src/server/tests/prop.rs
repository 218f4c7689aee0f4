//! Randomized requests through the whole request path (framing, guard, dispatch, groups) on
//! paused time: never a panic or an abort, answers in request order, and every request either
//! answered or the connection closed.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiVersionsRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, MetadataRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};
use proptest::prelude::*;

use crate::server::fuzzing::serve_bytes;

const GROUPS: [&str; 2] = ["g", "h"];
const MEMBERS: [&str; 3] = ["", "client-1", "i-1"];

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One request in the random script, as (api choice, version seed, field seeds).
#[derive(Debug, Clone)]
struct Step {
    api: u8,
    version: i16,
    group: usize,
    member: usize,
    number: i32,
    blob: Vec<u8>,
    mutation: Option<(usize, u8)>,
    cut: Option<usize>,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0u8..9,
        0i16..14,
        0usize..2,
        0usize..3,
        prop_oneof![Just(-1), 0i32..4, 1_000i32..120_000, Just(i32::MAX)],
        proptest::collection::vec(any::<u8>(), 0..12),
        proptest::option::weighted(0.2, (any::<usize>(), any::<u8>())),
        proptest::option::weighted(0.1, any::<usize>()),
    )
        .prop_map(
            |(api, version, group, member, number, blob, mutation, cut)| Step {
                api,
                version,
                group,
                member,
                number,
                blob,
                mutation,
                cut,
            },
        )
}

fn encode<R: WireRequest>(req: &R, version: i16, correlation_id: i32) -> Option<Bytes> {
    let v = version.clamp(R::VERSIONS.min, R::VERSIONS.max);
    wire::encode_request(req, v, correlation_id, Some("prop")).ok()
}

fn frame_for(step: &Step, correlation_id: i32) -> Option<Bytes> {
    let group = GroupId(s(GROUPS[step.group]));
    let member = s(MEMBERS[step.member]);
    let blob = Bytes::from(step.blob.clone());
    let v = step.version;
    match step.api {
        0 => encode(&ApiVersionsRequest::default(), v, correlation_id),
        1 => encode(&MetadataRequest::default(), v, correlation_id),
        2 => encode(
            &FindCoordinatorRequest::default().with_key(s("g")),
            v.min(3),
            correlation_id,
        ),
        3 => {
            let protocol = JoinGroupRequestProtocol::default()
                .with_name(s("p"))
                .with_metadata(blob);
            let req = JoinGroupRequest::default()
                .with_group_id(group)
                .with_member_id(member)
                .with_session_timeout_ms(step.number)
                .with_rebalance_timeout_ms(step.number)
                .with_protocol_type(s("kroupier"))
                .with_protocols(vec![protocol]);
            encode(&req, v, correlation_id)
        }
        4 => {
            let assignment = SyncGroupRequestAssignment::default()
                .with_member_id(member.clone())
                .with_assignment(blob);
            let req = SyncGroupRequest::default()
                .with_group_id(group)
                .with_generation_id(step.number.clamp(-1, 4))
                .with_member_id(member)
                .with_assignments(vec![assignment]);
            encode(&req, v, correlation_id)
        }
        5 => {
            let req = HeartbeatRequest::default()
                .with_group_id(group)
                .with_generation_id(step.number.clamp(-1, 4))
                .with_member_id(member);
            encode(&req, v, correlation_id)
        }
        6 => {
            let req = if v >= 3 {
                LeaveGroupRequest::default()
                    .with_group_id(group)
                    .with_members(vec![MemberIdentity::default().with_member_id(member)])
            } else {
                LeaveGroupRequest::default()
                    .with_group_id(group)
                    .with_member_id(member)
            };
            encode(&req, v, correlation_id)
        }
        7 => encode(
            &DescribeGroupsRequest::default().with_groups(vec![group]),
            v,
            correlation_id,
        ),
        _ => encode(&ListGroupsRequest::default(), v, correlation_id),
    }
}

/// The correlation ids of the frames the coordinator wrote back, in order.
fn answered(mut output: &[u8]) -> Vec<i32> {
    let mut ids = Vec::new();
    while output.len() >= 8 {
        let len = (&output[..4]).get_i32() as usize;
        ids.push((&output[4..8]).get_i32());
        output = &output[(4 + len).min(output.len())..];
    }
    ids
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_request_scripts_never_crash_and_answer_in_order(steps in proptest::collection::vec(step(), 1..12)) {
        let mut input = Vec::new();
        let mut sent = Vec::new();
        let mut corrupted = false;
        for (i, step) in steps.iter().enumerate() {
            let id = i as i32 + 1;
            let Some(frame) = frame_for(step, id) else { continue };
            let mut body = frame.to_vec();
            if let Some((at, byte)) = step.mutation {
                let at = at % body.len();
                corrupted |= body[at] != byte;
                body[at] = byte;
            }
            if let Some(cut) = step.cut {
                let cut = cut % (body.len() + 1);
                corrupted |= cut != body.len();
                body.truncate(cut);
            }
            input.extend_from_slice(&(body.len() as i32).to_be_bytes());
            input.extend_from_slice(&body);
            sent.push(id);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let output = runtime.block_on(serve_bytes(&input, 64 * 1024));
        let ids = answered(&output);
        // Answers come in request order; without corruption every request is answered.
        prop_assert!(ids.len() <= sent.len());
        if !corrupted {
            prop_assert_eq!(&ids[..], &sent[..ids.len()]);
            prop_assert_eq!(ids.len(), sent.len());
        }
    }

    #[test]
    fn random_bytes_never_crash(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let output = runtime.block_on(serve_bytes(&input, 1024));
        prop_assert!(output.len() <= 64 * 1024);
    }
}
