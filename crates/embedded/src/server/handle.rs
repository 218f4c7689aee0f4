//! The public entry point: [`EmbeddedCoordinator::builder`], [`Builder::bind`] and the
//! [`CoordinatorHandle`] that stops, restarts and shuts the coordinator down.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::{Config, ConfigError};
use super::connection::{ConnectionLimits, accept_loop};
use super::dispatch::Dispatcher;
use super::faults::Faults;
use super::groups::Groups;
use super::node::Node;
use super::tls::{Acceptor, ServerTls};
use crate::group::GroupCoordinator;
#[cfg(any(test, feature = "testing"))]
use crate::group::GroupDescription;
use crate::log::Topics;

/// The embedded coordinator; start one with [`EmbeddedCoordinator::builder`].
#[derive(Debug)]
pub struct EmbeddedCoordinator;

impl EmbeddedCoordinator {
    /// A builder with the defaults (each [`Builder`] method names its own).
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Builds and binds an embedded coordinator.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    config: Config,
}

impl Builder {
    /// `group.min.session.timeout.ms` (default 1 s).
    pub fn min_session_timeout(mut self, timeout: Duration) -> Self {
        self.config.group.min_session_timeout = timeout;
        self
    }

    /// `group.max.session.timeout.ms` (default 30 min).
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.config.group.max_session_timeout = timeout;
        self
    }

    /// `group.initial.rebalance.delay.ms` (default 0).
    pub fn initial_rebalance_delay(mut self, delay: Duration) -> Self {
        self.config.group.initial_rebalance_delay = delay;
        self
    }

    /// The largest rebalance timeout a member may ask for (default 30 min).
    ///
    /// The largest rebalance timeout a member may ask for; a JoinGroup above it is refused with
    /// INVALID_SESSION_TIMEOUT, which Kafka clients treat as fatal. Kafka bounds only the
    /// session timeout (`group.max.session.timeout.ms`) and takes any rebalance timeout up to
    /// `i32::MAX` ms (about 25 days), during which one member that never rejoins holds the whole
    /// group in PreparingRebalance. Default 30 min, as the session bound: a higher bound lets a
    /// slow member stall everyone longer, a lower one refuses clients that need long
    /// revocations.
    ///
    /// Refused rather than clamped: a clamped member would believe it has longer than it has,
    /// and be dropped from the group mid-rebalance with no hint why; a refusal names the problem
    /// at the first JoinGroup.
    pub fn max_rebalance_timeout(mut self, timeout: Duration) -> Self {
        self.config.group.max_rebalance_timeout = timeout;
        self
    }

    /// How long an empty group is kept before it is deleted (default 10 min).
    ///
    /// How long a group stays after it became empty (no members, no member id handed out)
    /// before it is deleted; DescribeGroups then answers as for a group that never existed.
    /// Kafka deletes an empty group without offsets at its next cleanup pass
    /// (`offsets.retention.check.interval.ms`, 10 min); there are no offsets here. Default
    /// 10 min: longer keeps an empty group's generation (and what `kroupier describe` shows)
    /// longer, shorter frees the memory of groups no longer used sooner.
    pub fn empty_group_retention(mut self, retention: Duration) -> Self {
        self.config.group.empty_group_retention = retention;
        self
    }

    /// How many groups may exist at once (default 10,000).
    ///
    /// How many groups may exist at once; a JoinGroup that would create one more is refused with
    /// POLICY_VIOLATION (Kafka has no such cap). Default 10,000: a bound on the memory that
    /// clients using ever new group ids can make the coordinator hold; raise it for tests that
    /// really run that many groups.
    pub fn max_groups(mut self, groups: usize) -> Self {
        self.config.group.max_groups = groups;
        self
    }

    /// How many client connections may be open at once (default 1,000).
    ///
    /// How many client connections may be open at once; one more is closed as soon as it is
    /// accepted, with a warning (Kafka's `max.connections`, unbounded there). Default 1,000:
    /// every connection holds a task and up to [`max_request_frame`](Self::max_request_frame)
    /// bytes, so the cap bounds memory and file descriptors (often 1,024 per process); raise it
    /// for more clients on one coordinator.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.config.max_connections = connections;
        self
    }

    /// How long a connection may go without a request before it is closed (default 10 min,
    /// Kafka's `connections.max.idle.ms`).
    ///
    /// How long a connection may go without sending a request before it is closed (Kafka's
    /// `connections.max.idle.ms`). Counted while the connection waits for its next request, not
    /// while one of its requests waits for a rebalance. Default 10 min, as Kafka: group members
    /// send a heartbeat every few seconds and never reach it; shorter frees abandoned
    /// connections sooner, and clients reconnect when they next need to.
    pub fn connections_max_idle(mut self, idle: Duration) -> Self {
        self.config.connections_max_idle = idle;
        self
    }

    /// The largest request frame accepted (default 2 MiB).
    ///
    /// The largest request frame accepted; a bigger one closes its connection. Default 2 MiB:
    /// group requests are small, and a low cap bounds what one hostile peer can make us buffer,
    /// but a Produce carrying a batch just over [`max_message_bytes`](Self::max_message_bytes)
    /// must still fit, to be answered MESSAGE_TOO_LARGE rather than cut off; keep it above
    /// `max_message_bytes` when raising that.
    pub fn max_request_frame(mut self, bytes: usize) -> Self {
        self.config.max_request_frame = bytes;
        self
    }

    /// The largest record batch a Produce may carry (default 1 MiB, Kafka's
    /// `message.max.bytes`); keep [`max_request_frame`](Self::max_request_frame) above it.
    ///
    /// The largest record batch a Produce may carry (Kafka's `message.max.bytes`; a topic's
    /// `max.message.bytes` config overrides it); a bigger one is refused with
    /// MESSAGE_TOO_LARGE. Default 1 MiB, as Kafka's (1 MiB + 12 bytes there).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.config.max_message_bytes = bytes;
        self
    }

    /// How many topics may exist at once (default 1,000).
    ///
    /// How many topics may exist at once; CreateTopics for one more is refused with
    /// POLICY_VIOLATION (Kafka has no such bound). Default 1,000: kroupier needs two per group
    /// (task store, checkpoints), and every topic keeps its records in memory for good (no
    /// retention, no deletion), so the cap bounds what a stray client can make it hold.
    pub fn max_topics(mut self, topics: usize) -> Self {
        self.config.max_topics = topics;
        self
    }

    /// Keeps topics and their records in `dir` across restarts (default: in memory only).
    ///
    /// Where topics and their record batches are kept across restarts: one append-only file per
    /// topic partition plus a topic catalogue, every entry checksummed; a damaged tail (a crash
    /// in the middle of a write) is truncated with a warning at start. Default `None`: topics
    /// live in memory and are gone when the coordinator stops. Group state is never kept.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.data_dir = Some(dir.into());
        self
    }

    /// The host advertised in Metadata and FindCoordinator (default: the bound IP).
    pub fn advertised_host(mut self, host: impl Into<String>) -> Self {
        self.config.advertised_host = Some(host.into());
        self
    }

    /// Serves TLS (and, with a client CA, mutual TLS) instead of plain TCP; see [`ServerTls`].
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.config.tls = Some(tls);
        self
    }

    /// Validates the configuration, binds `addr` (port 0: the OS picks one; see
    /// [`CoordinatorHandle::local_addr`]) and starts serving.
    ///
    /// # Errors
    /// An [`EmbeddedError`] of kind `Config` for a configuration that cannot work, `Tls` when a
    /// TLS file does not load, `DataDir` when the data directory cannot be read or written,
    /// `Bind` when the address cannot be bound.
    pub async fn bind(
        self,
        addr: impl ToSocketAddrs + std::fmt::Debug,
    ) -> Result<CoordinatorHandle, EmbeddedError> {
        self.config.validate()?;
        let acceptor = match &self.config.tls {
            Some(tls) => Some(
                tls.acceptor()
                    .map_err(|reason| EmbeddedDetail::Tls { reason })?,
            ),
            None => None,
        };
        let topics = match &self.config.data_dir {
            None => Topics::in_memory(self.config.topic_limits()),
            Some(dir) => Topics::open(dir, self.config.topic_limits()).map_err(|source| {
                EmbeddedDetail::DataDir {
                    dir: dir.clone(),
                    source,
                }
            })?,
        };
        let shown = format!("{addr:?}");
        let bind_error = |source| EmbeddedDetail::Bind {
            addr: shown.clone(),
            source,
        };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let host = match &self.config.advertised_host {
            Some(host) => host.clone(),
            None if local_addr.ip().is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(),
            None => local_addr.ip().to_string(),
        };
        let node = Node {
            node_id: self.config.node_id,
            host: StrBytes::from_string(host),
            port: i32::from(local_addr.port()),
            cluster_id: StrBytes::from_string(self.config.cluster_id.clone()),
        };
        let shutdown = CancellationToken::new();
        let coordinator = GroupCoordinator::new(self.config.group.clone(), rand::random());
        let groups = Groups::spawn(coordinator, shutdown.clone());
        let dispatcher = Dispatcher {
            node: Arc::new(node),
            groups,
            topics,
            faults: Faults::default(),
        };
        let handle = CoordinatorHandle {
            local_addr,
            config: self.config,
            dispatcher,
            tls: acceptor,
            network: Mutex::new(None),
            shutdown,
        };
        handle.serve(listener);
        let security = match &handle.config.tls {
            None => "PLAINTEXT",
            Some(ServerTls {
                client_ca: None, ..
            }) => "SSL",
            Some(_) => "SSL, client certificates required",
        };
        tracing::info!(addr = %local_addr, security, "embedded Kafka group coordinator listening");
        Ok(handle)
    }
}

