//! The proxy's moving parts: one listener per (role, upstream address), created on demand, and
//! one task per proxied connection that pumps Kafka frames both ways under the current
//! [`Policy`].
//!
//! A connection task reads whole frames (4-byte length, then the frame). From each request it
//! takes the API key, version and correlation id (the first 8 bytes of every request header,
//! whatever its version) so that it knows how to decode the response with that correlation id.
//! Metadata and FindCoordinator responses are rewritten to name proxy listeners; everything else
//! passes through as raw bytes. Each direction has a writer that holds a frame until its due
//! time, so delays keep the order of frames on a connection, as a broker answers in order.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::policy::Policy;
use super::raw;
use super::rewrite::{Role, rewrite_response, rewrites};

/// The largest frame the proxy forwards, either way.
const MAX_FRAME: usize = 64 << 20;

/// A frame and the time it is due on the other side.
type Due = (Instant, Bytes);

/// The correlation ids in flight on one connection: API key and version of each request.
type InFlight = Mutex<HashMap<i32, (i16, i16)>>;

/// Counters of what the proxy did, read through [`Shared::stats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) accepted_broker: AtomicU64,
    pub(crate) accepted_coordinator: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) forwarded: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) requests_dropped: AtomicU64,
    pub(crate) delayed: AtomicU64,
    pub(crate) rewritten: AtomicU64,
}

/// State shared by the handle, the listeners and the connections.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The current policy; connections subscribe to it.
    pub(crate) policy: watch::Sender<Policy>,
    /// The proxy listener of each (role, upstream `host:port`).
    pub(crate) listeners: Mutex<HashMap<(Role, String), SocketAddr>>,
    /// Cancelled when the handle is dropped: every listener and connection ends.
    pub(crate) stop: CancellationToken,
    /// Where the proxy's tasks run.
    pub(crate) runtime: tokio::runtime::Handle,
    /// What happened so far.
    pub(crate) counters: Counters,
    /// Plain TCP: bytes are pumped as they come, no Kafka frame is read or rewritten (see
    /// `raw.rs`).
    pub(crate) plain: bool,
}

impl Shared {
    /// The proxy listener for `upstream` in `role`, created (and served) on first use.
    pub(crate) fn listener_for(
        self: &Arc<Self>,
        role: Role,
        upstream: &str,
    ) -> io::Result<SocketAddr> {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (role, upstream.to_owned());
        if let Some(addr) = listeners.get(&key) {
            return Ok(*addr);
        }
        let socket = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        socket.set_nonblocking(true)?;
        let addr = socket.local_addr()?;
        let listener = {
            let _runtime = self.runtime.enter();
            TcpListener::from_std(socket)?
        };
        self.runtime.spawn(accept_loop(
            self.clone(),
            listener,
            role,
            upstream.to_owned(),
        ));
        listeners.insert(key, addr);
        Ok(addr)
    }

