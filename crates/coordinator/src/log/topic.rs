//! [`TopicLog`]: the requests, the partition leader, and the retries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, DescribeConfigsRequest, FetchRequest,
    ListOffsetsRequest, MetadataRequest, ProduceRequest, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::batch::{self, Aborted, Writer};
use super::{Cause, LogError, LogRecord, ReadBatch, TopicSpec};
use crate::backoff::Backoff;
use crate::connection::{BrokerConnection, BrokerNode, Cluster, ConnectionError};

/// The highest Produce and Fetch versions a log sends: they name the topic. Later versions
/// (Kafka 4.1's Produce v13, Fetch v13 and later) name it by topic id instead.
const MAX_VERSION_BY_NAME: i16 = 12;
/// The highest Produce version a transactional append sends (see [`TopicLog::produce`]).
const MAX_TRANSACTIONAL_PRODUCE: i16 = 11;
/// The most one Fetch asks for. A first batch larger than this still comes whole (KIP-74).
const FETCH_MAX_BYTES: i32 = 8 << 20;
/// The config every created log topic gets.
const COMPACT: (&str, &str) = ("cleanup.policy", "compact");
/// The topic configs a log reads when it opens.
const CLEANUP_POLICY: &str = "cleanup.policy";
const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
/// DescribeConfigs' resource type for a topic.
const TOPIC_RESOURCE: i8 = 2;
/// ListOffsets timestamps: the high watermark and the log start offset.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;

/// A client for partition 0 of one topic, used as a log. Cheap to clone (an `Arc` inside);
/// clones share the partition leader's connections.
///
/// Reads and writes use two connections to the leader, so a long-polling read does not hold
/// back an append (a broker answers one connection's requests in order).
#[derive(Debug, Clone)]
pub struct TopicLog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cluster: Arc<Cluster>,
    topic: String,
    /// The topic's `max.message.bytes` when known (from DescribeConfigs or CreateTopics), else
    /// 0.
    max_message_bytes: AtomicUsize,
    leader: Mutex<Leader>,
}

/// The partition leader as last found, and the connections to it.
#[derive(Debug, Default)]
struct Leader {
    node: Option<BrokerNode>,
    reader: Option<BrokerConnection>,
    writer: Option<BrokerConnection>,
}

/// A Fetch's isolation level, as Kafka numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isolation {
    /// Every record up to the high watermark, including open and aborted transactions'.
    ReadUncommitted = 0,
    /// Up to the last stable offset, without aborted transactions' records.
    ReadCommitted = 1,
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Read,
    Write,
}

/// What one attempt ended with, when not with a value.
#[derive(Debug)]
enum Step {
    /// Transient: look the leader up again and retry after a backoff.
    Retry(LogError),
    /// Final.
    Fail(LogError),
}

impl From<ConnectionError> for Step {
    fn from(e: ConnectionError) -> Self {
        if e.is_disconnect() {
            Step::Retry(LogError::from(Cause::Connection(e)))
        } else {
            Step::Fail(LogError::from(Cause::Connection(e)))
        }
    }
}

/// Partition 0 as Metadata describes it.
enum Partition {
    Led(BrokerNode),
    /// The topic does not exist; `controller` is where to send CreateTopics.
    Missing {
        controller: Option<BrokerNode>,
    },
}

/// A bounded retry: backoff delays until a deadline.
struct Retry {
    deadline: Instant,
    backoff: Backoff,
}

impl Retry {
    fn new(cluster: &Cluster) -> Self {
        let config = cluster.config();
        Self {
            deadline: Instant::now() + config.coordinator_lookup_timeout,
            backoff: Backoff::new(config.retry_backoff, config.retry_backoff_max),
        }
    }

    /// Waits before the next attempt, or gives `error` back when the deadline would pass.
    async fn wait(&mut self, error: LogError) -> Result<(), LogError> {
        let at = Instant::now() + self.backoff.next_delay();
        if at > self.deadline {
            return Err(error);
        }
        tracing::debug!(error = %error, "log request will be retried");
        tokio::time::sleep_until(at).await;
        Ok(())
    }
}

