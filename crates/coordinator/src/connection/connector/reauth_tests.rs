//! KIP-368 re-authentication in place, against a fake SASL broker whose sessions last 300 ms:
//! the connection stays open, each renewal runs alone on it (no request in flight or sent
//! between SaslHandshake and the last SaslAuthenticate), requests keep succeeding, and a
//! refused renewal closes the connection.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, HeartbeatRequest, HeartbeatResponse, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

use super::Connector;
use crate::connection::config::ConnectionConfig;
use crate::connection::security::{Sasl, Secret, Security};
use crate::connection::tests::fake_broker::api_versions;
use crate::wire;

/// The session lifetime the fake broker gives.
const LIFETIME_MS: i64 = 300;

/// What the fake broker saw.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    /// Every request's API, in arrival order.
    requests: Mutex<Vec<ApiKey>>,
    /// SaslHandshakes that arrived while a heartbeat was unanswered.
    handshakes_with_requests_in_flight: AtomicUsize,
    /// Requests other than SASL's that arrived during a re-authentication.
    interleaved: AtomicUsize,
}

/// A SASL/PLAIN broker that answers heartbeats after 40 ms and refuses every renewal after the
/// first `renewals` when `refuse_after` is set.
async fn fake_sasl_broker(refuse_after: Option<usize>) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            shared.connections.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, shared.clone(), refuse_after));
        }
    });
    (addr, seen)
}

async fn serve(stream: tokio::net::TcpStream, seen: Arc<Seen>, refuse_after: Option<usize>) {
    let framed = Framed::new(stream, wire::frame_codec(wire::DEFAULT_MAX_REQUEST_FRAME));
    let (mut sink, mut frames) = framed.split();
    let (replies, mut outbox) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(async move {
        while let Some(frame) = outbox.recv().await {
            if sink.send(frame).await.is_err() {
                return;
            }
        }
    });
    let unanswered = Arc::new(AtomicUsize::new(0));
    let authenticating = AtomicBool::new(false);
    let mut authentications = 0;
    while let Some(Ok(frame)) = frames.next().await {
        let mut header = frame.freeze();
        let (key, version, correlation) = (header.get_i16(), header.get_i16(), header.get_i32());
        let key = ApiKey::try_from(key).unwrap();
        seen.requests.lock().unwrap().push(key);
        let reply = match key {
            ApiKey::ApiVersions => {
                let mut versions = api_versions(&[]);
                for (key, max) in [(ApiKey::SaslHandshake, 1), (ApiKey::SaslAuthenticate, 2)] {
                    versions.api_keys.push(
                        ApiVersion::default()
                            .with_api_key(key as i16)
                            .with_max_version(max),
                    );
                }
                wire::encode_response(correlation, version, &versions)
            }
            ApiKey::SaslHandshake => {
                if unanswered.load(Ordering::SeqCst) > 0 {
                    seen.handshakes_with_requests_in_flight
                        .fetch_add(1, Ordering::SeqCst);
                }
                authenticating.store(true, Ordering::SeqCst);
                let answer = SaslHandshakeResponse::default()
                    .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]);
                wire::encode_response(correlation, version, &answer)
            }
            ApiKey::SaslAuthenticate => {
                authenticating.store(false, Ordering::SeqCst);
                authentications += 1;
                let refused = refuse_after.is_some_and(|n| authentications > n);
                let answer = match refused {
                    true => SaslAuthenticateResponse::default()
                        .with_error_code(58)
                        .with_error_message(Some(StrBytes::from_static_str(
                            "Authentication failed: Invalid username or password",
                        ))),
                    false => {
                        SaslAuthenticateResponse::default().with_session_lifetime_ms(LIFETIME_MS)
                    }
                };
                wire::encode_response(correlation, version, &answer)
            }
            ApiKey::Heartbeat => {
                if authenticating.load(Ordering::SeqCst) {
                    seen.interleaved.fetch_add(1, Ordering::SeqCst);
                }
                unanswered.fetch_add(1, Ordering::SeqCst);
                let frame =
                    wire::encode_response(correlation, version, &HeartbeatResponse::default())
                        .unwrap();
                let (replies, unanswered) = (replies.clone(), unanswered.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(40)).await;
                    unanswered.fetch_sub(1, Ordering::SeqCst);
                    let _ = replies.send(frame);
                });
                continue;
            }
            other => panic!("the fake SASL broker got {other:?}"),
        };
        if replies.send(reply.unwrap()).is_err() {
            return;
        }
    }
}

fn plain() -> Connector {
    Connector::new(&Security {
        tls: None,
        sasl: Some(Sasl::Plain {
            username: "kroupier".into(),
            password: Secret::new("secret"),
        }),
    })
    .unwrap()
}

fn heartbeat() -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(StrBytes::from_static_str("g").into())
        .with_generation_id(1)
        .with_member_id(StrBytes::from_static_str("m"))
}

#[tokio::test]
async fn sessions_are_renewed_in_place_while_requests_go_on() {
    let (addr, seen) = fake_sasl_broker(None).await;
    let connection = plain()
        .connect(&addr, &ConnectionConfig::default())
        .await
        .unwrap();
    // Three pipelined heartbeats every 20 ms for four session lifetimes.
    let until = tokio::time::Instant::now() + Duration::from_millis(4 * LIFETIME_MS as u64);
    while tokio::time::Instant::now() < until {
        let request = heartbeat();
        let sends = (0..3).map(|_| connection.send(&request));
        for answer in futures::future::join_all(sends).await {
            assert_eq!(answer.unwrap().error_code, 0);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!connection.is_closed(), "the connection stayed open");
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1, "one connection");
    let requests = seen.requests.lock().unwrap().clone();
    let handshakes = requests
        .iter()
        .filter(|k| **k == ApiKey::SaslHandshake)
        .count();
    assert!(
        handshakes >= 4,
        "the session was renewed on the same connection: {handshakes} handshakes"
    );
    assert_eq!(
        seen.handshakes_with_requests_in_flight
            .load(Ordering::SeqCst),
        0,
        "a renewal began with a heartbeat unanswered"
    );
    assert_eq!(
        seen.interleaved.load(Ordering::SeqCst),
        0,
        "a heartbeat arrived in the middle of a renewal"
    );
}

#[tokio::test]
async fn a_refused_renewal_closes_the_connection() {
    let (addr, _seen) = fake_sasl_broker(Some(1)).await;
    let connection = plain()
        .connect(&addr, &ConnectionConfig::default())
        .await
        .unwrap();
    assert_eq!(connection.send(&heartbeat()).await.unwrap().error_code, 0);
    tokio::time::timeout(Duration::from_secs(5), connection.closed())
        .await
        .expect("the connection closes once its renewal is refused");
}

#[tokio::test]
async fn the_renewal_ends_with_the_connection() {
    let (addr, seen) = fake_sasl_broker(None).await;
    let connection = plain()
        .connect(&addr, &ConnectionConfig::default())
        .await
        .unwrap();
    drop(connection);
    tokio::time::sleep(Duration::from_millis(2 * LIFETIME_MS as u64)).await;
    let handshakes = seen
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|k| **k == ApiKey::SaslHandshake)
        .count();
    assert_eq!(handshakes, 1, "no renewal of a connection nobody uses");
}
