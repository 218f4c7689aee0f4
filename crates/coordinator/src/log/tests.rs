//! Tests of the log client: batches (framing, the decoder guard) and `TopicLog` against a fake
//! broker that keeps one partition in memory.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::batch::{self, Decoded};
use super::*;
use crate::connection::tests::fake_broker::{FakeBroker, Reply, answer, kafka_4_1};
use crate::connection::{Cluster, ClusterConfig};
use crate::wire::RequestBody;

const TOPIC: &str = "kroupier-tasks-g";

fn records(n: usize) -> Vec<LogRecord> {
    (0..n)
        .map(|i| match i % 3 {
            2 => LogRecord::tombstone(format!("k{i}")),
            _ => LogRecord::new(format!("k{i}"), format!("v{i}")),
        })
        .collect()
}

/// A batch of `records` at `base` (offsets rewritten as a broker does).
fn batch_at(base: i64, records: &[LogRecord]) -> Bytes {
    let encoded = batch::encode(records, 1_000, batch::Writer::Plain).unwrap();
    let mut bytes = BytesMut::from(&encoded[..]);
    bytes[..8].copy_from_slice(&base.to_be_bytes());
    bytes.freeze()
}

// ---- batches ----

#[test]
fn a_batch_round_trips_with_tombstones_and_offsets() {
    let written = records(5);
    let decoded = batch::decode(TOPIC, batch_at(10, &written), 10, &[]).unwrap();
    assert_eq!(decoded.next_offset, Some(15));
    let read: Vec<_> = decoded
        .records
        .iter()
        .map(|r| {
            (
                r.offset,
                LogRecord {
                    key: r.key.clone(),
                    value: r.value.clone(),
                },
            )
        })
        .collect();
    let want: Vec<_> = (10..).zip(written).collect();
    assert_eq!(read, want);
    // One batch, no producer id, no sequence: a plain producer's batch.
    let info = RecordBatchDecoder::decode_batch_info(&mut batch_at(0, &records(5))).unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!((info[0].record_count, info[0].producer_id), (5, -1));
    assert_eq!(
        (info[0].base_sequence, info[0].compression),
        (-1, Compression::None)
    );
}

#[test]
fn records_before_from_are_dropped_and_a_cut_batch_waits() {
    let mut two = BytesMut::from(&batch_at(0, &records(4))[..]);
    let second = batch_at(4, &records(4));
    two.extend_from_slice(&second[..second.len() - 3]);
    let decoded = batch::decode(TOPIC, two.freeze(), 2, &[]).unwrap();
    assert_eq!(
        decoded.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        [2, 3]
    );
    // The cut-off second batch is for the next read.
    assert_eq!(decoded.next_offset, Some(4));
    // Nothing complete at all: no next offset.
    assert_eq!(
        batch::decode(TOPIC, second.slice(..20), 4, &[]).unwrap(),
        Decoded::default()
    );
}

#[test]
fn a_control_batch_is_skipped_but_counted() {
    let marker = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: 7,
        producer_epoch: 0,
        timestamp_type: TimestampType::Creation,
        offset: 3,
        sequence: -1,
        timestamp: 0,
        key: Some(Bytes::from_static(&[0, 0, 0, 0])),
        value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
        headers: Default::default(),
    };
    let mut bytes = BytesMut::from(&batch_at(0, &records(3))[..]);
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut bytes, [&marker], &options).unwrap();
    let decoded = batch::decode(TOPIC, bytes.freeze(), 0, &[]).unwrap();
    assert_eq!(decoded.records.len(), 3);
    assert_eq!(decoded.next_offset, Some(4));
}

/// A batch of `n` records of transactional producer `producer_id` at `base`.
fn transactional_at(base: i64, n: usize, producer_id: i64) -> Bytes {
    let writer = batch::Writer::Transactional {
        producer_id,
        epoch: 0,
        sequence: 0,
    };
    let encoded = batch::encode(&records(n), 1_000, writer).unwrap();
    let mut bytes = BytesMut::from(&encoded[..]);
    bytes[..8].copy_from_slice(&base.to_be_bytes());
    bytes.freeze()
}

