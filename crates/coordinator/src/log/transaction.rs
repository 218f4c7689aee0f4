//! [`TransactionalProducer`]: Kafka transactions over [`TopicLog`]s.
//!
//! What Kafka's producer does with `transactional.id` set, for appends to logs: the records
//! appended to any number of logs in one [`Transaction`] become visible to read-committed
//! readers ([`TopicLog::read_committed`]) all at once when it commits, or never.
//!
//! # Fencing
//! [`TransactionalProducer::init`] sends InitProducerId with the transactional id and no
//! producer id. The transaction coordinator then bumps the id's epoch and aborts the
//! transaction an older producer of the same id left open. From then on every request of the
//! older producer (Produce, AddPartitionsToTxn, EndTxn) is refused as PRODUCER_FENCED or
//! INVALID_PRODUCER_EPOCH, whether it is a process that crashed, one paused past its session,
//! or one cut off from the group by a partition: its records are never committed. This is
//! why an owner calls `init` before it acts, and why the id must be the same for every owner
//! of the same work and differ between pieces of work.
//!
//! # Failures
//! A producer that was fenced stays fenced: every call returns
//! [`Fenced`](TransactionErrorKind::Fenced). Any other failure inside a transaction (an append or a
//! commit that did not complete, or whose outcome is unknown) makes the transaction fail: it
//! never commits. The next [`begin`](TransactionalProducer::begin) first bumps the epoch with
//! this producer's own id and epoch (KIP-360, InitProducerId v3, Kafka 2.5), which aborts the
//! failed transaction without fencing anyone but an older self; a newer owner's producer
//! makes that bump fail as fenced instead.
//!
//! The producer speaks the classic transaction protocol (AddPartitionsToTxn, then Produce of
//! version 11 or older, then EndTxn of version 4 or older), which every Kafka from 2.5 to 4.x
//! serves; on Kafka 3.6 and later the broker also verifies each transactional Produce against
//! the transaction (KIP-890, part 1), which closes the hanging-transaction window.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, EndTxnRequest, InitProducerIdRequest, ProducerId, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::batch::Writer;
use super::{LogError, LogRecord, TopicLog};
use crate::backoff::Backoff;
use crate::connection::Detail;
use crate::connection::{BrokerConnection, Cluster, ConnectionError, TRANSACTION_KEY, lookup};
use crate::wire::WireRequest;

/// The oldest InitProducerId version the producer sends: v3 (Kafka 2.5) takes the producer's
/// own id and epoch, which lets it abort a failed transaction without fencing a newer owner.
const MIN_INIT_PRODUCER_ID: i16 = 3;
/// The newest AddPartitionsToTxn version a client sends (v4 and later are between brokers).
const MAX_ADD_PARTITIONS: i16 = 3;
/// The newest EndTxn version the producer sends: v5 ends a transaction under transaction
/// version 2 (KIP-890, part 2), which bumps the epoch at every commit.
const MAX_END_TXN: i16 = 4;
/// The first delay before retrying after CONCURRENT_TRANSACTIONS.
const CONCURRENT_RETRY: Duration = Duration::from_millis(10);

/// A producer that writes to [`TopicLog`]s in Kafka transactions, under one transactional id.
///
/// # Examples
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kroupier_coordinator::connection::{Cluster, ClusterConfig};
/// use kroupier_coordinator::log::{LogRecord, TopicLog, TopicSpec, TransactionalProducer};
///
/// let cluster = Arc::new(Cluster::new(ClusterConfig::new("127.0.0.1:9092"))?);
/// let out = TopicLog::open(cluster.clone(), TopicSpec::new("numbers"), true).await?;
/// let mut producer =
///     TransactionalProducer::init(cluster, "numbers-writer", Duration::from_secs(60)).await?;
/// let mut transaction = producer.begin().await?;
/// transaction.append(&out, vec![LogRecord::new("1", "one")]).await?;
/// transaction.commit().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TransactionalProducer {
    cluster: Arc<Cluster>,
    id: String,
    timeout: Duration,
    producer_id: i64,
    epoch: i16,
    coordinator: Option<BrokerConnection>,
    /// The next sequence number per log (partition 0 of its topic).
    sequences: HashMap<String, i32>,
    state: State,
}

