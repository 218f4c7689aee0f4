//! The listener and one task per connection: a cap on open connections, framing with a size
//! cap, guarded decoding, one request at a time (Kafka mutes a connection while a request is in
//! flight, so responses go out in request order), an idle timeout between requests, and a
//! logged reason whenever a connection is closed on bad input. With TLS, each connection's
//! handshake runs on its own task, within [`HANDSHAKE_TIMEOUT`], before the first request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::ApiKey;
use kroupier_coordinator::wire::{self, WireError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::apis::is_supported;
use super::dispatch::{Answer, Dispatcher, unsupported_api_versions};
use super::tls::{Acceptor, HANDSHAKE_TIMEOUT, explain};

/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long a connection whose TLS handshake failed stays open for the client to read why.
const LINGER: Duration = Duration::from_secs(1);

/// What every connection is held to (see [`Config`](crate::Config) for each field).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// The largest request frame accepted.
    pub(crate) max_frame: usize,
    /// How many connections one listener serves at once.
    pub(crate) max_connections: usize,
    /// How long a connection may wait for its next request.
    pub(crate) idle_timeout: Duration,
}

/// Accepts connections until `stop` is cancelled; each runs on `tracker`, after a TLS
/// handshake when `tls` is set. A connection over [`ConnectionLimits::max_connections`] is
/// closed as soon as it is accepted.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    tls: Option<Acceptor>,
    dispatcher: Dispatcher,
    limits: ConnectionLimits,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    // Validation keeps the cap within what a semaphore counts; the clamp only keeps this total.
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    tracing::warn!(
                        %peer,
                        max_connections = limits.max_connections,
                        "closing connection: max_connections reached; raise max_connections or close idle clients"
                    );
                    drop(stream);
                    continue;
                };
                tracing::debug!(%peer, "connection accepted");
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::debug!(%peer, %error, "could not set TCP_NODELAY");
                }
                let (dispatcher, stop, tls) = (dispatcher.clone(), stop.clone(), tls.clone());
                tracker.spawn(async move {
                    match tls {
                        None => serve(stream, peer, dispatcher, limits, stop).await,
                        Some(tls) => {
                            if let Some(stream) = handshake(&tls, stream, peer, &stop).await {
                                serve(stream, peer, dispatcher, limits, stop).await;
                            }
                        }
                    }
                    drop(slot);
                });
            }
            Err(error) => {
                tracing::warn!(%error, "accept failed; retrying");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    tracing::debug!("listener stopped");
}

/// The server side of the TLS handshake on `stream`: `None` (logged) when it fails, takes
/// longer than [`HANDSHAKE_TIMEOUT`], or `stop` is cancelled meanwhile.
async fn handshake(
    tls: &Acceptor,
    stream: TcpStream,
    peer: SocketAddr,
    stop: &CancellationToken,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let done = tokio::select! {
        () = stop.cancelled() => return None,
        done = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.0.accept(stream).into_fallible()) => done,
    };
    match done {
        Ok(Ok(stream)) => {
            let (_, session) = stream.get_ref();
            let client_certificate = session.peer_certificates().is_some_and(|c| !c.is_empty());
            tracing::debug!(%peer, version = ?session.protocol_version(), client_certificate, "TLS handshake done");
            Some(stream)
        }
        Ok(Err((error, tcp))) => {
            let reason = explain(&error);
            tracing::info!(%peer, %reason, "closing connection: TLS handshake failed");
            linger(tcp, stop).await;
            None
        }
        Err(_) => {
            tracing::info!(%peer, timeout = ?HANDSHAKE_TIMEOUT, "closing connection: no TLS handshake within the timeout");
            None
        }
    }
}

/// Closes a connection whose handshake failed so that the client reads the alert that says why:
/// with TLS 1.3 the client has sent its first request by the time a missing or bad client
/// certificate is found, and closing with that request unread would reset the connection,
/// which can discard the alert before the client reads it. Sends FIN, then reads and drops
/// whatever comes until the client closes, for at most [`LINGER`].
async fn linger(mut tcp: TcpStream, stop: &CancellationToken) {
    let drain = async {
        let _ = tcp.shutdown().await;
        let mut buf = [0u8; 1024];
        while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        () = stop.cancelled() => {}
        _ = tokio::time::timeout(LINGER, drain) => {}
    }
}

/// Serves one connection (a TCP stream, or any byte stream) until the peer closes it, it sends
/// bad input, it sends no request for [`ConnectionLimits::idle_timeout`], or `stop` is
/// cancelled.
pub(crate) async fn serve<S>(
    stream: S,
    peer: SocketAddr,
    dispatcher: Dispatcher,
    limits: ConnectionLimits,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let host = format!("/{}", peer.ip());
    let max_frame = limits.max_frame;
    let mut framed = Framed::new(stream, wire::frame_codec(max_frame));
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = tokio::time::timeout(limits.idle_timeout, framed.next()) => next,
        };
        let Ok(next) = next else {
            let idle = limits.idle_timeout;
            tracing::debug!(%peer, ?idle, "closing connection: no request within the idle timeout");
            return;
        };
        let frame = match next {
            None => {
                tracing::debug!(%peer, "connection closed by the client");
                return;
            }
            Some(Err(error)) => {
                // Over the size cap, truncated at EOF, or an IO error.
                tracing::warn!(%peer, %error, max_frame, "closing connection: unreadable frame");
                return;
            }
            Some(Ok(frame)) => frame.freeze(),
        };
        let answer = match wire::decode_request(frame) {
            Ok((header, body)) if !is_supported(body.api_key(), header.request_api_version) => {
                let (api, version) = (body.api_key(), header.request_api_version);
                tracing::warn!(%peer, ?api, version, "closing connection: version not served");
                return;
            }
            Ok((header, body)) => {
                tracing::trace!(%peer, api = ?body.api_key(), version = header.request_api_version, "request");
                tokio::select! {
                    () = stop.cancelled() => return,
                    answer = dispatcher.dispatch(&header, body, &host) => answer,
                }
            }
            Err(WireError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                version,
                correlation_id,
                ..
            }) => {
                tracing::debug!(%peer, version, "unsupported ApiVersions version; answering with v0");
                unsupported_api_versions(correlation_id)
                    .map(|frame| Answer::Send(frame, Duration::ZERO))
                    .map_err(Into::into)
            }
            Err(error) => {
                tracing::warn!(%peer, %error, "closing connection: bad request");
                return;
            }
        };
        match answer {
            Ok(Answer::Send(frame, delay)) => {
                if !delay.is_zero() {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                if let Err(error) = framed.send(frame).await {
                    tracing::debug!(%peer, %error, "closing connection: write failed");
                    return;
                }
            }
            Ok(Answer::Drop) => tracing::debug!(%peer, "fault injection: response dropped"),
            Ok(Answer::Silent) => tracing::trace!(%peer, "no response (acks=0)"),
            Err(error) => {
                tracing::warn!(%peer, %error, "closing connection: could not answer");
                return;
            }
        }
    }
}
