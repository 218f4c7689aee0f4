//! Tests of the wire layer: round trips of every message at every version, every truncation,
//! an `i32::MAX` count at every length prefix, and (in `prop`) random bytes.

mod prop;
mod samples;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Message;

use super::error::{Problem, WireError};
use super::guard::{LengthPrefix, Width, walk, walk_traced};
use super::message::{check_version, decode_whole, guarded_decode};
use super::schema::{self, Direction};
use super::*;

/// What the broker side makes of a sample's request.
pub(super) trait SampleRequest: WireRequest {
    /// The [`RequestBody`] `decode_request` returns, or `None` for an API only kroupier's
    /// clients send (the transaction APIs), which `decode_request` refuses as unsupported.
    fn into_body(self) -> Option<RequestBody>;
}

macro_rules! served {
    ($($variant:ident: $req:ty),*) => {$(
        impl SampleRequest for $req {
            fn into_body(self) -> Option<RequestBody> {
                Some(RequestBody::$variant(self))
            }
        }
    )*};
}

macro_rules! sent_only {
    ($($req:ty),*) => {$(
        impl SampleRequest for $req {
            fn into_body(self) -> Option<RequestBody> {
                None
            }
        }
    )*};
}

served!(
    ApiVersions: ApiVersionsRequest,
    Metadata: MetadataRequest,
    FindCoordinator: FindCoordinatorRequest,
    JoinGroup: JoinGroupRequest,
    SyncGroup: SyncGroupRequest,
    Heartbeat: HeartbeatRequest,
    LeaveGroup: LeaveGroupRequest,
    DescribeGroups: DescribeGroupsRequest,
    ListGroups: ListGroupsRequest,
    Produce: ProduceRequest,
    Fetch: FetchRequest,
    ListOffsets: ListOffsetsRequest,
    CreateTopics: CreateTopicsRequest,
    DescribeConfigs: DescribeConfigsRequest
);
sent_only!(
    InitProducerIdRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest
);

/// Decodes a request frame as `decode_request` would if it served `R`'s API: the header, the
/// version check, then the guarded body. For the APIs only kroupier's clients send, so that the
/// guard's walk of their requests is tested too.
pub(super) fn decode_request_as<R: WireRequest>(
    frame: Bytes,
) -> Result<(RequestHeader, R), WireError> {
    let Some(fixed) = frame.first_chunk::<8>() else {
        return Err(WireError::ShortFrame {
            what: "request",
            len: frame.len(),
            min: 8,
        });
    };
    let version = i16::from_be_bytes([fixed[2], fixed[3]]);
    let correlation_id = i32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let mut rest = frame;
    let header: RequestHeader = guarded_decode(
        &schema::REQUEST_HEADER,
        R::API_KEY.request_header_version(version),
        &mut rest,
    )?;
    let body_schema = schema::body(R::API_KEY, Direction::Request).expect("a request schema");
    let v = body_schema.versions;
    check_version(R::API_KEY, v.min, v.max, version, correlation_id)?;
    Ok((header, decode_whole(body_schema, version, rest)?))
}

/// Calls `check` with the sample pair of every API at every version its request or its
/// response has.
pub(super) fn for_every_sample(mut check: impl FnMut(&dyn Fn() -> SampleFrames)) {
    fn each<R: SampleRequest>(
        build: fn(i16) -> (R, R::Response),
        check: &mut dyn FnMut(&dyn Fn() -> SampleFrames),
    ) {
        let response = <R::Response as Message>::VERSIONS;
        for v in R::VERSIONS.min.min(response.min)..=R::VERSIONS.max.max(response.max) {
            check(&|| frames(build, v));
        }
    }
    each(samples::api_versions, &mut check);
    each(samples::metadata, &mut check);
    each(samples::find_coordinator, &mut check);
    each(samples::join_group, &mut check);
    each(samples::sync_group, &mut check);
    each(samples::heartbeat, &mut check);
    each(samples::leave_group, &mut check);
    each(samples::describe_groups, &mut check);
    each(samples::list_groups, &mut check);
    each(samples::produce, &mut check);
    each(samples::fetch, &mut check);
    each(samples::list_offsets, &mut check);
    each(samples::create_topics, &mut check);
    each(samples::describe_configs, &mut check);
    each(samples::init_producer_id, &mut check);
    each(samples::add_partitions_to_txn, &mut check);
    each(samples::end_txn, &mut check);
}

