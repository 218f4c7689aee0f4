//! Random bytes into the guarded decoders: an error or a value, never a panic or an abort.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use proptest::prelude::*;

use kafka_protocol::messages::{AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest};

use super::super::{LOG_APIS, SUPPORTED_APIS, TRANSACTION_APIS, decode_request};
use super::{SampleFrames, WireError, decode_request_as, for_every_sample};

fn samples() -> Vec<SampleFrames> {
    let mut out = Vec::new();
    for_every_sample(|sample| out.push(sample()));
    out
}

/// Decodes a request frame the way the broker side would if it served `key`: `decode_request`,
/// and for a transaction API (which `decode_request` refuses) [`decode_request_as`] too.
fn decode_any_request(key: ApiKey, frame: Bytes) {
    let _ = decode_request(frame.clone());
    let _: Result<(), WireError> = match key {
        ApiKey::InitProducerId => decode_request_as::<InitProducerIdRequest>(frame).map(drop),
        ApiKey::AddPartitionsToTxn => {
            decode_request_as::<AddPartitionsToTxnRequest>(frame).map(drop)
        }
        ApiKey::EndTxn => decode_request_as::<EndTxnRequest>(frame).map(drop),
        _ => Ok(()),
    };
}

proptest! {
    #[test]
    fn random_request_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_request(Bytes::from(bytes));
    }

    #[test]
    fn random_bodies_behind_a_valid_header_never_panic(
        api in 0..SUPPORTED_APIS.len() + LOG_APIS.len() + TRANSACTION_APIS.len() + 1,
        version in -1i16..20,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let key = SUPPORTED_APIS
            .iter()
            .chain(&LOG_APIS)
            .chain(&TRANSACTION_APIS)
            .nth(api)
            .copied()
            .unwrap_or(ApiKey::DescribeConfigs);
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&(key as i16).to_be_bytes());
        frame.extend_from_slice(&version.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 1, 0xFF, 0xFF]);
        if key.request_header_version(version) >= 2 {
            frame.extend_from_slice(&[0]);
        }
        frame.extend_from_slice(&body);
        decode_any_request(key, frame.freeze());
    }

    #[test]
    fn mutated_sample_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let samples = samples();
        let s = &samples[pick.index(samples.len())];
        for frame in s.request.iter().chain([&s.response]) {
            let mut bytes = frame.to_vec();
            for (at, value) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *value;
            }
            let bytes = Bytes::from(bytes);
            let _ = decode_request(bytes.clone());
            let _ = (s.decode_request)(bytes.clone());
            let _ = (s.decode_response)(bytes, s.version);
        }
    }

    #[test]
    fn random_response_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let samples = samples();
        let s = &samples[pick.index(samples.len())];
        let _ = (s.decode_response)(Bytes::from(bytes), s.version);
    }
}

mod generated {
    //! Generated messages of any shape round-trip through the guard unchanged.

    use bytes::Bytes;
    use kafka_protocol::messages::describe_groups_response::{
        DescribedGroup, DescribedGroupMember,
    };
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::{DescribeGroupsResponse, GroupId, JoinGroupRequest};
    use kafka_protocol::protocol::StrBytes;
    use proptest::prelude::*;

    use super::super::super::{
        RequestBody, decode_request, decode_response, encode_request, encode_response,
    };

    fn text() -> impl Strategy<Value = StrBytes> {
        "[a-z0-9-]{0,40}".prop_map(StrBytes::from_string)
    }

    fn blob() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(Bytes::from)
    }

    proptest! {
        #[test]
        fn join_group_requests_of_any_shape_round_trip(
            version in 0i16..=9,
            group in text(),
            member in text(),
            protocols in proptest::collection::vec((text(), blob()), 0..20),
        ) {
            let request = JoinGroupRequest::default()
                .with_group_id(GroupId(group))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(if version >= 1 { 30_000 } else { -1 })
                .with_member_id(member)
                .with_protocol_type(StrBytes::from_static_str("kroupier"))
                .with_protocols(
                    protocols
                        .into_iter()
                        .map(|(name, metadata)| {
                            JoinGroupRequestProtocol::default()
                                .with_name(name)
                                .with_metadata(metadata)
                        })
                        .collect(),
                );
            let frame = encode_request(&request, version, 1, None).unwrap();
            let (_, body) = decode_request(frame).unwrap();
            prop_assert_eq!(body, RequestBody::JoinGroup(request));
        }

        #[test]
        fn describe_groups_responses_of_any_shape_round_trip(
            version in 0i16..=6,
            groups in proptest::collection::vec(
                (text(), proptest::collection::vec((text(), blob(), blob()), 0..12)),
                0..4,
            ),
        ) {
            let response = DescribeGroupsResponse::default().with_groups(
                groups
                    .into_iter()
                    .map(|(id, members)| {
                        DescribedGroup::default()
                            .with_group_id(GroupId(id))
                            .with_members(
                                members
                                    .into_iter()
                                    .map(|(member, metadata, assignment)| {
                                        DescribedGroupMember::default()
                                            .with_member_id(member)
                                            .with_member_metadata(metadata)
                                            .with_member_assignment(assignment)
                                    })
                                    .collect(),
                            )
                            .with_authorized_operations(if version >= 3 { 8 } else { i32::MIN })
                    })
                    .collect(),
            );
            let frame = encode_response(9, version, &response).unwrap();
            let (header, decoded) = decode_response::<DescribeGroupsResponse>(frame, version).unwrap();
            prop_assert_eq!(header.correlation_id, 9);
            prop_assert_eq!(decoded, response);
        }
    }
}