#[derive(Debug)]
enum State {
    /// No transaction open.
    Ready,
    /// A transaction is open, with these topics added to it.
    Open(BTreeSet<String>),
    /// A call failed with the transaction's outcome or the sequences unknown: the next
    /// `begin` bumps the epoch first, which aborts it.
    Failed(String),
    /// A newer producer took the transactional id. Terminal.
    Fenced,
}

/// One open transaction of a [`TransactionalProducer`]. Dropping it without
/// [`commit`](Self::commit) leaves it to be aborted: by the producer's next
/// [`begin`](TransactionalProducer::begin), by a newer owner's `init`, or by the broker when the
/// transaction timeout passes.
#[derive(Debug)]
pub struct Transaction<'a> {
    producer: &'a mut TransactionalProducer,
}

/// Why a transactional call failed. Its message names the transactional id (or the broker) and
/// says what to do; [`kind`](Self::kind) sorts it for code.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct TransactionError(Cause);

/// What kind of [`TransactionError`] happened.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionErrorKind {
    /// A newer producer with the same transactional id took over (PRODUCER_FENCED or
    /// INVALID_PRODUCER_EPOCH): this producer may not write again; stop.
    Fenced,
    /// The principal may not use the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED):
    /// grant the ACL the message names.
    NotAuthorized,
    /// The broker serves no transactions, or too old a version of them.
    Unsupported,
    /// The transaction failed and will never commit: begin a new one, from the state the last
    /// committed one left.
    Failed,
    /// The transaction coordinator refused a request with an error retrying does not fix, or
    /// retriable errors outlasted the cluster's `coordinator_lookup_timeout`.
    Kafka,
    /// Appending records failed (the log's own errors: an ACL on the topic, a size limit).
    Log,
    /// No broker connection could be made or kept.
    Connection,
}

impl TransactionError {
    /// What kind of error this is.
    pub fn kind(&self) -> TransactionErrorKind {
        use TransactionErrorKind as Kind;
        match &self.0 {
            Cause::Fenced { .. } => Kind::Fenced,
            Cause::NotAuthorized { .. } => Kind::NotAuthorized,
            Cause::Unsupported { .. } => Kind::Unsupported,
            Cause::Failed { .. } => Kind::Failed,
            Cause::Kafka { .. } => Kind::Kafka,
            Cause::Log(_) => Kind::Log,
            Cause::Connection(_) => Kind::Connection,
        }
    }
}

impl From<Cause> for TransactionError {
    fn from(cause: Cause) -> Self {
        Self(cause)
    }
}

impl From<LogError> for TransactionError {
    fn from(error: LogError) -> Self {
        Self(Cause::Log(error))
    }
}

impl From<ConnectionError> for TransactionError {
    fn from(error: ConnectionError) -> Self {
        Self(Cause::Connection(error))
    }
}

