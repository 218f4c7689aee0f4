//! Tests of the connection layer against a fake broker on 127.0.0.1 or an in-memory pipe.

pub(crate) mod fake_broker;
mod lookup;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use self::fake_broker::{FakeBroker, Reply, answer, api_versions, kafka_4_1, serve};
use super::*;
use crate::connection::Detail;
use crate::connection::versions::NegotiatedVersions;
use crate::wire::{self, Problem, RequestBody, WireError};

fn heartbeat(generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_generation_id(generation)
        .with_member_id(StrBytes::from_static_str("m"))
}

async fn connect(broker: &FakeBroker) -> BrokerConnection {
    BrokerConnection::connect(&broker.addr, &ConnectionConfig::default())
        .await
        .expect("connect to the fake broker")
}

#[tokio::test]
async fn negotiates_versions_and_pipelines_requests() {
    let handler = kafka_4_1(|header, body| match body {
        // Echo the generation as the error code, to tell the answers apart.
        RequestBody::Heartbeat(h) => answer(
            header,
            &HeartbeatResponse::default().with_error_code(h.generation_id as i16),
        ),
        _ => Reply::Close,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let log = Arc::new(Mutex::new(Vec::new()));
    let server_log = log.clone();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        // Answer only once all three heartbeats are in, last first.
        serve(stream, handler, server_log, 3).await;
    });
    let connection = BrokerConnection::connect(&addr, &ConnectionConfig::default())
        .await
        .unwrap();
    assert_eq!(connection.version(ApiKey::Heartbeat).unwrap(), 4);
    assert_eq!(connection.version(ApiKey::JoinGroup).unwrap(), 9);
    let (h1, h2, h3) = (heartbeat(1), heartbeat(2), heartbeat(3));
    let (a, b, c) = tokio::join!(
        connection.send(&h1),
        connection.send(&h2),
        connection.send(&h3),
    );
    assert_eq!(
        [
            a.unwrap().error_code,
            b.unwrap().error_code,
            c.unwrap().error_code
        ],
        [1, 2, 3]
    );
    let log = log.lock().unwrap().clone();
    assert_eq!(log[0], (ApiKey::ApiVersions, 3));
    assert_eq!(log[1..], [(ApiKey::Heartbeat, 4); 3]);
    assert!(!connection.is_closed());
}

/// A DescribeGroups v5 answer frame whose groups count is `i32::MAX` (compact: 0x80000000).
fn hostile_describe_answer(correlation_id: i32) -> Bytes {
    let mut frame = BytesMut::new();
    frame.put_i32(correlation_id);
    frame.put_u8(0); // response header v1: no tagged fields
    frame.put_i32(0); // throttle time
    frame.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
    frame.freeze()
}

#[tokio::test]
async fn a_hostile_frame_fails_the_request_and_closes_the_connection() {
    let broker = FakeBroker::start(kafka_4_1(|header, body| match body {
        RequestBody::DescribeGroups(_) => {
            Reply::Frame(hostile_describe_answer(header.correlation_id))
        }
        _ => Reply::Silent,
    }))
    .await;
    let connection = connect(&broker).await;
    let err = connection
        .send(&DescribeGroupsRequest::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.detail(),
            Detail::Wire {
                source: WireError::Malformed {
                    problem: Problem::LengthExceedsRemaining { .. },
                    ..
                },
                ..
            }
        ),
        "{err}"
    );
    connection.closed().await;
    let err = connection.send(&heartbeat(1)).await.unwrap_err();
    assert!(matches!(err.detail(), Detail::Closed { .. }), "{err}");
    assert!(err.is_disconnect());
}

#[tokio::test]
async fn an_unknown_correlation_id_closes_the_connection() {
    let broker = FakeBroker::start(kafka_4_1(|header, _| {
        let mut frame = BytesMut::new();
        frame.put_i32(header.correlation_id + 1000);
        frame.put_u8(0);
        frame.put_i32(0);
        frame.put_i16(0);
        frame.put_u8(0);
        Reply::Frame(frame.freeze())
    }))
    .await;
    let connection = connect(&broker).await;
    let err = connection.send(&heartbeat(1)).await.unwrap_err();
    match err.detail() {
        Detail::Closed { reason, .. } => {
            assert!(reason.contains("correlation id"), "{reason}")
        }
        other => panic!("expected Closed, got {other}"),
    }
    assert!(connection.is_closed());
}