    /// Counts one frame dropped.
    fn dropped(&self) {
        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// The due time of a frame read now and held `delay`; counts it when it is held.
    fn due(&self, delay: std::time::Duration) -> Instant {
        if !delay.is_zero() {
            self.counters.delayed.fetch_add(1, Ordering::Relaxed);
        }
        Instant::now() + delay
    }
}

/// Accepts connections on a proxy listener until the proxy stops. A connection that arrives
/// while its role is cut is closed at once.
async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, role: Role, upstream: String) {
    loop {
        let socket = tokio::select! {
            () = shared.stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(e) => {
                    eprintln!("fault proxy: accept on the listener for {upstream}: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        if shared.policy.borrow().cuts(role) {
            shared.counters.refused.fetch_add(1, Ordering::Relaxed);
            drop(socket);
            continue;
        }
        let accepted = match role {
            Role::Broker => &shared.counters.accepted_broker,
            Role::Coordinator => &shared.counters.accepted_coordinator,
        };
        accepted.fetch_add(1, Ordering::Relaxed);
        shared
            .runtime
            .spawn(serve(shared.clone(), socket, role, upstream.clone()));
    }
}

/// Proxies one client connection to `upstream` until either side closes it, the policy cuts it,
/// or the proxy stops. Returning drops both sockets, which closes them.
async fn serve(shared: Arc<Shared>, client: TcpStream, role: Role, upstream: String) {
    let server = tokio::select! {
        () = shared.stop.cancelled() => return,
        connected = TcpStream::connect(&upstream) => match connected {
            Ok(server) => server,
            Err(e) => {
                eprintln!("fault proxy: connect to {upstream}: {e}");
                return;
            }
        },
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let (to_server, to_server_rx) = mpsc::unbounded_channel();
    let (to_client, to_client_rx) = mpsc::unbounded_channel();
    let in_flight = InFlight::default();
    let policy = shared.policy.subscribe();
    let outcome = if shared.plain {
        tokio::select! {
            () = shared.stop.cancelled() => Ok(()),
            () = cut(policy, role) => Ok(()),
            read = raw::read(&shared, role, client_read, to_server) => read,
            read = raw::read(&shared, role, server_read, to_client) => read,
            written = raw::write(&shared, role, server_write, to_server_rx) => written,
            written = raw::write(&shared, role, client_write, to_client_rx) => written,
        }
    } else {
        tokio::select! {
        () = shared.stop.cancelled() => Ok(()),
        () = cut(policy, role) => Ok(()),
        read = requests(&shared, role, client_read, to_server, &in_flight) => read,
        read = responses(&shared, role, server_read, to_client, &in_flight) => read,
        written = deliver(&shared, role, server_write, to_server_rx) => written,
        written = deliver(&shared, role, client_write, to_client_rx) => written,
        }
    };
    let quiet = [
        io::ErrorKind::UnexpectedEof,
        io::ErrorKind::ConnectionReset,
        io::ErrorKind::BrokenPipe,
    ];
    match outcome {
        Err(e) if !quiet.contains(&e.kind()) => {
            eprintln!("fault proxy: connection to {upstream} ended: {e}");
        }
        _ => {}
    }
}

/// Returns once the policy cuts connections of `role`.
async fn cut(mut policy: watch::Receiver<Policy>, role: Role) {
    loop {
        if policy.borrow_and_update().cuts(role) {
            return;
        }
        if policy.changed().await.is_err() {
            return;
        }
    }
}

/// Reads requests from the client, notes what each one is, and queues it for the broker (or
/// drops it, in a blackhole or when its API's requests are dropped).
async fn requests(
    shared: &Shared,
    role: Role,
    mut from: OwnedReadHalf,
    to: mpsc::UnboundedSender<Due>,
    in_flight: &InFlight,
) -> io::Result<()> {
    loop {
        let frame = read_frame(&mut from).await?;
        let Some(head) = frame.first_chunk::<8>() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a request frame of {} bytes has no header", frame.len()),
            ));
        };
        let api_key = i16::from_be_bytes([head[0], head[1]]);
        let version = i16::from_be_bytes([head[2], head[3]]);
        let correlation_id = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let due = {
            let policy = shared.policy.borrow();
            if policy.blackholes(role) {
                None
            } else if policy.drops_request(api_key) {
                shared
                    .counters
                    .requests_dropped
                    .fetch_add(1, Ordering::Relaxed);
                None
            } else {
                Some(shared.due(policy.request_delay(role)))
            }
        };
        let Some(due) = due else {
            shared.dropped();
            continue;
        };
        in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(correlation_id, (api_key, version));
        if to.send((due, frame)).is_err() {
            return Ok(());
        }
    }
}

/// Reads responses from the broker, rewrites the ones that name brokers, and queues them for
/// the client (or drops them, in a blackhole).
async fn responses(
    shared: &Arc<Shared>,
    role: Role,
    mut from: OwnedReadHalf,
    to: mpsc::UnboundedSender<Due>,
    in_flight: &InFlight,
) -> io::Result<()> {
    loop {
        let mut frame = read_frame(&mut from).await?;
        let api = frame
            .first_chunk::<4>()
            .map(|id| i32::from_be_bytes(*id))
            .and_then(|id| {
                in_flight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id)
            });
        if let Some((api_key, version)) = api.filter(|(api_key, _)| rewrites(*api_key)) {
            let mut map = |role: Role, host: &str, port: i32| {
                let upstream = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                shared
                    .listener_for(role, &upstream)
                    .map(|addr| (addr.ip().to_string(), i32::from(addr.port())))
                    .map_err(|e| format!("listen for {upstream}: {e}"))
            };
            let rewritten = rewrite_response(api_key, version, frame.clone(), &mut map)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if let Some(rewritten) = rewritten {
                shared.counters.rewritten.fetch_add(1, Ordering::Relaxed);
                frame = rewritten;
            }
        }
        let due = {
            let policy = shared.policy.borrow();
            if policy.blackholes(role) {
                None
            } else {
                Some(shared.due(policy.response_delay(role, api.map(|(key, _)| key))))
            }
        };
        let Some(due) = due else {
            shared.dropped();
            continue;
        };
        if to.send((due, frame)).is_err() {
            return Ok(());
        }
    }
}

/// Writes queued frames, each at its due time, unless a blackhole began meanwhile.
async fn deliver(
    shared: &Shared,
    role: Role,
    mut to: OwnedWriteHalf,
    mut queue: mpsc::UnboundedReceiver<Due>,
) -> io::Result<()> {
    while let Some((due, frame)) = queue.recv().await {
        tokio::time::sleep_until(due).await;
        if shared.policy.borrow().blackholes(role) {
            shared.dropped();
            continue;
        }
        let mut out = BytesMut::with_capacity(frame.len() + 4);
        out.put_u32(u32::try_from(frame.len()).map_err(io::Error::other)?);
        out.extend_from_slice(&frame);
        to.write_all(&out).await?;
        shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Reads one frame: a 4-byte big-endian length, then that many bytes (returned without the
/// length).
async fn read_frame(from: &mut OwnedReadHalf) -> io::Result<Bytes> {
    let len = from.read_u32().await? as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes exceeds {MAX_FRAME}"),
        ));
    }
    let mut frame = vec![0; len];
    from.read_exact(&mut frame).await?;
    Ok(Bytes::from(frame))
}
