//! Tests of the cluster client: bootstrap failover and coordinator discovery.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::fake_broker::{FakeBroker, Reply, answer, api_versions, kafka_4_1};
use super::heartbeat;
use crate::connection::Detail;
use crate::connection::*;
use crate::wire::RequestBody;

/// An address where nothing listens.
async fn dead_addr() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

fn config(bootstrap: &[&str]) -> ClusterConfig {
    ClusterConfig {
        retry_backoff: Duration::from_millis(1),
        retry_backoff_max: Duration::from_millis(5),
        reconnect_backoff: Duration::from_millis(1),
        reconnect_backoff_max: Duration::from_millis(5),
        ..ClusterConfig::new(&bootstrap.join(","))
    }
}

/// A FindCoordinator v4+ answer naming `node` for every key, or `error` for each.
fn coordinators(
    request: &FindCoordinatorRequest,
    node: &BrokerNode,
    error: i16,
) -> FindCoordinatorResponse {
    FindCoordinatorResponse::default().with_coordinators(
        request
            .coordinator_keys
            .iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(node.node_id))
                    .with_host(StrBytes::from_string(node.host.clone()))
                    .with_port(node.port)
                    .with_error_code(error)
            })
            .collect(),
    )
}

fn node_of(broker: &FakeBroker, node_id: i32) -> BrokerNode {
    let (host, port) = broker.addr.rsplit_once(':').unwrap();
    BrokerNode {
        node_id,
        host: host.to_owned(),
        port: port.parse().unwrap(),
    }
}

#[tokio::test]
async fn bootstrap_fails_over_to_the_next_broker() {
    let broker = FakeBroker::start(kafka_4_1(|_, _| Reply::Silent)).await;
    let dead = dead_addr().await;
    let cluster = Cluster::new(config(&[&dead, &broker.addr])).unwrap();
    let connection = cluster.any_broker().await.unwrap();
    assert_eq!(connection.addr(), broker.addr);
    // Kept while open.
    let again = cluster.any_broker().await.unwrap();
    assert_eq!(again.addr(), broker.addr);
    assert_eq!(
        broker.received().len(),
        1,
        "one connection, one ApiVersions"
    );
}

#[tokio::test]
async fn no_reachable_broker_lists_every_address() {
    let (a, b) = (dead_addr().await, dead_addr().await);
    let cluster = Cluster::new(config(&[&a, &b])).unwrap();
    match cluster.any_broker().await.unwrap_err().into_detail() {
        Detail::NoBrokerReachable { attempts } => {
            assert_eq!(attempts.len(), 2);
            assert!(attempts[0].starts_with(&a) && attempts[1].starts_with(&b));
        }
        other => panic!("expected NoBrokerReachable, got {other}"),
    }
}

#[tokio::test]
async fn the_coordinator_is_found_after_retriable_errors_and_kept() {
    let coordinator = FakeBroker::start(kafka_4_1(|header, body| match body {
        RequestBody::Heartbeat(_) => answer(header, &HeartbeatResponse::default()),
        _ => Reply::Close,
    }))
    .await;
    let node = node_of(&coordinator, 7);
    let lookups = Arc::new(AtomicUsize::new(0));
    let seen = lookups.clone();
    let target = node.clone();
    let bootstrap = FakeBroker::start(kafka_4_1(move |header, body| match body {
        RequestBody::FindCoordinator(request) => {
            // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, found.
            let error = [14, 15, 16, 0][seen.fetch_add(1, Ordering::SeqCst).min(3)];
            assert_eq!(request.key_type, 0);
            assert_eq!(request.coordinator_keys.len(), 1);
            answer(header, &coordinators(request, &target, error))
        }
        _ => Reply::Close,
    }))
    .await;
    let cluster = Cluster::new(config(&[&bootstrap.addr])).unwrap();
    let (found, connection) = cluster.coordinator("group-a").await.unwrap();
    assert_eq!(found, node);
    assert_eq!(connection.addr(), coordinator.addr);
    assert_eq!(lookups.load(Ordering::SeqCst), 4);
    connection.send(&heartbeat(1)).await.unwrap();
    // Kept: no new lookup, same connection.
    let (_, again) = cluster.coordinator("group-a").await.unwrap();
    assert_eq!(lookups.load(Ordering::SeqCst), 4);
    assert_eq!(
        coordinator
            .received()
            .iter()
            .filter(|r| r.0 == ApiKey::ApiVersions)
            .count(),
        1
    );
    drop(again);
    // Forgotten: looked up again.
    cluster.forget_coordinator("group-a");
    assert_eq!(cluster.known_coordinator("group-a"), None);
    cluster.coordinator("group-a").await.unwrap();
    assert_eq!(lookups.load(Ordering::SeqCst), 5);
    assert_eq!(cluster.known_coordinator("group-a"), Some(node));
}

