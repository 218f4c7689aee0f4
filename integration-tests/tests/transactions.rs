//! `kroupier_coordinator::log::TransactionalProducer` against a real broker: committed records
//! are read by read-committed readers and aborted ones are not, across two logs at once; a
//! newer producer with the same transactional id fences the older one and aborts what it left
//! open; a transaction dropped without a commit is aborted by the next `begin`.
//!
//! On a 3-node cluster of its own (`KROUPIER_KAFKA_CLUSTER=1`), a transaction goes on and
//! commits when its transaction coordinator's broker is killed mid-transaction.
//!
//! On a broker without transactions (kroupier's embedded coordinator) the producer must refuse
//! with an error naming Apache Kafka, which is what the tests check there.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kroupier_coordinator::connection::Cluster;
use kroupier_coordinator::log::{
    LogRecord, ReadRecord, TopicLog, TopicSpec, TransactionErrorKind, TransactionalProducer,
};
use kroupier_integration_tests::topics::{self, kafka_script, killable_cluster, unique_topic};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The broker's cluster client if it serves transactions, `None` (after a skip line) without a
/// broker; on a broker without transactions, checks that the producer refuses clearly and
/// returns `None`.
async fn transaction_broker(test: &str) -> Option<Arc<Cluster>> {
    let (_, cluster) = topics::log_broker(test).await?;
    let connection = cluster.any_broker().await.expect("connect and negotiate");
    if connection.versions().get(ApiKey::InitProducerId).is_some() {
        return Some(cluster);
    }
    let error = TransactionalProducer::init(cluster, unique_topic("txn"), TIMEOUT)
        .await
        .expect_err("a broker without transactions refuses a transactional producer");
    assert!(
        error.kind() == TransactionErrorKind::Unsupported,
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("Apache Kafka"), "names Kafka: {text}");
    assert!(
        text.contains("embedded"),
        "names the embedded coordinator: {text}"
    );
    eprintln!("{test}: the broker serves no transactions and the producer says so: {text}");
    None
}

/// Every record of `log`, read to its end with `committed` isolation or without.
async fn all(log: &TopicLog, committed: bool) -> Vec<ReadRecord> {
    let mut records = Vec::new();
    let mut next = 0;
    loop {
        let wait = Duration::from_millis(100);
        let batch = if committed {
            log.read_committed(next, wait).await
        } else {
            log.read(next, wait).await
        }
        .expect("read");
        records.extend(batch.records);
        next = batch.next_offset;
        if next >= batch.end_offset {
            return records;
        }
    }
}

fn values(records: &[ReadRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn numbered(from: usize, to: usize) -> Vec<LogRecord> {
    (from..to)
        .map(|i| LogRecord::new(format!("{i}"), format!("{i}")))
        .collect()
}

async fn open(cluster: &Arc<Cluster>, name: &str) -> TopicLog {
    TopicLog::open(cluster.clone(), TopicSpec::new(unique_topic(name)), true)
        .await
        .expect("create and open")
}

#[tokio::test]
async fn committed_records_are_read_and_aborted_ones_are_not_across_two_logs() {
    let test = "committed_records_are_read_and_aborted_ones_are_not_across_two_logs";
    let Some(cluster) = transaction_broker(test).await else {
        return;
    };
    let out = open(&cluster, "txn-out").await;
    let checkpoints = open(&cluster, "txn-checkpoints").await;
    let mut producer = TransactionalProducer::init(cluster.clone(), unique_topic("txn"), TIMEOUT)
        .await
        .expect("init");

    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(0, 3)).await.expect("append");
    t.append(&out, numbered(3, 5)).await.expect("append");
    t.append(&checkpoints, vec![LogRecord::new("task", "5")])
        .await
        .expect("append");
    t.commit().await.expect("commit");

    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(5, 8)).await.expect("append");
    t.append(&checkpoints, vec![LogRecord::new("task", "8")])
        .await
        .expect("append");
    t.abort().await.expect("abort");

    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(8, 10)).await.expect("append");
    t.append(&checkpoints, vec![LogRecord::new("task", "10")])
        .await
        .expect("append");
    t.commit().await.expect("commit");

    let committed = all(&out, true).await;
    assert_eq!(
        values(&committed),
        ["0", "1", "2", "3", "4", "8", "9"],
        "read-committed sees the committed transactions, in order, and nothing aborted"
    );
    assert_eq!(values(&all(&checkpoints, true).await), ["5", "10"]);
    let uncommitted = all(&out, false).await;
    assert_eq!(
        uncommitted.len(),
        10,
        "read-uncommitted also sees the aborted records"
    );
}