/// One sample pair, encoded, with type-erased decoders.
pub(super) struct SampleFrames {
    pub(super) api_key: ApiKey,
    pub(super) version: i16,
    /// `None` at a version only the response knows (InitProducerId v6).
    pub(super) request: Option<Bytes>,
    pub(super) response: Bytes,
    /// The broker side's decoder of the request: `decode_request` for a served API,
    /// [`decode_request_as`] for one only kroupier's clients send.
    pub(super) decode_request: fn(Bytes) -> Result<(), WireError>,
    pub(super) decode_response: fn(Bytes, i16) -> Result<(), WireError>,
    /// Checks both round trips; panics with context on a mismatch.
    pub(super) round_trip: Box<dyn Fn()>,
}

fn frames<R: SampleRequest>(build: fn(i16) -> (R, R::Response), v: i16) -> SampleFrames {
    let (req, resp) = build(v);
    let request = (R::VERSIONS.min..=R::VERSIONS.max).contains(&v).then(|| {
        encode_request(&req, v, 42, Some("kroupier-test"))
            .unwrap_or_else(|e| panic!("{} v{v}: {e}", R::NAME))
    });
    let response = encode_response(42, v, &resp)
        .unwrap_or_else(|e| panic!("{} v{v}: {e}", <R::Response as WireResponse>::NAME));
    let served = req.clone().into_body().is_some();
    let decode: fn(Bytes) -> Result<(), WireError> = if served {
        |frame| decode_request(frame).map(drop)
    } else {
        |frame| decode_request_as::<R>(frame).map(drop)
    };
    let (req_frame, resp_frame) = (request.clone(), response.clone());
    SampleFrames {
        api_key: R::API_KEY,
        version: v,
        request,
        response,
        decode_request: decode,
        decode_response: |frame, v| decode_response::<R::Response>(frame, v).map(drop),
        round_trip: Box::new(move || {
            if let Some(req_frame) = &req_frame {
                let header = match req.clone().into_body() {
                    Some(expected) => {
                        let (header, body) = decode_request(req_frame.clone())
                            .unwrap_or_else(|e| panic!("{} v{v}: {e}", R::NAME));
                        assert_eq!(body, expected, "{} v{v}", R::NAME);
                        header
                    }
                    None => {
                        let refused = decode_request(req_frame.clone());
                        assert!(
                            matches!(
                                refused,
                                Err(WireError::UnsupportedApi { api_key, correlation_id: 42 })
                                    if api_key == R::API_KEY
                            ),
                            "{} v{v}: {refused:?}",
                            R::NAME
                        );
                        let (header, body) = decode_request_as::<R>(req_frame.clone())
                            .unwrap_or_else(|e| panic!("{} v{v}: {e}", R::NAME));
                        assert_eq!(body, req, "{} v{v}", R::NAME);
                        header
                    }
                };
                assert_eq!(header.correlation_id, 42);
                assert_eq!(header.request_api_version, v);
                assert_eq!(header.client_id.as_deref(), Some("kroupier-test"));
            }
            let (header, decoded) = decode_response::<R::Response>(resp_frame.clone(), v)
                .unwrap_or_else(|e| panic!("{} v{v}: {e}", <R::Response as WireResponse>::NAME));
            assert_eq!(header.correlation_id, 42);
            assert_eq!(
                decoded,
                resp,
                "{} v{v}",
                <R::Response as WireResponse>::NAME
            );
        }),
    }
}

#[test]
fn every_message_round_trips_at_every_version() {
    let mut pairs = 0;
    for_every_sample(|sample| {
        (sample().round_trip)();
        pairs += 1;
    });
    // 5 + 14 + 7 + 10 + 6 + 5 + 6 + 7 + 6 versions of the group APIs, then Produce 3-13,
    // Fetch 4-18, ListOffsets 1-10, CreateTopics 2-7 and DescribeConfigs 1-4, then
    // InitProducerId 0-6 (v6 a response only), AddPartitionsToTxn 0-5 and EndTxn 0-5.
    assert_eq!(pairs, 66 + 11 + 15 + 10 + 6 + 4 + 7 + 6 + 6);
}

#[test]
fn every_truncation_is_an_error() {
    let mut cuts = 0;
    for_every_sample(|sample| {
        let s = sample();
        if let Some(request) = &s.request {
            for len in 0..request.len() {
                assert!(
                    (s.decode_request)(request.slice(..len)).is_err(),
                    "{:?} v{} request cut at {len}",
                    s.api_key,
                    s.version
                );
                cuts += 1;
            }
        }
        for len in 0..s.response.len() {
            assert!(
                (s.decode_response)(s.response.slice(..len), s.version).is_err(),
                "{:?} v{} response cut at {len}",
                s.api_key,
                s.version
            );
            cuts += 1;
        }
    });
    assert!(cuts > 5_000, "only {cuts} truncations");
}

