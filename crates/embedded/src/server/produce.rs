//! Produce: each partition's one record batch appended as sent, its base offset rewritten to
//! the partition's end offset.
//!
//! Every append is committed as soon as it is stored (one node, no replicas), so acks=1 and
//! acks=-1 answer the same. acks=0 gets no response at all, as Kafka sends none; when one of
//! its partitions fails, the connection is closed instead, as Kafka does, so the producer
//! notices.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use crate::log::{LogError, TopicRef, Topics};

/// The first Produce version that names topics by id.
const TOPIC_IDS_FROM: i16 = 13;

/// Appends every partition's batch and answers for each (the caller sends nothing back for
/// acks=0; see [`first_error`]). Refusals are per partition: unknown topic or partition,
/// CORRUPT_MESSAGE (bad CRC, magic other than 2, lengths that do not add up), INVALID_RECORD
/// (not exactly one batch, transactional batches), MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR; acks
/// other than 0, 1 and -1 is INVALID_REQUIRED_ACKS for every partition, nothing appended.
pub(crate) fn produce(topics: &Topics, req: &ProduceRequest, version: i16) -> ProduceResponse {
    if !(-1..=1).contains(&req.acks) {
        return produce_error(req, ResponseError::InvalidRequiredAcks, version);
    }
    let responses = req
        .topic_data
        .iter()
        .map(|t| {
            let topic = if version >= TOPIC_IDS_FROM {
                TopicRef::Id(t.topic_id)
            } else {
                TopicRef::Name(t.name.0.as_str())
            };
            let partitions = t
                .partition_data
                .iter()
                .map(|p| {
                    let outcome = topics.append(topic, p.index, p.records.clone());
                    let mut r = PartitionProduceResponse::default().with_index(p.index);
                    match outcome {
                        Ok(appended) => {
                            r.base_offset = appended.base_offset;
                            if version >= 5 {
                                r.log_start_offset = appended.log_start;
                            }
                        }
                        Err(error) => refuse(&mut r, &error, version),
                    }
                    r
                })
                .collect();
            topic_response(t.name.clone(), t.topic_id, partitions, version)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// The first partition refused in `response`, as `topic-partition: error`; what closes an
/// acks=0 connection.
pub(crate) fn first_error(response: &ProduceResponse) -> Option<String> {
    response.responses.iter().find_map(|t| {
        t.partition_responses
            .iter()
            .find(|p| p.error_code != 0)
            .map(|p| {
                let error = ResponseError::try_from_code(p.error_code)
                    .map_or_else(|| p.error_code.to_string(), |e| format!("{e:?}"));
                format!("{}-{}: {error}", t.name.0.as_str(), p.index)
            })
    })
}

fn refuse(r: &mut PartitionProduceResponse, error: &LogError, version: i16) {
    tracing::debug!(partition = r.index, %error, "Produce refused");
    r.error_code = error.code().code();
    r.base_offset = -1;
    if version >= 8 {
        r.error_message = Some(StrBytes::from_string(error.to_string()));
    }
}

fn topic_response(
    name: kafka_protocol::messages::TopicName,
    id: uuid::Uuid,
    partitions: Vec<PartitionProduceResponse>,
    version: i16,
) -> TopicProduceResponse {
    let mut t = TopicProduceResponse::default().with_partition_responses(partitions);
    if version >= TOPIC_IDS_FROM {
        t.topic_id = id;
    } else {
        t.name = name;
    }
    t
}

/// Produce answered with `error` for every partition, nothing appended (fault injection and
/// invalid acks).
pub(crate) fn produce_error(
    req: &ProduceRequest,
    error: ResponseError,
    version: i16,
) -> ProduceResponse {
    let responses = req
        .topic_data
        .iter()
        .map(|t| {
            let partitions = t
                .partition_data
                .iter()
                .map(|p| {
                    PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_error_code(error.code())
                        .with_base_offset(-1)
                })
                .collect();
            topic_response(t.name.clone(), t.topic_id, partitions, version)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}
