//! One connection to one broker, with pipelined requests, over any byte stream (the
//! connector opens it: TCP, TLS, SASL); and the node a broker is known as.
//!
//! A connection is a cheap, cloneable handle and two tasks: a writer that assigns frames to the
//! socket in the order requests arrive, and a reader that matches each response to its request
//! by correlation id (Kafka answers in order, but the id is what proves it). Requests are
//! pipelined: many may be in flight at once. Each response is decoded — after the guard — on
//! the reader task, so a frame that does not decode fails its request *and* closes the
//! connection: after a bad frame the byte stream cannot be trusted. Every other request in
//! flight then fails with `Closed`.
//!
//! A request that gets no answer within its timeout also closes the connection (as Kafka's
//! clients do), since its response could still arrive and nothing else would consume it.
//! Dropping every handle closes the connection.
//!
//! Note that a Kafka broker serves one request per connection at a time: a JoinGroup parked
//! for the rebalance timeout delays the next request on the same connection.
//!
//! # Cancel safety
//! [`BrokerConnection::send`] is cancel safe: dropping its future before the request was
//! queued sends nothing; dropping it after sends the request and discards the response, and
//! the connection stays usable.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncRead, AsyncWrite};
#[cfg(test)]
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::config::ConnectionConfig;
use super::error::ConnectionError;
use super::versions::NegotiatedVersions;
use crate::connection::Detail;
use crate::wire::{self, WireRequest, decode_response, encode_request, peek_correlation_id};

/// How many requests may queue for the writer before `send` waits.
const QUEUE: usize = 256;

/// UNSUPPORTED_VERSION.
const UNSUPPORTED_VERSION: i16 = 35;

/// The ApiVersions version kroupier asks first (flexible, Kafka 2.4+).
const API_VERSIONS_FIRST: i16 = 3;

/// A broker node, as FindCoordinator or Metadata name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerNode {
    /// The broker's node id.
    pub node_id: i32,
    /// Its host name.
    pub host: String,
    /// Its port.
    pub port: i32,
}