impl TopicLog {
    /// Opens the topic: Metadata for partition 0's leader; if the topic is missing and `create`
    /// is true, CreateTopics with one partition and `cleanup.policy=compact` (a racing
    /// creator's TOPIC_ALREADY_EXISTS is fine), then waits for its leader.
    ///
    /// An existing topic is used as it is. Where the broker offers DescribeConfigs, the log
    /// reads the topic's `max.message.bytes` (to refuse an oversized batch before sending it)
    /// and logs a warning when its `cleanup.policy` is not `compact` (its old records would be
    /// deleted by retention rather than compacted).
    ///
    /// # Errors
    /// [`Missing`](super::LogErrorKind::Missing) when the topic is missing and `create` is false;
    /// [`NotAuthorized`](super::LogErrorKind::NotAuthorized) naming the ACL to grant; [`Kafka`](super::LogErrorKind::Kafka) for a refused
    /// creation (an invalid name or replication factor) or a leader that did not appear in
    /// time; [`Connection`](super::LogErrorKind::Connection) when no broker answers in time.
    pub async fn open(
        cluster: Arc<Cluster>,
        spec: TopicSpec,
        create: bool,
    ) -> Result<TopicLog, LogError> {
        check_name(&spec.name)?;
        let log = TopicLog {
            inner: Arc::new(Inner {
                cluster,
                topic: spec.name.clone(),
                max_message_bytes: AtomicUsize::new(0),
                leader: Mutex::default(),
            }),
        };
        let mut retry = Retry::new(&log.inner.cluster);
        let mut created = false;
        loop {
            let step = match log.partition().await {
                Ok(Partition::Led(node)) => {
                    log.leader().node = Some(node);
                    log.read_limits().await;
                    return Ok(log);
                }
                Ok(Partition::Missing { .. }) if !create => {
                    return Err(LogError::from(Cause::Missing {
                        topic: spec.name.clone(),
                    }));
                }
                Ok(Partition::Missing { controller }) if !created => {
                    match log.create(&spec, controller).await {
                        Ok(()) => {
                            created = true;
                            continue;
                        }
                        Err(step) => step,
                    }
                }
                // Just created: Metadata may not list it on every broker yet.
                Ok(Partition::Missing { .. }) => Step::Retry(log.kafka(
                    ApiKey::Metadata,
                    3,
                    None,
                    "created, but not yet in the broker's metadata",
                )),
                Err(step) => step,
            };
            match step {
                Step::Retry(e) => retry.wait(e).await?,
                Step::Fail(e) => return Err(e),
            }
        }
    }

    /// The topic's name.
    pub fn topic(&self) -> &str {
        &self.inner.topic
    }

    /// Appends `records` with `acks=-1` to partition 0's leader, in one batch; returns the
    /// offset of the first record (the others follow it). With no records, writes nothing and
    /// returns the end offset.
    ///
    /// # Errors
    /// [`RecordTooLarge`](super::LogErrorKind::RecordTooLarge) when the batch is over the topic's `max.message.bytes`;
    /// [`NotAuthorized`](super::LogErrorKind::NotAuthorized) without WRITE on the topic; [`Kafka`](super::LogErrorKind::Kafka) for other
    /// refusals or when retriable errors outlast the retry time.
    pub async fn append(&self, records: Vec<LogRecord>) -> Result<i64, LogError> {
        if records.is_empty() {
            return self.end_offset().await;
        }
        self.append_as(&records, Writer::Plain, None).await
    }