/// A transaction marker of `producer_id` at `offset`.
fn marker_at(offset: i64, producer_id: i64) -> Bytes {
    let marker = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch: 0,
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: -1,
        timestamp: 0,
        key: Some(Bytes::from_static(&[0, 0, 0, 0])),
        value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
        headers: Default::default(),
    };
    let mut bytes = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut bytes, [&marker], &options).unwrap();
    bytes.freeze()
}

#[test]
fn an_aborted_transaction_is_left_out_up_to_its_marker() {
    // Producer 7 aborts a transaction at 0-1 (marker at 3), producer 8 commits one at 2
    // (marker at 4), then producer 7 commits one at 5-6 (marker at 7).
    let mut bytes = BytesMut::new();
    for part in [
        transactional_at(0, 2, 7),
        transactional_at(2, 1, 8),
        marker_at(3, 7),
        marker_at(4, 8),
        transactional_at(5, 2, 7),
        marker_at(7, 7),
    ] {
        bytes.extend_from_slice(&part);
    }
    let aborted = [batch::Aborted {
        producer_id: 7,
        first_offset: 0,
    }];
    let decoded = batch::decode(TOPIC, bytes.clone().freeze(), 0, &aborted).unwrap();
    let offsets: Vec<i64> = decoded.records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [2, 5, 6]);
    assert_eq!(decoded.next_offset, Some(8));
    // Read uncommitted (no aborted list), every data record is read.
    let all = batch::decode(TOPIC, bytes.freeze(), 0, &[]).unwrap();
    assert_eq!(all.records.len(), 5);
}

/// CRC-32C (Castagnoli), as a v2 batch header carries over its attributes and what follows.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `batch` with `patch` applied at `at`, its CRC made right again.
fn patched(batch: &Bytes, at: usize, patch: &[u8]) -> Bytes {
    let mut bytes = BytesMut::from(&batch[..]);
    bytes[at..at + patch.len()].copy_from_slice(patch);
    let crc = crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes.freeze()
}

#[test]
fn hostile_counts_are_corrupt_not_an_abort() {
    let good = batch_at(0, &[LogRecord::new("k", "v")]);
    assert!(batch::decode(TOPIC, patched(&good, 57, &[0; 4]), 0, &[]).is_ok());
    // The batch claims i32::MAX records (kafka-protocol would reserve room for them).
    let err =
        batch::decode(TOPIC, patched(&good, 57, &i32::MAX.to_be_bytes()), 0, &[]).unwrap_err();
    assert!(
        matches!(err.cause(), Cause::Corrupt(m) if m.contains("records claimed")),
        "{err}"
    );
    // A negative count.
    let err = batch::decode(TOPIC, patched(&good, 57, &(-1i32).to_be_bytes()), 0, &[]).unwrap_err();
    assert!(matches!(err.cause(), Cause::Corrupt(_)), "{err}");
    // The record's header count (its last byte, a zigzag varint) claims 2^31 - 1 headers.
    let mut bytes = BytesMut::from(&good[..]);
    bytes.truncate(good.len() - 1);
    bytes.extend_from_slice(&[0xFE, 0xFF, 0xFF, 0xFF, 0x0F]);
    let len = (bytes.len() - 12) as i32;
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    bytes[61] += 8; // the record's length (zigzag): 4 bytes more
    let hostile = patched(&bytes.freeze(), 0, &[0]);
    let err = batch::decode(TOPIC, hostile, 0, &[]).unwrap_err();
    assert!(
        matches!(err.cause(), Cause::Corrupt(m) if m.contains("headers")),
        "{err}"
    );
    // A broken CRC, an old message format, a negative batch length.
    let mut bad = BytesMut::from(&good[..]);
    bad[30] ^= 1;
    assert!(matches!(
        batch::decode(TOPIC, bad.freeze(), 0, &[])
            .as_ref()
            .map_err(LogError::cause),
        Err(Cause::Corrupt(_))
    ));
    let err = batch::decode(TOPIC, patched(&good, 16, &[1]), 0, &[]).unwrap_err();
    assert!(err.to_string().contains("message format v1"), "{err}");
    let mut negative = BytesMut::from(&good[..]);
    negative[8..12].copy_from_slice(&(-5i32).to_be_bytes());
    assert!(matches!(
        batch::decode(TOPIC, negative.freeze(), 0, &[])
            .as_ref()
            .map_err(LogError::cause),
        Err(Cause::Corrupt(_))
    ));
}

