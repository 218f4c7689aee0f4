//! The topics the task store and checkpoints live in, over TCP with kafka-protocol messages:
//! create, produce, fetch back, a long poll woken by a produce, and a data directory that keeps
//! the records across a restart and drops only a torn tail.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, FetchRequest, ListOffsetsRequest,
    MetadataRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kroupier_coordinator::wire::{self, WireRequest};
use kroupier_embedded::{CoordinatorHandle, EmbeddedCoordinator};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const TOPIC: &str = "kroupier-tasks-it";
const PATIENCE: Duration = Duration::from_secs(30);
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

struct Client {
    framed: Framed<TcpStream, LengthDelimitedCodec>,
    next: i32,
}

impl Client {
    async fn connect(handle: &CoordinatorHandle) -> Self {
        let stream = TcpStream::connect(handle.local_addr())
            .await
            .expect("connect");
        Self {
            framed: Framed::new(stream, wire::frame_codec(wire::DEFAULT_MAX_RESPONSE_FRAME)),
            next: 1,
        }
    }

    async fn send<R: WireRequest>(&mut self, request: &R, version: i16) -> i32 {
        let correlation_id = self.next;
        self.next += 1;
        let frame = wire::encode_request(request, version, correlation_id, Some("topics-it"))
            .expect("encode");
        self.framed.send(frame).await.expect("send");
        correlation_id
    }

    async fn receive<R: WireRequest>(&mut self, correlation_id: i32, version: i16) -> R::Response {
        let frame = tokio::time::timeout(PATIENCE, self.framed.next())
            .await
            .expect("a response in time")
            .expect("connection open")
            .expect("readable frame");
        let (header, response) =
            wire::decode_response::<R::Response>(frame.freeze(), version).expect("decode");
        assert_eq!(header.correlation_id, correlation_id);
        response
    }

    async fn call<R: WireRequest>(&mut self, request: &R, version: i16) -> R::Response {
        let correlation_id = self.send(request, version).await;
        self.receive::<R>(correlation_id, version).await
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One v2 batch of (key, value) records, as a producer encodes it.
fn batch(records: &[(&str, Option<&str>)]) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .zip(0..)
        .map(|((key, value), i)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(i),
            sequence: i,
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from(key.to_string())),
            value: value.map(|v| Bytes::from(v.to_string())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode batch");
    buf.freeze()
}

fn produce(acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(s(TOPIC)))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ])
}

fn fetch(offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(s(TOPIC)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ])
}

/// Produces one batch with acks=-1 (Produce v9) and returns its base offset.
async fn append(client: &mut Client, records: &[(&str, Option<&str>)]) -> i64 {
    let r = client.call(&produce(-1, batch(records)), 9).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
    p.base_offset
}

/// Every record from `offset` to the end (Fetch v12), as (offset, key, value).
async fn read_all(client: &mut Client, offset: i64) -> Vec<(i64, String, Option<String>)> {
    let r = client.call(&fetch(offset, 0), 12).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    decode(p.records.clone().unwrap_or_default())
}

fn decode(mut records: Bytes) -> Vec<(i64, String, Option<String>)> {
    let text = |b: Option<Bytes>| b.map(|b| String::from_utf8_lossy(&b).into_owned());
    RecordBatchDecoder::decode_all(&mut records)
        .expect("decode records")
        .into_iter()
        .flat_map(|set| set.records)
        .map(|r| (r.offset, text(r.key).unwrap_or_default(), text(r.value)))
        .collect()
}

async fn latest(client: &mut Client) -> i64 {
    let req = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(s(TOPIC)))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ]),
        ]);
    let r = client.call(&req, 8).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    r.topics[0].partitions[0].offset
}

async fn start(dir: &Path) -> CoordinatorHandle {
    EmbeddedCoordinator::builder()
        .data_dir(dir)
        .bind("127.0.0.1:0")
        .await
        .expect("bind")
}

fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    std::env::temp_dir().join(format!("kroupier-topics-it-{}-{nanos}", std::process::id()))
}

fn rec(offset: i64, key: &str, value: Option<&str>) -> (i64, String, Option<String>) {
    (offset, key.to_string(), value.map(str::to_string))
}

