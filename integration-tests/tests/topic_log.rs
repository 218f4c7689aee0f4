//! `kroupier_coordinator::log::TopicLog` against a real broker: create a compacted topic,
//! append and read back a thousand records with tombstones, long poll, a missing topic, and a
//! record over the broker's size limit; on a 3-node cluster of its own
//! (`KROUPIER_KAFKA_CLUSTER=1`), appends and reads while the partition leader is killed.
//!
//! Runs against any broker that offers Produce; a broker without the log APIs (the embedded
//! coordinator before it serves them) is skipped with one line.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kroupier_coordinator::connection::Cluster;
use kroupier_coordinator::log::{LogErrorKind, LogRecord, ReadRecord, TopicLog, TopicSpec};
use kroupier_integration_tests::topics::{
    self, client, kafka_script, killable_cluster, unique_topic,
};

/// The broker's address and whether it offers DescribeConfigs, or `None` (after a skip line)
/// without a broker or without Produce.
async fn log_broker(test: &str) -> Option<(String, bool)> {
    let (addr, cluster) = topics::log_broker(test).await?;
    let connection = cluster.any_broker().await.expect("connect and negotiate");
    let describes = connection.versions().get(ApiKey::DescribeConfigs).is_some();
    Some((addr, describes))
}

/// Record `i`: key `task-{i % 300}`, every seventh a tombstone.
fn record(i: usize) -> LogRecord {
    let key = format!("task-{}", i % 300);
    if i % 7 == 3 {
        LogRecord::tombstone(key)
    } else {
        LogRecord::new(key, format!("{{\"n\":{i}}}"))
    }
}

/// Reads from `from` until the end offset; every record read.
async fn read_to_end(log: &TopicLog, from: i64) -> Vec<ReadRecord> {
    let mut records = Vec::new();
    let mut next = from;
    loop {
        let batch = log
            .read(next, Duration::from_millis(100))
            .await
            .expect("read");
        records.extend(batch.records);
        next = batch.next_offset;
        if next >= batch.end_offset {
            return records;
        }
    }
}

#[tokio::test]
async fn appends_and_reads_back_a_thousand_records() {
    let Some((addr, describes)) = log_broker("appends_and_reads_back_a_thousand_records").await
    else {
        return;
    };
    let topic = unique_topic("log-1000");
    let log = TopicLog::open(client(&addr), TopicSpec::new(&topic), true)
        .await
        .expect("create and open");
    assert_eq!(log.topic(), topic);
    assert_eq!(log.end_offset().await.expect("end offset"), 0);
    let policy = log.config("cleanup.policy").await.expect("DescribeConfigs");
    // Created compacted (a broker without DescribeConfigs has nothing to say).
    let want = describes.then(|| "compact".to_owned());
    assert_eq!(policy, want);

    let started = Instant::now();
    let mut expected_first = 0;
    for chunk in (0..1_000).collect::<Vec<_>>().chunks(100) {
        let first = log
            .append(chunk.iter().map(|&i| record(i)).collect())
            .await
            .expect("append");
        assert_eq!(first, expected_first, "each batch lands after the last");
        expected_first += chunk.len() as i64;
    }
    println!(
        "appended 1000 records in 10 batches in {:?}",
        started.elapsed()
    );
    assert_eq!(log.end_offset().await.expect("end offset"), 1_000);

    let records = read_to_end(&log, 0).await;
    assert_eq!(records.len(), 1_000);
    for (i, r) in records.iter().enumerate() {
        let want = record(i);
        assert_eq!(r.offset, i as i64, "offsets are consecutive and in order");
        assert_eq!((&r.key, &r.value), (&want.key, &want.value), "record {i}");
    }
    assert_eq!(records.iter().filter(|r| r.value.is_none()).count(), 143);

    // A read from the middle of a batch drops the records before it.
    let middle = log.read(555, Duration::ZERO).await.expect("read");
    assert_eq!(middle.records.first().map(|r| r.offset), Some(555));
    assert_eq!(middle.end_offset, 1_000);

    // Reading at the end waits, then returns nothing and stays put.
    let at_end = log
        .read(1_000, Duration::from_millis(200))
        .await
        .expect("read");
    assert!(at_end.records.is_empty());
    assert_eq!((at_end.next_offset, at_end.end_offset), (1_000, 1_000));

    // Opening again (create or not) finds the same log.
    let again = TopicLog::open(client(&addr), TopicSpec::new(&topic), false)
        .await
        .expect("open the existing topic");
    assert_eq!(again.end_offset().await.expect("end offset"), 1_000);
    let racing = TopicLog::open(client(&addr), TopicSpec::new(&topic), true)
        .await
        .expect("open with create = true when it exists");
    assert_eq!(
        racing.append(vec![record(1_000)]).await.expect("append"),
        1_000
    );
}

