//! Settings of the embedded coordinator's server.

use std::path::PathBuf;
use std::time::Duration;

use super::tls::ServerTls;
use crate::group::{GroupConfig, GroupConfigError};

/// Everything the embedded coordinator can be told; [`Config::default`] suits the demo and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// The group rules (session-timeout bounds, initial rebalance delay, ...). Default:
    /// [`GroupConfig::default`] (min session timeout 1 s, initial rebalance delay 0).
    pub(crate) group: GroupConfig,
    /// The largest request frame accepted; a bigger one closes its connection. Default 2 MiB:
    /// group requests are small, and a low cap bounds what one hostile peer can make us buffer,
    /// but a Produce carrying a batch just over [`max_message_bytes`](Self::max_message_bytes)
    /// must still fit, to be answered MESSAGE_TOO_LARGE rather than cut off; keep it above
    /// `max_message_bytes` when raising that.
    pub(crate) max_request_frame: usize,
    /// The largest record batch a Produce may carry (Kafka's `message.max.bytes`; a topic's
    /// `max.message.bytes` config overrides it); a bigger one is refused with
    /// MESSAGE_TOO_LARGE. Default 1 MiB, as Kafka's (1 MiB + 12 bytes there).
    pub(crate) max_message_bytes: usize,
    /// How many topics may exist at once; CreateTopics for one more is refused with
    /// POLICY_VIOLATION (Kafka has no such bound). Default 1,000: kroupier needs two per group
    /// (task store, checkpoints), and every topic keeps its records in memory for good (no
    /// retention, no deletion), so the cap bounds what a stray client can make it hold.
    pub(crate) max_topics: usize,
    /// Where topics and their record batches are kept across restarts: one append-only file per
    /// topic partition plus a topic catalogue, every entry checksummed; a damaged tail (a crash
    /// in the middle of a write) is truncated with a warning at start. Default `None`: topics
    /// live in memory and are gone when the coordinator stops. Group state is never kept.
    pub(crate) data_dir: Option<PathBuf>,
    /// How many client connections may be open at once; one more is closed as soon as it is
    /// accepted, with a warning (Kafka's `max.connections`, unbounded there). Default 1,000:
    /// every connection holds a task and up to [`max_request_frame`](Self::max_request_frame)
    /// bytes, so the cap bounds memory and file descriptors (often 1,024 per process); raise it
    /// for more clients on one coordinator.
    pub(crate) max_connections: usize,
    /// How long a connection may go without sending a request before it is closed (Kafka's
    /// `connections.max.idle.ms`). Counted while the connection waits for its next request, not
    /// while one of its requests waits for a rebalance. Default 10 min, as Kafka: group members
    /// send a heartbeat every few seconds and never reach it; shorter frees abandoned
    /// connections sooner, and clients reconnect when they next need to.
    pub(crate) connections_max_idle: Duration,
    /// The host advertised in Metadata and FindCoordinator. Default `None`: the bound IP, or
    /// `127.0.0.1` when bound to an unspecified address (`0.0.0.0`); set it when clients reach
    /// the coordinator by another name.
    pub(crate) advertised_host: Option<String>,
    /// The node id of the single broker the coordinator pretends to be. Default 0.
    pub(crate) node_id: i32,
    /// The cluster id reported by Metadata (v2+). Default `"kroupier-embedded"`.
    pub(crate) cluster_id: String,
    /// How long [`stop`](crate::CoordinatorHandle::stop) waits for connections to finish their
    /// current request before dropping them. Default 1 s.
    pub(crate) stop_grace: Duration,
    /// TLS on the listener (Kafka's `SSL` listeners); with a client CA, mutual TLS. Default
    /// `None`: plain TCP, as Kafka's `PLAINTEXT`. The files are read when the coordinator
    /// binds.
    pub(crate) tls: Option<ServerTls>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            group: GroupConfig::default(),
            max_request_frame: 2 << 20,
            max_message_bytes: 1 << 20,
            max_topics: 1_000,
            data_dir: None,
            max_connections: 1_000,
            connections_max_idle: Duration::from_secs(600),
            advertised_host: None,
            node_id: 0,
            cluster_id: "kroupier-embedded".to_string(),
            stop_grace: Duration::from_secs(1),
            tls: None,
        }
    }
}

/// Settings of the embedded coordinator that cannot work together; the message names the
/// setting and the range it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub(crate) struct ConfigError(InvalidSetting);

impl From<InvalidSetting> for ConfigError {
    fn from(error: InvalidSetting) -> Self {
        ConfigError(error)
    }
}

impl From<GroupConfigError> for ConfigError {
    fn from(error: GroupConfigError) -> Self {
        ConfigError(InvalidSetting::Group(error))
    }
}

/// The settings that cannot work, with their values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InvalidSetting {
    /// The group settings are inconsistent.
    #[error(transparent)]
    Group(#[from] GroupConfigError),
    /// A frame cap below a request header would refuse every request.
    #[error("max_request_frame is {0} bytes; set it to at least 64 (the default is 2 MiB)")]
    FrameCapTooSmall(usize),
    /// A connection cap of zero, or above what the server can count, cannot work.
    #[error(
        "max_connections is {0}; set it between 1 and {max} (the default is 1,000)",
        max = tokio::sync::Semaphore::MAX_PERMITS
    )]
    MaxConnections(usize),
    /// A zero idle timeout would close every connection before its first request.
    #[error("connections_max_idle is 0, which closes every connection at once; set it above 0")]
    ZeroIdleTimeout,
    /// An empty advertised host cannot be connected to.
    #[error("advertised_host is empty; leave it None to advertise the bound address")]
    EmptyAdvertisedHost,
    /// Kafka node ids are non-negative.
    #[error("node_id is {0}; Kafka node ids are >= 0")]
    NegativeNodeId(i32),
    /// A batch limit of zero refuses every Produce; above `i32::MAX` Kafka cannot express it.
    #[error("max_message_bytes is {0}; set it between 1 and 2147483647 (the default is 1 MiB)")]
    MaxMessageBytes(usize),
    /// A topic cap of zero refuses every CreateTopics.
    #[error("max_topics is 0, which refuses every topic; set it above 0 (the default is 1,000)")]
    ZeroMaxTopics,
}

impl Config {
    /// What the topic store holds at most.
    pub(crate) fn topic_limits(&self) -> crate::log::Limits {
        crate::log::Limits {
            max_message_bytes: self.max_message_bytes,
            max_topics: self.max_topics,
        }
    }

    /// Checks that the settings can work together.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.group.validate()?;
        if self.max_request_frame < 64 {
            return Err(InvalidSetting::FrameCapTooSmall(self.max_request_frame).into());
        }
        if self.max_connections == 0 || self.max_connections > tokio::sync::Semaphore::MAX_PERMITS {
            return Err(InvalidSetting::MaxConnections(self.max_connections).into());
        }
        if self.connections_max_idle.is_zero() {
            return Err(InvalidSetting::ZeroIdleTimeout.into());
        }
        if self.advertised_host.as_deref() == Some("") {
            return Err(InvalidSetting::EmptyAdvertisedHost.into());
        }
        if self.node_id < 0 {
            return Err(InvalidSetting::NegativeNodeId(self.node_id).into());
        }
        if self.max_message_bytes == 0 || i32::try_from(self.max_message_bytes).is_err() {
            return Err(InvalidSetting::MaxMessageBytes(self.max_message_bytes).into());
        }
        if self.max_topics == 0 {
            return Err(InvalidSetting::ZeroMaxTopics.into());
        }
        Ok(())
    }
}