#[tokio::test]
async fn the_broker_closing_fails_the_requests_in_flight() {
    let broker = FakeBroker::start(kafka_4_1(|_, _| Reply::Close)).await;
    let connection = connect(&broker).await;
    let err = connection.send(&heartbeat(1)).await.unwrap_err();
    assert!(matches!(err.detail(), Detail::Closed { .. }), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_request_without_answer_times_out_and_closes_the_connection() {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let handler = kafka_4_1(|_, _| Reply::Silent);
    tokio::spawn(serve(server, handler, Arc::default(), 1));
    let config = ConnectionConfig {
        request_timeout: Duration::from_secs(5),
        ..ConnectionConfig::default()
    };
    let connection = BrokerConnection::handshake(client, "pipe", &config)
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let err = connection.send(&heartbeat(1)).await.unwrap_err();
    assert!(matches!(
        err.detail(),
        Detail::RequestTimeout {
            api_key: ApiKey::Heartbeat,
            ..
        }
    ));
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(connection.is_closed());
    // A longer per-request timeout is honoured on a fresh connection.
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve(
        server,
        kafka_4_1(|_, _| Reply::Silent),
        Arc::default(),
        1,
    ));
    let connection =
        BrokerConnection::with_versions(client, "pipe", &config, NegotiatedVersions::latest());
    let started = tokio::time::Instant::now();
    let join = JoinGroupRequest::default();
    let err = connection
        .send_with_timeout(&join, Duration::from_secs(65))
        .await
        .unwrap_err();
    assert!(matches!(err.detail(), Detail::RequestTimeout { .. }));
    assert_eq!(started.elapsed(), Duration::from_secs(65));
}

#[tokio::test]
async fn a_tls_listener_answering_plaintext_is_named_with_what_to_set() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (client, mut server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        // A TLS listener reads the ApiVersions request as a broken ClientHello and answers
        // with an alert record: handshake_failure.
        let mut request = [0u8; 64];
        let _ = server.read(&mut request).await;
        let _ = server.write_all(&[21, 3, 3, 0, 2, 2, 40]).await;
        std::future::pending::<()>().await;
    });
    let err = BrokerConnection::handshake(client, "pipe", &ConnectionConfig::default())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the broker answered with TLS") && text.contains("`security.protocol`"),
        "{text}"
    );
}

#[tokio::test]
async fn a_broker_too_old_for_kroupier_is_refused() {
    let broker = FakeBroker::start(Arc::new(|header, _| {
        answer(header, &api_versions(&[(ApiKey::JoinGroup, 0, 4)]))
    }))
    .await;
    let err = BrokerConnection::connect(&broker.addr, &ConnectionConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.detail(),
            Detail::UnsupportedBroker {
                api_key: ApiKey::JoinGroup,
                kafka: "2.3",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn api_versions_falls_back_when_the_broker_answers_unsupported_version() {
    let broker = FakeBroker::start(Arc::new(|header, _| {
        if header.request_api_version > 2 {
            // As Kafka: a v0 body with UNSUPPORTED_VERSION and its ApiVersions range.
            let refusal = api_versions(&[(ApiKey::ApiVersions, 0, 2)]).with_error_code(35);
            Reply::Frame(wire::encode_response(header.correlation_id, 0, &refusal).unwrap())
        } else {
            answer(header, &api_versions(&[(ApiKey::ApiVersions, 0, 2)]))
        }
    }))
    .await;
    let connection = connect(&broker).await;
    assert_eq!(connection.version(ApiKey::Heartbeat).unwrap(), 4);
    assert_eq!(
        broker.received(),
        [(ApiKey::ApiVersions, 3), (ApiKey::ApiVersions, 2)]
    );
}

#[tokio::test]
async fn dropping_every_handle_closes_the_connection() {
    let broker = FakeBroker::start(kafka_4_1(|_, _| Reply::Silent)).await;
    let connection = connect(&broker).await;
    let watcher = connection.shared_closed_for_test();
    drop(connection);
    watcher.cancelled().await;
}