impl BrokerNode {
    /// `host:port`, with brackets around an IPv6 host.
    pub fn addr(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A handle to one connection to one broker. Clones share the connection.
#[derive(Clone)]
pub struct BrokerConnection {
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Outgoing>,
    client_id: Arc<str>,
    request_timeout: Duration,
    /// Whether requests wait at the re-authentication gate (all but the re-authentication's
    /// own).
    gated: bool,
}

/// A handle that does not keep the connection open: the connection closes once every
/// [`BrokerConnection`] is dropped, whoever holds one of these.
#[derive(Clone)]
pub(crate) struct WeakConnection {
    shared: std::sync::Weak<Shared>,
    outgoing: mpsc::WeakSender<Outgoing>,
    client_id: Arc<str>,
    request_timeout: Duration,
}

impl WeakConnection {
    /// A handle to the connection if it is still in use, for requests that bypass the
    /// re-authentication gate (the re-authentication's own).
    pub(crate) fn ungated(&self) -> Option<BrokerConnection> {
        Some(BrokerConnection {
            shared: self.shared.upgrade()?,
            outgoing: self.outgoing.upgrade()?,
            client_id: self.client_id.clone(),
            request_timeout: self.request_timeout,
            gated: false,
        })
    }

    /// Completes when the connection closes, or at once if nothing uses it any more.
    pub(crate) async fn closed(&self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let token = shared.closed.clone();
        drop(shared);
        token.cancelled().await;
    }

    /// Holds every new request back once the requests in flight are answered, until the
    /// returned guard is dropped: KIP-368 re-authentication runs alone on its connection.
    /// `None` if nothing uses the connection any more.
    pub(crate) async fn pause(&self) -> Option<tokio::sync::OwnedRwLockWriteGuard<()>> {
        let gate = self.shared.upgrade()?.gate.clone();
        Some(gate.write_owned().await)
    }

    /// Closes the connection with `reason` (if anything still uses it).
    pub(crate) fn close(&self, reason: String) {
        if let Some(shared) = self.shared.upgrade() {
            shared.close(reason);
        }
    }
}

impl std::fmt::Debug for BrokerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerConnection")
            .field("addr", &self.shared.addr)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// What the reader does with a response frame, or with the connection's end.
type Completion = Box<dyn FnOnce(Outcome) -> Completed + Send>;

enum Outcome {
    Frame(Bytes),
    Failed(ConnectionError),
}

/// Whether the frame decoded (`false` closes the connection).
#[derive(PartialEq, Eq)]
enum Completed {
    Decoded,
    Undecodable,
}

struct Outgoing {
    correlation_id: i32,
    frame: Bytes,
    complete: Completion,
}

struct Shared {
    addr: String,
    /// Requests hold it shared from send to answer; re-authentication holds it alone.
    gate: Arc<tokio::sync::RwLock<()>>,
    in_flight: Mutex<InFlight>,
    closed: CancellationToken,
    next_correlation_id: AtomicI32,
    versions: OnceLock<NegotiatedVersions>,
}

#[derive(Default)]
struct InFlight {
    pending: HashMap<i32, Completion>,
    closed: Option<String>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        // A panic while holding the lock cannot leave the map inconsistent; go on with it.
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request, or fails it at once if the connection is closed.
    fn register(&self, correlation_id: i32, complete: Completion) {
        let mut in_flight = self.lock();
        let refusal = match &in_flight.closed {
            Some(reason) => Some(reason.clone()),
            None => match in_flight.pending.entry(correlation_id) {
                Entry::Vacant(slot) => {
                    slot.insert(complete);
                    return;
                }
                Entry::Occupied(_) => Some(format!(
                    "correlation id {correlation_id} is still in flight"
                )),
            },
        };
        drop(in_flight);
        if let Some(reason) = refusal {
            complete(Outcome::Failed(self.closed_error(reason)));
        }
    }

    fn take(&self, correlation_id: i32) -> Option<Completion> {
        self.lock().pending.remove(&correlation_id)
    }

    /// Closes the connection once: stops both tasks and fails every request in flight.
    fn close(&self, reason: String) {
        let pending: Vec<Completion> = {
            let mut in_flight = self.lock();
            if in_flight.closed.is_some() {
                return;
            }
            tracing::debug!(addr = %self.addr, %reason, "closing broker connection");
            in_flight.closed = Some(reason.clone());
            in_flight.pending.drain().map(|(_, c)| c).collect()
        };
        self.closed.cancel();
        for complete in pending {
            complete(Outcome::Failed(self.closed_error(reason.clone())));
        }
    }

    fn close_reason(&self) -> String {
        self.lock()
            .closed
            .clone()
            .unwrap_or_else(|| "closed".to_owned())
    }

    fn closed_error(&self, reason: String) -> ConnectionError {
        ConnectionError::from(Detail::Closed {
            addr: self.addr.clone(),
            reason,
        })
    }
}

impl BrokerConnection {
    /// Connects to `addr` (`host:port`) over plain TCP and negotiates API versions, within
    /// `config.connect_timeout`: for tests; every other path connects through
    /// [`Cluster::connect`](super::Cluster::connect), which applies TLS and SASL.
    #[cfg(test)]
    ///
    /// # Errors
    /// `Connect` if the broker cannot be reached in time, or any error of
    /// [`handshake`](Self::handshake).
    pub(crate) async fn connect(
        addr: &str,
        config: &ConnectionConfig,
    ) -> Result<Self, ConnectionError> {
        let connect_error = |reason: String| {
            ConnectionError::from(Detail::Connect {
                addr: addr.to_owned(),
                reason,
            })
        };
        let attempt = async {
            let stream = TcpStream::connect(addr)
                .await
                .map_err(|e| connect_error(e.to_string()))?;
            // Requests are small and latency matters more than packet count.
            let _ = stream.set_nodelay(true);
            Self::handshake(stream, addr, config).await
        };
        match tokio::time::timeout(config.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(connect_error(format!(
                "no connection and ApiVersions answer within {:?}",
                config.connect_timeout
            ))),
        }
    }

    /// Runs a connection over an already open byte stream (TCP, TLS, or an in-memory pipe in
    /// tests) and negotiates API versions on it with ApiVersions. `addr` names the peer in
    /// errors and logs.
    ///
    /// # Errors
    /// `UnsupportedBroker` or `MissingApi` when the
    /// broker is too old for kroupier, or any error of a request.
    pub(crate) async fn handshake<S>(
        stream: S,
        addr: &str,
        config: &ConnectionConfig,
    ) -> Result<Self, ConnectionError>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let connection = Self::start(stream, addr, config);
        let versions = connection.negotiate(config.connect_timeout).await?;
        let _ = connection.shared.versions.set(versions);
        Ok(connection)
    }

    /// Runs a connection over `stream` with `versions` already known, without ApiVersions.
    #[cfg(test)]
    pub(crate) fn with_versions<S>(
        stream: S,
        addr: &str,
        config: &ConnectionConfig,
        versions: NegotiatedVersions,
    ) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let connection = Self::start(stream, addr, config);
        let _ = connection.shared.versions.set(versions);
        connection
    }

