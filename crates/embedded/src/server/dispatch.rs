//! One decoded request in, one encoded response out (or none, for Produce with acks=0): dispatch
//! by API, with faults applied.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiVersionsResponse, DescribeGroupsResponse, FindCoordinatorResponse, HeartbeatResponse,
    LeaveGroupResponse, ListGroupsResponse, MetadataResponse, RequestHeader,
};
use kroupier_coordinator::wire::{self, RequestBody, WireError, WireResponse};

use super::apis;
use super::faults::{Fault, Faults};
use super::groups::{Groups, GroupsGone};
use super::node::Node;
use super::{convert, fetch, produce, topics};
use crate::group::{JoinGroupResult, SyncGroupResult};
use crate::log::Topics;

/// What the connection needs to answer requests.
#[derive(Debug, Clone)]
pub(crate) struct Dispatcher {
    pub(crate) node: Arc<Node>,
    pub(crate) groups: Groups,
    pub(crate) topics: Topics,
    pub(crate) faults: Faults,
}

/// Why a request could not be answered; the connection closes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DispatchError {
    /// The response could not be encoded.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The coordinator is shutting down.
    #[error(transparent)]
    Gone(#[from] GroupsGone),
    /// A Produce with acks=0 failed: Kafka closes the connection, as there is no response to
    /// carry the error.
    #[error("a Produce with acks=0 failed ({0}); closing the connection tells the producer")]
    ProduceFailed(String),
    /// A request body of an API this coordinator does not serve.
    #[error("no handler for {0:?}")]
    Unhandled(kafka_protocol::messages::ApiKey),
}

/// The outcome of one request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Send this frame (without its length prefix) after `delay`.
    Send(Bytes, std::time::Duration),
    /// An injected fault: send nothing.
    Drop,
    /// A request that takes no response (Produce with acks=0): send nothing.
    Silent,
}

fn encode<R: WireResponse>(header: &RequestHeader, response: &R) -> Result<Bytes, DispatchError> {
    Ok(wire::encode_response(
        header.correlation_id,
        header.request_api_version,
        response,
    )?)
}

impl Dispatcher {
    /// Handles one request from `client_host` (or answers with the injected fault).
    pub(crate) async fn dispatch(
        &self,
        header: &RequestHeader,
        body: RequestBody,
        client_host: &str,
    ) -> Result<Answer, DispatchError> {
        let fault = self.faults.take(body.api_key()).unwrap_or_default();
        let frame = match fault.error {
            Some(code) => self.fault_response(header, &body, code)?,
            None => match self.handle(header, body, client_host).await? {
                Some(frame) => frame,
                None => return Ok(Answer::Silent),
            },
        };
        Ok(answer(frame, &fault))
    }

    /// The response frame, or `None` for a request that takes none.
    async fn handle(
        &self,
        header: &RequestHeader,
        body: RequestBody,
        client_host: &str,
    ) -> Result<Option<Bytes>, DispatchError> {
        let v = header.request_api_version;
        match body {
            RequestBody::Produce(req) => {
                let response = produce::produce(&self.topics, &req, v);
                if req.acks != 0 {
                    return encode(header, &response).map(Some);
                }
                match produce::first_error(&response) {
                    None => Ok(None),
                    Some(error) => Err(DispatchError::ProduceFailed(error)),
                }
            }
            RequestBody::Fetch(req) => {
                encode(header, &fetch::fetch(&self.topics, &req, v).await).map(Some)
            }
            RequestBody::ListOffsets(req) => {
                encode(header, &topics::list_offsets(&self.topics, &req, v)).map(Some)
            }
            RequestBody::CreateTopics(req) => {
                let response = topics::create_topics(
                    &self.topics,
                    &self.node,
                    self.topics.max_message_bytes(),
                    &req,
                    v,
                );
                encode(header, &response).map(Some)
            }
            RequestBody::DescribeConfigs(req) => {
                let max = self.topics.max_message_bytes();
                encode(header, &topics::describe_configs(&self.topics, max, &req)).map(Some)
            }
            other => self
                .handle_group(header, other, client_host)
                .await
                .map(Some),
        }
    }

