//! Hostile input closes only the offending connection, and the broker keeps serving: the same
//! cases the embedded coordinator's own tests send, here against whichever broker
//! `KROUPIER_KAFKA_BOOTSTRAP` names. Run it against Apache Kafka and against the embedded
//! coordinator (`cargo run -p kroupier-embedded --example serve`): where they differ, the
//! embedded one is wrong.

use std::time::Duration;

use kafka_protocol::messages::ApiVersionsRequest;
use kafka_protocol::protocol::StrBytes;
use kroupier_integration_tests::{kafka_bootstrap, wire::Connection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An upper bound for the broker to close a connection; reaching it fails the test.
const PATIENCE: Duration = Duration::from_secs(30);

/// A request header v1: key, version, correlation id, null client id.
fn header(key: i16, version: i16) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&1i32.to_be_bytes());
    h.extend_from_slice(&(-1i16).to_be_bytes());
    h
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// JoinGroup v5 whose protocol array claims `i32::MAX` entries in a 40-byte frame.
fn huge_array_join() -> Vec<u8> {
    let mut b = header(11, 5);
    b.extend_from_slice(&1i16.to_be_bytes());
    b.push(b'g');
    b.extend_from_slice(&10_000i32.to_be_bytes());
    b.extend_from_slice(&60_000i32.to_be_bytes());
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(-1i16).to_be_bytes());
    b.extend_from_slice(&1i16.to_be_bytes());
    b.push(b'x');
    b.extend_from_slice(&i32::MAX.to_be_bytes());
    b
}

/// Cases every broker must refuse by closing the connection. (A frame just over the embedded
/// coordinator's 1 MiB cap is fine for Kafka, whose cap is 100 MiB, so the oversize case claims
/// 2 GiB, over both.)
fn cases() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut oversize = i32::MAX.to_be_bytes().to_vec();
    oversize.extend_from_slice(&[0u8; 16]);
    let mut truncated = 100i32.to_be_bytes().to_vec();
    truncated.extend_from_slice(&header(18, 0));
    let mut unknown_key = header(999, 0);
    unknown_key.extend_from_slice(&[0u8; 8]);
    let mut heartbeat_v99 = header(12, 99);
    heartbeat_v99.extend_from_slice(&[0u8; 16]);
    vec![
        ("frame over the size cap", oversize, false),
        ("truncated frame, then end of stream", truncated, true),
        (
            "array count larger than the frame",
            framed(&huge_array_join()),
            false,
        ),
        ("unknown API key", framed(&unknown_key), false),
        ("frame shorter than 4 bytes", framed(&[0, 18]), false),
        (
            "unsupported version of a known API",
            framed(&heartbeat_v99),
            false,
        ),
    ]
}

/// ApiVersions v3+ must name the client software, or Kafka answers INVALID_REQUEST.
fn api_versions_v3() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kroupier-it"))
        .with_client_software_version(StrBytes::from_static_str("0.1.0"))
}

/// Writes `bytes` (then ends the stream if `eof`) and waits until the broker closes.
async fn assert_closed(addr: &str, name: &str, bytes: &[u8], eof: bool) {
    let mut stream = TcpStream::connect(addr).await.expect("connect to broker");
    // The broker may close before reading everything; a failed write is fine.
    let _ = stream.write_all(bytes).await;
    if eof {
        let _ = stream.shutdown().await;
    }
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "{name}: the broker should close the connection"
    );
}

#[tokio::test]
async fn hostile_frames_close_only_their_connection() {
    let Some(addr) = kafka_bootstrap("hostile_frames_close_only_their_connection") else {
        return;
    };
    let addr = addr.split(',').next().unwrap_or_default().to_string();
    let mut bystander = Connection::connect(&addr).await.expect("connect to broker");
    for (name, bytes, eof) in cases() {
        assert_closed(&addr, name, &bytes, eof).await;
        let r = bystander
            .send(&ApiVersionsRequest::default(), 0)
            .await
            .unwrap_or_else(|e| panic!("after {name}: the open connection still works: {e}"));
        assert_eq!(r.error_code, 0, "after {name}");
        let mut fresh = Connection::connect(&addr)
            .await
            .expect("reconnect to broker");
        let r = fresh
            .send(&api_versions_v3(), 3)
            .await
            .unwrap_or_else(|e| panic!("after {name}: a new connection works: {e}"));
        assert_eq!(r.error_code, 0, "after {name}");
    }
}

#[tokio::test]
async fn api_versions_v3_without_a_client_software_name_is_an_invalid_request() {
    let Some(addr) = kafka_bootstrap("api_versions_v3_without_a_client_software_name") else {
        return;
    };
    let addr = addr.split(',').next().unwrap_or_default().to_string();
    let mut conn = Connection::connect(&addr).await.expect("connect to broker");
    let r = conn
        .send(&ApiVersionsRequest::default(), 3)
        .await
        .expect("an answer, not a closed connection");
    assert_eq!(r.error_code, 42, "INVALID_REQUEST");
    let r = conn
        .send(&api_versions_v3(), 3)
        .await
        .expect("ApiVersions v3");
    assert_eq!(r.error_code, 0, "the connection stays usable");
}