/// Every length prefix (header and body) of a request or response frame.
fn prefixes(frame: &[u8], api_key: ApiKey, v: i16, direction: Direction) -> Vec<LengthPrefix> {
    let (header, header_version) = match direction {
        Direction::Request => (&schema::REQUEST_HEADER, api_key.request_header_version(v)),
        Direction::Response => (&schema::RESPONSE_HEADER, api_key.response_header_version(v)),
    };
    let mut trace = Vec::new();
    let body_start = walk_traced(header, header_version, frame, 0, &mut trace).unwrap();
    let body = schema::body(api_key, direction).unwrap();
    let end = walk_traced(body, v, frame, body_start, &mut trace).unwrap();
    assert_eq!(
        end,
        frame.len(),
        "{api_key:?} v{v} {direction:?}: walk must end at the end"
    );
    trace
}

/// `frame` with the length prefix `p` replaced by the largest count its encoding can claim.
fn with_huge_length(frame: &[u8], p: LengthPrefix) -> Bytes {
    let huge: &[u8] = match p.width {
        Width::Int16 => &[0x7F, 0xFF],
        Width::Int32 => &[0x7F, 0xFF, 0xFF, 0xFF],
        // i32::MAX + 1 as an unsigned varint: a compact count of i32::MAX.
        Width::Compact => &[0x80, 0x80, 0x80, 0x80, 0x08],
    };
    let mut out = BytesMut::from(&frame[..p.offset]);
    out.extend_from_slice(huge);
    out.extend_from_slice(&frame[p.offset + p.len..]);
    out.freeze()
}

#[test]
fn a_huge_length_at_every_prefix_is_rejected_before_decoding() {
    let (mut arrays, mut total) = (0, 0);
    for_every_sample(|sample| {
        let s = sample();
        if let Some(request) = &s.request {
            for p in prefixes(request, s.api_key, s.version, Direction::Request) {
                let err = (s.decode_request)(with_huge_length(request, p)).unwrap_err();
                assert!(
                    matches!(
                        err,
                        WireError::Malformed {
                            problem: Problem::LengthExceedsRemaining { .. },
                            ..
                        }
                    ),
                    "{:?} v{} request prefix {p:?}: {err}",
                    s.api_key,
                    s.version
                );
                arrays += usize::from(p.is_array);
                total += 1;
            }
        }
        for p in prefixes(&s.response, s.api_key, s.version, Direction::Response) {
            let err = (s.decode_response)(with_huge_length(&s.response, p), s.version).unwrap_err();
            assert!(
                matches!(
                    err,
                    WireError::Malformed {
                        problem: Problem::LengthExceedsRemaining { .. },
                        ..
                    }
                ),
                "{:?} v{} response prefix {p:?}: {err}",
                s.api_key,
                s.version
            );
            arrays += usize::from(p.is_array);
            total += 1;
        }
    });
    assert!(arrays > 150, "only {arrays} array prefixes of {total}");
}

