//! For tests of the task store, checkpoints and the topic log: a cluster client, a broker that
//! serves the log APIs, unique topic names; and, for tests that kill brokers, the 3-node
//! cluster they may kill and `scripts/kafka` to do it.

use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kroupier_coordinator::connection::{Cluster, ClusterConfig};

use crate::kafka_bootstrap;

/// A cluster client of `addr` with the default settings.
///
/// # Panics
/// When `addr` names no server.
pub fn client(addr: &str) -> Arc<Cluster> {
    Arc::new(Cluster::new(ClusterConfig::new(addr)).expect("a cluster client"))
}

/// A topic name no other test run uses: `kroupier-it-<name>-<pid>-<nanos>`.
pub fn unique_topic(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-{name}-{}-{nanos}", std::process::id())
}

/// The broker to test against and a client of it, or `None` (after a skip line) without a
/// broker or when the broker does not serve Produce (a coordinator without the log APIs).
///
/// # Panics
/// As [`kafka_bootstrap`], and when the broker cannot be reached.
pub async fn log_broker(test: &str) -> Option<(String, Arc<Cluster>)> {
    let addr = kafka_bootstrap(test)?;
    let cluster = client(&addr);
    let broker = cluster.any_broker().await.expect("connect to the broker");
    if broker.version(ApiKey::Produce).is_err() {
        eprintln!("SKIP {test}: the broker at {addr} does not serve Produce (no log APIs)");
        return None;
    }
    Some((addr, cluster))
}

/// The bootstrap of a cluster of at least 3 nodes this test may kill brokers of
/// (`KROUPIER_KAFKA_CLUSTER=1`, `scripts/kafka start --brokers 3`), or `None` after a skip line.
pub fn killable_cluster(test: &str) -> Option<String> {
    let bootstrap = kafka_bootstrap(test)?;
    if std::env::var("KROUPIER_KAFKA_CLUSTER").is_ok_and(|v| v.trim() == "1")
        && bootstrap.split(',').count() >= 3
    {
        Some(bootstrap)
    } else {
        eprintln!(
            "SKIP {test}: it kills brokers; set KROUPIER_KAFKA_CLUSTER=1 with a 3-node cluster of \
             its own (scripts/kafka start --brokers 3)"
        );
        None
    }
}

/// Runs `scripts/kafka <args>` (kill-node, start-node) on the cluster under test.
///
/// # Panics
/// When the script fails.
pub fn kafka_script(args: &[&str]) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kafka");
    let status = std::process::Command::new(script)
        .args(args)
        .status()
        .expect("run scripts/kafka");
    assert!(status.success(), "scripts/kafka {args:?} failed");
}

/// The node id of the broker that coordinates the transactions of `transactional_id`
/// (FindCoordinator v4+, key type 1).
///
/// # Panics
/// When no broker answers or the answer is an error.
pub async fn transaction_coordinator(cluster: &Cluster, transactional_id: &str) -> i32 {
    use kafka_protocol::messages::FindCoordinatorRequest;
    use kafka_protocol::protocol::StrBytes;
    let request = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![StrBytes::from_string(transactional_id.to_owned())]);
    let response = cluster.send_any(&request).await.expect("FindCoordinator");
    let entry = &response.coordinators[0];
    assert_eq!(entry.error_code, 0, "{response:?}");
    entry.node_id.0
}