#[tokio::test]
async fn a_newer_producer_fences_the_older_and_aborts_what_it_left_open() {
    let test = "a_newer_producer_fences_the_older_and_aborts_what_it_left_open";
    let Some(cluster) = transaction_broker(test).await else {
        return;
    };
    let out = open(&cluster, "txn-fence").await;
    let id = unique_topic("txn-fence-id");
    let mut old = TransactionalProducer::init(cluster.clone(), &id, TIMEOUT)
        .await
        .expect("init");
    let mut t = old.begin().await.expect("begin");
    t.append(&out, numbered(0, 2)).await.expect("append");
    t.commit().await.expect("commit");
    let mut open_txn = old.begin().await.expect("begin");
    open_txn
        .append(&out, numbered(100, 103))
        .await
        .expect("append before the takeover");

    // The new owner: its init bumps the epoch and aborts the old one's open transaction.
    let mut new = TransactionalProducer::init(cluster.clone(), &id, TIMEOUT)
        .await
        .expect("init of the new owner");

    let late = open_txn.append(&out, numbered(103, 104)).await;
    assert!(
        late.as_ref()
            .is_err_and(|e| e.kind() == TransactionErrorKind::Fenced),
        "the zombie's produce is fenced: {late:?}"
    );
    let commit = open_txn.commit().await;
    assert!(
        commit
            .as_ref()
            .is_err_and(|e| e.kind() == TransactionErrorKind::Fenced),
        "the zombie's commit is fenced: {commit:?}"
    );
    let again = old.begin().await.map(|_| ());
    assert!(
        again
            .as_ref()
            .is_err_and(|e| e.kind() == TransactionErrorKind::Fenced),
        "a fenced producer stays fenced: {again:?}"
    );

    let mut t = new.begin().await.expect("begin");
    t.append(&out, numbered(2, 4)).await.expect("append");
    t.commit().await.expect("commit");
    assert_eq!(values(&all(&out, true).await), ["0", "1", "2", "3"]);
}

#[tokio::test]
async fn a_dropped_transaction_is_aborted_by_the_next_begin() {
    let test = "a_dropped_transaction_is_aborted_by_the_next_begin";
    let Some(cluster) = transaction_broker(test).await else {
        return;
    };
    let out = open(&cluster, "txn-dropped").await;
    let mut producer = TransactionalProducer::init(cluster.clone(), unique_topic("txn"), TIMEOUT)
        .await
        .expect("init");
    {
        let mut t = producer.begin().await.expect("begin");
        t.append(&out, numbered(0, 3)).await.expect("append");
        // Dropped without a commit.
    }
    let mut t = producer
        .begin()
        .await
        .expect("begin aborts the dropped one");
    t.append(&out, numbered(3, 4)).await.expect("append");
    t.commit().await.expect("commit");
    assert_eq!(values(&all(&out, true).await), ["3"]);
}

#[tokio::test]
async fn transactions_go_on_when_the_transaction_coordinator_is_killed() {
    let test = "transactions_go_on_when_the_transaction_coordinator_is_killed";
    let Some(addr) = killable_cluster(test) else {
        return;
    };
    let cluster = topics::client(&addr);
    let topic = unique_topic("txn-coordinator-killed");
    let out = TopicLog::open(
        cluster.clone(),
        TopicSpec::new(&topic).with_replication_factor(3),
        true,
    )
    .await
    .expect("create and open");
    let id = unique_topic("txn-killed-id");
    let mut producer = TransactionalProducer::init(cluster.clone(), &id, TIMEOUT)
        .await
        .expect("init");
    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(0, 10)).await.expect("append");
    t.commit().await.expect("commit");

    // A transaction open when its coordinator dies commits on the coordinator that takes over.
    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(10, 20)).await.expect("append");
    let node = topics::transaction_coordinator(&cluster, &id).await;
    kafka_script(&["kill-node", &node.to_string()]);
    t.append(&out, numbered(20, 30))
        .await
        .expect("append after the kill");
    t.commit().await.expect("commit after the kill");
    let moved = topics::transaction_coordinator(&cluster, &id).await;

    let mut t = producer.begin().await.expect("begin");
    t.append(&out, numbered(30, 40)).await.expect("append");
    t.commit().await.expect("commit");
    let committed = values(&all(&out, true).await);
    kafka_script(&["start-node", &node.to_string()]);

    assert_ne!(moved, node, "the transaction coordinator moved");
    let want: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(committed, want, "every record once, in order");
}

#[tokio::test]
async fn a_dropped_producer_aborts_its_open_transaction() {
    let test = "a_dropped_producer_aborts_its_open_transaction";
    let Some(cluster) = transaction_broker(test).await else {
        return;
    };
    let out = open(&cluster, "txn-dropped-producer").await;
    let mut producer = TransactionalProducer::init(cluster.clone(), unique_topic("txn"), TIMEOUT)
        .await
        .expect("init");
    {
        let mut t = producer.begin().await.expect("begin");
        t.append(&out, numbered(0, 3)).await.expect("append");
    }
    // The owner stops mid-transaction (a revoked task drops its producer): the producer aborts
    // in the background, so a read-committed reader gets past the transaction long before the
    // 60 s transaction timeout would abort it.
    drop(producer);
    let read = tokio::time::timeout(Duration::from_secs(20), all(&out, true))
        .await
        .expect("the open transaction was aborted, not left to its timeout");
    assert!(
        read.is_empty(),
        "nothing of it is read: {:?}",
        values(&read)
    );
}
