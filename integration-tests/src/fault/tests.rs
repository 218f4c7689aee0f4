//! The rewrite on encoded responses of every version, and each fault mode end to end against
//! kroupier's embedded coordinator, through the harness's own tiny client.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, JoinGroupRequest, MetadataRequest, MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire;
use kroupier_embedded::{CoordinatorHandle, EmbeddedCoordinator};

use super::rewrite::{Role, rewrite_response};
use super::{FaultProxy, Scope};
use crate::wire::Connection;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// Maps every address to `proxy:<port + 1000>` (the coordinator role to `+ 2000`), and records
/// what it was asked.
fn shifted(
    seen: &mut Vec<(Role, String, i32)>,
) -> impl FnMut(Role, &str, i32) -> Result<(String, i32), String> + '_ {
    move |role, host, port| {
        seen.push((role, host.to_owned(), port));
        let shift = if role == Role::Coordinator {
            2000
        } else {
            1000
        };
        Ok(("proxy".to_owned(), port + shift))
    }
}

#[test]
fn find_coordinator_responses_of_every_version_name_the_proxy() {
    for version in wire::versions(ApiKey::FindCoordinator).expect("FindCoordinator") {
        let response = if version < 4 {
            FindCoordinatorResponse::default()
                .with_node_id(BrokerId(1))
                .with_host(s("broker-1"))
                .with_port(9092)
        } else {
            FindCoordinatorResponse::default().with_coordinators(vec![
                Coordinator::default()
                    .with_key(s("g"))
                    .with_node_id(BrokerId(1))
                    .with_host(s("broker-1"))
                    .with_port(9092),
                Coordinator::default()
                    .with_key(s("h"))
                    .with_node_id(BrokerId(-1))
                    .with_host(s(""))
                    .with_port(-1)
                    .with_error_code(15),
            ])
        };
        let frame = wire::encode_response(7, version, &response).expect("encode");
        let mut seen = Vec::new();
        let out = rewrite_response(
            ApiKey::FindCoordinator as i16,
            version,
            frame,
            &mut shifted(&mut seen),
        )
        .expect("rewrite")
        .expect("FindCoordinator is rewritten");
        let (header, decoded) =
            wire::decode_response::<FindCoordinatorResponse>(out, version).expect("decode");
        assert_eq!(header.correlation_id, 7, "v{version}");
        assert_eq!(
            seen,
            [(Role::Coordinator, "broker-1".to_owned(), 9092)],
            "v{version}: only the entry without an error is mapped"
        );
        if version < 4 {
            assert_eq!((decoded.host.as_str(), decoded.port), ("proxy", 11092));
            assert_eq!(decoded.node_id, BrokerId(1));
        } else {
            let found = &decoded.coordinators[0];
            assert_eq!((found.host.as_str(), found.port), ("proxy", 11092));
            assert_eq!((found.key.as_str(), found.node_id), ("g", BrokerId(1)));
            let failed = &decoded.coordinators[1];
            assert_eq!((failed.host.as_str(), failed.port), ("", -1), "v{version}");
        }
    }
}

#[test]
fn metadata_responses_of_every_version_name_the_proxy_for_each_broker() {
    for version in wire::versions(ApiKey::Metadata).expect("Metadata") {
        let brokers = (1..=3)
            .map(|n| {
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(n))
                    .with_host(s(&format!("broker-{n}")))
                    .with_port(9090 + n)
            })
            .collect();
        let response = MetadataResponse::default().with_brokers(brokers);
        let frame = wire::encode_response(3, version, &response).expect("encode");
        let mut seen = Vec::new();
        let out = rewrite_response(
            ApiKey::Metadata as i16,
            version,
            frame,
            &mut shifted(&mut seen),
        )
        .expect("rewrite")
        .expect("Metadata is rewritten");
        let (_, decoded) = wire::decode_response::<MetadataResponse>(out, version).expect("decode");
        assert_eq!(seen.len(), 3, "v{version}");
        assert!(seen.iter().all(|(role, _, _)| *role == Role::Broker));
        for (n, broker) in (1..=3).zip(&decoded.brokers) {
            assert_eq!(broker.node_id, BrokerId(n), "v{version}");
            assert_eq!((broker.host.as_str(), broker.port), ("proxy", 10090 + n));
        }
    }
}