/// The error's parts, as its message names them.
#[derive(Debug, thiserror::Error)]
enum Cause {
    /// A newer producer with the same transactional id took over (PRODUCER_FENCED or
    /// INVALID_PRODUCER_EPOCH). This producer may not write again; what it left open was
    /// aborted by the broker.
    #[error(
        "transactional id `{transactional_id}` was taken over by a newer producer; this one is \
         fenced and may not write again"
    )]
    Fenced {
        /// The transactional id.
        transactional_id: String,
    },
    /// The principal may not use the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
    #[error("not authorized to use transactional id `{transactional_id}`: {hint}")]
    NotAuthorized {
        /// The transactional id.
        transactional_id: String,
        /// The ACL to grant.
        hint: String,
    },
    /// The broker serves no transactions, or too old a version of them.
    #[error(
        "the broker at {addr} does not serve Kafka transactions ({api:?} v{min} or later \
         missing): transactions need Apache Kafka 2.5 or later; kroupier's embedded \
         coordinator serves none"
    )]
    Unsupported {
        /// The broker.
        addr: String,
        /// The API it lacks.
        api: ApiKey,
        /// The oldest version kroupier can use.
        min: i16,
    },
    /// The transaction failed and will never commit: an earlier call of it failed, or its
    /// commit could not complete. Begin a new one, from the state the last committed one
    /// left.
    #[error("the transaction of `{transactional_id}` failed and will not commit: {reason}")]
    Failed {
        /// The transactional id.
        transactional_id: String,
        /// What failed.
        reason: String,
    },
    /// The transaction coordinator refused the request with an error retrying does not fix,
    /// or retriable errors outlasted the cluster's `coordinator_lookup_timeout`.
    #[error("{api:?} for transactional id `{transactional_id}` failed: {message}")]
    Kafka {
        /// The transactional id.
        transactional_id: String,
        /// The API that failed.
        api: ApiKey,
        /// Kafka's error code (-1 when no answer came).
        code: i16,
        /// Kafka's name for the error, the broker's message and what to do.
        message: String,
    },
    /// Appending records failed (the log's own errors: an ACL on the topic, a size limit).
    #[error(transparent)]
    Log(LogError),
    /// No broker connection could be made or kept.
    #[error(transparent)]
    Connection(ConnectionError),
}

/// What one attempt at a request to the transaction coordinator ended with, when not done.
enum Attempt {
    /// Transient: look the coordinator up again if `forget`, and retry after a backoff.
    Retry {
        forget: bool,
        why: String,
        /// CONCURRENT_TRANSACTIONS: the previous transaction's markers are being written,
        /// which takes milliseconds; retry after [`CONCURRENT_RETRY`], as Kafka's producer
        /// retries its AddPartitionsToTxn after 20 ms, not after the full retry backoff.
        soon: bool,
    },
    /// Final.
    Fail(TransactionError),
}

impl TransactionalProducer {
    /// A producer for `transactional_id`: finds its transaction coordinator and sends
    /// InitProducerId, which fences every older producer of the id and aborts what it left
    /// open. `transaction_timeout` is how long the broker lets a transaction stay open before
    /// it aborts it (Kafka's `transaction.timeout.ms`; at most the broker's
    /// `transaction.max.timeout.ms`, 15 minutes by default).
    ///
    /// # Errors
    /// [`Unsupported`](TransactionErrorKind::Unsupported) on a broker without transactions (the embedded
    /// coordinator); [`NotAuthorized`](TransactionErrorKind::NotAuthorized) without WRITE on the transactional
    /// id; [`Kafka`](TransactionErrorKind::Kafka) for other refusals, such as a timeout over the broker's
    /// maximum.
    pub async fn init(
        cluster: Arc<Cluster>,
        transactional_id: impl Into<String>,
        transaction_timeout: Duration,
    ) -> Result<Self, TransactionError> {
        let id = transactional_id.into();
        let mut producer = TransactionalProducer {
            cluster,
            id,
            timeout: transaction_timeout,
            producer_id: -1,
            epoch: -1,
            coordinator: None,
            sequences: HashMap::new(),
            state: State::Ready,
        };
        if producer.id.is_empty() {
            return Err(producer.kafka(
                ApiKey::InitProducerId,
                -1,
                "a transactional id is not empty: name the work it writes for".to_owned(),
            ));
        }
        let broker = producer.cluster.any_broker().await?;
        let offered = broker.versions().get(ApiKey::InitProducerId);
        if offered.is_none_or(|v| v < MIN_INIT_PRODUCER_ID) {
            return Err(TransactionError::from(Cause::Unsupported {
                addr: broker.addr().to_owned(),
                api: ApiKey::InitProducerId,
                min: MIN_INIT_PRODUCER_ID,
            }));
        }
        producer.init_producer_id().await?;
        Ok(producer)
    }

