//! The broker side of the wire: decode a request frame (header, then the body its API key and
//! version name) after the guard has walked it, and encode a response behind its header.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, DescribeConfigsRequest, DescribeGroupsRequest,
    FetchRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest, RequestHeader,
    ResponseHeader, SyncGroupRequest,
};
use kafka_protocol::protocol::Encodable;

use super::error::WireError;
use super::message::{WireResponse, check_version, decode_whole, encode_error, guarded_decode};
use super::schema::{self, Direction};

/// The least a request frame holds before its client id: api key, api version, correlation id.
const MIN_REQUEST_HEADER: usize = 8;

/// A decoded request body of one of the APIs kroupier serves: the group APIs and the log APIs
/// ([`LOG_APIS`](super::LOG_APIS)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum RequestBody {
    /// ApiVersions (18).
    ApiVersions(ApiVersionsRequest),
    /// Metadata (3).
    Metadata(MetadataRequest),
    /// FindCoordinator (10).
    FindCoordinator(FindCoordinatorRequest),
    /// JoinGroup (11).
    JoinGroup(JoinGroupRequest),
    /// SyncGroup (14).
    SyncGroup(SyncGroupRequest),
    /// Heartbeat (12).
    Heartbeat(HeartbeatRequest),
    /// LeaveGroup (13).
    LeaveGroup(LeaveGroupRequest),
    /// DescribeGroups (15).
    DescribeGroups(DescribeGroupsRequest),
    /// ListGroups (16).
    ListGroups(ListGroupsRequest),
    /// Produce (0).
    Produce(ProduceRequest),
    /// Fetch (1).
    Fetch(FetchRequest),
    /// ListOffsets (2).
    ListOffsets(ListOffsetsRequest),
    /// CreateTopics (19).
    CreateTopics(CreateTopicsRequest),
    /// DescribeConfigs (32).
    DescribeConfigs(DescribeConfigsRequest),
}

impl RequestBody {
    /// The API the body belongs to.
    pub fn api_key(&self) -> ApiKey {
        match self {
            Self::ApiVersions(_) => ApiKey::ApiVersions,
            Self::Metadata(_) => ApiKey::Metadata,
            Self::FindCoordinator(_) => ApiKey::FindCoordinator,
            Self::JoinGroup(_) => ApiKey::JoinGroup,
            Self::SyncGroup(_) => ApiKey::SyncGroup,
            Self::Heartbeat(_) => ApiKey::Heartbeat,
            Self::LeaveGroup(_) => ApiKey::LeaveGroup,
            Self::DescribeGroups(_) => ApiKey::DescribeGroups,
            Self::ListGroups(_) => ApiKey::ListGroups,
            Self::Produce(_) => ApiKey::Produce,
            Self::Fetch(_) => ApiKey::Fetch,
            Self::ListOffsets(_) => ApiKey::ListOffsets,
            Self::CreateTopics(_) => ApiKey::CreateTopics,
            Self::DescribeConfigs(_) => ApiKey::DescribeConfigs,
        }
    }
}

/// Decodes one request frame (without its length prefix): the header, then the body.
///
/// Frames shorter than a header, unknown API keys, APIs kroupier does not serve, versions
/// outside kafka-protocol's range, malformed lengths and trailing bytes are all errors, never
/// panics or aborts. [`WireError::UnsupportedApi`] and [`WireError::UnsupportedVersion`] carry
/// the correlation id, so a broker can still answer them (Kafka answers an unsupported
/// ApiVersions version with a v0 body and UNSUPPORTED_VERSION).
///
/// # Errors
/// See above; any error but those two means the connection should be closed.
pub fn decode_request(frame: Bytes) -> Result<(RequestHeader, RequestBody), WireError> {
    let Some(fixed) = frame.first_chunk::<MIN_REQUEST_HEADER>() else {
        return Err(WireError::ShortFrame {
            what: "request",
            len: frame.len(),
            min: MIN_REQUEST_HEADER,
        });
    };
    let key = i16::from_be_bytes([fixed[0], fixed[1]]);
    let version = i16::from_be_bytes([fixed[2], fixed[3]]);
    let correlation_id = i32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let api_key = ApiKey::try_from(key).map_err(|()| WireError::UnknownApiKey { api_key: key })?;
    let Some(body_schema) = schema::body(api_key, Direction::Request) else {
        return Err(WireError::UnsupportedApi {
            api_key,
            correlation_id,
        });
    };
    let mut rest = frame;
    let header: RequestHeader = guarded_decode(
        &schema::REQUEST_HEADER,
        api_key.request_header_version(version),
        &mut rest,
    )?;
    let v = body_schema.versions;
    check_version(api_key, v.min, v.max, version, correlation_id)?;
    let body = match api_key {
        ApiKey::ApiVersions => RequestBody::ApiVersions(decode_whole(body_schema, version, rest)?),
        ApiKey::Metadata => RequestBody::Metadata(decode_whole(body_schema, version, rest)?),
        ApiKey::FindCoordinator => {
            RequestBody::FindCoordinator(decode_whole(body_schema, version, rest)?)
        }
        ApiKey::JoinGroup => RequestBody::JoinGroup(decode_whole(body_schema, version, rest)?),
        ApiKey::SyncGroup => RequestBody::SyncGroup(decode_whole(body_schema, version, rest)?),
        ApiKey::Heartbeat => RequestBody::Heartbeat(decode_whole(body_schema, version, rest)?),
        ApiKey::LeaveGroup => RequestBody::LeaveGroup(decode_whole(body_schema, version, rest)?),
        ApiKey::DescribeGroups => {
            RequestBody::DescribeGroups(decode_whole(body_schema, version, rest)?)
        }
        ApiKey::ListGroups => RequestBody::ListGroups(decode_whole(body_schema, version, rest)?),
        ApiKey::Produce => RequestBody::Produce(decode_whole(body_schema, version, rest)?),
        ApiKey::Fetch => RequestBody::Fetch(decode_whole(body_schema, version, rest)?),
        ApiKey::ListOffsets => RequestBody::ListOffsets(decode_whole(body_schema, version, rest)?),
        ApiKey::CreateTopics => {
            RequestBody::CreateTopics(decode_whole(body_schema, version, rest)?)
        }
        ApiKey::DescribeConfigs => {
            RequestBody::DescribeConfigs(decode_whole(body_schema, version, rest)?)
        }
        _ => {
            return Err(WireError::UnsupportedApi {
                api_key,
                correlation_id,
            });
        }
    };
    Ok((header, body))
}

/// Encodes `response` at `version` behind a response header carrying `correlation_id`, as one
/// frame without its length prefix. The header version follows the API and version
/// (ApiVersions always uses header v0).
///
/// # Errors
/// [`WireError::UnsupportedVersion`] outside the response's versions, [`WireError::Encode`]
/// when a field is set that `version` does not carry.
pub fn encode_response<R: WireResponse>(
    correlation_id: i32,
    version: i16,
    response: &R,
) -> Result<Bytes, WireError> {
    check_version(
        R::API_KEY,
        R::VERSIONS.min,
        R::VERSIONS.max,
        version,
        correlation_id,
    )?;
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let mut buf = BytesMut::with_capacity(16 + response.compute_size(version).unwrap_or(0));
    header
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| encode_error("ResponseHeader", version, e))?;
    response
        .encode(&mut buf, version)
        .map_err(|e| encode_error(R::NAME, version, e))?;
    Ok(buf.freeze())
}