    /// Appends `records` (at least one) as `writer`, in one batch, inside the transaction of
    /// `transactional_id` when there is one; the offset of the first record. The batch is
    /// encoded once, so a retry after a lost answer sends the same sequence numbers and a
    /// transactional producer's copy is not written twice.
    pub(super) async fn append_as(
        &self,
        records: &[LogRecord],
        writer: Writer,
        transactional_id: Option<&str>,
    ) -> Result<i64, LogError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let batch = batch::encode(records, now, writer)?;
        let max = self.inner.max_message_bytes.load(Ordering::Relaxed);
        if max > 0 && batch.len() > max {
            return Err(LogError::from(Cause::RecordTooLarge {
                bytes: batch.len(),
                max,
            }));
        }
        let mut retry = Retry::new(&self.inner.cluster);
        loop {
            match self.produce(&batch, transactional_id).await {
                Ok(offset) => return Ok(offset),
                Err(Step::Retry(e)) => {
                    self.forget_leader();
                    retry.wait(e).await?;
                }
                Err(Step::Fail(e)) => return Err(e),
            }
        }
    }

    /// Fetches from offset `from`, waiting up to `max_wait` for records when there are none
    /// yet (a long poll). Records below `from` (a batch may start before it) are dropped.
    ///
    /// When `from` no longer exists (compacted or deleted away, or past the end of a topic
    /// that was recreated: OFFSET_OUT_OF_RANGE), the read starts over from the log start
    /// offset; `next_offset` tells where the next read should start in every case.
    ///
    /// # Errors
    /// [`NotAuthorized`](super::LogErrorKind::NotAuthorized) without READ on the topic; [`Corrupt`](super::LogErrorKind::Corrupt) for
    /// records kroupier cannot read; [`Kafka`](super::LogErrorKind::Kafka) for other refusals or when retriable
    /// errors outlast the retry time.
    pub async fn read(&self, from: i64, max_wait: Duration) -> Result<ReadBatch, LogError> {
        self.read_at(from, max_wait, Isolation::ReadUncommitted)
            .await
    }

    /// [`read`](Self::read) with read-committed isolation, as Kafka's consumers with
    /// `isolation.level=read_committed`: only records of committed transactions (and records
    /// written outside transactions), none of an aborted one. The broker answers up to the
    /// last stable offset, below which every transaction is decided, so an open transaction
    /// holds back what follows it until it ends. `end_offset` stays the high watermark: a
    /// reader that reads until `next_offset == end_offset` has then seen every transaction
    /// written before it began, decided, as Kafka Connect's read-committed readers do.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn read_committed(
        &self,
        from: i64,
        max_wait: Duration,
    ) -> Result<ReadBatch, LogError> {
        self.read_at(from, max_wait, Isolation::ReadCommitted).await
    }

    async fn read_at(
        &self,
        from: i64,
        max_wait: Duration,
        isolation: Isolation,
    ) -> Result<ReadBatch, LogError> {
        let mut from = from;
        let mut retry = Retry::new(&self.inner.cluster);
        loop {
            let step = match self.fetch(from, max_wait, isolation).await {
                Ok(Some(batch)) => return Ok(batch),
                Ok(None) => match self.list_offset(EARLIEST).await {
                    Ok(start) if start != from => {
                        let topic = &self.inner.topic;
                        tracing::debug!(%topic, from, start, "offset out of range: from the start");
                        from = start;
                        continue;
                    }
                    Ok(start) => Step::Retry(self.kafka(
                        ApiKey::Fetch,
                        1,
                        None,
                        &format!("the log start offset {start} is out of range"),
                    )),
                    Err(step) => step,
                },
                Err(step) => step,
            };
            match step {
                Step::Retry(e) => {
                    self.forget_leader();
                    retry.wait(e).await?;
                }
                Step::Fail(e) => return Err(e),
            }
        }
    }

    /// ListOffsets for the latest offset: the high watermark, the offset the next record will
    /// get.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn end_offset(&self) -> Result<i64, LogError> {
        let mut retry = Retry::new(&self.inner.cluster);
        loop {
            match self.list_offset(LATEST).await {
                Ok(offset) => return Ok(offset),
                Err(Step::Retry(e)) => {
                    self.forget_leader();
                    retry.wait(e).await?;
                }
                Err(Step::Fail(e)) => return Err(e),
            }
        }
    }

    /// The topic's config `key` as the broker reports it (DescribeConfigs), or `None` when the
    /// broker does not offer DescribeConfigs or has no such key.
    ///
    /// # Errors
    /// [`NotAuthorized`](super::LogErrorKind::NotAuthorized) without DESCRIBE_CONFIGS on the topic; [`Kafka`](super::LogErrorKind::Kafka)
    /// or [`Connection`](super::LogErrorKind::Connection) as for [`read`](Self::read).
    pub async fn config(&self, key: &str) -> Result<Option<String>, LogError> {
        let mut retry = Retry::new(&self.inner.cluster);
        loop {
            match self.describe(&[key]).await {
                Ok(configs) => {
                    return Ok(configs
                        .into_iter()
                        .flatten()
                        .find(|(k, _)| k == key)
                        .and_then(|(_, v)| v));
                }
                Err(Step::Retry(e)) => retry.wait(e).await?,
                Err(Step::Fail(e)) => return Err(e),
            }
        }
    }

    /// Reads `max.message.bytes` and checks `cleanup.policy`, once, where the broker offers
    /// DescribeConfigs. Best effort: without it, an oversized batch is refused by the broker.
    async fn read_limits(&self) {
        let topic = &self.inner.topic;
        let configs = match self.describe(&[CLEANUP_POLICY, MAX_MESSAGE_BYTES]).await {
            Ok(Some(configs)) => configs,
            Ok(None) => return,
            Err(Step::Retry(e) | Step::Fail(e)) => {
                tracing::debug!(%topic, error = %e, "could not read the topic's configs");
                return;
            }
        };
        for (key, value) in configs {
            match (key.as_str(), value) {
                (MAX_MESSAGE_BYTES, Some(v)) => {
                    if let Ok(max) = v.parse::<usize>() {
                        self.inner.max_message_bytes.store(max, Ordering::Relaxed);
                    }
                }
                (CLEANUP_POLICY, Some(policy)) if !policy.split(',').any(|p| p == "compact") => {
                    tracing::warn!(
                        %topic,
                        %policy,
                        "the topic is not compacted: retention will delete old records, and \
                         the latest record of a key with them; set cleanup.policy=compact"
                    );
                }
                _ => {}
            }
        }
    }

    /// DescribeConfigs for `keys` of the topic; `None` when the broker does not offer it.
    async fn describe(&self, keys: &[&str]) -> Result<Option<Vec<(String, Option<String>)>>, Step> {
        let connection = self.inner.cluster.any_broker().await?;
        if connection.versions().get(ApiKey::DescribeConfigs).is_none() {
            return Ok(None);
        }
        let request = DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(TOPIC_RESOURCE)
                .with_resource_name(StrBytes::from_string(self.inner.topic.clone()))
                .with_configuration_keys(Some(
                    keys.iter()
                        .map(|k| StrBytes::from_string((*k).to_owned()))
                        .collect(),
                )),
        ]);
        let response = connection.send(&request).await?;
        let Some(result) = response
            .results
            .into_iter()
            .find(|r| r.resource_name.as_str() == self.inner.topic)
        else {
            return Err(Step::Retry(self.kafka(
                ApiKey::DescribeConfigs,
                -1,
                None,
                "the DescribeConfigs answer does not mention the topic",
            )));
        };
        let message = result.error_message.as_ref().map(|m| m.to_string());
        match result.error_code {
            0 => Ok(Some(
                result
                    .configs
                    .into_iter()
                    .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                    .collect(),
            )),
            // TOPIC_AUTHORIZATION_FAILED: reading configs takes its own ACL.
            29 => Err(Step::Fail(LogError::from(Cause::NotAuthorized {
                topic: self.inner.topic.clone(),
                operation: "read",
                hint: format!(
                    "grant DESCRIBE_CONFIGS on Topic:{0} to this client's principal \
                     (kafka-acls.sh --add --allow-principal User:NAME --operation \
                     DescribeConfigs --topic {0})",
                    self.inner.topic
                ),
            }))),
            code => Err(self.refusal(ApiKey::DescribeConfigs, code, message, "read")),
        }
    }

    fn leader(&self) -> std::sync::MutexGuard<'_, Leader> {
        self.inner.leader.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn forget_leader(&self) {
        *self.leader() = Leader::default();
    }

    fn name(&self) -> TopicName {
        TopicName(StrBytes::from_string(self.inner.topic.clone()))
    }

    fn request_timeout(&self) -> Duration {
        self.inner.cluster.config().connection.request_timeout
    }

    /// A connection to partition 0's leader for `role`, kept while it is open.
    async fn connection(&self, role: Role) -> Result<BrokerConnection, Step> {
        let (node, kept) = {
            let leader = self.leader();
            let kept = match role {
                Role::Read => leader.reader.clone(),
                Role::Write => leader.writer.clone(),
            };
            (leader.node.clone(), kept)
        };
        if let Some(connection) = kept.filter(|c| !c.is_closed()) {
            return Ok(connection);
        }
        let node = match node {
            Some(node) => node,
            None => match self.partition().await? {
                Partition::Led(node) => node,
                Partition::Missing { .. } => {
                    return Err(Step::Retry(self.kafka(
                        ApiKey::Metadata,
                        3,
                        None,
                        "the topic is not in the broker's metadata",
                    )));
                }
            },
        };
        let connection = self.inner.cluster.connect(&node.addr()).await?;
        let mut leader = self.leader();
        leader.node = Some(node);
        match role {
            Role::Read => leader.reader = Some(connection.clone()),
            Role::Write => leader.writer = Some(connection.clone()),
        }
        Ok(connection)
    }

    /// Metadata for the topic: partition 0's leader, or that the topic is missing.
    async fn partition(&self) -> Result<Partition, Step> {
        let connection = self.inner.cluster.any_broker().await?;
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(self.name())),
            ]))
            .with_allow_auto_topic_creation(false);
        let response = connection.send(&request).await?;
        let node = |id: BrokerId| {
            response
                .brokers
                .iter()
                .find(|b| b.node_id == id)
                .map(|b| BrokerNode {
                    node_id: b.node_id.0,
                    host: b.host.to_string(),
                    port: b.port,
                })
        };
        let topic = response.topics.iter().find(|t| {
            t.name
                .as_ref()
                .is_some_and(|n| n.0.as_str() == self.inner.topic)
        });
        let Some(topic) = topic else {
            return Err(Step::Retry(self.kafka(
                ApiKey::Metadata,
                -1,
                None,
                "the Metadata answer does not mention the topic",
            )));
        };
        match topic.error_code {
            0 => {}
            3 => {
                return Ok(Partition::Missing {
                    controller: node(response.controller_id),
                });
            }
            code => return Err(self.refusal(ApiKey::Metadata, code, None, "read")),
        }
        let Some(partition) = topic.partitions.iter().find(|p| p.partition_index == 0) else {
            return Err(Step::Retry(self.kafka(
                ApiKey::Metadata,
                -1,
                None,
                "partition 0 is not in the broker's metadata yet",
            )));
        };
        if partition.error_code != 0 && partition.error_code != 5 {
            return Err(self.refusal(ApiKey::Metadata, partition.error_code, None, "read"));
        }
        match node(partition.leader_id) {
            Some(leader) => Ok(Partition::Led(leader)),
            None => Err(Step::Retry(self.kafka(
                ApiKey::Metadata,
                5,
                None,
                &format!(
                    "partition 0 has no leader (leader id {})",
                    partition.leader_id.0
                ),
            ))),
        }
    }

    /// CreateTopics: one partition, compacted, to the controller Metadata named (any broker
    /// forwards it in KRaft clusters).
    async fn create(&self, spec: &TopicSpec, controller: Option<BrokerNode>) -> Result<(), Step> {
        let connection = match controller {
            Some(node) => self.inner.cluster.node(&node).await?,
            None => self.inner.cluster.any_broker().await?,
        };
        let timeout = self.request_timeout();
        let request = CreateTopicsRequest::default()
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(self.name())
                    .with_num_partitions(1)
                    .with_replication_factor(spec.replication_factor.unwrap_or(-1))
                    .with_configs(vec![
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_static_str(COMPACT.0))
                            .with_value(Some(StrBytes::from_static_str(COMPACT.1))),
                    ]),
            ])
            .with_timeout_ms(millis(timeout));
        let response = connection.send(&request).await?;
        let Some(result) = response
            .topics
            .iter()
            .find(|t| t.name.0.as_str() == self.inner.topic)
        else {
            return Err(Step::Retry(self.kafka(
                ApiKey::CreateTopics,
                -1,
                None,
                "the CreateTopics answer does not mention the topic",
            )));
        };
        let message = result.error_message.as_ref().map(|m| m.to_string());
        match result.error_code {
            0 => {
                let max = result
                    .configs
                    .iter()
                    .flatten()
                    .find(|c| c.name.as_str() == "max.message.bytes")
                    .and_then(|c| c.value.as_ref()?.parse::<usize>().ok());
                if let Some(max) = max {
                    self.inner.max_message_bytes.store(max, Ordering::Relaxed);
                }
                tracing::info!(topic = %self.inner.topic, "created compacted log topic");
                Ok(())
            }
            // TOPIC_ALREADY_EXISTS: another client created it first.
            36 => Ok(()),
            // NOT_CONTROLLER: the controller moved; ask Metadata again.
            41 => Err(Step::Retry(self.kafka(
                ApiKey::CreateTopics,
                41,
                message,
                "",
            ))),
            code => Err(self.refusal(ApiKey::CreateTopics, code, message, "create")),
        }
    }

    /// Produce `batch` to partition 0, in the transaction of `transactional_id` if any; its
    /// base offset.
    async fn produce(&self, batch: &Bytes, transactional_id: Option<&str>) -> Result<i64, Step> {
        let connection = self.connection(Role::Write).await?;
        let mut version = connection
            .version(ApiKey::Produce)?
            .min(MAX_VERSION_BY_NAME);
        if transactional_id.is_some() {
            // Produce v12 tells a Kafka 4 broker that the producer uses transaction version 2
            // (KIP-890), which ends transactions differently; kroupier's producer adds its
            // partitions with AddPartitionsToTxn and ends them with EndTxn v4 or older.
            version = version.min(MAX_TRANSACTIONAL_PRODUCE);
        }
        let timeout = self.request_timeout();
        let request = ProduceRequest::default()
            .with_transactional_id(
                transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.to_owned()))),
            )
            .with_acks(-1)
            .with_timeout_ms(millis(timeout))
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(self.name())
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(batch.clone())),
                    ]),
            ]);
        // The broker waits up to `timeout` for the replicas; allow for the way back.
        let response = connection
            .send_at(&request, version, timeout + Duration::from_secs(5))
            .await?;
        let partition = response
            .responses
            .iter()
            .filter(|t| t.name.0.as_str() == self.inner.topic)
            .flat_map(|t| &t.partition_responses)
            .find(|p| p.index == 0);
        let Some(partition) = partition else {
            return Err(Step::Retry(self.kafka(
                ApiKey::Produce,
                -1,
                None,
                "the Produce answer does not mention partition 0",
            )));
        };
        let message = partition.error_message.as_ref().map(|m| m.to_string());
        match partition.error_code {
            0 => Ok(partition.base_offset),
            // MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE.
            10 | 18 => Err(Step::Fail(LogError::from(Cause::RecordTooLarge {
                bytes: batch.len(),
                max: self.inner.max_message_bytes.load(Ordering::Relaxed),
            }))),
            code => Err(self.refusal(ApiKey::Produce, code, message, "write")),
        }
    }

    /// One Fetch from `from`: the batch, or `None` for OFFSET_OUT_OF_RANGE.
    async fn fetch(
        &self,
        from: i64,
        max_wait: Duration,
        isolation: Isolation,
    ) -> Result<Option<ReadBatch>, Step> {
        let connection = self.connection(Role::Read).await?;
        let version = connection.version(ApiKey::Fetch)?.min(MAX_VERSION_BY_NAME);
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(millis(max_wait))
            .with_min_bytes(1)
            .with_max_bytes(FETCH_MAX_BYTES)
            .with_isolation_level(isolation as i8)
            // No fetch session: session id 0, epoch -1 (FINAL_EPOCH).
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(self.name())
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(from)
                            .with_partition_max_bytes(FETCH_MAX_BYTES),
                    ]),
            ]);
        let response = connection
            .send_at(&request, version, self.request_timeout() + max_wait)
            .await?;
        if response.error_code != 0 {
            return Err(self.refusal(ApiKey::Fetch, response.error_code, None, "read"));
        }
        let partition = response
            .responses
            .into_iter()
            .filter(|t| t.topic.0.as_str() == self.inner.topic)
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == 0);
        let Some(partition) = partition else {
            return Err(Step::Retry(self.kafka(
                ApiKey::Fetch,
                -1,
                None,
                "the Fetch answer does not mention partition 0",
            )));
        };
        match partition.error_code {
            0 => {}
            // OFFSET_OUT_OF_RANGE.
            1 => return Ok(None),
            code => return Err(self.refusal(ApiKey::Fetch, code, None, "read")),
        }
        let aborted: Vec<Aborted> = partition
            .aborted_transactions
            .iter()
            .flatten()
            .map(|a| Aborted {
                producer_id: a.producer_id.0,
                first_offset: a.first_offset,
            })
            .collect();
        let decoded = batch::decode(
            &self.inner.topic,
            partition.records.unwrap_or_default(),
            from,
            &aborted,
        )
        .map_err(Step::Fail)?;
        Ok(Some(ReadBatch {
            records: decoded.records,
            next_offset: decoded.next_offset.map_or(from, |n| n.max(from)),
            end_offset: partition.high_watermark,
        }))
    }

    /// ListOffsets for partition 0 at `timestamp` (LATEST or EARLIEST).
    async fn list_offset(&self, timestamp: i64) -> Result<i64, Step> {
        let connection = self.connection(Role::Write).await?;
        let version = connection.version(ApiKey::ListOffsets)?;
        let mut request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(self.name())
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(timestamp),
                    ]),
            ]);
        if version >= 10 {
            request.timeout_ms = millis(self.request_timeout());
        }
        let response = connection
            .send_at(&request, version, self.request_timeout())
            .await?;
        let partition = response
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == self.inner.topic)
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition_index == 0);
        let Some(partition) = partition else {
            return Err(Step::Retry(self.kafka(
                ApiKey::ListOffsets,
                -1,
                None,
                "the ListOffsets answer does not mention partition 0",
            )));
        };
        match partition.error_code {
            0 => Ok(partition.offset),
            code => Err(self.refusal(ApiKey::ListOffsets, code, None, "read")),
        }
    }

    /// A Kafka error code while doing `operation`: authorization failures name the ACL,
    /// retriable errors are retried, the rest fail.
    fn refusal(
        &self,
        api: ApiKey,
        code: i16,
        message: Option<String>,
        operation: &'static str,
    ) -> Step {
        let topic = &self.inner.topic;
        match code {
            // TOPIC_AUTHORIZATION_FAILED.
            29 => Step::Fail(LogError::from(Cause::NotAuthorized {
                topic: topic.clone(),
                operation,
                hint: topic_acl_hint(topic, operation),
            })),
            // CLUSTER_AUTHORIZATION_FAILED.
            31 => Step::Fail(LogError::from(Cause::NotAuthorized {
                topic: topic.clone(),
                operation,
                hint: format!(
                    "the broker wants a cluster permission for {api:?}: grant {} on the \
                     cluster to this client's principal (kafka-acls.sh --add \
                     --allow-principal User:NAME --operation {} --cluster){}",
                    if operation == "create" {
                        "CREATE"
                    } else {
                        "IDEMPOTENT_WRITE"
                    },
                    if operation == "create" {
                        "Create"
                    } else {
                        "IdempotentWrite"
                    },
                    if operation == "create" {
                        format!(", or {}", create_it_yourself(topic))
                    } else {
                        String::new()
                    }
                ),
            })),
            code if ResponseError::try_from_code(code).is_some_and(|e| e.is_retriable()) => {
                Step::Retry(self.kafka(api, code, message, ""))
            }
            code => Step::Fail(self.kafka(api, code, message, "")),
        }
    }

    /// A [`Kafka`](super::LogErrorKind::Kafka) naming the topic, Kafka's error and the broker's message.
    fn kafka(&self, api: ApiKey, code: i16, message: Option<String>, context: &str) -> LogError {
        let error = ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code));
        let mut text = format!("topic `{}`: {error:?}", self.inner.topic);
        if code != -1 {
            text.push_str(&format!(" ({error})"));
        }
        for part in [message.as_deref().unwrap_or(""), context] {
            if !part.is_empty() {
                text.push_str(": ");
                text.push_str(part);
            }
        }
        if code == 38 {
            // INVALID_REPLICATION_FACTOR.
            text.push_str(
                "; the replication factor is higher than the number of brokers: lower it",
            );
        }
        LogError::from(Cause::Kafka {
            api,
            code,
            message: text,
        })
    }
}