#[tokio::test]
async fn a_long_poll_returns_records_appended_while_it_waits() {
    let Some((addr, _)) = log_broker("a_long_poll_returns_records_appended_while_it_waits").await
    else {
        return;
    };
    let topic = unique_topic("log-poll");
    let log = TopicLog::open(client(&addr), TopicSpec::new(&topic), true)
        .await
        .expect("create and open");
    let reader = log.clone();
    let started = Instant::now();
    let poll = tokio::spawn(async move { reader.read(0, Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let offset = log
        .append(vec![LogRecord::new("k", "v")])
        .await
        .expect("append while the read waits");
    let batch = poll.await.expect("join").expect("long poll");
    let waited = started.elapsed();
    println!("long poll returned after {waited:?}");
    assert_eq!(offset, 0);
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].key, Bytes::from_static(b"k"));
    assert_eq!(batch.records[0].value, Some(Bytes::from_static(b"v")));
    assert_eq!((batch.next_offset, batch.end_offset), (1, 1));
    assert!(
        waited < Duration::from_secs(5),
        "the poll returned when the record came, not at its 10 s limit: {waited:?}"
    );
}

#[tokio::test]
async fn a_missing_topic_without_create_is_missing() {
    let Some((addr, _)) = log_broker("a_missing_topic_without_create_is_missing").await else {
        return;
    };
    let topic = unique_topic("log-missing");
    let err = TopicLog::open(client(&addr), TopicSpec::new(&topic), false)
        .await
        .expect_err("the topic does not exist");
    assert!(
        err.kind() == LogErrorKind::Missing && err.topic() == Some(topic.as_str()),
        "{err}"
    );
    assert!(err.to_string().contains("cleanup.policy=compact"), "{err}");
}

#[tokio::test]
async fn a_record_over_the_size_limit_is_record_too_large() {
    let Some((addr, _)) = log_broker("a_record_over_the_size_limit_is_record_too_large").await
    else {
        return;
    };
    let topic = unique_topic("log-large");
    let log = TopicLog::open(client(&addr), TopicSpec::new(&topic), true)
        .await
        .expect("create and open");
    // Kafka's default max.message.bytes is 1 MiB + 12 bytes.
    let value = Bytes::from(vec![b'x'; 1_200_000]);
    let err = log
        .append(vec![LogRecord::new("big", value)])
        .await
        .expect_err("over max.message.bytes");
    let limit = log
        .config("max.message.bytes")
        .await
        .expect("DescribeConfigs");
    match err.record_too_large() {
        Some((bytes, max)) => {
            assert!(bytes > 1_200_000, "{err}");
            // Known where the broker offers DescribeConfigs (then refused before sending).
            let known = limit.map(|l| l.parse::<usize>().expect("a number"));
            assert_eq!(known.unwrap_or(0), max, "{err}");
        }
        None => panic!("expected RecordTooLarge, got {err}"),
    }
    assert!(err.to_string().contains("max.message.bytes"), "{err}");
    // The log still works.
    assert_eq!(
        log.append(vec![LogRecord::new("small", "v")])
            .await
            .expect("append"),
        0
    );
}

/// The node id of partition 0's leader, as Metadata says.
async fn leader_of(cluster: &Cluster, topic: &str) -> i32 {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{MetadataRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let request = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
            TopicName(StrBytes::from_string(topic.to_owned())),
        ))]))
        .with_allow_auto_topic_creation(false);
    let response = cluster.send_any(&request).await.expect("Metadata");
    response.topics[0].partitions[0].leader_id.0
}

#[tokio::test]
async fn appends_and_reads_go_on_when_the_leader_is_killed() {
    let Some(addr) = killable_cluster("appends_and_reads_go_on_when_the_leader_is_killed") else {
        return;
    };
    let cluster = client(&addr);
    let topic = unique_topic("log-failover");
    let spec = TopicSpec::new(&topic).with_replication_factor(3);
    let log = TopicLog::open(cluster.clone(), spec, true)
        .await
        .expect("create and open");
    let first: Vec<_> = (0..100).map(record).collect();
    assert_eq!(log.append(first).await.expect("append"), 0);
    let leader = leader_of(&cluster, &topic).await;

    kafka_script(&["kill-node", &leader.to_string()]);
    let started = Instant::now();
    let second: Vec<_> = (100..200).map(record).collect();
    assert_eq!(
        log.append(second).await.expect("append after the kill"),
        100
    );
    let failover = started.elapsed();
    let reader = TopicLog::open(cluster.clone(), TopicSpec::new(&topic), false)
        .await
        .expect("open after the kill");
    let records = read_to_end(&reader, 0).await;
    let new_leader = leader_of(&cluster, &topic).await;
    kafka_script(&["start-node", &leader.to_string()]);

    println!(
        "MEASURE topic_log_leader_failover_append={}",
        failover.as_millis()
    );
    assert_ne!(new_leader, leader, "the leader moved");
    assert_eq!(records.len(), 200);
    for (i, r) in records.iter().enumerate() {
        assert_eq!((r.offset, &r.key), (i as i64, &record(i).key), "record {i}");
    }
}