#[test]
fn other_responses_pass_through_and_garbage_is_an_error() {
    let mut seen = Vec::new();
    let raw = Bytes::from_static(&[0, 0, 0, 9, 0, 0]);
    let out = rewrite_response(
        ApiKey::Heartbeat as i16,
        4,
        raw.clone(),
        &mut shifted(&mut seen),
    );
    assert_eq!(out, Ok(None));
    let err = rewrite_response(
        ApiKey::FindCoordinator as i16,
        4,
        raw,
        &mut shifted(&mut seen),
    )
    .expect_err("a truncated FindCoordinator response");
    assert!(err.contains("FindCoordinator"), "{err}");
}

async fn embedded() -> CoordinatorHandle {
    EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .expect("the embedded coordinator binds")
}

async fn connect(addr: &str) -> Connection {
    Connection::connect(addr).await.expect("connect")
}

/// ApiVersions v0 within `within`: whether it was answered.
async fn answered(conn: &mut Connection, within: Duration) -> bool {
    matches!(
        tokio::time::timeout(within, conn.send(&ApiVersionsRequest::default(), 0)).await,
        Ok(Ok(_))
    )
}

/// FindCoordinator v4 for group `g` through `conn`: the address it names.
async fn coordinator_of(conn: &mut Connection) -> String {
    let request = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g")]);
    let response = conn.send(&request, 4).await.expect("FindCoordinator");
    let found = &response.coordinators[0];
    assert_eq!(found.error_code, 0, "{response:?}");
    format!("{}:{}", found.host.as_str(), found.port)
}

fn heartbeat() -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_generation_id(1)
        .with_member_id(s("m"))
}

const QUICK: Duration = Duration::from_millis(2_000);
const SILENT: Duration = Duration::from_millis(400);

#[tokio::test]
async fn all_traffic_flows_through_the_proxy_coordinator_included() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    assert!(answered(&mut conn, QUICK).await);

    let coordinator = coordinator_of(&mut conn).await;
    assert!(coordinator.starts_with("127.0.0.1:"), "{coordinator}");
    assert_ne!(
        coordinator,
        broker.bootstrap(),
        "the coordinator address is rewritten"
    );
    assert_ne!(
        coordinator,
        proxy.bootstrap(),
        "the coordinator has a listener of its own"
    );
    let metadata = conn
        .send(&MetadataRequest::default(), 12)
        .await
        .expect("Metadata");
    let listed = &metadata.brokers[0];
    let listed = format!("{}:{}", listed.host.as_str(), listed.port);
    assert_eq!(
        listed,
        proxy.bootstrap(),
        "the same upstream broker, the same listener"
    );

    let mut group = connect(&coordinator).await;
    let answer = group
        .send(&heartbeat(), 4)
        .await
        .expect("Heartbeat via the proxy");
    assert_ne!(
        answer.error_code, 0,
        "an unknown member is refused, but answered"
    );
    let stats = proxy.stats();
    assert_eq!(
        (stats.broker_connections, stats.coordinator_connections),
        (1, 1)
    );
    assert_eq!(stats.rewritten, 2, "{stats:?}");
    let roles: Vec<Role> = proxy.listeners().iter().map(|(role, _, _)| *role).collect();
    assert_eq!(roles.len(), 2, "{roles:?}");
    assert!(roles.contains(&Role::Broker) && roles.contains(&Role::Coordinator));
}

#[tokio::test]
async fn a_cut_closes_connections_and_refuses_new_ones_until_healed() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    assert!(answered(&mut conn, QUICK).await);
    proxy.cut(Scope::All);
    let closed = tokio::time::timeout(QUICK, conn.send(&ApiVersionsRequest::default(), 0)).await;
    assert!(
        matches!(closed, Ok(Err(_))),
        "a cut connection fails at once: {closed:?}"
    );
    let mut late = connect(&proxy.bootstrap()).await;
    assert!(
        !answered(&mut late, QUICK).await,
        "a new connection is refused"
    );
    assert!(proxy.stats().refused >= 1);
    proxy.heal();
    let mut fresh = connect(&proxy.bootstrap()).await;
    assert!(answered(&mut fresh, QUICK).await, "healed");
}

