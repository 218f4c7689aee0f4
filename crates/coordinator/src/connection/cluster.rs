//! The cluster client: a bootstrap connection to "any broker", group coordinator discovery,
//! and one connection per broker node for coordinator traffic.
//!
//! - [`Cluster::any_broker`] keeps one connection to one bootstrap broker. When it is gone, the
//!   next call tries the bootstrap list in turn, starting after the broker that failed, and
//!   waits a capped, jittered exponential backoff between rounds that reach no broker.
//! - [`Cluster::find_coordinator`] sends FindCoordinator (key type 0, group) — v4+ with
//!   `coordinator_keys`, v3 with `key` — and retries COORDINATOR_LOAD_IN_PROGRESS,
//!   COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and disconnects with backoff, up to the lookup
//!   timeout.
//! - [`Cluster::coordinator`] returns a connection to the group's coordinator, found once and
//!   kept; [`Cluster::forget_coordinator`] drops it after NOT_COORDINATOR or a disconnect, so
//!   the next call looks it up again.
//!
//! # Cancel safety
//! Every method is cancel safe: a dropped call leaves at most an unused connection behind.

use std::collections::HashMap;
use std::sync::Mutex;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::broker::{BrokerConnection, BrokerNode};
use super::config::ClusterConfig;
use super::connector::Connector;
use super::error::ConnectionError;
use crate::backoff::Backoff;
use crate::connection::Detail;
use crate::wire::WireRequest;

/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
const RETRIABLE_LOOKUP_ERRORS: [i16; 3] = [14, 15, 16];

/// A Kafka cluster as kroupier uses it. Share it behind an `Arc`.
#[derive(Debug)]
pub struct Cluster {
    config: ClusterConfig,
    connector: Connector,
    bootstrap: tokio::sync::Mutex<Bootstrap>,
    nodes: Mutex<Nodes>,
}

#[derive(Debug)]
struct Bootstrap {
    connection: Option<BrokerConnection>,
    next: usize,
    backoff: Backoff,
    not_before: Option<Instant>,
}

#[derive(Debug, Default)]
struct Nodes {
    coordinators: HashMap<String, BrokerNode>,
    connections: HashMap<i32, BrokerConnection>,
}

