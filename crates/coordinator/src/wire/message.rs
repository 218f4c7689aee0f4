//! The messages kroupier speaks, and the client side of the wire: encode a request with its
//! header, decode a response after the guard has walked it.

use std::fmt::Debug;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ApiVersionsRequest,
    ApiVersionsResponse, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, EndTxnRequest, EndTxnResponse, FetchRequest,
    FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest,
    HeartbeatResponse, InitProducerIdRequest, InitProducerIdResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, StrBytes};

use super::error::WireError;
use super::guard::walk;
use super::schema::{self, Schema};

/// A request kroupier sends: one of the nine group APIs (which its embedded coordinator also
/// serves), one of the log APIs (Produce, Fetch, ListOffsets, CreateTopics, DescribeConfigs),
/// SaslHandshake and SaslAuthenticate, the observer's ConsumerGroupDescribe (KIP-848 groups), or
/// one of the transaction APIs (InitProducerId, AddPartitionsToTxn, EndTxn).
pub trait WireRequest:
    Encodable + Decodable + HeaderVersion + Message + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// The API this request belongs to.
    const API_KEY: ApiKey;
    /// The message's name in Kafka's spec.
    const NAME: &'static str;
    /// The response a broker sends back.
    type Response: WireResponse;
}

/// A response to a [`WireRequest`].
pub trait WireResponse:
    Encodable + Decodable + HeaderVersion + Message + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// The API this response belongs to.
    const API_KEY: ApiKey;
    /// The message's name in Kafka's spec.
    const NAME: &'static str;
    /// A version to try when the body does not decode at the version asked for. Only
    /// ApiVersions has one: a broker answers an ApiVersions version it does not support with a
    /// v0 body carrying UNSUPPORTED_VERSION and its own ranges.
    const FALLBACK_VERSION: Option<i16> = None;

    /// Whether a body decoded at [`FALLBACK_VERSION`](Self::FALLBACK_VERSION) is the answer:
    /// only an error answer is (for ApiVersions, a non-zero error code).
    fn accepts_fallback(&self) -> bool {
        false
    }
}

macro_rules! wire_api {
    ($key:ident, $req:ident, $resp:ident $(, $fallback:expr, $accepts:expr)?) => {
        impl WireRequest for $req {
            const API_KEY: ApiKey = ApiKey::$key;
            const NAME: &'static str = stringify!($req);
            type Response = $resp;
        }
        impl WireResponse for $resp {
            const API_KEY: ApiKey = ApiKey::$key;
            const NAME: &'static str = stringify!($resp);
            $(
                const FALLBACK_VERSION: Option<i16> = $fallback;
                fn accepts_fallback(&self) -> bool {
                    let accepts: fn(&Self) -> bool = $accepts;
                    accepts(self)
                }
            )?
        }
    };
}

wire_api!(
    ApiVersions,
    ApiVersionsRequest,
    ApiVersionsResponse,
    Some(0),
    |r| r.error_code != 0
);
wire_api!(Metadata, MetadataRequest, MetadataResponse);
wire_api!(
    FindCoordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse
);
wire_api!(JoinGroup, JoinGroupRequest, JoinGroupResponse);
wire_api!(SyncGroup, SyncGroupRequest, SyncGroupResponse);
wire_api!(Heartbeat, HeartbeatRequest, HeartbeatResponse);
wire_api!(LeaveGroup, LeaveGroupRequest, LeaveGroupResponse);
wire_api!(
    DescribeGroups,
    DescribeGroupsRequest,
    DescribeGroupsResponse
);
wire_api!(ListGroups, ListGroupsRequest, ListGroupsResponse);
wire_api!(SaslHandshake, SaslHandshakeRequest, SaslHandshakeResponse);
wire_api!(Produce, ProduceRequest, ProduceResponse);
wire_api!(Fetch, FetchRequest, FetchResponse);
wire_api!(ListOffsets, ListOffsetsRequest, ListOffsetsResponse);
wire_api!(CreateTopics, CreateTopicsRequest, CreateTopicsResponse);
wire_api!(
    DescribeConfigs,
    DescribeConfigsRequest,
    DescribeConfigsResponse
);
wire_api!(
    SaslAuthenticate,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse
);
wire_api!(
    ConsumerGroupDescribe,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse
);
wire_api!(
    InitProducerId,
    InitProducerIdRequest,
    InitProducerIdResponse
);
wire_api!(
    AddPartitionsToTxn,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse
);
wire_api!(EndTxn, EndTxnRequest, EndTxnResponse);

