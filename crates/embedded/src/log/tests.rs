//! The topic store end to end: create, append, read, and what a data directory keeps across a
//! restart (and what it drops after a torn write).

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};

use super::batch::Batch;
use super::batch::tests::encode;
use super::*;

const MAX: usize = 1 << 20;

fn limits(max_message_bytes: usize) -> crate::log::Limits {
    crate::log::Limits {
        max_message_bytes,
        max_topics: 10,
    }
}

fn new_topic(name: &str, configs: &[(&str, &str)]) -> NewTopic {
    NewTopic {
        name: name.to_string(),
        num_partitions: 1,
        replication_factor: -1,
        assignments: Vec::new(),
        configs: configs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "kroupier-topics-{name}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ))
}

/// Every record value read from `from`, with its offset.
fn values(topics: &Topics, topic: &str, from: i64) -> Vec<(i64, Option<Bytes>)> {
    let read = topics
        .read(TopicRef::Name(topic), 0, from, usize::MAX)
        .expect("read");
    let mut out = Vec::new();
    for batch in read.batches {
        let mut buf = batch;
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).expect("decode");
        out.extend(set.records.into_iter().map(|r| (r.offset, r.value)));
    }
    out
}

#[test]
fn a_created_topic_takes_batches_and_serves_them_back_with_offsets() {
    let topics = Topics::in_memory(limits(MAX));
    let info = topics
        .create(
            &new_topic("tasks", &[("cleanup.policy", "compact")]),
            0,
            false,
        )
        .expect("create");
    assert_eq!(info.cleanup_policy(), "compact");
    assert_eq!(
        topics.topic(TopicRef::Id(info.id)).map(|t| t.name),
        Ok("tasks".to_string())
    );
    assert_eq!(
        topics.create(&new_topic("tasks", &[]), 0, false),
        Err(LogError::TopicExists("tasks".to_string()))
    );
    let first = topics
        .append(
            TopicRef::Name("tasks"),
            0,
            Some(encode(&[Some("a"), Some("b")])),
        )
        .expect("append");
    assert_eq!(first.base_offset, 0);
    // A tombstone is a record like any other.
    let second = topics
        .append(TopicRef::Name("tasks"), 0, Some(encode(&[None])))
        .expect("append");
    assert_eq!(second.base_offset, 2);
    assert_eq!(topics.offsets(TopicRef::Name("tasks"), 0), Ok((0, 3)));
    assert_eq!(
        values(&topics, "tasks", 0),
        vec![
            (0, Some(Bytes::from("a"))),
            (1, Some(Bytes::from("b"))),
            (2, None)
        ]
    );
    assert!(matches!(
        topics.append(TopicRef::Name("tasks"), 1, Some(encode(&[Some("x")]))),
        Err(LogError::UnknownPartition { partition: 1, .. })
    ));
    assert!(matches!(
        topics.append(TopicRef::Name("other"), 0, Some(encode(&[Some("x")]))),
        Err(LogError::UnknownTopic(_))
    ));
}

#[test]
fn topics_past_the_limit_are_a_policy_violation() {
    let topics = Topics::in_memory(limits(MAX));
    for i in 0..10 {
        topics
            .create(&new_topic(&format!("t{i}"), &[]), 0, false)
            .expect("within the limit");
    }
    let error = topics
        .create(&new_topic("one-more", &[]), 0, false)
        .expect_err("over the limit");
    assert_eq!(error, LogError::TooManyTopics { max: 10 });
    assert_eq!(
        error.code(),
        kafka_protocol::error::ResponseError::PolicyViolation
    );
    assert!(error.to_string().contains("max_topics"));
}

#[test]
fn validate_only_creates_nothing() {
    let topics = Topics::in_memory(limits(MAX));
    let checked = topics.create(&new_topic("t", &[]), 0, true).expect("valid");
    assert!(checked.id.is_nil());
    assert!(topics.list().is_empty());
}

#[test]
fn a_batch_over_max_message_bytes_is_refused_per_topic_or_by_default() {
    let topics = Topics::in_memory(limits(200));
    topics
        .create(&new_topic("small", &[]), 0, false)
        .expect("create");
    topics
        .create(
            &new_topic("large", &[("max.message.bytes", "5000")]),
            0,
            false,
        )
        .expect("create");
    let big = encode(&[Some(&"x".repeat(500))]);
    assert!(matches!(
        topics.append(TopicRef::Name("small"), 0, Some(big.clone())),
        Err(LogError::TooLarge { max: 200, .. })
    ));
    assert!(topics.append(TopicRef::Name("large"), 0, Some(big)).is_ok());
}

#[test]
fn a_corrupt_batch_is_refused_and_the_log_is_unchanged() {
    let topics = Topics::in_memory(limits(MAX));
    topics
        .create(&new_topic("t", &[]), 0, false)
        .expect("create");
    let mut bad = BytesMut::from(&encode(&[Some("v")])[..]);
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let error = topics
        .append(TopicRef::Name("t"), 0, Some(bad.freeze()))
        .expect_err("corrupt");
    assert_eq!(
        error.code(),
        kafka_protocol::error::ResponseError::CorruptMessage
    );
    assert_eq!(topics.offsets(TopicRef::Name("t"), 0), Ok((0, 0)));
}