// ---- TopicLog against a fake broker ----

/// One partition in memory, and what the fake broker should do.
#[derive(Default)]
struct FakeLog {
    addr: String,
    exists: bool,
    /// Metadata answers UNKNOWN_TOPIC_OR_PARTITION this many more times after creation.
    unknown_after_create: u32,
    start: i64,
    records: Vec<LogRecord>,
    /// Error codes the next Produce, Fetch, CreateTopics answers carry (one each).
    produce_errors: VecDeque<i16>,
    fetch_errors: VecDeque<i16>,
    create_errors: VecDeque<i16>,
    /// The topic's configs DescribeConfigs reports, or its error code.
    configs: Vec<(&'static str, &'static str)>,
    describe_error: i16,
    created: Vec<CreateTopicsRequest>,
    produced: Vec<ProduceRequest>,
}

impl FakeLog {
    fn end(&self) -> i64 {
        self.start + self.records.len() as i64
    }
}

type Shared = Arc<Mutex<FakeLog>>;

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

fn handle(log: &Shared, header: &RequestHeader, body: &RequestBody) -> Reply {
    let mut log = log.lock().unwrap();
    match body {
        RequestBody::Metadata(_) => {
            let port = log.addr.rsplit(':').next().unwrap().parse().unwrap();
            let mut topic = MetadataResponseTopic::default().with_name(Some(name()));
            if !log.exists || log.unknown_after_create > 0 {
                log.unknown_after_create = log.unknown_after_create.saturating_sub(1);
                topic.error_code = 3;
            } else {
                topic.partitions = vec![
                    MetadataResponsePartition::default()
                        .with_partition_index(0)
                        .with_leader_id(BrokerId(1)),
                ];
            }
            let response = MetadataResponse::default()
                .with_brokers(vec![
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(1))
                        .with_host(StrBytes::from_static_str("127.0.0.1"))
                        .with_port(port),
                ])
                .with_controller_id(BrokerId(1))
                .with_topics(vec![topic]);
            answer(header, &response)
        }
        RequestBody::CreateTopics(request) => {
            log.created.push(request.clone());
            let code = log.create_errors.pop_front().unwrap_or(0);
            if code == 0 || code == 36 {
                log.exists = true;
            }
            let result = CreatableTopicResult::default()
                .with_name(name())
                .with_error_code(code);
            answer(
                header,
                &CreateTopicsResponse::default().with_topics(vec![result]),
            )
        }
        RequestBody::Produce(request) => {
            log.produced.push(request.clone());
            let mut partition = PartitionProduceResponse::default().with_index(0);
            partition.error_code = log.produce_errors.pop_front().unwrap_or(0);
            if partition.error_code == 0 {
                partition.base_offset = log.end();
                let mut records = request.topic_data[0].partition_data[0]
                    .records
                    .clone()
                    .unwrap();
                let set = RecordBatchDecoder::decode(&mut records).unwrap();
                log.records
                    .extend(set.records.into_iter().map(|r| LogRecord {
                        key: r.key.unwrap(),
                        value: r.value,
                    }));
            }
            let topic = TopicProduceResponse::default()
                .with_name(name())
                .with_partition_responses(vec![partition]);
            answer(
                header,
                &ProduceResponse::default().with_responses(vec![topic]),
            )
        }
        RequestBody::Fetch(request) => {
            let from = request.topics[0].partitions[0].fetch_offset;
            let mut partition = PartitionData::default()
                .with_partition_index(0)
                .with_high_watermark(log.end());
            partition.error_code = log.fetch_errors.pop_front().unwrap_or(0);
            if partition.error_code == 0 && (from < log.start || from > log.end()) {
                partition.error_code = 1;
            }
            if partition.error_code == 0 && from < log.end() {
                // Two batches: one starting before `from` when it can, as Kafka sends whole
                // batches.
                let at = (from - 1).max(log.start);
                let split = (at - log.start) as usize;
                let mid = split + (log.records.len() - split) / 2;
                let mut bytes =
                    BytesMut::from(&batch_at(at, &log.records[split..mid.max(split + 1)])[..]);
                if mid + 1 < log.records.len() && mid > split {
                    let second = batch_at(log.start + mid as i64, &log.records[mid..]);
                    bytes.extend_from_slice(&second);
                }
                partition.records = Some(bytes.freeze());
            }
            let topic = FetchableTopicResponse::default()
                .with_topic(name())
                .with_partitions(vec![partition]);
            answer(
                header,
                &FetchResponse::default().with_responses(vec![topic]),
            )
        }
        RequestBody::ListOffsets(request) => {
            let timestamp = request.topics[0].partitions[0].timestamp;
            let offset = if timestamp == -2 {
                log.start
            } else {
                log.end()
            };
            let partition = ListOffsetsPartitionResponse::default()
                .with_partition_index(0)
                .with_offset(offset);
            let topic = ListOffsetsTopicResponse::default()
                .with_name(name())
                .with_partitions(vec![partition]);
            answer(
                header,
                &ListOffsetsResponse::default().with_topics(vec![topic]),
            )
        }
        RequestBody::DescribeConfigs(request) => {
            let keys = request.resources[0].configuration_keys.clone().unwrap();
            let configs = log
                .configs
                .iter()
                .filter(|(k, _)| keys.iter().any(|key| key.as_str() == *k))
                .map(|(k, v)| {
                    DescribeConfigsResourceResult::default()
                        .with_name(StrBytes::from_static_str(k))
                        .with_value(Some(StrBytes::from_static_str(v)))
                })
                .collect();
            let result = DescribeConfigsResult::default()
                .with_error_code(log.describe_error)
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str(TOPIC))
                .with_configs(configs);
            answer(
                header,
                &DescribeConfigsResponse::default().with_results(vec![result]),
            )
        }
        _ => Reply::Close,
    }
}