#[tokio::test]
async fn create_produce_fetch_long_poll_and_a_restart_that_drops_only_a_torn_tail() {
    let dir = temp_dir();
    let coordinator = start(&dir).await;
    let mut client = Client::connect(&coordinator).await;

    // The topic APIs are advertised.
    let versions = ApiVersionsRequest::default()
        .with_client_software_name(s("topics-it"))
        .with_client_software_version(s("1"));
    let advertised = client.call(&versions, 3).await;
    for api in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::ListOffsets,
        ApiKey::CreateTopics,
    ] {
        assert!(
            advertised.api_keys.iter().any(|k| k.api_key == api as i16),
            "{api:?} advertised"
        );
    }

    // Create it, compacted, and find it in Metadata led by this node.
    let create = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(s(TOPIC)))
            .with_num_partitions(1)
            .with_replication_factor(-1)
            .with_configs(vec![
                CreatableTopicConfig::default()
                    .with_name(s("cleanup.policy"))
                    .with_value(Some(s("compact"))),
            ]),
    ]);
    let created = client.call(&create, 7).await;
    assert_eq!(created.topics[0].error_code, 0);
    let topic_id = created.topics[0].topic_id;
    let metadata = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(s(TOPIC)))),
    ]));
    let m = client.call(&metadata, 12).await;
    assert_eq!(m.topics[0].error_code, 0);
    assert_eq!(m.topics[0].topic_id, topic_id);
    assert_eq!(m.topics[0].partitions[0].leader_id, m.brokers[0].node_id);

    // Produce (a tombstone too) and fetch back.
    assert_eq!(
        append(&mut client, &[("a", Some("1")), ("b", Some("2"))]).await,
        0
    );
    assert_eq!(append(&mut client, &[("a", None)]).await, 2);
    // acks=0 gets no response: the next answer is the ListOffsets one.
    client
        .send(&produce(0, batch(&[("c", Some("3"))])), 9)
        .await;
    assert_eq!(latest(&mut client).await, 4);
    let expected = vec![
        rec(0, "a", Some("1")),
        rec(1, "b", Some("2")),
        rec(2, "a", None),
        rec(3, "c", Some("3")),
    ];
    assert_eq!(read_all(&mut client, 0).await, expected);

    // A long poll at the end waits until a produce lands.
    let mut poller = Client::connect(&coordinator).await;
    let started = Instant::now();
    let poll = tokio::spawn(async move {
        let r = poller.call(&fetch(4, 20_000), 12).await;
        (started.elapsed(), r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(append(&mut client, &[("d", Some("4"))]).await, 4);
    let (waited, r) = tokio::time::timeout(PATIENCE, poll)
        .await
        .expect("the poll ends")
        .expect("poll task");
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(10),
        "waited for the produce, not the 20 s max wait: {waited:?}"
    );
    let records = decode(
        r.responses[0].partitions[0]
            .records
            .clone()
            .unwrap_or_default(),
    );
    assert_eq!(records, vec![rec(4, "d", Some("4"))]);
    coordinator.shutdown().await;

    // Restarted on the same data directory: the topic, its id and every record are back.
    let coordinator = start(&dir).await;
    let mut client = Client::connect(&coordinator).await;
    let m = client.call(&metadata, 12).await;
    assert_eq!(
        (m.topics[0].error_code, m.topics[0].topic_id),
        (0, topic_id)
    );
    let mut all = expected.clone();
    all.push(rec(4, "d", Some("4")));
    assert_eq!(read_all(&mut client, 0).await, all);
    coordinator.shutdown().await;

    // A crash in the middle of the last write: the file loses its last few bytes. The torn
    // batch is dropped, the rest is served, and the next produce takes its offset.
    let log = dir.join(format!("{TOPIC}-0.log"));
    let len = std::fs::metadata(&log).expect("the topic's file").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(len - 5))
        .expect("tear the tail");
    let coordinator = start(&dir).await;
    let mut client = Client::connect(&coordinator).await;
    assert_eq!(read_all(&mut client, 0).await, expected);
    assert_eq!(latest(&mut client).await, 4);
    assert_eq!(append(&mut client, &[("e", Some("5"))]).await, 4);
    // Other topics are unknown, not created by Metadata.
    let other = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(s("other")))),
    ]));
    let m = client.call(&other, 12).await;
    assert_eq!(m.topics[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    // An acks=0 produce that fails has no response to carry its error: the connection closes.
    let mut lost = produce(0, batch(&[("x", Some("y"))]));
    lost.topic_data[0].name = TopicName(s("other"));
    client.send(&lost, 9).await;
    let next = tokio::time::timeout(PATIENCE, client.framed.next())
        .await
        .expect("closed in time");
    assert!(next.is_none(), "the connection is closed, nothing answered");
    coordinator.shutdown().await;
    std::fs::remove_dir_all(&dir).ok();
}