    /// Begins a transaction. A transaction left open by a dropped [`Transaction`] is aborted
    /// first; after a failed one, the epoch is bumped first (which aborts it).
    ///
    /// # Errors
    /// [`Fenced`](TransactionErrorKind::Fenced) once a newer producer took the id; the errors of
    /// [`init`](Self::init) for the abort or the bump.
    pub async fn begin(&mut self) -> Result<Transaction<'_>, TransactionError> {
        match std::mem::replace(&mut self.state, State::Ready) {
            State::Fenced => {
                self.state = State::Fenced;
                return Err(self.fenced());
            }
            State::Ready => {}
            State::Open(topics) => {
                if !topics.is_empty() {
                    // Until the abort is answered the transaction stays open on the broker: a
                    // failed abort must not let the next transaction join it.
                    if let Err(error) = self.end(false).await {
                        return Err(self.fail_with(error));
                    }
                }
            }
            // Still failed (unless fenced) if the bump fails: the next begin bumps again.
            State::Failed(_) => {
                if let Err(error) = self.init_producer_id().await {
                    return Err(self.fail_with(error));
                }
            }
        }
        self.state = State::Open(BTreeSet::new());
        Ok(Transaction { producer: self })
    }

    /// InitProducerId: with no producer id at first (which fences older producers), with this
    /// producer's id and epoch after a failure (which fences only older selves). Sequences
    /// start over.
    async fn init_producer_id(&mut self) -> Result<(), TransactionError> {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(self.txn_id()))
            .with_transaction_timeout_ms(millis(self.timeout))
            .with_producer_id(ProducerId(self.producer_id))
            .with_producer_epoch(self.epoch);
        let response = self
            .call(&request, i16::MAX, |r| (r.error_code, None))
            .await?;
        self.producer_id = response.producer_id.0;
        self.epoch = response.producer_epoch;
        self.sequences.clear();
        self.state = State::Ready;
        tracing::debug!(
            transactional_id = %self.id,
            producer_id = self.producer_id,
            epoch = self.epoch,
            "transactional producer initialized"
        );
        Ok(())
    }

    /// EndTxn, committing or aborting; the state is Ready after it.
    async fn end(&mut self, commit: bool) -> Result<(), TransactionError> {
        let request = self.end_request(commit);
        self.call(&request, MAX_END_TXN, |r| (r.error_code, None))
            .await?;
        self.state = State::Ready;
        Ok(())
    }

    /// The EndTxn request that commits or aborts the open transaction.
    fn end_request(&self, commit: bool) -> EndTxnRequest {
        EndTxnRequest::default()
            .with_transactional_id(self.txn_id())
            .with_producer_id(ProducerId(self.producer_id))
            .with_producer_epoch(self.epoch)
            .with_committed(commit)
    }

    /// AddPartitionsToTxn for partition 0 of `topic`.
    async fn add(&mut self, topic: &str) -> Result<(), TransactionError> {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(self.txn_id())
            .with_v3_and_below_producer_id(ProducerId(self.producer_id))
            .with_v3_and_below_producer_epoch(self.epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partitions(vec![0]),
            ]);
        self.call(&request, MAX_ADD_PARTITIONS, |r| {
            // The first partition error; OPERATION_NOT_ATTEMPTED (55) only says another
            // partition of the same request failed.
            let code = r
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| &t.results_by_partition)
                .map(|p| p.partition_error_code)
                .find(|&c| c != 0 && c != 55)
                .unwrap_or(0);
            (code, Some(format!("topic `{topic}`")))
        })
        .await
        .map(drop)
    }

    /// Sends `request` to the transaction coordinator at the negotiated version (at most
    /// `max_version`), retrying transient errors with the cluster's backoff until its
    /// `coordinator_lookup_timeout`; `error_of` reads the answer's error code (and what it
    /// concerns).
    async fn call<R: WireRequest>(
        &mut self,
        request: &R,
        max_version: i16,
        error_of: impl Fn(&R::Response) -> (i16, Option<String>),
    ) -> Result<R::Response, TransactionError> {
        let config = self.cluster.config();
        let deadline = Instant::now() + config.coordinator_lookup_timeout;
        let mut backoff = Backoff::new(config.retry_backoff, config.retry_backoff_max);
        let mut soon_backoff = Backoff::new(CONCURRENT_RETRY, config.retry_backoff);
        loop {
            let attempt = match self.coordinator().await {
                Ok(connection) => {
                    match self
                        .send(&connection, request, max_version, &error_of)
                        .await
                    {
                        Ok(response) => return Ok(response),
                        Err(attempt) => attempt,
                    }
                }
                Err(attempt) => attempt,
            };
            let (forget, why, soon) = match attempt {
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry { forget, why, soon } => (forget, why, soon),
            };
            if forget {
                self.coordinator = None;
            }
            let delay = if soon {
                soon_backoff.next_delay()
            } else {
                backoff.next_delay()
            };
            let at = Instant::now() + delay;
            if at > deadline {
                return Err(self.kafka(
                    R::API_KEY,
                    -1,
                    format!("no success before the lookup timeout; last: {why}"),
                ));
            }
            tracing::debug!(transactional_id = %self.id, api = ?R::API_KEY, %why, "retrying");
            tokio::time::sleep_until(at).await;
        }
    }

    async fn send<R: WireRequest>(
        &self,
        connection: &BrokerConnection,
        request: &R,
        max_version: i16,
        error_of: &impl Fn(&R::Response) -> (i16, Option<String>),
    ) -> Result<R::Response, Attempt> {
        let version = connection
            .version(R::API_KEY)
            .map_err(|_| {
                Attempt::Fail(TransactionError::from(Cause::Unsupported {
                    addr: connection.addr().to_owned(),
                    api: R::API_KEY,
                    min: 0,
                }))
            })?
            .min(max_version);
        let timeout = self.cluster.config().connection.request_timeout;
        let response = connection
            .send_at(request, version, timeout)
            .await
            .map_err(|e| self.disconnected(e))?;
        match error_of(&response) {
            (0, _) => Ok(response),
            (code, about) => Err(self.refusal(R::API_KEY, code, about)),
        }
    }

    /// A connection to the transaction coordinator, found once and kept while it is open.
    async fn coordinator(&mut self) -> Result<BrokerConnection, Attempt> {
        if let Some(connection) = self.coordinator.as_ref().filter(|c| !c.is_closed()) {
            return Ok(connection.clone());
        }
        let broker = self
            .cluster
            .any_broker()
            .await
            .map_err(|e| self.disconnected(e))?;
        let node = match lookup(&broker, &self.id, TRANSACTION_KEY).await {
            Ok(node) => node,
            Err(e) => match e.into_detail() {
                Detail::Kafka { code, message, .. } => {
                    return Err(self.refusal(ApiKey::FindCoordinator, code, message));
                }
                other => return Err(self.disconnected(other.into())),
            },
        };
        let connection = self
            .cluster
            .node(&node)
            .await
            .map_err(|e| self.disconnected(e))?;
        self.coordinator = Some(connection.clone());
        Ok(connection)
    }

    /// A connection error: retried when the connection broke, final otherwise (TLS, SASL).
    fn disconnected(&self, error: ConnectionError) -> Attempt {
        if error.is_disconnect() {
            Attempt::Retry {
                forget: true,
                why: error.to_string(),
                soon: false,
            }
        } else {
            Attempt::Fail(TransactionError::from(Cause::Connection(error)))
        }
    }

    /// A Kafka error code from the transaction coordinator, classified as Kafka's producer
    /// does.
    fn refusal(&self, api: ApiKey, code: i16, about: Option<String>) -> Attempt {
        let error = ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code));
        let why = || format!("{error:?} ({error})");
        match code {
            // INVALID_PRODUCER_EPOCH, PRODUCER_FENCED.
            47 | 90 => Attempt::Fail(self.fenced()),
            // TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
            53 => Attempt::Fail(TransactionError::from(Cause::NotAuthorized {
                transactional_id: self.id.clone(),
                hint: format!(
                    "grant WRITE and DESCRIBE on TransactionalId:{0} to this client's \
                     principal (kafka-acls.sh --add --allow-principal User:NAME --operation \
                     Write --operation Describe --transactional-id {0})",
                    self.id
                ),
            })),
            // TOPIC_AUTHORIZATION_FAILED (AddPartitionsToTxn).
            29 => Attempt::Fail(self.kafka(
                api,
                code,
                format!(
                    "{}: grant WRITE on the topic to this client's principal",
                    about.unwrap_or_else(why)
                ),
            )),
            // COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: the coordinator moved.
            15 | 16 => Attempt::Retry {
                forget: true,
                why: why(),
                soon: false,
            },
            // COORDINATOR_LOAD_IN_PROGRESS.
            14 => Attempt::Retry {
                forget: false,
                why: why(),
                soon: false,
            },
            // CONCURRENT_TRANSACTIONS: the previous transaction's markers are still being
            // written.
            51 => Attempt::Retry {
                forget: false,
                why: why(),
                soon: true,
            },
            // INVALID_TRANSACTION_TIMEOUT.
            50 => Attempt::Fail(self.kafka(
                api,
                code,
                format!(
                    "{}: the transaction timeout ({} ms) is over the broker's \
                     transaction.max.timeout.ms; lower it",
                    why(),
                    self.timeout.as_millis()
                ),
            )),
            _ if error.is_retriable() => Attempt::Retry {
                forget: false,
                why: why(),
                soon: false,
            },
            _ => Attempt::Fail(self.kafka(api, code, why())),
        }
    }

    fn fenced(&self) -> TransactionError {
        TransactionError::from(Cause::Fenced {
            transactional_id: self.id.clone(),
        })
    }

    fn kafka(&self, api: ApiKey, code: i16, message: String) -> TransactionError {
        TransactionError::from(Cause::Kafka {
            transactional_id: self.id.clone(),
            api,
            code,
            message,
        })
    }

    fn failed(&self, reason: String) -> TransactionError {
        TransactionError::from(Cause::Failed {
            transactional_id: self.id.clone(),
            reason,
        })
    }

    fn txn_id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_string(self.id.clone()))
    }
}

