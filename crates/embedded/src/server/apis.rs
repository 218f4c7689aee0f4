//! The APIs the embedded coordinator serves that do not touch groups or logs: ApiVersions,
//! Metadata and FindCoordinator, plus the version table it advertises.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponseTopic};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsRequest,
    DescribeConfigsRequest, DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest,
    FindCoordinatorResponse, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, MetadataResponse, ProduceRequest,
    SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::{Message, StrBytes};

use super::node::Node;
use super::topics::metadata_topic;
use crate::log::{TopicRef, Topics};

/// Every API the embedded coordinator serves with the versions it implements: all the versions
/// kafka-protocol 0.18 knows (Kafka 4.1's schemas), each handled field by field.
pub(crate) const SUPPORTED_VERSIONS: [(ApiKey, i16, i16); 14] = [
    range::<ProduceRequest>(ApiKey::Produce),
    range::<FetchRequest>(ApiKey::Fetch),
    range::<ListOffsetsRequest>(ApiKey::ListOffsets),
    range::<MetadataRequest>(ApiKey::Metadata),
    range::<FindCoordinatorRequest>(ApiKey::FindCoordinator),
    range::<JoinGroupRequest>(ApiKey::JoinGroup),
    range::<HeartbeatRequest>(ApiKey::Heartbeat),
    range::<LeaveGroupRequest>(ApiKey::LeaveGroup),
    range::<SyncGroupRequest>(ApiKey::SyncGroup),
    range::<DescribeGroupsRequest>(ApiKey::DescribeGroups),
    range::<ListGroupsRequest>(ApiKey::ListGroups),
    range::<ApiVersionsRequest>(ApiKey::ApiVersions),
    range::<CreateTopicsRequest>(ApiKey::CreateTopics),
    range::<DescribeConfigsRequest>(ApiKey::DescribeConfigs),
];

const fn range<M: Message>(key: ApiKey) -> (ApiKey, i16, i16) {
    (key, M::VERSIONS.min, M::VERSIONS.max)
}

/// Whether `version` of `api` is one the coordinator implements.
pub(crate) fn is_supported(api: ApiKey, version: i16) -> bool {
    SUPPORTED_VERSIONS
        .iter()
        .any(|(key, min, max)| *key == api && (*min..=*max).contains(&version))
}

/// The ApiVersions answer; `error` is set when answering an unsupported ApiVersions version
/// (then at v0, as Kafka does).
pub(crate) fn api_versions(error: Option<ResponseError>) -> ApiVersionsResponse {
    let api_keys = SUPPORTED_VERSIONS
        .iter()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect();
    ApiVersionsResponse::default()
        .with_error_code(error.map_or(0, |e| e.code()))
        .with_api_keys(api_keys)
}

/// Kafka's check on ApiVersions v3+: the client software name and version are non-empty and
/// match `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`; otherwise the answer is INVALID_REQUEST.
pub(crate) fn api_versions_request_is_valid(req: &ApiVersionsRequest, version: i16) -> bool {
    fn valid(s: &str) -> bool {
        let b = s.as_bytes();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && b.iter()
                        .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
            }
            _ => false,
        }
    }
    version < 3
        || (valid(req.client_software_name.as_str()) && valid(req.client_software_version.as_str()))
}

/// Metadata: this node as the only broker, and the topics asked for (by name, or by id from
/// v12), each with partition 0 led by this node; a null list (an empty one at v0) asks for every
/// topic. A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id):
/// topics are never created by Metadata (`allow_auto_topic_creation` is not honoured).
pub(crate) fn metadata(
    node: &Node,
    topics: &Topics,
    req: &MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let mut broker = MetadataResponseBroker::default()
        .with_node_id(BrokerId(node.node_id))
        .with_host(node.host.clone())
        .with_port(node.port);
    broker.rack = None;
    let all = match &req.topics {
        None => true,
        Some(asked) => asked.is_empty() && version == 0,
    };
    let listed = if all {
        topics
            .list()
            .iter()
            .map(|t| metadata_topic(node, t, version))
            .collect()
    } else {
        metadata_topics(node, topics, req, version)
    };
    let mut response = MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_topics(listed);
    if version >= 1 {
        response.controller_id = BrokerId(node.node_id);
    }
    if version >= 2 {
        response.cluster_id = Some(node.cluster_id.clone());
    }
    response
}

/// The topics a Metadata request names, each found or with its error.
fn metadata_topics(
    node: &Node,
    topics: &Topics,
    req: &MetadataRequest,
    version: i16,
) -> Vec<MetadataResponseTopic> {
    req.topics
        .iter()
        .flatten()
        .map(|t| {
            let found = match &t.name {
                Some(name) => topics.topic(TopicRef::Name(name.0.as_str())),
                None => topics.topic(TopicRef::Id(t.topic_id)),
            };
            if let Ok(topic) = found {
                return metadata_topic(node, &topic, version);
            }
            let name = match (&t.name, version) {
                (Some(name), _) => Some(name.clone()),
                (None, v) if v < 12 => Some(TopicName(StrBytes::default())),
                (None, _) => None,
            };
            let error = if t.name.is_none() {
                ResponseError::UnknownTopicId
            } else {
                ResponseError::UnknownTopicOrPartition
            };
            MetadataResponseTopic::default()
                .with_error_code(error.code())
                .with_name(name)
                .with_topic_id(t.topic_id)
        })
        .collect()
}

/// FindCoordinator: this node for group keys (v0–v3 `key`, v4+ batched `coordinator_keys`);
/// transaction and share coordinators are not available here.
pub(crate) fn find_coordinator(
    node: &Node,
    req: &FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    let error = match req.key_type {
        0 => None,
        1 | 2 => Some(ResponseError::CoordinatorNotAvailable),
        _ => Some(ResponseError::InvalidRequest),
    };
    let code = error.map_or(0, |e| e.code());
    let message = error.map(|e| {
        StrBytes::from_string(format!(
            "the embedded kroupier coordinator serves group coordinators only ({e})"
        ))
    });
    if version >= 4 {
        let coordinators = req
            .coordinator_keys
            .iter()
            .map(|key| {
                let mut c = Coordinator::default()
                    .with_key(key.clone())
                    .with_error_code(code)
                    .with_error_message(message.clone());
                if error.is_none() {
                    c = c
                        .with_node_id(BrokerId(node.node_id))
                        .with_host(node.host.clone())
                        .with_port(node.port);
                } else {
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
                c
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let mut response = FindCoordinatorResponse::default().with_error_code(code);
    if version >= 1 {
        response.error_message = message;
    }
    if error.is_none() {
        response = response
            .with_node_id(BrokerId(node.node_id))
            .with_host(node.host.clone())
            .with_port(node.port);
    } else {
        response.node_id = BrokerId(-1);
        response.port = -1;
    }
    response
}
