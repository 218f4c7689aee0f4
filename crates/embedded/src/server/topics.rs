//! CreateTopics, DescribeConfigs (topics), ListOffsets and the topic half of Metadata, as
//! functions from kafka-protocol requests to responses over the shared [`Topics`] store.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, ListOffsetsRequest, ListOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::node::Node;
use crate::log::{LogError, NewTopic, TopicInfo, TopicRef, Topics};

/// ListOffsets' timestamp for the latest offset (the end offset, the high watermark).
pub(crate) const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets' timestamp for the earliest offset (the log start offset).
pub(crate) const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets' timestamp for the earliest offset on local storage (v8+), the log start here.
const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;

/// `config_source` of a config the topic was created with (Kafka's `DYNAMIC_TOPIC_CONFIG`).
const TOPIC_CONFIG: i8 = 1;
/// `config_source` of a default (Kafka's `DEFAULT_CONFIG`).
const DEFAULT_CONFIG: i8 = 5;

fn text(s: &StrBytes) -> String {
    s.as_str().to_string()
}

fn message(error: &LogError) -> Option<StrBytes> {
    Some(StrBytes::from_string(error.to_string()))
}

/// A topic as Metadata lists it: partition 0, led by this node, its only replica.
pub(crate) fn metadata_topic(
    node: &Node,
    topic: &TopicInfo,
    version: i16,
) -> MetadataResponseTopic {
    let me = BrokerId(node.node_id);
    let mut partition = MetadataResponsePartition::default()
        .with_partition_index(0)
        .with_leader_id(me)
        .with_replica_nodes(vec![me])
        .with_isr_nodes(vec![me]);
    if version >= 7 {
        partition.leader_epoch = 0;
    }
    let mut t = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_partitions(vec![partition]);
    if version >= 10 {
        t.topic_id = topic.id;
    }
    t
}

/// CreateTopics: each topic checked and created (or only checked with `validate_only`); a name
/// given twice in one request is INVALID_REQUEST for both, as Kafka answers.
pub(crate) fn create_topics(
    topics: &Topics,
    node: &Node,
    max_message_bytes: usize,
    req: &CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for t in &req.topics {
        *seen.entry(t.name.0.as_str()).or_default() += 1;
    }
    let results = req
        .topics
        .iter()
        .map(|t| {
            let name = text(&t.name.0);
            let outcome = if seen.get(name.as_str()).copied().unwrap_or(0) > 1 {
                Err(LogError::InvalidRequest(format!(
                    "topic {name} appears more than once in the request"
                )))
            } else {
                let new = NewTopic {
                    name: name.clone(),
                    num_partitions: t.num_partitions,
                    replication_factor: t.replication_factor,
                    assignments: t
                        .assignments
                        .iter()
                        .map(|a| {
                            (
                                a.partition_index,
                                a.broker_ids.iter().map(|b| b.0).collect(),
                            )
                        })
                        .collect(),
                    configs: t
                        .configs
                        .iter()
                        .map(|c| (text(&c.name), c.value.as_ref().map(text)))
                        .collect(),
                };
                topics.create(&new, node.node_id, req.validate_only)
            };
            created(t.name.clone(), outcome, max_message_bytes, version)
        })
        .collect();
    CreateTopicsResponse::default().with_topics(results)
}

/// One CreateTopics result at `version`: from v5 the layout and configs (those given, and the
/// defaults of `cleanup.policy` and `max.message.bytes`), from v7 the topic id.
fn created(
    name: TopicName,
    outcome: Result<TopicInfo, LogError>,
    max_message_bytes: usize,
    version: i16,
) -> CreatableTopicResult {
    let mut result = CreatableTopicResult::default().with_name(name);
    match outcome {
        Err(error) => {
            tracing::debug!(topic = %result.name.0.as_str(), %error, "CreateTopics refused");
            result.error_code = error.code().code();
            result.error_message = message(&error);
            if version >= 5 {
                result.configs = None;
            }
        }
        Ok(info) => {
            result.error_message = None;
            if version >= 5 {
                result.num_partitions = 1;
                result.replication_factor = 1;
                result.configs = Some(configs(&info, max_message_bytes));
            }
            if version >= 7 {
                result.topic_id = info.id;
            }
        }
    }
    result
}

/// One config of a topic as reported: name, value, Kafka's `config_source`.
type Reported = (String, Option<String>, i8);

/// The topic's configs as CreateTopics and DescribeConfigs report them: those it was created
/// with, then the defaults of the two this store applies (`cleanup.policy`,
/// `max.message.bytes`) when they were not given.
fn reported(info: &TopicInfo, max_message_bytes: usize) -> Vec<Reported> {
    let mut out: Vec<Reported> = info
        .configs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), TOPIC_CONFIG))
        .collect();
    if !info.configs.contains_key("cleanup.policy") {
        let policy = Some(info.cleanup_policy().to_string());
        out.push(("cleanup.policy".to_string(), policy, DEFAULT_CONFIG));
    }
    if !info.configs.contains_key("max.message.bytes") {
        let max = Some(max_message_bytes.to_string());
        out.push(("max.message.bytes".to_string(), max, DEFAULT_CONFIG));
    }
    out
}

