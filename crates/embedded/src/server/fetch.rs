//! Fetch: whole stored batches from an offset, waiting up to `max_wait_ms` for `min_bytes`
//! (a long poll woken as soon as a Produce lands).
//!
//! Kafka's size rules: the response stays within `max_bytes` and each partition within its
//! `partition_max_bytes`, except that the first batch of the first partition with data always
//! comes back whole, so a batch bigger than the limits can still be read. The high watermark is
//! the end offset (every append is committed at once on a single node), the last stable offset
//! too (no transactions). An offset outside `[log start, end]` is OFFSET_OUT_OF_RANGE, and a
//! partition with an error answers at once, as Kafka does.
//!
//! Fetch sessions (KIP-227) are not kept: every response carries session id 0, which tells the
//! client to send full requests; a request naming a session is FETCH_SESSION_ID_NOT_FOUND.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use crate::log::{TopicRef, Topics};

/// The first Fetch version that names topics by id.
const TOPIC_IDS_FROM: i16 = 13;

/// The most record bytes one response carries, whatever the client asks (clients ask for up to
/// 50 MiB). Responses go out through the connection's frame cap (2 MiB by default, kept at
/// least 1 MiB above the largest batch), so a larger answer would close the connection; the
/// client simply fetches again from where this one ended.
pub(crate) const MAX_RESPONSE_RECORD_BYTES: usize = 1 << 20;

/// Answers `req`, waiting (at most `max_wait_ms`) until `min_bytes` are there or a partition
/// has an error. Cancel safe: dropping the future drops nothing but the wait.
pub(crate) async fn fetch(topics: &Topics, req: &FetchRequest, version: i16) -> FetchResponse {
    if version >= 7 && req.session_id != 0 {
        return FetchResponse::default()
            .with_error_code(ResponseError::FetchSessionIdNotFound.code());
    }
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0));
    let deadline = tokio::time::Instant::now() + wait;
    let mut appends = topics.appends();
    loop {
        // Marks the current append count as seen before reading, so an append that lands
        // between this read and the wait below still wakes the wait.
        appends.borrow_and_update();
        let (response, bytes, errors) = read(topics, req, version);
        let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
        if errors || bytes >= min_bytes || tokio::time::Instant::now() >= deadline {
            return response;
        }
        tokio::select! {
            changed = appends.changed() => {
                if changed.is_err() {
                    return response;
                }
            }
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// One pass over the partitions asked for: the response, the record bytes in it, and whether
/// any partition has an error.
fn read(topics: &Topics, req: &FetchRequest, version: i16) -> (FetchResponse, usize, bool) {
    let mut remaining = usize::try_from(req.max_bytes)
        .unwrap_or(0)
        .min(MAX_RESPONSE_RECORD_BYTES);
    let mut total = 0usize;
    let mut errors = false;
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let topic = if version >= TOPIC_IDS_FROM {
                TopicRef::Id(t.topic_id)
            } else {
                TopicRef::Name(t.topic.0.as_str())
            };
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut data = PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_aborted_transactions(None);
                    let limit = usize::try_from(p.partition_max_bytes)
                        .unwrap_or(0)
                        .min(remaining);
                    match topics.read(topic, p.partition, p.fetch_offset, limit) {
                        Ok(slice) => {
                            data.high_watermark = slice.end;
                            data.last_stable_offset = slice.end;
                            if version >= 5 {
                                data.log_start_offset = slice.log_start;
                            }
                            // Only the first partition with data may go over the limits.
                            if total == 0 || slice.bytes <= limit {
                                total += slice.bytes;
                                remaining = remaining.saturating_sub(slice.bytes);
                                data.records = Some(concat(slice.batches, slice.bytes));
                            }
                        }
                        Err(error) => {
                            tracing::debug!(partition = p.partition, %error, "Fetch refused");
                            errors = true;
                            data.error_code = error.code().code();
                        }
                    }
                    data
                })
                .collect();
            let mut response = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= TOPIC_IDS_FROM {
                response.topic_id = t.topic_id;
            } else {
                response.topic = t.topic.clone();
            }
            response
        })
        .collect();
    (
        FetchResponse::default().with_responses(responses),
        total,
        errors,
    )
}

fn concat(batches: Vec<Bytes>, size: usize) -> Bytes {
    if batches.len() == 1 {
        return batches.into_iter().next().unwrap_or_default();
    }
    let mut out = BytesMut::with_capacity(size);
    for batch in batches {
        out.extend_from_slice(&batch);
    }
    out.freeze()
}

/// Fetch answered with `error` for every partition (fault injection).
pub(crate) fn fetch_error(req: &FetchRequest, error: ResponseError, version: i16) -> FetchResponse {
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_error_code(error.code())
                        .with_aborted_transactions(None)
                })
                .collect();
            let mut response = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= TOPIC_IDS_FROM {
                response.topic_id = t.topic_id;
            } else {
                response.topic = t.topic.clone();
            }
            response
        })
        .collect();
    FetchResponse::default().with_responses(responses)
}
