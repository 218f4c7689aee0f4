//! The topic APIs as functions from kafka-protocol requests to responses: CreateTopics,
//! Metadata's topics, Produce, Fetch (long poll included) and ListOffsets; and every response
//! encodes at every version it is served in.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest, FetchRequest,
    FetchResponse, ListOffsetsRequest, MetadataRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;

use crate::log::Topics;
use crate::log::batch::tests::encode;
use crate::server::apis;
use crate::server::node::Node;
use crate::server::{fetch, produce, topics};

const MAX: usize = 1 << 20;

fn limits(max_message_bytes: usize) -> crate::log::Limits {
    crate::log::Limits {
        max_message_bytes,
        max_topics: 10,
    }
}

fn node() -> Node {
    Node {
        node_id: 0,
        host: StrBytes::from_static_str("127.0.0.1"),
        port: 9092,
        cluster_id: StrBytes::from_static_str("test"),
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn creatable(topic: &str, partitions: i32, configs: &[(&str, &str)]) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(-1)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string(k.to_string()))
                        .with_value(Some(StrBytes::from_string(v.to_string())))
                })
                .collect(),
        )
}

fn create(store: &Topics, req: CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    topics::create_topics(store, &node(), MAX, &req, version)
}

fn produce_request(topic: &str, acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ])
}

fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(i32::MAX)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(i32::MAX),
                ]),
        ])
}

/// Record values in a Fetch response's first partition, with their offsets.
fn fetched(r: &FetchResponse) -> Vec<(i64, Option<Bytes>)> {
    let mut records = r.responses[0].partitions[0]
        .records
        .clone()
        .unwrap_or_default();
    let sets = RecordBatchDecoder::decode_all(&mut records).expect("decode");
    sets.into_iter()
        .flat_map(|s| s.records)
        .map(|r| (r.offset, r.value))
        .collect()
}

fn store_with(topic: &str) -> Topics {
    let store = Topics::in_memory(limits(MAX));
    let r = create(
        &store,
        CreateTopicsRequest::default().with_topics(vec![creatable(topic, 1, &[])]),
        7,
    );
    assert_eq!(r.topics[0].error_code, 0);
    store
}

#[test]
fn create_topics_reports_layout_configs_and_refusals() {
    let store = Topics::in_memory(limits(MAX));
    let req = CreateTopicsRequest::default().with_topics(vec![
        creatable("tasks", -1, &[("cleanup.policy", "compact")]),
        creatable("plain", 1, &[]),
        creatable("wide", 3, &[]),
        creatable("bad name", 1, &[]),
        creatable("twice", 1, &[]),
        creatable("twice", 1, &[]),
    ]);
    let r = create(&store, req, 7);
    let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(
        codes,
        vec![
            0,
            0,
            ResponseError::InvalidPartitions.code(),
            ResponseError::InvalidTopicException.code(),
            ResponseError::InvalidRequest.code(),
            ResponseError::InvalidRequest.code(),
        ]
    );
    let tasks = &r.topics[0];
    assert_eq!((tasks.num_partitions, tasks.replication_factor), (1, 1));
    assert!(!tasks.topic_id.is_nil());
    assert_eq!(tasks.error_message, None);
    let policy = tasks
        .configs
        .iter()
        .flatten()
        .find(|c| c.name.as_str() == "cleanup.policy")
        .expect("cleanup.policy reported");
    assert_eq!(policy.value.as_ref().map(|v| v.as_str()), Some("compact"));
    let default_policy = r.topics[1]
        .configs
        .iter()
        .flatten()
        .find(|c| c.name.as_str() == "cleanup.policy")
        .expect("the default reported");
    assert_eq!(
        default_policy.value.as_ref().map(|v| v.as_str()),
        Some("delete")
    );
    let wide = r.topics[2].error_message.as_ref().expect("a message");
    assert!(wide.as_str().contains("one partition"), "{}", wide.as_str());
    // Created once: a second request finds them.
    let again = create(
        &store,
        CreateTopicsRequest::default().with_topics(vec![creatable("tasks", 1, &[])]),
        2,
    );
    assert_eq!(
        again.topics[0].error_code,
        ResponseError::TopicAlreadyExists.code()
    );
    // validate_only creates nothing.
    let check = create(
        &store,
        CreateTopicsRequest::default()
            .with_validate_only(true)
            .with_topics(vec![creatable("dry", 1, &[])]),
        7,
    );
    assert_eq!(check.topics[0].error_code, 0);
    assert_eq!(store.list().len(), 2);
}