fn configs(info: &TopicInfo, max_message_bytes: usize) -> Vec<CreatableTopicConfigs> {
    reported(info, max_message_bytes)
        .into_iter()
        .map(|(name, value, source)| {
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_string(name))
                .with_value(value.map(StrBytes::from_string))
                .with_config_source(source)
        })
        .collect()
}

/// DescribeConfigs' resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;

/// DescribeConfigs (v3+ `config_type`) of the configs this store knows: LIST, INT, or UNKNOWN.
fn config_type(name: &str) -> i8 {
    match name {
        "cleanup.policy" => 7,
        "max.message.bytes" => 3,
        _ => 0,
    }
}

/// DescribeConfigs for topics: the configs each was created with and the defaults this store
/// applies, filtered by `configuration_keys` when given. Other resource types (brokers,
/// loggers, ...) are INVALID_REQUEST: this coordinator has no broker configs to show.
pub(crate) fn describe_configs(
    topics: &Topics,
    max_message_bytes: usize,
    req: &DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let results = req
        .resources
        .iter()
        .map(|r| {
            let mut result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_message(None);
            let found = if r.resource_type == TOPIC_RESOURCE {
                topics.topic(TopicRef::Name(r.resource_name.as_str()))
            } else {
                Err(LogError::InvalidRequest(format!(
                    "resource type {}: the embedded kroupier coordinator describes topic configs \
                     only",
                    r.resource_type
                )))
            };
            match found {
                Ok(info) => {
                    let wanted = |name: &str| {
                        r.configuration_keys
                            .as_ref()
                            .is_none_or(|keys| keys.iter().any(|k| k.as_str() == name))
                    };
                    result.configs = reported(&info, max_message_bytes)
                        .into_iter()
                        .filter(|(name, _, _)| wanted(name))
                        .map(|(name, value, source)| {
                            DescribeConfigsResourceResult::default()
                                .with_config_type(config_type(&name))
                                .with_name(StrBytes::from_string(name))
                                .with_value(value.map(StrBytes::from_string))
                                .with_config_source(source)
                                .with_documentation(None)
                        })
                        .collect();
                }
                Err(error) => {
                    result.error_code = error.code().code();
                    result.error_message = message(&error);
                }
            }
            result
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// DescribeConfigs answered with `error` for every resource (fault injection).
pub(crate) fn describe_configs_error(
    req: &DescribeConfigsRequest,
    error: ResponseError,
) -> DescribeConfigsResponse {
    let results = req
        .resources
        .iter()
        .map(|r| {
            DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_code(error.code())
                .with_error_message(None)
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// CreateTopics answered with `error` for every topic (fault injection).
pub(crate) fn create_topics_error(
    req: &CreateTopicsRequest,
    error: ResponseError,
    version: i16,
) -> CreateTopicsResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let mut r = CreatableTopicResult::default()
                .with_name(t.name.clone())
                .with_error_code(error.code())
                .with_error_message(None);
            if version >= 5 {
                r.configs = None;
            }
            r
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

/// ListOffsets: the earliest (-2, and -4 from v8) and latest (-1) offsets of partition 0.
/// Lookups by timestamp (-3 and timestamps >= 0) are not served: INVALID_REQUEST.
pub(crate) fn list_offsets(
    topics: &Topics,
    req: &ListOffsetsRequest,
    version: i16,
) -> ListOffsetsResponse {
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let partitions =
                t.partitions
                    .iter()
                    .map(|p| {
                        let mut r = ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index);
                        let found =
                            topics.offsets(TopicRef::Name(t.name.0.as_str()), p.partition_index);
                        let offset = found.map_err(|e| e.code()).and_then(|(start, end)| {
                            match p.timestamp {
                                LATEST_TIMESTAMP => Ok(end),
                                EARLIEST_TIMESTAMP => Ok(start),
                                EARLIEST_LOCAL_TIMESTAMP if version >= 8 => Ok(start),
                                _ => Err(ResponseError::InvalidRequest),
                            }
                        });
                        match offset {
                            Ok(offset) => {
                                r.offset = offset;
                                if version >= 4 {
                                    r.leader_epoch = 0;
                                }
                            }
                            Err(error) => r.error_code = error.code(),
                        }
                        r
                    })
                    .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(responses)
}

/// ListOffsets answered with `error` for every partition (fault injection).
pub(crate) fn list_offsets_error(
    req: &ListOffsetsRequest,
    error: ResponseError,
) -> ListOffsetsResponse {
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error.code())
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(responses)
}