#[tokio::test]
async fn a_coordinator_cut_spares_the_bootstrap_connection() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    let coordinator = coordinator_of(&mut conn).await;
    let mut group = connect(&coordinator).await;
    group.send(&heartbeat(), 4).await.expect("Heartbeat");

    proxy.cut(Scope::Coordinator);
    let cut = tokio::time::timeout(QUICK, group.send(&heartbeat(), 4)).await;
    assert!(
        matches!(cut, Ok(Err(_))),
        "the coordinator connection is closed: {cut:?}"
    );
    assert!(
        answered(&mut conn, QUICK).await,
        "the bootstrap connection still works"
    );
    assert_eq!(
        coordinator_of(&mut conn).await,
        coordinator,
        "and finds the coordinator"
    );
    let mut again = connect(&coordinator).await;
    let refused = tokio::time::timeout(QUICK, again.send(&heartbeat(), 4)).await;
    assert!(
        matches!(refused, Ok(Err(_))),
        "a new coordinator connection is refused"
    );

    proxy.heal();
    let mut healed = connect(&coordinator).await;
    healed.send(&heartbeat(), 4).await.expect("healed");
}

#[tokio::test]
async fn a_blackhole_reads_and_never_answers_until_healed() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    assert!(answered(&mut conn, QUICK).await);
    proxy.blackhole(Scope::All);
    assert!(
        !answered(&mut conn, SILENT).await,
        "no answer in a blackhole"
    );
    let mut late = connect(&proxy.bootstrap()).await;
    assert!(
        !answered(&mut late, SILENT).await,
        "new connections are accepted, not answered"
    );
    assert!(proxy.stats().dropped >= 2, "{:?}", proxy.stats());
    proxy.heal();
    assert!(
        answered(&mut conn, QUICK).await,
        "the same connection answers after heal"
    );
}

#[tokio::test]
async fn a_coordinator_blackhole_spares_the_bootstrap_connection() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    let coordinator = coordinator_of(&mut conn).await;
    let mut group = connect(&coordinator).await;
    proxy.blackhole(Scope::Coordinator);
    let silent = tokio::time::timeout(SILENT, group.send(&heartbeat(), 4)).await;
    assert!(
        silent.is_err(),
        "the coordinator does not answer: {silent:?}"
    );
    assert!(
        answered(&mut conn, QUICK).await,
        "the bootstrap connection answers"
    );
}

#[tokio::test]
async fn a_delay_holds_every_frame_both_ways() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    assert!(answered(&mut conn, QUICK).await);
    proxy.delay(Scope::All, Duration::from_millis(250));
    let started = Instant::now();
    assert!(answered(&mut conn, Duration::from_secs(5)).await);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500),
        "a round trip holds 2 × 250 ms: {took:?}"
    );
    proxy.heal();
    let started = Instant::now();
    assert!(answered(&mut conn, QUICK).await);
    assert!(started.elapsed() < Duration::from_millis(500), "healed");
}

#[tokio::test]
async fn heartbeat_responses_alone_can_be_delayed() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    let coordinator = coordinator_of(&mut conn).await;
    let mut group = connect(&coordinator).await;
    proxy.delay_responses(ApiKey::Heartbeat, Duration::from_millis(600));
    let started = Instant::now();
    group.send(&heartbeat(), 4).await.expect("Heartbeat");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(600),
        "the Heartbeat is held: {took:?}"
    );
    let started = Instant::now();
    assert!(answered(&mut group, QUICK).await);
    let other = started.elapsed();
    assert!(
        other < Duration::from_millis(600),
        "other APIs are not: {other:?}"
    );
    assert_eq!(proxy.stats().delayed, 1, "{:?}", proxy.stats());
}

fn join() -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(""))
        .with_protocol_type(s("kroupier"))
}