async fn fake(log: FakeLog) -> (FakeBroker, Shared, Arc<Cluster>) {
    let shared: Shared = Arc::new(Mutex::new(log));
    let handler_log = shared.clone();
    let broker = FakeBroker::start(kafka_4_1(move |h, b| handle(&handler_log, h, b))).await;
    shared.lock().unwrap().addr = broker.addr.clone();
    let cluster = Cluster::new(ClusterConfig {
        retry_backoff: Duration::from_millis(5),
        retry_backoff_max: Duration::from_millis(20),
        coordinator_lookup_timeout: Duration::from_secs(2),
        ..ClusterConfig::new(&broker.addr)
    })
    .unwrap();
    (broker, shared, Arc::new(cluster))
}

fn existing() -> FakeLog {
    FakeLog {
        exists: true,
        ..FakeLog::default()
    }
}

#[tokio::test]
async fn a_missing_topic_is_created_compacted_then_written_and_read() {
    let (broker, shared, cluster) = fake(FakeLog {
        unknown_after_create: 2,
        ..FakeLog::default()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), true)
        .await
        .unwrap();
    {
        let fake = shared.lock().unwrap();
        let [request] = fake.created.as_slice() else {
            panic!("one CreateTopics: {:?}", fake.created)
        };
        let topic = &request.topics[0];
        assert_eq!((topic.name.0.as_str(), topic.num_partitions), (TOPIC, 1));
        assert_eq!(topic.replication_factor, -1);
        let configs: Vec<_> = topic
            .configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
            .collect();
        assert_eq!(
            configs,
            [("cleanup.policy".to_owned(), Some("compact".to_owned()))]
        );
    }
    let written = records(7);
    assert_eq!(log.append(written.clone()).await.unwrap(), 0);
    assert_eq!(log.append(records(2)).await.unwrap(), 7);
    assert_eq!(log.end_offset().await.unwrap(), 9);
    {
        let fake = shared.lock().unwrap();
        assert_eq!(fake.produced[0].acks, -1);
        assert_eq!(fake.produced[0].transactional_id, None);
    }
    // Read everything, from the middle of the first batch on.
    let mut read = Vec::new();
    let mut next = 3;
    while next < 9 {
        let batch = log.read(next, Duration::from_millis(10)).await.unwrap();
        assert_eq!(batch.end_offset, 9);
        assert!(batch.next_offset > next, "each read moves on");
        read.extend(batch.records);
        next = batch.next_offset;
    }
    let offsets: Vec<_> = read.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, (3..9).collect::<Vec<_>>());
    assert_eq!(
        (&read[0].key, &read[0].value),
        (&written[3].key, &written[3].value)
    );
    assert_eq!(read[2].value, None, "offset 5 is a tombstone");
    // Produce and Fetch name the topic: at most v12 though the broker offers v13+.
    let versions = broker.received();
    let highest = |api| {
        versions
            .iter()
            .filter(|(k, _)| *k == api)
            .map(|&(_, v)| v)
            .max()
    };
    assert_eq!(highest(ApiKey::Produce), Some(12));
    assert_eq!(highest(ApiKey::Fetch), Some(12));
    assert_eq!(highest(ApiKey::CreateTopics), Some(7));
}