#[test]
fn the_huge_join_group_body_of_the_reference_is_rejected() {
    // JoinGroup v5: group "g", session 10 s, rebalance 60 s, member "", instance null,
    // protocol type "c", protocols count i32::MAX — the frame that aborted the prototype.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 11, 0, 5, 0, 0, 0, 1, 0xFF, 0xFF]); // header v1, null client
    frame.extend_from_slice(&[0, 1, b'g', 0, 0, 0x27, 0x10, 0, 0, 0xEA, 0x60, 0, 0]);
    frame.extend_from_slice(&[0xFF, 0xFF, 0, 1, b'c', 0x7F, 0xFF, 0xFF, 0xFF]);
    let err = decode_request(frame.freeze()).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed {
                field: "Protocols",
                problem: Problem::LengthExceedsRemaining {
                    claimed: 2_147_483_647,
                    remaining: 0
                },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn short_frames_unknown_keys_and_unsupported_apis_are_errors() {
    for len in 0..8 {
        let frame = Bytes::from(vec![0u8; len]);
        assert!(matches!(
            decode_request(frame),
            Err(WireError::ShortFrame { len: l, .. }) if l == len
        ));
    }
    let unknown = Bytes::from_static(&[0x7F, 0x00, 0, 0, 0, 0, 0, 9, 0xFF, 0xFF]);
    assert!(matches!(
        decode_request(unknown),
        Err(WireError::UnknownApiKey { api_key: 0x7F00 })
    ));
    // OffsetCommit (8) is Kafka's but not kroupier's.
    let offset_commit = Bytes::from_static(&[0, 8, 0, 9, 0, 0, 0, 9, 0xFF, 0xFF, 0]);
    assert!(matches!(
        decode_request(offset_commit),
        Err(WireError::UnsupportedApi {
            api_key: ApiKey::OffsetCommit,
            correlation_id: 9
        })
    ));
    for len in 0..4 {
        assert!(matches!(
            decode_response::<HeartbeatResponse>(Bytes::from(vec![0u8; len]), 4),
            Err(WireError::ShortFrame { .. })
        ));
    }
}

#[test]
fn an_unsupported_version_keeps_the_correlation_id_for_the_answer() {
    // ApiVersions v9: header v2 (flexible), correlation id 5, client "c", no tagged fields.
    let frame = Bytes::from_static(&[0, 18, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 2, 0, 0, 0]);
    assert!(matches!(
        decode_request(frame),
        Err(WireError::UnsupportedVersion {
            api_key: ApiKey::ApiVersions,
            version: 9,
            max: 4,
            correlation_id: 5,
            ..
        })
    ));
    assert!(matches!(
        encode_request(&HeartbeatRequest::default(), 5, 1, None),
        Err(WireError::UnsupportedVersion { version: 5, .. })
    ));
}

#[test]
fn trailing_bytes_are_an_error() {
    let frame = encode_request(&HeartbeatRequest::default(), 4, 1, None).unwrap();
    let mut longer = BytesMut::from(&frame[..]);
    longer.extend_from_slice(&[0]);
    assert!(matches!(
        decode_request(longer.freeze()),
        Err(WireError::TrailingBytes { trailing: 1, .. })
    ));
    let frame = encode_response(1, 4, &HeartbeatResponse::default()).unwrap();
    let mut longer = BytesMut::from(&frame[..]);
    longer.extend_from_slice(&[0, 0]);
    assert!(matches!(
        decode_response::<HeartbeatResponse>(longer.freeze(), 4),
        Err(WireError::TrailingBytes { trailing: 2, .. })
    ));
}

#[test]
fn api_versions_falls_back_to_a_v0_error_answer() {
    // A broker that does not know ApiVersions v3 answers in v0 with UNSUPPORTED_VERSION (35).
    let answer = ApiVersionsResponse::default()
        .with_error_code(35)
        .with_api_keys(vec![
            api_versions_response::ApiVersion::default()
                .with_api_key(18)
                .with_max_version(2),
        ]);
    let frame = encode_response(3, 0, &answer).unwrap();
    let (header, decoded) = decode_response::<ApiVersionsResponse>(frame, 3).unwrap();
    assert_eq!(header.correlation_id, 3);
    assert_eq!(decoded.error_code, 35);
    assert_eq!(decoded.api_keys[0].max_version, 2);
    // A v0 body without an error is not taken for a v3 answer.
    let ok = encode_response(3, 0, &ApiVersionsResponse::default()).unwrap();
    assert!(decode_response::<ApiVersionsResponse>(ok, 3).is_err());
}

#[test]
fn a_known_tagged_field_must_fill_its_declared_size() {
    // ApiVersionsResponse v3 with tag 1 (FinalizedFeaturesEpoch, int64) declared as 9 bytes.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 0, 0, 1]); // header v0: correlation id 1
    frame.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0]); // error, no api keys, throttle
    frame.extend_from_slice(&[1, 1, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0]); // 1 tag: tag 1, size 9
    let err = decode_response::<ApiVersionsResponse>(frame.freeze(), 3).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed {
                problem: Problem::TaggedFieldSize {
                    tag: 1,
                    declared: 9,
                    used: 8
                },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn an_overlong_varint_is_rejected() {
    let body = [0xFF, 0xFF, 0xFF, 0xFF, 0x7F];
    let err = walk(
        schema::body(ApiKey::Heartbeat, Direction::Request).unwrap(),
        4,
        &body,
        0,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        WireError::Malformed {
            problem: Problem::VarintTooLong,
            ..
        }
    ));
}

#[test]
fn the_frame_codec_caps_frames() {
    use tokio_util::codec::Decoder;
    let mut codec = frame_codec(16);
    let mut buf = BytesMut::from(&[0u8, 0, 0, 17][..]);
    assert!(codec.decode(&mut buf).is_err());
    let mut codec = frame_codec(16);
    let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 7, 8][..]);
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap().as_ref(), &[7, 8]);
    // A negative i32 length reads as a huge u32 and is refused too.
    let mut buf = BytesMut::from(&[0xFFu8, 0xFF, 0xFF, 0xFF][..]);
    assert!(
        frame_codec(DEFAULT_MAX_RESPONSE_FRAME)
            .decode(&mut buf)
            .is_err()
    );
}