    fn start<S>(stream: S, addr: &str, config: &ConnectionConfig) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(stream);
        let shared = Arc::new(Shared {
            addr: addr.to_owned(),
            gate: Arc::default(),
            in_flight: Mutex::default(),
            closed: CancellationToken::new(),
            next_correlation_id: AtomicI32::new(1),
            versions: OnceLock::new(),
        });
        let (outgoing, queue) = mpsc::channel(QUEUE);
        let max_frame = config.max_response_frame;
        tokio::spawn(write_frames(
            shared.clone(),
            queue,
            FramedWrite::new(write, wire::frame_codec(max_frame)),
        ));
        tokio::spawn(read_frames(
            shared.clone(),
            FramedRead::new(read, wire::frame_codec(max_frame)),
        ));
        Self {
            shared,
            outgoing,
            client_id: Arc::from(config.client_id.as_str()),
            request_timeout: config.request_timeout,
            gated: true,
        }
    }

    /// A handle that does not keep the connection open (for the re-authentication task).
    pub(crate) fn downgrade(&self) -> WeakConnection {
        WeakConnection {
            shared: Arc::downgrade(&self.shared),
            outgoing: self.outgoing.downgrade(),
            client_id: self.client_id.clone(),
            request_timeout: self.request_timeout,
        }
    }

    /// ApiVersions, first at v3, then at what the broker offers if it answers
    /// UNSUPPORTED_VERSION (in a v0 body, as Kafka does).
    async fn negotiate(&self, timeout: Duration) -> Result<NegotiatedVersions, ConnectionError> {
        let mut version = API_VERSIONS_FIRST;
        loop {
            let mut request = ApiVersionsRequest::default();
            if version >= 3 {
                request.client_software_name = StrBytes::from_static_str("kroupier");
                request.client_software_version =
                    StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
            }
            let response = self.send_at(&request, version, timeout).await?;
            if response.error_code == UNSUPPORTED_VERSION && version > 0 {
                let offered = response
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                    .map_or(0, |k| k.max_version);
                version = offered.clamp(0, version - 1);
                continue;
            }
            return NegotiatedVersions::negotiate(&self.shared.addr, &response);
        }
    }

    /// The broker's `host:port`.
    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// The versions negotiated on this connection (empty before the handshake).
    pub fn versions(&self) -> &NegotiatedVersions {
        static NONE: OnceLock<NegotiatedVersions> = OnceLock::new();
        self.shared
            .versions
            .get()
            .unwrap_or_else(|| NONE.get_or_init(NegotiatedVersions::default))
    }

    /// The version negotiated for `api_key`.
    ///
    /// # Errors
    /// `NotNegotiated` when the broker offers no usable version.
    pub fn version(&self, api_key: ApiKey) -> Result<i16, ConnectionError> {
        self.versions().get(api_key).ok_or_else(|| {
            ConnectionError::from(Detail::NotNegotiated {
                addr: self.shared.addr.clone(),
                api_key,
            })
        })
    }

    /// Whether the connection is closed (then every request fails; connect again).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Completes when the connection closes, for whatever reason.
    pub async fn closed(&self) {
        self.shared.closed.cancelled().await;
    }

    /// The token cancelled when the connection closes (tests watch it outlive the handles).
    #[cfg(test)]
    pub(crate) fn shared_closed_for_test(&self) -> CancellationToken {
        self.shared.closed.clone()
    }

    /// Closes the connection; requests in flight fail with `Closed`.
    pub fn close(&self) {
        self.shared.close("closed by kroupier".to_owned());
    }

    /// Sends `request` at the negotiated version and waits for its response, up to the
    /// configured request timeout.
    ///
    /// # Errors
    /// `NotNegotiated`, `Encode`, or any error of the
    /// connection (see [`ConnectionError::is_disconnect`]).
    pub async fn send<R: WireRequest>(&self, request: &R) -> Result<R::Response, ConnectionError> {
        self.send_with_timeout(request, self.request_timeout).await
    }

    /// [`send`](Self::send) with its own timeout (a JoinGroup may wait for the whole
    /// rebalance timeout).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub async fn send_with_timeout<R: WireRequest>(
        &self,
        request: &R,
        timeout: Duration,
    ) -> Result<R::Response, ConnectionError> {
        let version = self.version(R::API_KEY)?;
        self.send_at(request, version, timeout).await
    }

    /// Sends `request` at an explicit `version`.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub async fn send_at<R: WireRequest>(
        &self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, ConnectionError> {
        let addr = &self.shared.addr;
        let correlation_id = self
            .shared
            .next_correlation_id
            .fetch_add(1, Ordering::Relaxed)
            & i32::MAX;
        let frame = encode_request(request, version, correlation_id, Some(&self.client_id))
            .map_err(|source| {
                ConnectionError::from(Detail::Encode {
                    addr: addr.clone(),
                    source,
                })
            })?;
        let (tx, rx) = oneshot::channel();
        let peer = addr.clone();
        let complete: Completion = Box::new(move |outcome| match outcome {
            Outcome::Frame(frame) => match decode_response::<R::Response>(frame, version) {
                Ok((_, body)) => {
                    let _ = tx.send(Ok(body));
                    Completed::Decoded
                }
                Err(source) => {
                    let _ = tx.send(Err(ConnectionError::from(Detail::Wire {
                        addr: peer,
                        source,
                    })));
                    Completed::Undecodable
                }
            },
            Outcome::Failed(error) => {
                let _ = tx.send(Err(error));
                Completed::Decoded
            }
        });
        let exchange = async {
            // Held until the answer: re-authentication waits for it and holds the next back.
            let _permit = match self.gated {
                true => Some(self.shared.gate.read().await),
                false => None,
            };
            let outgoing = Outgoing {
                correlation_id,
                frame,
                complete,
            };
            if self.outgoing.send(outgoing).await.is_err() {
                return Err(self.shared.closed_error(self.shared.close_reason()));
            }
            rx.await
                .unwrap_or_else(|_| Err(self.shared.closed_error(self.shared.close_reason())))
        };
        tracing::trace!(addr = %addr, api = ?R::API_KEY, version, correlation_id, "request");
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => {
                if let Err(e) = &result {
                    tracing::debug!(addr = %addr, api = ?R::API_KEY, correlation_id, error = %e, "request failed");
                }
                result
            }
            Err(_) => {
                self.shared.close(format!(
                    "{:?} (correlation id {correlation_id}) timed out after {timeout:?}",
                    R::API_KEY
                ));
                Err(ConnectionError::from(Detail::RequestTimeout {
                    addr: addr.clone(),
                    api_key: R::API_KEY,
                    timeout,
                }))
            }
        }
    }
}