#[test]
fn metadata_lists_created_topics_led_by_this_node() {
    let store = store_with("tasks");
    let all = apis::metadata(
        &node(),
        &store,
        &MetadataRequest::default().with_topics(None),
        12,
    );
    assert_eq!(all.topics.len(), 1);
    let t = &all.topics[0];
    assert_eq!(t.name.as_ref().map(|n| n.0.as_str()), Some("tasks"));
    assert_eq!(t.error_code, 0);
    assert_eq!(t.partitions.len(), 1);
    assert_eq!(t.partitions[0].leader_id.0, 0);
    assert_eq!(t.partitions[0].partition_index, 0);
    let id = t.topic_id;
    // By name, by id, and one that does not exist.
    let asked = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name("tasks"))),
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(id),
        MetadataRequestTopic::default().with_name(Some(name("missing"))),
    ]));
    let r = apis::metadata(&node(), &store, &asked, 12);
    let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(
        codes,
        vec![0, 0, ResponseError::UnknownTopicOrPartition.code()]
    );
    assert_eq!(
        r.topics[1].name.as_ref().map(|n| n.0.as_str()),
        Some("tasks")
    );
    // v0: an empty list asks for every topic; v1+: an empty list asks for none.
    let empty = MetadataRequest::default().with_topics(Some(Vec::new()));
    assert_eq!(apis::metadata(&node(), &store, &empty, 0).topics.len(), 1);
    assert_eq!(apis::metadata(&node(), &store, &empty, 1).topics.len(), 0);
}

#[test]
fn produce_assigns_offsets_and_refuses_bad_batches_per_partition() {
    let store = store_with("t");
    for (acks, expected) in [(1, 0), (-1, 2)] {
        let r = produce::produce(
            &store,
            &produce_request("t", acks, encode(&[Some("a"), Some("b")])),
            9,
        );
        let p = &r.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, expected));
    }
    // acks=0: appended (no response is sent for it).
    let quiet = produce::produce(&store, &produce_request("t", 0, encode(&[None])), 9);
    assert_eq!(produce::first_error(&quiet), None);
    // acks=0 refused: the error that closes the connection names the partition.
    let failed = produce::produce(&store, &produce_request("nope", 0, encode(&[None])), 9);
    assert_eq!(
        produce::first_error(&failed).as_deref(),
        Some("nope-0: UnknownTopicOrPartition")
    );
    assert_eq!(
        store.offsets(crate::log::TopicRef::Name("t"), 0),
        Ok((0, 5))
    );
    let mut corrupt = BytesMut::from(&encode(&[Some("x")])[..]);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    let bad = [
        (
            produce_request("t", 1, corrupt.freeze()),
            ResponseError::CorruptMessage,
        ),
        (
            produce_request("t", 1, encode(&[Some(&"x".repeat(MAX))])),
            ResponseError::MessageTooLarge,
        ),
        (
            produce_request("nope", 1, encode(&[Some("x")])),
            ResponseError::UnknownTopicOrPartition,
        ),
        (
            produce_request("t", 2, encode(&[Some("x")])),
            ResponseError::InvalidRequiredAcks,
        ),
    ];
    for (req, error) in bad {
        let r = produce::produce(&store, &req, 9);
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, error.code(), "{error:?}");
        assert_eq!(p.base_offset, -1);
    }
    let r = produce::produce(
        &store,
        &produce_request("t", 1, Bytes::from_static(b"short")),
        8,
    );
    let message = r.responses[0].partition_responses[0].error_message.clone();
    assert!(message.is_some_and(|m| m.as_str().contains("corrupt")));
    assert_eq!(
        store.offsets(crate::log::TopicRef::Name("t"), 0),
        Ok((0, 5))
    );
}

#[tokio::test]
async fn fetch_returns_batches_and_out_of_range_offsets_are_errors() {
    let store = store_with("t");
    for v in ["a", "b", "c"] {
        produce::produce(&store, &produce_request("t", 1, encode(&[Some(v)])), 9);
    }
    let r = fetch::fetch(&store, &fetch_request("t", 1, 0), 12).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(
        (p.error_code, p.high_watermark, p.log_start_offset),
        (0, 3, 0)
    );
    let offsets: Vec<i64> = fetched(&r).into_iter().map(|(o, _)| o).collect();
    assert_eq!(offsets, vec![1, 2]);
    for offset in [-1, 4] {
        let r = fetch::fetch(&store, &fetch_request("t", offset, 5_000), 12).await;
        assert_eq!(
            r.responses[0].partitions[0].error_code,
            ResponseError::OffsetOutOfRange.code()
        );
    }
    // max_bytes: one byte still returns the first batch whole, and only it.
    let mut small = fetch_request("t", 0, 0);
    small.max_bytes = 1;
    let r = fetch::fetch(&store, &small, 12).await;
    assert_eq!(fetched(&r).len(), 1);
}