impl Transaction<'_> {
    /// Appends `records` to `log` in this transaction, in one batch; the offset of the first
    /// record. Read-committed readers see them once the transaction commits, never if it
    /// aborts. Adds the log's partition to the transaction on its first append.
    ///
    /// # Errors
    /// [`Fenced`](TransactionErrorKind::Fenced) when a newer producer took the id; after any other error
    /// the transaction has failed: it never commits, and later calls of it return
    /// [`Failed`](TransactionErrorKind::Failed).
    pub async fn append(
        &mut self,
        log: &TopicLog,
        records: Vec<LogRecord>,
    ) -> Result<i64, TransactionError> {
        let producer = &mut *self.producer;
        let topic = log.topic().to_owned();
        let added = match &producer.state {
            State::Open(topics) => topics.contains(&topic),
            State::Fenced => return Err(producer.fenced()),
            State::Failed(reason) => return Err(producer.failed(reason.clone())),
            State::Ready => return Err(producer.failed("the transaction ended".to_owned())),
        };
        if records.is_empty() {
            return Ok(log.end_offset().await?);
        }
        if !added {
            if let Err(error) = producer.add(&topic).await {
                return Err(producer.fail_with(error));
            }
            if let State::Open(topics) = &mut producer.state {
                topics.insert(topic.clone());
            }
        }
        let sequence = producer.sequences.get(&topic).copied().unwrap_or(0);
        let writer = Writer::Transactional {
            producer_id: producer.producer_id,
            epoch: producer.epoch,
            sequence,
        };
        let id = producer.id.clone();
        match log
            .append_as(&records, writer, Some(&id))
            .await
            .map_err(LogError::into_cause)
        {
            Ok(offset) => {
                let count = i32::try_from(records.len()).unwrap_or(i32::MAX);
                producer
                    .sequences
                    .insert(topic, sequence.wrapping_add(count));
                Ok(offset)
            }
            Err(super::Cause::Kafka {
                code: code @ (47 | 53 | 90),
                ..
            }) => {
                let error = match producer.refusal(ApiKey::Produce, code, None) {
                    Attempt::Fail(error) => error,
                    Attempt::Retry { why, .. } => producer.failed(why),
                };
                Err(producer.fail_with(error))
            }
            Err(error) => Err(producer.fail_with(TransactionError::from(Cause::Log(error.into())))),
        }
    }

    /// Commits: every record appended in the transaction becomes visible to read-committed
    /// readers, in one step. A commit whose answer is lost is retried; one that cannot
    /// complete leaves the transaction failed (the next `begin` aborts it if it did not
    /// commit).
    ///
    /// # Errors
    /// [`Fenced`](TransactionErrorKind::Fenced); [`Failed`](TransactionErrorKind::Failed) when an earlier call of the
    /// transaction failed; the coordinator's errors.
    pub async fn commit(self) -> Result<(), TransactionError> {
        self.finish(true).await
    }

    /// Aborts: no record appended in the transaction is ever visible to read-committed
    /// readers.
    ///
    /// # Errors
    /// [`Fenced`](TransactionErrorKind::Fenced); the coordinator's errors (the transaction then stays
    /// failed, and the next `begin` aborts it).
    pub async fn abort(self) -> Result<(), TransactionError> {
        self.finish(false).await
    }

    async fn finish(self, commit: bool) -> Result<(), TransactionError> {
        let producer = self.producer;
        let topics = match std::mem::replace(&mut producer.state, State::Ready) {
            State::Open(topics) => topics,
            State::Fenced => {
                producer.state = State::Fenced;
                return Err(producer.fenced());
            }
            State::Failed(reason) => {
                producer.state = State::Failed(reason.clone());
                return if commit {
                    Err(producer.failed(reason))
                } else {
                    Ok(()) // the next begin aborts it
                };
            }
            State::Ready => return Ok(()),
        };
        if topics.is_empty() {
            return Ok(()); // nothing was added: nothing to end
        }
        producer.state = State::Open(topics);
        match producer.end(commit).await {
            Ok(()) => Ok(()),
            Err(error) => Err(producer.fail_with(error)),
        }
    }
}