/// The writer task: registers each request, then writes its frame; flushes when the queue
/// runs dry, so pipelined requests share a write.
async fn write_frames<W>(
    shared: Arc<Shared>,
    mut queue: mpsc::Receiver<Outgoing>,
    mut sink: FramedWrite<W, tokio_util::codec::LengthDelimitedCodec>,
) where
    W: AsyncWrite + Send + Unpin,
{
    loop {
        let next = tokio::select! {
            biased;
            () = shared.closed.cancelled() => break,
            next = queue.recv() => next,
        };
        let Some(Outgoing {
            correlation_id,
            frame,
            complete,
        }) = next
        else {
            shared.close("every handle to the connection was dropped".to_owned());
            break;
        };
        shared.register(correlation_id, complete);
        let written = tokio::select! {
            biased;
            () = shared.closed.cancelled() => break,
            written = async {
                sink.feed(frame).await?;
                if queue.is_empty() {
                    SinkExt::<Bytes>::flush(&mut sink).await?;
                }
                Ok::<(), std::io::Error>(())
            } => written,
        };
        if let Err(e) = written {
            shared.close(format!("write failed: {e}"));
            break;
        }
    }
}

/// Whether `bytes` begin with a TLS record header (content type 20 to 23, version 3.x): a TLS
/// listener's answer (an alert, a ServerHello) to a plaintext request, which the frame codec
/// reads as a length of some 350 MB and refuses without consuming it.
fn starts_like_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [20..=23, 3, 0..=4, ..])
}

/// The reader task: matches each response frame to its request and completes it.
async fn read_frames<R>(
    shared: Arc<Shared>,
    mut frames: FramedRead<R, tokio_util::codec::LengthDelimitedCodec>,
) where
    R: AsyncRead + Send + Unpin,
{
    loop {
        let next = tokio::select! {
            biased;
            () = shared.closed.cancelled() => break,
            next = frames.next() => next,
        };
        let frame = match next {
            None => {
                shared.close("the broker closed the connection".to_owned());
                break;
            }
            Some(Err(e)) => {
                let reason = if starts_like_tls(frames.read_buffer()) {
                    "the broker answered with TLS: this listener speaks TLS, not plaintext; set \
                     `security.protocol` to SSL (or SASL_SSL)"
                        .to_owned()
                } else {
                    format!("read failed: {e}")
                };
                shared.close(reason);
                break;
            }
            Some(Ok(frame)) => frame.freeze(),
        };
        let correlation_id = match peek_correlation_id(&frame) {
            Ok(id) => id,
            Err(e) => {
                shared.close(e.to_string());
                break;
            }
        };
        let Some(complete) = shared.take(correlation_id) else {
            shared.close(
                ConnectionError::from(Detail::UnexpectedCorrelationId {
                    addr: shared.addr.clone(),
                    correlation_id,
                })
                .to_string(),
            );
            break;
        };
        if complete(Outcome::Frame(frame)) == Completed::Undecodable {
            shared.close(format!(
                "the response to correlation id {correlation_id} did not decode"
            ));
            break;
        }
    }
}