#[tokio::test]
async fn an_append_wakes_whoever_watches() {
    let topics = Topics::in_memory(limits(MAX));
    topics
        .create(&new_topic("t", &[]), 0, false)
        .expect("create");
    let mut appends = topics.appends();
    let writer = topics.clone();
    tokio::spawn(async move {
        writer
            .append(TopicRef::Name("t"), 0, Some(encode(&[Some("v")])))
            .expect("append");
    });
    tokio::time::timeout(std::time::Duration::from_secs(5), appends.changed())
        .await
        .expect("woken")
        .expect("open");
}

#[test]
fn a_data_directory_keeps_topics_and_batches_across_a_restart() {
    let dir = temp_dir("restart");
    let id = {
        let topics = Topics::open(&dir, limits(MAX)).expect("open");
        let info = topics
            .create(
                &new_topic("kept", &[("cleanup.policy", "compact")]),
                0,
                false,
            )
            .expect("create");
        topics
            .create(&new_topic("empty", &[]), 0, false)
            .expect("create");
        for v in ["a", "b", "c"] {
            topics
                .append(TopicRef::Name("kept"), 0, Some(encode(&[Some(v)])))
                .expect("append");
        }
        info.id
    };
    let topics = Topics::open(&dir, limits(MAX)).expect("reopen");
    let kept = topics.topic(TopicRef::Name("kept")).expect("kept");
    assert_eq!((kept.id, kept.cleanup_policy()), (id, "compact"));
    assert_eq!(topics.offsets(TopicRef::Name("empty"), 0), Ok((0, 0)));
    assert_eq!(topics.offsets(TopicRef::Name("kept"), 0), Ok((0, 3)));
    // Appends continue after what was read back.
    let next = topics
        .append(TopicRef::Name("kept"), 0, Some(encode(&[Some("d")])))
        .expect("append");
    assert_eq!(next.base_offset, 3);
    drop(topics);
    let topics = Topics::open(&dir, limits(MAX)).expect("reopen");
    let got: Vec<i64> = values(&topics, "kept", 0)
        .into_iter()
        .map(|(o, _)| o)
        .collect();
    assert_eq!(got, vec![0, 1, 2, 3]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_torn_tail_is_dropped_and_the_rest_is_served() {
    let dir = temp_dir("torn");
    {
        let topics = Topics::open(&dir, limits(MAX)).expect("open");
        topics
            .create(&new_topic("t", &[]), 0, false)
            .expect("create");
        topics
            .create(&new_topic("u", &[]), 0, false)
            .expect("create");
        for v in ["a", "b", "c"] {
            topics
                .append(TopicRef::Name("t"), 0, Some(encode(&[Some(v)])))
                .expect("append");
        }
    }
    // A crash in the middle of writing the last batch, and of the last catalogue entry.
    for (file, cut) in [("t-0.log", 3u64), ("topics.catalogue", 5)] {
        let path = dir.join(file);
        let len = std::fs::metadata(&path).expect("meta").len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.set_len(len - cut).expect("truncate");
    }
    let topics = Topics::open(&dir, limits(MAX)).expect("reopen despite the torn tails");
    let names: Vec<String> = topics.list().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["t".to_string()]);
    assert_eq!(
        values(&topics, "t", 0),
        vec![(0, Some(Bytes::from("a"))), (1, Some(Bytes::from("b")))]
    );
    let next = topics
        .append(TopicRef::Name("t"), 0, Some(encode(&[Some("c2")])))
        .expect("append");
    assert_eq!(next.base_offset, 2);
    // Re-creating the lost topic starts it empty.
    topics
        .create(&new_topic("u", &[]), 0, false)
        .expect("create again");
    drop(topics);
    let topics = Topics::open(&dir, limits(MAX)).expect("reopen");
    assert_eq!(topics.offsets(TopicRef::Name("t"), 0), Ok((0, 3)));
    assert_eq!(topics.list().len(), 2);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn stored_batches_are_the_client_bytes_with_only_the_base_offset_changed() {
    let topics = Topics::in_memory(limits(MAX));
    topics
        .create(&new_topic("t", &[]), 0, false)
        .expect("create");
    topics
        .append(TopicRef::Name("t"), 0, Some(encode(&[Some("first")])))
        .expect("append");
    let sent = encode(&[Some("x"), Some("y")]);
    topics
        .append(TopicRef::Name("t"), 0, Some(sent.clone()))
        .expect("append");
    let read = topics
        .read(TopicRef::Name("t"), 0, 1, usize::MAX)
        .expect("read");
    assert_eq!(read.batches.len(), 1);
    let stored = &read.batches[0];
    assert_eq!(&stored[8..], &sent[8..]);
    assert_eq!(Batch::parse(stored.clone()).map(|b| b.base_offset()), Ok(1));
}