/// What can go wrong starting or restarting the embedded coordinator. Its message says what
/// and what to change; [`kind`](Self::kind) sorts it for code, and
/// [`source`](std::error::Error::source) gives the I/O error behind a bind or the data
/// directory.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct EmbeddedError(#[from] pub(crate) EmbeddedDetail);

/// What kind of [`EmbeddedError`] happened.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbeddedErrorKind {
    /// The configuration cannot work.
    Config,
    /// The address could not be bound.
    Bind,
    /// A TLS certificate, key or client CA does not load.
    Tls,
    /// The data directory (or a file in it) cannot be created, read or truncated.
    DataDir,
    /// [`CoordinatorHandle::restart`] while the coordinator is serving.
    AlreadyServing,
}

impl EmbeddedError {
    /// What kind of error this is.
    pub fn kind(&self) -> EmbeddedErrorKind {
        match &self.0 {
            EmbeddedDetail::Config(_) => EmbeddedErrorKind::Config,
            EmbeddedDetail::Bind { .. } => EmbeddedErrorKind::Bind,
            EmbeddedDetail::Tls { .. } => EmbeddedErrorKind::Tls,
            EmbeddedDetail::DataDir { .. } => EmbeddedErrorKind::DataDir,
            EmbeddedDetail::AlreadyServing(_) => EmbeddedErrorKind::AlreadyServing,
        }
    }
}