/// The ACL a topic operation needs.
fn topic_acl_hint(topic: &str, operation: &'static str) -> String {
    let (acl, flag) = match operation {
        "create" => ("CREATE", "Create"),
        "write" => ("WRITE", "Write"),
        _ => ("READ", "Read"),
    };
    let mut hint = format!(
        "grant {acl} and DESCRIBE on Topic:{topic} to this client's principal (kafka-acls.sh \
         --add --allow-principal User:NAME --operation {flag} --operation Describe --topic \
         {topic})"
    );
    if operation == "create" {
        hint.push_str(&format!(", or {}", create_it_yourself(topic)));
    }
    hint
}

fn create_it_yourself(topic: &str) -> String {
    format!(
        "create the topic beforehand (kafka-topics.sh --create --topic {topic} --partitions 1 \
         --config cleanup.policy=compact)"
    )
}

/// Kafka's rule for topic names: 1 to 249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
fn check_name(name: &str) -> Result<(), LogError> {
    let valid = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(LogError::from(Cause::Kafka {
            api: ApiKey::CreateTopics,
            code: 17,
            message: format!(
                "topic `{name}`: InvalidTopicException: Kafka topic names are 1 to 249 \
                 characters of [a-zA-Z0-9._-] (and not `.` or `..`); choose another name"
            ),
        }))
    }
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