#[test]
fn a_heartbeat_round_trip_and_a_hostile_frame() {
    use kafka_protocol::protocol::StrBytes;

    // Client: a Heartbeat v4 frame (the codec adds the length prefix).
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_generation_id(3)
        .with_member_id(StrBytes::from_static_str("m-1"));
    let frame = encode_request(&request, 4, 7, Some("kroupier")).unwrap();

    // Broker: decode it, answer it.
    let (header, body) = decode_request(frame).unwrap();
    assert_eq!(body, RequestBody::Heartbeat(request));
    let answer = encode_response(header.correlation_id, 4, &HeartbeatResponse::default()).unwrap();

    // Client: decode the answer.
    let (header, response) = decode_response::<HeartbeatResponse>(answer, 4).unwrap();
    assert_eq!((header.correlation_id, response.error_code), (7, 0));

    // A hostile frame is an error, not an abort.
    assert!(decode_request(Bytes::from_static(&[0, 11, 0, 5])).is_err());
}

#[test]
fn a_produce_round_trip_and_hostile_log_frames() {
    // A Produce v9 request round-trips through the embedded side's decoder.
    let (request, response) = samples::produce(9);
    let frame = encode_request(&request, 9, 3, Some("kroupier")).unwrap();
    let (_, body) = decode_request(frame).unwrap();
    assert_eq!(body, RequestBody::Produce(request));
    let answer = encode_response(3, 9, &response).unwrap();
    assert_eq!(
        decode_response::<ProduceResponse>(answer, 9).unwrap().1,
        response
    );

    // Produce v8 (header v1, null client id): no transactional id, acks -1, timeout 1 s, one
    // topic "t", one partition 0 whose records claim i32::MAX bytes.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 1, 0xFF, 0xFF]);
    frame.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0x03, 0xE8]);
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 0]);
    frame.extend_from_slice(&[0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3]);
    let err = decode_request(frame.freeze()).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed {
                message: "ProduceRequest",
                field: "Records",
                problem: Problem::LengthExceedsRemaining {
                    claimed: 2_147_483_647,
                    remaining: 3
                },
                ..
            }
        ),
        "{err}"
    );

    // A Fetch v11 response (header v0) whose topic array claims i32::MAX entries.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    frame.extend_from_slice(&[0x7F, 0xFF, 0xFF, 0xFF]);
    let err = decode_response::<FetchResponse>(frame.freeze(), 11).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed {
                message: "FetchResponse",
                field: "Responses",
                problem: Problem::LengthExceedsRemaining { .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn the_transaction_apis_are_spoken_but_not_served() {
    for key in TRANSACTION_APIS {
        assert!(
            !SUPPORTED_APIS.contains(&key) && !LOG_APIS.contains(&key),
            "{key:?}"
        );
        assert!(schema::body(key, Direction::Response).is_some(), "{key:?}");
    }
    // The request versions kafka-protocol 0.18 encodes: InitProducerId's stop at v5, before the
    // unstable v6 its response already has.
    assert_eq!(versions(ApiKey::InitProducerId), Some(0..=5));
    assert_eq!(versions(ApiKey::AddPartitionsToTxn), Some(0..=5));
    assert_eq!(versions(ApiKey::EndTxn), Some(0..=5));
    assert!(matches!(
        encode_request(&InitProducerIdRequest::default(), 6, 1, None),
        Err(WireError::UnsupportedVersion {
            version: 6,
            max: 5,
            ..
        })
    ));

    // An AddPartitionsToTxn v2 response (header v0: correlation id 1), throttle 0, whose topic
    // results claim i32::MAX entries.
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF]);
    let err = decode_response::<AddPartitionsToTxnResponse>(frame.freeze(), 2).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed {
                message: "AddPartitionsToTxnResponse",
                field: "ResultsByTopicV3AndBelow",
                problem: Problem::LengthExceedsRemaining {
                    claimed: 2_147_483_647,
                    remaining: 0
                },
                ..
            }
        ),
        "{err}"
    );
}