impl From<ConfigError> for EmbeddedError {
    fn from(error: ConfigError) -> Self {
        Self(EmbeddedDetail::Config(error))
    }
}

/// The error itself (crate-internal: users see the message, the [`EmbeddedErrorKind`] and the
/// source).
#[derive(Debug, thiserror::Error)]
pub(crate) enum EmbeddedDetail {
    #[error("invalid embedded coordinator configuration: {0}")]
    Config(#[source] ConfigError),
    #[error("could not bind {addr}: {source}; pick a free port (0 lets the OS choose)")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("embedded coordinator TLS settings unusable: {reason}")]
    Tls { reason: String },
    #[error(
        "data directory {}: {source}; check that it exists and is writable, and that no other \
         coordinator uses it",
        dir.display()
    )]
    DataDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the coordinator is already serving on {0}; call stop() before restart()")]
    AlreadyServing(SocketAddr),
}

/// The running listener and its connections.
#[derive(Debug)]
struct Network {
    stop: CancellationToken,
    tracker: TaskTracker,
}

/// A running embedded coordinator. Dropping it stops everything (prefer [`shutdown`]).
///
/// [`shutdown`]: CoordinatorHandle::shutdown
#[derive(Debug)]
pub struct CoordinatorHandle {
    local_addr: SocketAddr,
    config: Config,
    dispatcher: Dispatcher,
    /// The TLS server, built once at bind (restarts serve the same certificates).
    tls: Option<Acceptor>,
    network: Mutex<Option<Network>>,
    shutdown: CancellationToken,
}