impl Drop for TransactionalProducer {
    /// A producer dropped with a transaction open (its owner was stopped mid-transaction)
    /// sends one EndTxn abort in the background, so that read-committed readers are not held
    /// back until the transaction timeout. Best effort: a newer owner's fencing or the
    /// timeout aborts it otherwise.
    fn drop(&mut self) {
        let State::Open(topics) = &self.state else {
            return;
        };
        let (Some(connection), Ok(runtime)) = (
            self.coordinator.clone().filter(|_| !topics.is_empty()),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let request = self.end_request(false);
        let timeout = self.cluster.config().connection.request_timeout;
        let id = self.id.clone();
        runtime.spawn(async move {
            let version = match connection.version(ApiKey::EndTxn) {
                Ok(version) => version.min(MAX_END_TXN),
                Err(_) => return,
            };
            let outcome = connection.send_at(&request, version, timeout).await;
            tracing::debug!(transactional_id = %id, ?outcome, "aborted the transaction left open");
        });
    }
}

impl TransactionalProducer {
    /// Marks the producer fenced by a fencing `error`, else its transaction failed by `error`
    /// (a fenced producer stays fenced), and returns the error.
    fn fail_with(&mut self, error: TransactionError) -> TransactionError {
        if matches!(error.0, Cause::Fenced { .. }) {
            self.state = State::Fenced;
        } else if !matches!(self.state, State::Fenced) {
            self.state = State::Failed(error.to_string());
        }
        error
    }
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
