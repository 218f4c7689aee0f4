//! The server over real TCP on 127.0.0.1, with kafka-protocol messages.

mod flow;
mod hostile;
mod limits;
mod ops;
mod prop;
mod topics;

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{ApiVersionsRequest, GroupId, JoinGroupRequest};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::{CoordinatorHandle, EmbeddedCoordinator};

/// An upper bound for anything a test waits on; reaching it is a failure, never a pass.
pub(super) const PATIENCE: Duration = Duration::from_secs(30);

/// A coordinator on an OS-picked port with a low minimum session timeout.
pub(super) async fn start() -> CoordinatorHandle {
    // Logs show with `--nocapture` and `RUST_LOG=kroupier_embedded=debug`.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    EmbeddedCoordinator::builder()
        .min_session_timeout(Duration::from_millis(100))
        .max_request_frame(64 * 1024)
        .bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0")
}

/// A minimal Kafka client: one request at a time.
pub(super) struct Client {
    framed: Framed<TcpStream, LengthDelimitedCodec>,
    next_correlation_id: i32,
}

impl Client {
    pub(super) async fn connect(handle: &CoordinatorHandle) -> Self {
        let stream = TcpStream::connect(handle.local_addr())
            .await
            .expect("connect");
        Self {
            framed: Framed::new(stream, wire::frame_codec(wire::DEFAULT_MAX_RESPONSE_FRAME)),
            next_correlation_id: 1,
        }
    }

    /// Sends `request` at `version` without waiting; returns its correlation id.
    pub(super) async fn send<R: WireRequest>(&mut self, request: &R, version: i16) -> i32 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let frame = wire::encode_request(request, version, correlation_id, Some("test-client"))
            .expect("encode request");
        self.framed.send(frame).await.expect("send request");
        correlation_id
    }

    /// Reads the response to the request `correlation_id`.
    pub(super) async fn receive<R: WireRequest>(
        &mut self,
        correlation_id: i32,
        version: i16,
    ) -> R::Response {
        let frame = tokio::time::timeout(PATIENCE, self.framed.next())
            .await
            .expect("a response in time")
            .expect("the connection is open")
            .expect("a readable frame");
        let (header, response) =
            wire::decode_response::<R::Response>(frame.freeze(), version).expect("decode response");
        assert_eq!(
            header.correlation_id, correlation_id,
            "responses come in request order"
        );
        response
    }

    /// Sends `request` and waits for its response.
    pub(super) async fn call<R: WireRequest>(&mut self, request: &R, version: i16) -> R::Response {
        let id = self.send(request, version).await;
        self.receive::<R>(id, version).await
    }
}

/// A raw connection for hostile bytes.
pub(super) async fn raw(handle: &CoordinatorHandle) -> TcpStream {
    TcpStream::connect(handle.local_addr())
        .await
        .expect("connect")
}

/// Writes `bytes` and waits for the server to close the connection (EOF), ignoring any data.
pub(super) async fn assert_closed_after(mut stream: TcpStream, bytes: &[u8]) {
    // The server may close before reading everything; a failed write is fine.
    let _ = stream.write_all(bytes).await;
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server should close the connection");
}

/// A length-prefixed frame around `body`.
pub(super) fn framed(body: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(body.len() + 4);
    buf.put_i32(body.len() as i32);
    buf.put_slice(body);
    buf.freeze()
}

/// Checks the server still answers ApiVersions on a fresh connection.
pub(super) async fn assert_still_serving(handle: &CoordinatorHandle) {
    let mut client = Client::connect(handle).await;
    let response = client.call(&api_versions_request(), 4).await;
    assert_eq!(response.error_code, 0);
    assert_eq!(response.api_keys.len(), crate::SUPPORTED_VERSIONS.len());
}

/// An ApiVersions request that passes Kafka's v3+ check on the client software name and version.
pub(super) fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kroupier-test"))
        .with_client_software_version(StrBytes::from_static_str("0.1.0"))
}

/// A JoinGroup for group `g`, protocol type `kroupier`, one protocol `p` with `metadata`.
pub(super) fn join_request(
    member_id: &str,
    metadata: &'static [u8],
    session_ms: i32,
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_session_timeout_ms(session_ms)
        .with_rebalance_timeout_ms(60_000)
        .with_member_id(StrBytes::from_string(member_id.to_string()))
        .with_protocol_type(StrBytes::from_static_str("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("p"))
                .with_metadata(Bytes::from_static(metadata)),
        ])
}