#[tokio::test]
async fn an_older_broker_is_asked_with_find_coordinator_v3() {
    let coordinator = FakeBroker::start(Arc::new(|header, _| {
        answer(header, &api_versions(&[(ApiKey::FindCoordinator, 0, 3)]))
    }))
    .await;
    let node = node_of(&coordinator, 1);
    let target = node.clone();
    let bootstrap = FakeBroker::start(Arc::new(move |header, body| match body {
        RequestBody::ApiVersions(_) => {
            answer(header, &api_versions(&[(ApiKey::FindCoordinator, 0, 3)]))
        }
        RequestBody::FindCoordinator(request) => {
            assert_eq!(request.key.as_str(), "group-v3");
            assert!(request.coordinator_keys.is_empty());
            answer(
                header,
                &FindCoordinatorResponse::default()
                    .with_node_id(BrokerId(target.node_id))
                    .with_host(StrBytes::from_string(target.host.clone()))
                    .with_port(target.port),
            )
        }
        _ => Reply::Close,
    }))
    .await;
    let cluster = Cluster::new(config(&[&bootstrap.addr])).unwrap();
    assert_eq!(cluster.find_coordinator("group-v3").await.unwrap(), node);
    assert_eq!(bootstrap.received()[1], (ApiKey::FindCoordinator, 3));
}

#[tokio::test]
async fn a_fatal_lookup_error_is_returned_at_once() {
    let bootstrap = FakeBroker::start(kafka_4_1(|header, body| match body {
        RequestBody::FindCoordinator(request) => {
            let nobody = BrokerNode {
                node_id: -1,
                host: String::new(),
                port: -1,
            };
            // GROUP_AUTHORIZATION_FAILED
            answer(header, &coordinators(request, &nobody, 30))
        }
        _ => Reply::Close,
    }))
    .await;
    let cluster = Cluster::new(config(&[&bootstrap.addr])).unwrap();
    let err = cluster.find_coordinator("secret").await.unwrap_err();
    assert!(
        matches!(err.detail(), Detail::Kafka { code: 30, .. }),
        "{err}"
    );
    assert_eq!(bootstrap.received().len(), 2);
}

#[tokio::test]
async fn a_lookup_that_never_succeeds_times_out() {
    let bootstrap = FakeBroker::start(kafka_4_1(|header, body| match body {
        RequestBody::FindCoordinator(request) => {
            let nobody = BrokerNode {
                node_id: -1,
                host: String::new(),
                port: -1,
            };
            answer(header, &coordinators(request, &nobody, 15))
        }
        _ => Reply::Close,
    }))
    .await;
    let cluster = Cluster::new(ClusterConfig {
        coordinator_lookup_timeout: Duration::from_millis(100),
        ..config(&[&bootstrap.addr])
    })
    .unwrap();
    let err = cluster.find_coordinator("g").await.unwrap_err();
    match err.into_detail() {
        Detail::CoordinatorNotFound { group, last, .. } => {
            assert_eq!(group, "g");
            assert!(last.contains("code 15"), "{last}");
        }
        other => panic!("expected CoordinatorNotFound, got {other}"),
    }
}

#[tokio::test]
async fn an_unreachable_coordinator_is_forgotten() {
    let dead = dead_addr().await;
    let (host, port) = dead.rsplit_once(':').unwrap();
    let gone = BrokerNode {
        node_id: 3,
        host: host.to_owned(),
        port: port.parse().unwrap(),
    };
    let target = gone.clone();
    let bootstrap = FakeBroker::start(kafka_4_1(move |header, body| match body {
        RequestBody::FindCoordinator(request) => answer(header, &coordinators(request, &target, 0)),
        _ => Reply::Close,
    }))
    .await;
    let cluster = Cluster::new(config(&[&bootstrap.addr])).unwrap();
    let err = cluster.coordinator("g").await.unwrap_err();
    assert!(matches!(err.detail(), Detail::Connect { .. }), "{err}");
    assert_eq!(cluster.known_coordinator("g"), None);
}
