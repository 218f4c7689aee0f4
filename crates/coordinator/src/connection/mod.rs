//! Connections to Kafka brokers: framing over TCP, correlation ids, pipelining, timeouts,
//! ApiVersions negotiation, bootstrap failover, reconnect backoff, and coordinator discovery.
//!
//! Layers, bottom up:
//! - [`BrokerConnection`]: one TCP connection to one broker; requests are pipelined and
//!   matched to responses by correlation id; a frame that does not decode closes it.
//! - [`NegotiatedVersions`]: the highest version of each API both sides support, picked from
//!   ApiVersions on connect; a broker too old for kroupier is refused with the Kafka release
//!   it needs.
//! - [`security`]: TLS (rustls) and SASL (PLAIN, SCRAM, OAUTHBEARER) between TCP connect and
//!   the first request, set by [`ClusterConfig::security`].
//! - [`Cluster`]: a bootstrap connection to "any broker" with failover and a capped, jittered
//!   exponential backoff, FindCoordinator (for groups and for transactional ids) with retries,
//!   and one kept connection per coordinator node.
//!
//! # Cancel safety
//! Every async method here is cancel safe: a dropped request either was never sent or is sent
//! and its response discarded, and the connection stays in step (see [`BrokerConnection`]).
//!
//! # Examples
//! ```no_run
//! # async fn example() -> Result<(), kroupier_coordinator::connection::ConnectionError> {
//! use kafka_protocol::messages::{HeartbeatRequest, GroupId};
//! use kafka_protocol::protocol::StrBytes;
//! use kroupier_coordinator::connection::{Cluster, ClusterConfig};
//!
//! let cluster = Cluster::new(ClusterConfig::new("127.0.0.1:9092"))?;
//! let (node, coordinator) = cluster.coordinator("my-group").await?;
//! let heartbeat = HeartbeatRequest::default()
//!     .with_group_id(GroupId(StrBytes::from_static_str("my-group")))
//!     .with_generation_id(1)
//!     .with_member_id(StrBytes::from_static_str("member-1"));
//! let response = coordinator.send(&heartbeat).await?;
//! if response.error_code == 16 {
//!     // NOT_COORDINATOR: look it up again next time.
//!     cluster.forget_coordinator("my-group");
//! }
//! # Ok(()) }
//! ```

mod broker;
mod cluster;
mod config;
mod error;
pub mod security;
#[cfg(test)]
pub(crate) mod tests;
mod versions;

pub use broker::BrokerConnection;
pub use cluster::{BrokerNode, Cluster};
pub(crate) use cluster::{TRANSACTION_KEY, lookup};
pub use config::{ClusterConfig, ConnectionConfig};
pub use error::ConnectionError;
pub use security::{
    ClientIdentity, OAuthBearerToken, Sasl, Secret, Security, SecurityError, SecurityProtocol,
    TlsConfig, TokenProvider, TrustRoots,
};
pub use versions::{ApiRequirement, NegotiatedVersions, REQUIREMENTS};