#[tokio::test]
async fn requests_of_one_api_alone_can_be_dropped() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let mut conn = connect(&proxy.bootstrap()).await;
    let coordinator = coordinator_of(&mut conn).await;
    proxy.drop_requests(ApiKey::JoinGroup);
    let mut joining = connect(&coordinator).await;
    let silent = tokio::time::timeout(SILENT, joining.send(&join(), 5)).await;
    assert!(
        silent.is_err(),
        "the JoinGroup is never answered: {silent:?}"
    );
    let mut group = connect(&coordinator).await;
    let answer = group
        .send(&heartbeat(), 4)
        .await
        .expect("a Heartbeat still gets through");
    assert_ne!(answer.error_code, 0, "answered by the broker: {answer:?}");
    let stats = proxy.stats();
    assert_eq!(stats.requests_dropped, 1, "{stats:?}");
    assert_eq!(stats.dropped, 1, "{stats:?}");

    proxy.forward_requests(ApiKey::JoinGroup);
    let mut again = connect(&coordinator).await;
    again
        .send(&join(), 5)
        .await
        .expect("a JoinGroup gets through again");
    assert_eq!(proxy.stats().requests_dropped, 1);
}

#[tokio::test]
async fn dropping_the_handle_stops_the_proxy() {
    let broker = embedded().await;
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let bootstrap = proxy.bootstrap();
    let mut conn = connect(&bootstrap).await;
    assert!(answered(&mut conn, QUICK).await);
    drop(proxy);
    let closed = tokio::time::timeout(QUICK, conn.send(&ApiVersionsRequest::default(), 0)).await;
    assert!(matches!(closed, Ok(Err(_))), "connections end: {closed:?}");
    let deadline = Instant::now() + QUICK;
    while Connection::connect(&bootstrap).await.is_ok() {
        assert!(Instant::now() < deadline, "the listener still accepts");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn outside_a_runtime_the_proxy_brings_its_own() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let broker = runtime.block_on(embedded());
    let proxy = FaultProxy::start(&broker.bootstrap()).expect("proxy");
    let ok = runtime.block_on(async {
        let mut conn = connect(&proxy.bootstrap()).await;
        answered(&mut conn, QUICK).await
    });
    assert!(ok);
    drop(proxy);
}

/// An echo server on 127.0.0.1 (each connection echoes until the client closes); dropping
/// the returned listener task's handle does not stop it, aborting it does.
async fn echo() -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            connections.spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(n) = socket.read(&mut buffer).await {
                    if n == 0 || socket.write_all(&buffer[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, task)
}

/// Sends `text` and waits (at most `within`) for the same bytes back.
async fn echoed(stream: &mut tokio::net::TcpStream, text: &[u8], within: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if stream.write_all(text).await.is_err() {
        return false;
    }
    let mut back = vec![0; text.len()];
    matches!(
        tokio::time::timeout(within, stream.read_exact(&mut back)).await,
        Ok(Ok(_)) if back == text
    )
}

#[tokio::test]
async fn a_plain_tcp_proxy_forwards_bytes_blackholes_them_and_closes_with_its_upstream() {
    use tokio::io::AsyncReadExt;
    let (upstream, server) = echo().await;
    let proxy = FaultProxy::start_tcp(&upstream).expect("proxy");
    let addr = proxy.addr().to_string();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(echoed(&mut conn, b"GET /watch HTTP/1.1\r\n\r\n", QUICK).await);
    proxy.blackhole(Scope::All);
    assert!(
        !echoed(&mut conn, b"ping", SILENT).await,
        "nothing in a blackhole"
    );
    let mut late = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("accepted");
    assert!(!echoed(&mut late, b"ping", SILENT).await);
    proxy.heal();
    assert!(
        echoed(&mut conn, b"pong", QUICK).await,
        "forwarded after heal"
    );

    // The upstream ends: the proxied connection is closed, the proxy's port still accepts.
    server.abort();
    drop(late);
    let mut after = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("the proxy accepts");
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(QUICK, after.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "a connection whose upstream refuses is closed: {read:?}"
    );
}