/// Encodes `request` at `version` behind a request header, as one frame without its length
/// prefix (the frame codec adds that).
///
/// # Errors
/// [`WireError::UnsupportedVersion`] outside the request's versions, [`WireError::Encode`] when
/// a field is set that `version` does not carry.
pub fn encode_request<R: WireRequest>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<Bytes, WireError> {
    check_version(
        R::API_KEY,
        R::VERSIONS.min,
        R::VERSIONS.max,
        version,
        correlation_id,
    )?;
    let header = RequestHeader::default()
        .with_request_api_key(R::API_KEY as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.map(|c| StrBytes::from_string(c.to_owned())));
    let mut buf = BytesMut::with_capacity(64 + request.compute_size(version).unwrap_or(0));
    header
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| encode_error("RequestHeader", version, e))?;
    request
        .encode(&mut buf, version)
        .map_err(|e| encode_error(R::NAME, version, e))?;
    Ok(buf.freeze())
}

/// Decodes a response frame (without its length prefix) to a request sent at `version`.
///
/// The guard walks the header and the body first; the body must end exactly at the end of the
/// frame. For ApiVersions, a body that does not decode at `version` is retried as v0 (see
/// [`WireResponse::FALLBACK_VERSION`]).
///
/// # Errors
/// Any [`WireError`] but [`WireError::Encode`]; every one means the connection's byte stream can
/// no longer be trusted.
pub fn decode_response<R: WireResponse>(
    frame: Bytes,
    version: i16,
) -> Result<(ResponseHeader, R), WireError> {
    if frame.len() < 4 {
        return Err(WireError::ShortFrame {
            what: "response",
            len: frame.len(),
            min: 4,
        });
    }
    let correlation_id = peek_correlation_id(&frame)?;
    check_version(
        R::API_KEY,
        R::VERSIONS.min,
        R::VERSIONS.max,
        version,
        correlation_id,
    )?;
    let mut rest = frame;
    let header_version = R::header_version(version);
    let header: ResponseHeader =
        guarded_decode(&schema::RESPONSE_HEADER, header_version, &mut rest)?;
    let Some(body_schema) = schema::body(R::API_KEY, schema::Direction::Response) else {
        return Err(WireError::UnsupportedApi {
            api_key: R::API_KEY,
            correlation_id,
        });
    };
    match decode_whole::<R>(body_schema, version, rest.clone()) {
        Ok(body) => Ok((header, body)),
        Err(first) => match R::FALLBACK_VERSION {
            Some(fallback) if fallback != version => {
                match decode_whole::<R>(body_schema, fallback, rest) {
                    Ok(body) if body.accepts_fallback() => Ok((header, body)),
                    _ => Err(first),
                }
            }
            _ => Err(first),
        },
    }
}

/// The correlation id at the start of a response frame, read without decoding the rest.
///
/// # Errors
/// [`WireError::ShortFrame`] under 4 bytes.
pub fn peek_correlation_id(frame: &[u8]) -> Result<i32, WireError> {
    match frame.first_chunk::<4>() {
        Some(id) => Ok(i32::from_be_bytes(*id)),
        None => Err(WireError::ShortFrame {
            what: "response",
            len: frame.len(),
            min: 4,
        }),
    }
}

/// Walks then decodes a body that must fill `frame` exactly.
pub(crate) fn decode_whole<T: Decodable>(
    schema: &'static Schema,
    version: i16,
    mut frame: Bytes,
) -> Result<T, WireError> {
    let body = guarded_decode(schema, version, &mut frame)?;
    if frame.has_remaining() {
        return Err(WireError::TrailingBytes {
            message: schema.name,
            version,
            trailing: frame.remaining(),
        });
    }
    Ok(body)
}

/// Walks `schema` over the front of `frame`, then lets kafka-protocol decode exactly that part
/// and advances `frame` past it.
pub(crate) fn guarded_decode<T: Decodable>(
    schema: &'static Schema,
    version: i16,
    frame: &mut Bytes,
) -> Result<T, WireError> {
    let end = walk(schema, version, frame, 0)?;
    let mut part = frame.split_to(end);
    let value = T::decode(&mut part, version).map_err(|e| WireError::Decode {
        message: schema.name,
        version,
        reason: e.to_string(),
    })?;
    if part.has_remaining() {
        return Err(WireError::Decode {
            message: schema.name,
            version,
            reason: format!(
                "kafka-protocol stopped {} bytes before the end the schema walk found",
                part.remaining()
            ),
        });
    }
    Ok(value)
}

pub(crate) fn check_version(
    api_key: ApiKey,
    min: i16,
    max: i16,
    version: i16,
    correlation_id: i32,
) -> Result<(), WireError> {
    if (min..=max).contains(&version) {
        Ok(())
    } else {
        Err(WireError::UnsupportedVersion {
            api_key,
            version,
            min,
            max,
            correlation_id,
        })
    }
}

pub(crate) fn encode_error(
    message: &'static str,
    version: i16,
    e: impl std::fmt::Display,
) -> WireError {
    WireError::Encode {
        message,
        version,
        reason: e.to_string(),
    }
}