    /// The APIs of the group coordinator (and ApiVersions, Metadata, FindCoordinator).
    async fn handle_group(
        &self,
        header: &RequestHeader,
        body: RequestBody,
        client_host: &str,
    ) -> Result<Bytes, DispatchError> {
        let v = header.request_api_version;
        let client_id = header
            .client_id
            .as_ref()
            .map(|c| c.as_str().to_string())
            .unwrap_or_default();
        match body {
            RequestBody::ApiVersions(req) if !apis::api_versions_request_is_valid(&req, v) => {
                // As Kafka: INVALID_REQUEST and no ranges.
                let code = ResponseError::InvalidRequest.code();
                encode(
                    header,
                    &ApiVersionsResponse::default().with_error_code(code),
                )
            }
            RequestBody::ApiVersions(_) => encode(header, &apis::api_versions(None)),
            RequestBody::Metadata(req) => {
                encode(header, &apis::metadata(&self.node, &self.topics, &req, v))
            }
            RequestBody::FindCoordinator(req) => {
                encode(header, &apis::find_coordinator(&self.node, &req, v))
            }
            RequestBody::JoinGroup(req) => {
                let req = convert::join_request(&req, v, client_id, client_host.to_string());
                let result = self.groups.join(req).await?;
                encode(header, &convert::join_response(result, v))
            }
            RequestBody::SyncGroup(req)
                if v >= 5 && (req.protocol_type.is_none() || req.protocol_name.is_none()) =>
            {
                // As Kafka: from v5 the protocol type and name are mandatory.
                let result = SyncGroupResult::error(ResponseError::InconsistentGroupProtocol);
                encode(header, &convert::sync_response(result, v))
            }
            RequestBody::SyncGroup(req) => {
                let result = self.groups.sync(convert::sync_request(&req)).await?;
                encode(header, &convert::sync_response(result, v))
            }
            RequestBody::Heartbeat(req) => {
                let error = self
                    .groups
                    .heartbeat(convert::heartbeat_request(&req))
                    .await?;
                encode(header, &convert::heartbeat_response(error))
            }
            RequestBody::LeaveGroup(req) => {
                let result = self.groups.leave(convert::leave_request(&req, v)).await?;
                encode(header, &convert::leave_response(result, v))
            }
            RequestBody::DescribeGroups(req) => {
                let ids = req
                    .groups
                    .iter()
                    .map(|g| g.0.as_str().to_string())
                    .collect();
                let groups = self.groups.describe(ids).await?;
                encode(header, &convert::describe_response(groups, v))
            }
            RequestBody::ListGroups(req) => {
                let groups = self.groups.list().await?;
                encode(header, &convert::list_response(groups, &req, v))
            }
            other => Err(DispatchError::Unhandled(other.api_key())),
        }
    }

    /// An answer carrying `error`, built without touching any group.
    fn fault_response(
        &self,
        header: &RequestHeader,
        body: &RequestBody,
        code: i16,
    ) -> Result<Bytes, DispatchError> {
        let v = header.request_api_version;
        // ApiVersions answers with a known error (at v0); any other code goes out as given.
        let error = ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError);
        match body {
            RequestBody::ApiVersions(_) => encode(header, &apis::api_versions(Some(error))),
            RequestBody::Metadata(req) => {
                let mut r: MetadataResponse = apis::metadata(&self.node, &self.topics, req, v);
                for t in &mut r.topics {
                    t.error_code = code;
                }
                if v >= 13 {
                    r.error_code = code;
                }
                encode(header, &r)
            }
            RequestBody::FindCoordinator(req) => {
                let mut r: FindCoordinatorResponse = apis::find_coordinator(&self.node, req, v);
                if v >= 4 {
                    for c in &mut r.coordinators {
                        c.error_code = code;
                        c.node_id.0 = -1;
                        c.port = -1;
                        c.host = Default::default();
                    }
                } else {
                    r.error_code = code;
                    r.node_id.0 = -1;
                    r.port = -1;
                    r.host = Default::default();
                }
                encode(header, &r)
            }
            RequestBody::JoinGroup(req) => {
                let result = JoinGroupResult::error(error, req.member_id.as_str());
                encode(header, &convert::join_response(result, v))
            }
            RequestBody::SyncGroup(_) => encode(
                header,
                &convert::sync_response(SyncGroupResult::error(error), v),
            ),
            RequestBody::Heartbeat(_) => {
                encode(header, &HeartbeatResponse::default().with_error_code(code))
            }
            RequestBody::LeaveGroup(_) => {
                encode(header, &LeaveGroupResponse::default().with_error_code(code))
            }
            RequestBody::DescribeGroups(req) => {
                let mut r: DescribeGroupsResponse = convert::describe_response(
                    req.groups
                        .iter()
                        .map(|g| (true, dead(g.0.as_str())))
                        .collect(),
                    v,
                );
                for g in &mut r.groups {
                    g.error_code = code;
                }
                encode(header, &r)
            }
            RequestBody::ListGroups(_) => {
                encode(header, &ListGroupsResponse::default().with_error_code(code))
            }
            RequestBody::Produce(req) => encode(header, &produce::produce_error(req, error, v)),
            RequestBody::Fetch(req) => encode(header, &fetch::fetch_error(req, error, v)),
            RequestBody::ListOffsets(req) => {
                encode(header, &topics::list_offsets_error(req, error))
            }
            RequestBody::CreateTopics(req) => {
                encode(header, &topics::create_topics_error(req, error, v))
            }
            RequestBody::DescribeConfigs(req) => {
                encode(header, &topics::describe_configs_error(req, error))
            }
            other => Err(DispatchError::Unhandled(other.api_key())),
        }
    }
}

fn dead(group_id: &str) -> crate::group::GroupDescription {
    crate::group::GroupDescription {
        group_id: group_id.to_string(),
        state: crate::group::GroupState::Dead,
        protocol_type: String::new(),
        protocol: String::new(),
        members: Vec::new(),
    }
}

fn answer(frame: Bytes, fault: &Fault) -> Answer {
    if fault.drop_response {
        Answer::Drop
    } else {
        Answer::Send(frame, fault.delay)
    }
}

/// The v0 ApiVersions answer to an ApiVersions version this coordinator does not know:
/// UNSUPPORTED_VERSION plus the supported ranges, as Kafka answers, so the client can retry
/// with a version both sides know.
pub(crate) fn unsupported_api_versions(correlation_id: i32) -> Result<Bytes, WireError> {
    let body = apis::api_versions(Some(ResponseError::UnsupportedVersion));
    wire::encode_response(correlation_id, 0, &body)
}