#[tokio::test]
async fn open_without_create_reports_a_missing_topic() {
    let (_broker, shared, cluster) = fake(FakeLog::default()).await;
    let err = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap_err();
    assert!(
        matches!(err.cause(), Cause::Missing { topic } if topic == TOPIC),
        "{err}"
    );
    assert!(shared.lock().unwrap().created.is_empty());
}

#[tokio::test]
async fn a_racing_creator_and_a_moving_leader_are_retried() {
    let (broker, shared, cluster) = fake(FakeLog {
        create_errors: VecDeque::from([36]),
        produce_errors: VecDeque::from([6, 5]),
        fetch_errors: VecDeque::from([6]),
        ..FakeLog::default()
    })
    .await;
    let log = TopicLog::open(
        cluster,
        TopicSpec::new(TOPIC).with_replication_factor(3),
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        shared.lock().unwrap().created[0].topics[0].replication_factor,
        3
    );
    let lookups = |b: &FakeBroker| {
        b.received()
            .iter()
            .filter(|(k, _)| *k == ApiKey::Metadata)
            .count()
    };
    let before = lookups(&broker);
    assert_eq!(log.append(records(1)).await.unwrap(), 0);
    assert_eq!(shared.lock().unwrap().produced.len(), 3, "two retries");
    assert!(
        lookups(&broker) >= before + 2,
        "the leader is looked up again"
    );
    let batch = log.read(0, Duration::ZERO).await.unwrap();
    assert_eq!(batch.records.len(), 1);
}

