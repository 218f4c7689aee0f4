//! A fake Kafka broker for tests: a tokio listener on 127.0.0.1 (or any byte stream) that
//! decodes requests with kroupier's own wire layer and answers what a handler returns.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestHeader};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

use crate::wire::{self, RequestBody, WireResponse};

/// What the fake broker does with one request.
pub(crate) enum Reply {
    /// Send this frame (without its length prefix).
    Frame(Bytes),
    /// Never answer.
    Silent,
    /// Close the connection.
    Close,
}

/// Decides the reply to each request.
pub(crate) type Handler = Arc<dyn Fn(&RequestHeader, &RequestBody) -> Reply + Send + Sync>;

/// A running fake broker.
pub(crate) struct FakeBroker {
    /// `127.0.0.1:port`.
    pub(crate) addr: String,
    /// Every request received, in order: API and version.
    pub(crate) requests: Arc<Mutex<Vec<(ApiKey, i16)>>>,
}

/// The answer to `header`'s request at its version.
pub(crate) fn answer<R: WireResponse>(header: &RequestHeader, response: &R) -> Reply {
    Reply::Frame(
        wire::encode_response(header.correlation_id, header.request_api_version, response)
            .expect("fake broker encodes its answer"),
    )
}

/// ApiVersions as Kafka 4.1 answers it, with `overrides` replacing some ranges.
pub(crate) fn api_versions(overrides: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    let ranges = [
        (ApiKey::ApiVersions, 0, 4),
        (ApiKey::Metadata, 0, 13),
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::JoinGroup, 0, 9),
        (ApiKey::SyncGroup, 0, 5),
        (ApiKey::Heartbeat, 0, 4),
        (ApiKey::LeaveGroup, 0, 5),
        (ApiKey::DescribeGroups, 0, 6),
        (ApiKey::ListGroups, 0, 5),
        (ApiKey::Produce, 3, 13),
        (ApiKey::Fetch, 4, 18),
        (ApiKey::ListOffsets, 1, 10),
        (ApiKey::CreateTopics, 2, 7),
        (ApiKey::DescribeConfigs, 1, 4),
    ];
    ApiVersionsResponse::default().with_api_keys(
        ranges
            .iter()
            .map(|&(key, min, max)| {
                let (min, max) = overrides
                    .iter()
                    .find(|o| o.0 == key)
                    .map_or((min, max), |o| (o.1, o.2));
                ApiVersion::default()
                    .with_api_key(key as i16)
                    .with_min_version(min)
                    .with_max_version(max)
            })
            .collect(),
    )
}

/// A handler that answers ApiVersions like Kafka 4.1 and everything else with `rest`.
pub(crate) fn kafka_4_1(
    rest: impl Fn(&RequestHeader, &RequestBody) -> Reply + Send + Sync + 'static,
) -> Handler {
    Arc::new(move |header, body| match body {
        RequestBody::ApiVersions(_) => answer(header, &api_versions(&[])),
        other => rest(header, other),
    })
}

impl FakeBroker {
    /// Listens on 127.0.0.1 and serves every connection with `handler`.
    pub(crate) async fn start(handler: Handler) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr").to_string();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, handler.clone(), log.clone(), 1));
            }
        });
        Self { addr, requests }
    }

    /// The requests received so far.
    pub(crate) fn received(&self) -> Vec<(ApiKey, i16)> {
        self.requests.lock().expect("log").clone()
    }
}

/// Serves one connection. Requests other than ApiVersions are answered `batch` at a time, in
/// reverse order (Kafka answers in order; the client must match by correlation id anyway).
pub(crate) async fn serve<S>(
    stream: S,
    handler: Handler,
    log: Arc<Mutex<Vec<(ApiKey, i16)>>>,
    batch: usize,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, wire::frame_codec(wire::DEFAULT_MAX_REQUEST_FRAME));
    let mut held = Vec::new();
    while let Some(Ok(frame)) = framed.next().await {
        let Ok((header, body)) = wire::decode_request(frame.freeze()) else {
            return;
        };
        log.lock()
            .expect("log")
            .push((body.api_key(), header.request_api_version));
        let reply = handler(&header, &body);
        let replies = if matches!(body, RequestBody::ApiVersions(_)) {
            vec![reply]
        } else {
            held.push(reply);
            if held.len() < batch {
                continue;
            }
            held.drain(..).rev().collect()
        };
        for reply in replies {
            match reply {
                Reply::Frame(frame) => {
                    if framed.send(frame).await.is_err() {
                        return;
                    }
                }
                Reply::Silent => {}
                Reply::Close => return,
            }
        }
    }
}