impl CoordinatorHandle {
    /// The address the coordinator is bound to (with the port the OS picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bootstrap address for clients, `host:port`, as Metadata advertises it.
    pub fn bootstrap(&self) -> String {
        format!(
            "{}:{}",
            self.dispatcher.node.host.as_str(),
            self.local_addr.port()
        )
    }

    /// The fault injection controls (per API: delay, error code, dropped response), for tests
    /// of the unhappy paths (feature `testing`).
    #[cfg(any(test, feature = "testing"))]
    pub fn faults(&self) -> &Faults {
        &self.dispatcher.faults
    }

    /// Whether the listener is up (not [`stop`](Self::stop)ped).
    pub fn is_serving(&self) -> bool {
        self.lock_network().is_some()
    }

    /// A group as DescribeGroups would show it, or `None` if it does not exist: for tests
    /// (feature `testing`); a client reads the same over the wire with DescribeGroups.
    #[cfg(any(test, feature = "testing"))]
    pub async fn describe_group(&self, group_id: &str) -> Option<GroupDescription> {
        let groups = self
            .dispatcher
            .groups
            .describe(vec![group_id.to_string()])
            .await
            .ok()?;
        groups
            .into_iter()
            .next()
            .and_then(|(exists, description)| exists.then_some(description))
    }

    /// Closes the listener and every connection, like a broker going down. Groups, members and
    /// their session timers live on: members that do not come back in time expire.
    /// Waits up to 1 s for the connection tasks to end.
    pub async fn stop(&self) {
        let network = self.lock_network().take();
        if let Some(network) = network {
            network.stop.cancel();
            network.tracker.close();
            if tokio::time::timeout(self.config.stop_grace, network.tracker.wait())
                .await
                .is_err()
            {
                tracing::warn!("connections did not close within the stop grace period");
            }
            tracing::info!(addr = %self.local_addr, "embedded coordinator stopped");
        }
    }

    /// Listens again on the same address after [`stop`](Self::stop).
    ///
    /// # Errors
    /// An [`EmbeddedError`] of kind `AlreadyServing` if it was not stopped, `Bind` if the
    /// port was taken meanwhile.
    pub async fn restart(&self) -> Result<(), EmbeddedError> {
        if self.is_serving() {
            return Err(EmbeddedDetail::AlreadyServing(self.local_addr).into());
        }
        let listener =
            TcpListener::bind(self.local_addr)
                .await
                .map_err(|source| EmbeddedDetail::Bind {
                    addr: self.local_addr.to_string(),
                    source,
                })?;
        self.serve(listener);
        tracing::info!(addr = %self.local_addr, "embedded coordinator restarted");
        Ok(())
    }

    /// Stops serving and ends the group task; every group is forgotten.
    pub async fn shutdown(self) {
        self.stop().await;
        self.shutdown.cancel();
    }

    fn serve(&self, listener: TcpListener) {
        let stop = self.shutdown.child_token();
        let tracker = TaskTracker::new();
        // The listener runs on the tracker too, so `stop` returns only once the port is free.
        let limits = ConnectionLimits {
            max_frame: self.config.max_request_frame,
            max_connections: self.config.max_connections,
            idle_timeout: self.config.connections_max_idle,
        };
        tracker.spawn(accept_loop(
            listener,
            self.tls.clone(),
            self.dispatcher.clone(),
            limits,
            stop.clone(),
            tracker.clone(),
        ));
        *self.lock_network() = Some(Network { stop, tracker });
    }

    fn lock_network(&self) -> std::sync::MutexGuard<'_, Option<Network>> {
        self.network.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for CoordinatorHandle {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