#[tokio::test]
async fn a_removed_offset_restarts_from_the_log_start() {
    let (_broker, _shared, cluster) = fake(FakeLog {
        start: 5,
        records: records(4),
        ..existing()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    let batch = log.read(2, Duration::ZERO).await.unwrap();
    assert_eq!(batch.records.first().map(|r| r.offset), Some(5));
    assert!(batch.next_offset > 5);
    assert_eq!(batch.end_offset, 9);
    // Past the end (a recreated topic) too.
    let batch = log.read(50, Duration::ZERO).await.unwrap();
    assert_eq!(batch.records.first().map(|r| r.offset), Some(5));
}

#[tokio::test]
async fn authorization_failures_name_the_operation_and_the_acl() {
    let (_broker, _shared, cluster) = fake(FakeLog {
        create_errors: VecDeque::from([29]),
        ..FakeLog::default()
    })
    .await;
    let err = TopicLog::open(cluster, TopicSpec::new(TOPIC), true)
        .await
        .unwrap_err();
    let Cause::NotAuthorized {
        topic,
        operation,
        hint,
    } = err.cause()
    else {
        panic!("{err}")
    };
    assert_eq!((topic.as_str(), *operation), (TOPIC, "create"));
    assert!(
        hint.contains("CREATE") && hint.contains("kafka-topics.sh"),
        "{hint}"
    );

    let (_broker, _shared, cluster) = fake(FakeLog {
        produce_errors: VecDeque::from([29]),
        fetch_errors: VecDeque::from([29]),
        ..existing()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    let denied = |err: &LogError, op: &str, acl: &str| match err.cause() {
        Cause::NotAuthorized {
            operation, hint, ..
        } => *operation == op && hint.contains(acl),
        _ => false,
    };
    let err = log.append(records(1)).await.unwrap_err();
    assert!(denied(&err, "write", "WRITE"), "{err}");
    assert!(err.to_string().contains(TOPIC), "{err}");
    let err = log.read(0, Duration::ZERO).await.unwrap_err();
    assert!(denied(&err, "read", "READ"), "{err}");
}

#[tokio::test]
async fn a_batch_over_the_limit_is_record_too_large() {
    let (_broker, _shared, cluster) = fake(FakeLog {
        produce_errors: VecDeque::from([10, 18]),
        ..existing()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    for _ in 0..2 {
        let err = log.append(records(3)).await.unwrap_err();
        assert!(
            matches!(err.cause(), Cause::RecordTooLarge { bytes, max: 0 } if *bytes > 60),
            "{err}"
        );
        assert!(err.to_string().contains("max.message.bytes"), "{err}");
    }
}

#[tokio::test]
async fn retries_end_at_the_deadline_with_the_last_error() {
    let (_broker, shared, cluster) = fake(FakeLog {
        produce_errors: VecDeque::from(vec![5; 10_000]),
        ..existing()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = log.append(records(1)).await.unwrap_err();
    assert!(
        matches!(
            err.cause(),
            Cause::Kafka {
                api: ApiKey::Produce,
                code: 5,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains(TOPIC), "{err}");
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(4),
        "bounded by the 2 s retry time: {elapsed:?}"
    );
    assert!(shared.lock().unwrap().produced.len() > 5);
}

#[tokio::test]
async fn invalid_topic_names_are_refused_before_any_request() {
    let (broker, _shared, cluster) = fake(FakeLog::default()).await;
    for name in ["", ".", "..", "a/b", "tâche", &"x".repeat(250)] {
        let err = TopicLog::open(cluster.clone(), TopicSpec::new(name), true)
            .await
            .unwrap_err();
        assert!(
            matches!(err.cause(), Cause::Kafka { code: 17, .. }),
            "{name}: {err}"
        );
    }
    assert!(broker.received().is_empty());
}

#[tokio::test]
async fn a_known_size_limit_refuses_a_batch_before_sending_it() {
    let (_broker, shared, cluster) = fake(FakeLog {
        configs: vec![("cleanup.policy", "compact"), ("max.message.bytes", "100")],
        ..existing()
    })
    .await;
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    assert_eq!(
        log.config("cleanup.policy").await.unwrap().as_deref(),
        Some("compact")
    );
    assert_eq!(log.config("retention.ms").await.unwrap(), None);
    let err = log.append(records(10)).await.unwrap_err();
    assert!(
        matches!(err.cause(), Cause::RecordTooLarge { bytes, max: 100 } if *bytes > 100),
        "{err}"
    );
    assert!(err.to_string().contains("of 100 bytes"), "{err}");
    assert!(
        shared.lock().unwrap().produced.is_empty(),
        "refused before sending"
    );
    assert_eq!(
        log.append(records(1)).await.unwrap(),
        0,
        "a small batch fits"
    );
}

#[tokio::test]
async fn configs_without_the_acl_name_describe_configs() {
    let (_broker, _shared, cluster) = fake(FakeLog {
        describe_error: 29,
        ..existing()
    })
    .await;
    // Opening does without the configs.
    let log = TopicLog::open(cluster, TopicSpec::new(TOPIC), false)
        .await
        .unwrap();
    let err = log.config("cleanup.policy").await.unwrap_err();
    assert!(
        matches!(err.cause(), Cause::NotAuthorized { hint, .. } if hint.contains("DESCRIBE_CONFIGS")),
        "{err}"
    );
}