impl Cluster {
    /// A cluster client; connects lazily, on first use. Certificates and keys named by
    /// `config.security` are loaded here, once.
    ///
    /// # Errors
    /// A [`ConnectionError`] of kind
    /// [`InvalidConfig`](crate::connection::ConnectionErrorKind::InvalidConfig) if `config` does
    /// not validate or a certificate or key does not load.
    pub fn new(config: ClusterConfig) -> Result<Self, ConnectionError> {
        config.validate()?;
        let connector = Connector::new(&config.security)?;
        let backoff = Backoff::new(config.reconnect_backoff, config.reconnect_backoff_max);
        Ok(Self {
            config,
            connector,
            bootstrap: tokio::sync::Mutex::new(Bootstrap {
                connection: None,
                next: 0,
                backoff,
                not_before: None,
            }),
            nodes: Mutex::default(),
        })
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &ClusterConfig {
        &self.config
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, Nodes> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    // What kroupier's other crates use (`unstable`): the connections themselves.
    unstable_pub! {
        /// A new connection to `addr` (`host:port`), secured as configured: TCP, TLS, ApiVersions,
        /// SASL. Not kept: [`any_broker`](Self::any_broker) and [`node`](Self::node) keep theirs.
        ///
        /// # Errors
        /// `Connect` if the broker cannot be reached within the connect
        /// timeout, `UnsupportedBroker` or `MissingApi` for a
        /// broker too old for kroupier; also `Tls` and
        /// `Authentication`, which are [fatal](ConnectionError::is_fatal).
        pub async fn connect(&self, addr: &str) -> Result<BrokerConnection, ConnectionError> {
            self.connector.connect(addr, &self.config.connection).await
        }
    }

    unstable_pub! {
        /// A connection to some bootstrap broker, kept and reused while it is open.
        ///
        /// # Errors
        /// `NoBrokerReachable` listing each address's failure, or the first
        /// broker's refusal (e.g. `UnsupportedBroker`) if every reachable broker
        /// refused.
        pub async fn any_broker(&self) -> Result<BrokerConnection, ConnectionError> {
            let mut state = self.bootstrap.lock().await;
            if let Some(connection) = &state.connection {
                if !connection.is_closed() {
                    return Ok(connection.clone());
                }
                // Fail over: start the next round after the broker that went away.
                state.connection = None;
                state.next += 1;
            }
            if let Some(at) = state.not_before.take() {
                tokio::time::sleep_until(at).await;
            }
            let servers = &self.config.bootstrap_servers;
            let mut attempts = Vec::with_capacity(servers.len());
            let mut refusal = None;
            for i in 0..servers.len() {
                let index = (state.next + i) % servers.len();
                let addr = &servers[index];
                match self.connect(addr).await {
                    Ok(connection) => {
                        tracing::debug!(%addr, "connected to bootstrap broker");
                        state.next = index;
                        state.backoff.reset();
                        state.connection = Some(connection.clone());
                        return Ok(connection);
                    }
                    Err(e) => {
                        tracing::debug!(%addr, error = %e, "bootstrap broker unavailable");
                        attempts.push(format!("{addr}: {e}"));
                        if !e.is_disconnect() && refusal.is_none() {
                            refusal = Some(e);
                        }
                    }
                }
            }
            state.next = (state.next + 1) % servers.len();
            state.not_before = Some(Instant::now() + state.backoff.next_delay());
            Err(refusal.unwrap_or(ConnectionError::from(Detail::NoBrokerReachable { attempts })))
        }
    }

    unstable_pub! {
        /// Sends `request` to any broker (the bootstrap connection).
        ///
        /// # Errors
        /// As [`any_broker`](Self::any_broker) and [`BrokerConnection::send`].
        pub async fn send_any<R: WireRequest>(
            &self,
            request: &R,
        ) -> Result<R::Response, ConnectionError> {
            self.any_broker().await?.send(request).await
        }
    }

    unstable_pub! {
        /// Finds the coordinator of `group`, retrying retriable errors with backoff until the
        /// lookup timeout.
        ///
        /// # Errors
        /// `CoordinatorNotFound` when the timeout passes, or a non-retriable
        /// answer such as GROUP_AUTHORIZATION_FAILED as `Kafka`.
        pub async fn find_coordinator(&self, group: &str) -> Result<BrokerNode, ConnectionError> {
            let timeout = self.config.coordinator_lookup_timeout;
            let deadline = Instant::now() + timeout;
            let mut backoff = Backoff::new(self.config.retry_backoff, self.config.retry_backoff_max);
            loop {
                let attempt = async {
                    let connection = self.any_broker().await?;
                    lookup(&connection, group, GROUP_KEY).await
                };
                let last = match attempt.await {
                    Ok(node) => return Ok(node),
                    Err(e) if is_retriable_lookup(&e) => e.to_string(),
                    Err(e) => return Err(e),
                };
                tracing::debug!(group, error = %last, "coordinator lookup will be retried");
                let at = Instant::now() + backoff.next_delay();
                if at > deadline {
                    return Err(ConnectionError::from(Detail::CoordinatorNotFound {
                        group: group.to_owned(),
                        timeout,
                        last,
                    }));
                }
                tokio::time::sleep_until(at).await;
            }
        }
    }

    unstable_pub! {
        /// A connection to the coordinator of `group`: the one kept from an earlier call while it
        /// is open, else a new lookup and connection.
        ///
        /// # Errors
        /// As [`find_coordinator`](Self::find_coordinator) and [`connect`](Self::connect).
        pub async fn coordinator(
            &self,
            group: &str,
        ) -> Result<(BrokerNode, BrokerConnection), ConnectionError> {
            let known = self.nodes().coordinators.get(group).cloned();
            let node = match known {
                Some(node) => node,
                None => {
                    let node = self.find_coordinator(group).await?;
                    tracing::debug!(group, node_id = node.node_id, addr = %node.addr(), "found coordinator");
                    self.nodes()
                        .coordinators
                        .insert(group.to_owned(), node.clone());
                    node
                }
            };
            match self.node(&node).await {
                Ok(connection) => Ok((node, connection)),
                Err(e) => {
                    // The coordinator may have moved off a broker that is gone: look it up again
                    // next time.
                    self.forget_coordinator(group);
                    Err(e)
                }
            }
        }
    }

    unstable_pub! {
        /// The group's coordinator as last found, without any IO.
        pub fn known_coordinator(&self, group: &str) -> Option<BrokerNode> {
            self.nodes().coordinators.get(group).cloned()
        }
    }

    unstable_pub! {
        /// Forgets the coordinator of `group` (after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        /// a disconnect), so the next [`coordinator`](Self::coordinator) looks it up again. Its
        /// connection is dropped unless another group's coordinator lives on the same broker.
        pub fn forget_coordinator(&self, group: &str) {
            let mut nodes = self.nodes();
            if let Some(node) = nodes.coordinators.remove(group) {
                let shared = nodes
                    .coordinators
                    .values()
                    .any(|n| n.node_id == node.node_id);
                if !shared {
                    nodes.connections.remove(&node.node_id);
                }
            }
        }
    }

    unstable_pub! {
        /// A connection to broker `node`, kept and reused while it is open.
        ///
        /// # Errors
        /// As [`connect`](Self::connect).
        pub async fn node(&self, node: &BrokerNode) -> Result<BrokerConnection, ConnectionError> {
            let kept = self.nodes().connections.get(&node.node_id).cloned();
            if let Some(connection) = kept {
                if !connection.is_closed() && connection.addr() == node.addr() {
                    return Ok(connection);
                }
            }
            let connection = self.connect(&node.addr()).await?;
            self.nodes()
                .connections
                .insert(node.node_id, connection.clone());
            Ok(connection)
        }
    }
}

fn is_retriable_lookup(error: &ConnectionError) -> bool {
    match error.detail() {
        Detail::Kafka { code, .. } => RETRIABLE_LOOKUP_ERRORS.contains(code),
        _ => error.is_disconnect(),
    }
}

/// FindCoordinator's key type for a group.
pub(crate) const GROUP_KEY: i8 = 0;
/// FindCoordinator's key type for a transactional id.
pub(crate) const TRANSACTION_KEY: i8 = 1;

/// One FindCoordinator exchange on `connection` for `group`, a group id or, with key type
/// [`TRANSACTION_KEY`], a transactional id.
pub(crate) async fn lookup(
    connection: &BrokerConnection,
    group: &str,
    key_type: i8,
) -> Result<BrokerNode, ConnectionError> {
    let version = connection.version(ApiKey::FindCoordinator)?;
    let key = StrBytes::from_string(group.to_owned());
    let mut request = FindCoordinatorRequest::default().with_key_type(key_type);
    if version >= 4 {
        request.coordinator_keys = vec![key];
    } else {
        request.key = key;
    }
    let response = connection.send(&request).await?;
    let (code, message, node) = if version >= 4 {
        let entry = response
            .coordinators
            .into_iter()
            .find(|c| c.key.as_str() == group)
            .ok_or_else(|| {
                ConnectionError::from(Detail::Kafka {
                    api_key: FindCoordinatorRequest::API_KEY,
                    code: -1,
                    error: ResponseError::UnknownServerError,
                    message: Some(format!("the answer has no entry for `{group}`")),
                })
            })?;
        let node = BrokerNode {
            node_id: entry.node_id.0,
            host: entry.host.to_string(),
            port: entry.port,
        };
        (entry.error_code, entry.error_message, node)
    } else {
        let node = BrokerNode {
            node_id: response.node_id.0,
            host: response.host.to_string(),
            port: response.port,
        };
        (response.error_code, response.error_message, node)
    };
    if code != 0 {
        return Err(ConnectionError::from(Detail::Kafka {
            api_key: ApiKey::FindCoordinator,
            code,
            error: ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code)),
            message: message.map(|m| m.to_string()),
        }));
    }
    Ok(node)
}