#[tokio::test]
async fn a_fetch_asking_for_more_than_a_frame_holds_gets_at_most_the_response_cap() {
    let store = store_with("t");
    // 3 MiB in 48 batches of 64 KiB: more than the default 2 MiB frame cap.
    let value = "x".repeat(64 << 10);
    for _ in 0..48 {
        produce::produce(&store, &produce_request("t", 1, encode(&[Some(&value)])), 9);
    }
    let r = fetch::fetch(&store, &fetch_request("t", 0, 0), 12).await;
    let bytes = r.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, Bytes::len);
    assert!(bytes > 0, "some batches come back");
    assert!(
        bytes <= fetch::MAX_RESPONSE_RECORD_BYTES,
        "{bytes} bytes of records in one response"
    );
    assert!(fetched(&r).len() < 48, "the rest comes with the next fetch");
}

#[tokio::test(start_paused = true)]
async fn a_fetch_at_the_end_waits_and_a_produce_wakes_it() {
    let store = store_with("t");
    // Nothing lands: the whole max_wait_ms passes, then an empty answer.
    let started = tokio::time::Instant::now();
    let r = fetch::fetch(&store, &fetch_request("t", 0, 500), 12).await;
    assert_eq!(started.elapsed(), Duration::from_millis(500));
    assert!(fetched(&r).is_empty());
    let writer = store.clone();
    let poll = tokio::spawn(async move {
        let started = tokio::time::Instant::now();
        let r = fetch::fetch(&writer, &fetch_request("t", 0, 60_000), 12).await;
        (started.elapsed(), fetched(&r))
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    produce::produce(&store, &produce_request("t", 1, encode(&[Some("woke")])), 9);
    let (waited, records) = poll.await.expect("fetch task");
    assert!(
        waited < Duration::from_secs(1),
        "woken by the produce, not the timeout: {waited:?}"
    );
    assert_eq!(records, vec![(0, Some(Bytes::from("woke")))]);
}

#[test]
fn list_offsets_answers_earliest_and_latest() {
    let store = store_with("t");
    produce::produce(
        &store,
        &produce_request("t", 1, encode(&[Some("a"), Some("b")])),
        9,
    );
    let req = ListOffsetsRequest::default().with_topics(vec![
        ListOffsetsTopic::default()
            .with_name(name("t"))
            .with_partitions(
                [topics::EARLIEST_TIMESTAMP, topics::LATEST_TIMESTAMP, 1_000]
                    .into_iter()
                    .map(|ts| {
                        ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(ts)
                    })
                    .collect(),
            ),
        ListOffsetsTopic::default()
            .with_name(name("missing"))
            .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
    ]);
    let r = topics::list_offsets(&store, &req, 8);
    let got: Vec<(i16, i64)> = r.topics[0]
        .partitions
        .iter()
        .map(|p| (p.error_code, p.offset))
        .collect();
    assert_eq!(
        got,
        vec![(0, 0), (0, 2), (ResponseError::InvalidRequest.code(), -1)]
    );
    assert_eq!(
        r.topics[1].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

fn describe(topic: &str, resource_type: i8, keys: Option<&[&str]>) -> DescribeConfigsRequest {
    DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configuration_keys(keys.map(|keys| {
                keys.iter()
                    .map(|k| StrBytes::from_string(k.to_string()))
                    .collect()
            })),
    ])
}

#[test]
fn describe_configs_reports_what_the_topic_was_created_with_and_the_defaults() {
    let store = Topics::in_memory(limits(MAX));
    let req = CreateTopicsRequest::default().with_topics(vec![creatable(
        "tasks",
        1,
        &[("cleanup.policy", "compact"), ("retention.ms", "1000")],
    )]);
    create(&store, req, 7);
    let all = topics::describe_configs(&store, MAX, &describe("tasks", 2, None));
    let got: Vec<(String, Option<String>, i8)> = all.results[0]
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().map(|v| v.to_string()),
                c.config_source,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("cleanup.policy".to_string(), Some("compact".to_string()), 1),
            ("retention.ms".to_string(), Some("1000".to_string()), 1),
            ("max.message.bytes".to_string(), Some(MAX.to_string()), 5),
        ]
    );
    let one = topics::describe_configs(
        &store,
        MAX,
        &describe("tasks", 2, Some(&["max.message.bytes"])),
    );
    assert_eq!(one.results[0].configs.len(), 1);
    let missing = topics::describe_configs(&store, MAX, &describe("nope", 2, None));
    assert_eq!(
        missing.results[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let broker = topics::describe_configs(&store, MAX, &describe("0", 4, None));
    assert_eq!(
        broker.results[0].error_code,
        ResponseError::InvalidRequest.code()
    );
}

/// Every response, successes and errors, encodes at every version served (a field set that a
/// version lacks would make kafka-protocol refuse it).
#[tokio::test]
async fn every_response_encodes_at_every_served_version() {
    let store = store_with("t");
    let range = |api: ApiKey| {
        apis::SUPPORTED_VERSIONS
            .iter()
            .find(|(k, _, _)| *k == api)
            .map(|(_, min, max)| *min..=*max)
            .expect("served")
    };
    let mut buf = BytesMut::new();
    for v in range(ApiKey::CreateTopics) {
        let req = CreateTopicsRequest::default().with_topics(vec![
            creatable(&format!("c{v}"), 1, &[]),
            creatable("t", 9, &[]),
        ]);
        create(&store, req.clone(), v)
            .encode(&mut buf, v)
            .expect("CreateTopics");
        topics::create_topics_error(&req, ResponseError::NotController, v)
            .encode(&mut buf, v)
            .expect("CreateTopics error");
    }
    for v in range(ApiKey::Produce) {
        let mut req = produce_request("t", 1, encode(&[Some("x")]));
        if v >= 13 {
            let id = store.topic(crate::log::TopicRef::Name("t")).expect("t").id;
            req.topic_data[0].topic_id = id;
            req.topic_data[0].name = TopicName::default();
        }
        let r = produce::produce(&store, &req, v);
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "v{v}");
        r.encode(&mut buf, v).expect("Produce");
        let refused = produce::produce(&store, &produce_request("x", 1, Bytes::new()), v);
        refused.encode(&mut buf, v).expect("Produce refused");
        produce::produce_error(&req, ResponseError::NotLeaderOrFollower, v)
            .encode(&mut buf, v)
            .expect("Produce error");
    }
    for v in range(ApiKey::Fetch) {
        let mut req = fetch_request("t", 0, 0);
        if v >= 13 {
            let id = store.topic(crate::log::TopicRef::Name("t")).expect("t").id;
            req.topics[0].topic_id = id;
            req.topics[0].topic = TopicName::default();
        }
        let r = fetch::fetch(&store, &req, v).await;
        assert_eq!(r.responses[0].partitions[0].error_code, 0, "v{v}");
        assert!(!fetched(&r).is_empty(), "v{v}");
        r.encode(&mut buf, v).expect("Fetch");
        fetch::fetch_error(&req, ResponseError::NotLeaderOrFollower, v)
            .encode(&mut buf, v)
            .expect("Fetch error");
    }
    for v in range(ApiKey::ListOffsets) {
        let req = ListOffsetsRequest::default().with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
        ]);
        topics::list_offsets(&store, &req, v)
            .encode(&mut buf, v)
            .expect("ListOffsets");
        topics::list_offsets_error(&req, ResponseError::NotLeaderOrFollower)
            .encode(&mut buf, v)
            .expect("ListOffsets error");
    }
    for v in range(ApiKey::DescribeConfigs) {
        let req = describe("t", 2, None);
        topics::describe_configs(&store, MAX, &req)
            .encode(&mut buf, v)
            .expect("DescribeConfigs");
        topics::describe_configs_error(&req, ResponseError::NotController)
            .encode(&mut buf, v)
            .expect("DescribeConfigs error");
    }
    for v in range(ApiKey::Metadata) {
        let req = if v == 0 {
            MetadataRequest::default().with_topics(Some(Vec::new()))
        } else {
            MetadataRequest::default().with_topics(None)
        };
        let r = apis::metadata(&node(), &store, &req, v);
        assert!(!r.topics.is_empty(), "v{v}");
        r.encode(&mut buf, v).expect("Metadata");
    }
}

/// The advertised ranges are the ones the wire guard decodes.
#[test]
fn served_versions_are_the_ones_the_wire_decodes() {
    for (api, min, max) in apis::SUPPORTED_VERSIONS {
        assert_eq!(
            kroupier_coordinator::wire::versions(api),
            Some(min..=max),
            "{api:?}"
        );
    }
}
