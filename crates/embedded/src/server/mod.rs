//! # The TCP server: Kafka's wire protocol in front of the group state machine
//!
//! One listener, one task per connection, and one task that owns the
//! [`GroupCoordinator`](crate::group::GroupCoordinator) and its timers. Each connection reads
//! length-prefixed frames under a size cap, decodes them with the guard of
//! `kroupier_coordinator::wire` (array and string lengths are checked against the frame before
//! kafka-protocol allocates anything), handles one request at a time (as Kafka mutes a connection
//! while a request is in flight, so responses go out in request order) and closes on any bad
//! input with a logged reason. A JoinGroup or SyncGroup that waits for the rebalance parks only
//! its own connection. At most [`Config::max_connections`] connections are open at once (one
//! more is closed as soon as it is accepted, with a warning), and a connection that sends no
//! request for [`Config::connections_max_idle`] is closed, as Kafka's
//! `connections.max.idle.ms` does.
//!
//! With [`Config::tls`] the listener speaks TLS (rustls, the ring provider, as kroupier's
//! clients): each connection's handshake runs on its own task, bounded by 10 s, before its first
//! request is read, and a failed handshake closes the connection with a logged reason. With a
//! client CA ([`ServerTls::require_client_certificates`]) every client must present a
//! certificate it signed (mutual TLS); kroupier's clients send theirs from
//! `ssl.keystore.location` (see `kroupier_coordinator::connection::Security`).
//!
//! Served APIs, each in every version kafka-protocol 0.18 knows (`SUPPORTED_VERSIONS`):
//! ApiVersions, Metadata (this node as the only broker, and the topics clients created),
//! FindCoordinator (this node), JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups and
//! ListGroups; and, for the task store and checkpoints, CreateTopics (one partition per topic),
//! Produce (acks 0, 1 and -1; batches stored as sent, base offset rewritten), Fetch (long poll
//! woken by a produce), ListOffsets (earliest and latest) and DescribeConfigs (topics), over
//! topics kept in memory or in [`Config::data_dir`]. No compaction, retention, transactions or
//! fetch sessions.
//!
//! An ApiVersions version it does not know is answered with a v0 body carrying
//! UNSUPPORTED_VERSION and the ranges, as Kafka does; any other unknown version, unknown API key
//! or API it does not serve closes the connection (Kafka cannot answer a version it cannot
//! encode either).
//!
//! Request checks Kafka makes before any group sees a request, mirrored here (and checked
//! against Apache Kafka 4.1 by `tests/kafka_semantics.rs`): ApiVersions v3+ must name the client
//! software (else INVALID_REQUEST and no ranges); SyncGroup v5+ must carry the protocol type and
//! name (else INCONSISTENT_GROUP_PROTOCOL). One deliberate difference: FindCoordinator for a
//! transaction or share key answers COORDINATOR_NOT_AVAILABLE, as there is no such coordinator
//! here.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kroupier_embedded::EmbeddedError> {
//! use std::time::Duration;
//! use kroupier_embedded::{ServedApi, EmbeddedCoordinator, Fault};
//!
//! let coordinator = EmbeddedCoordinator::builder()
//!     .min_session_timeout(Duration::from_millis(500))
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let bootstrap = coordinator.bootstrap(); // e.g. "127.0.0.1:41234"
//! # assert!(bootstrap.starts_with("127.0.0.1:"));
//! // Make the next two heartbeats slow, then stop and restart like a broker bounce.
//! coordinator.faults().set(ServedApi::Heartbeat, Fault::delay(Duration::from_secs(2)).times(2));
//! coordinator.stop().await;
//! coordinator.restart().await?;
//! coordinator.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod apis;
mod config;
mod connection;
mod convert;
mod dispatch;
#[cfg_attr(not(feature = "testing"), allow(dead_code, unreachable_pub))]
mod faults;
mod fetch;
#[cfg(any(test, feature = "unstable"))]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub mod fuzzing;
mod groups;
mod handle;
mod node;
mod produce;
mod tls;
mod topics;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use apis::SUPPORTED_VERSIONS;
#[cfg(any(test, feature = "testing"))]
pub use faults::{Fault, Faults, ServedApi};
#[cfg(test)]
pub(crate) use handle::EmbeddedDetail;
pub use handle::{
    Builder, CoordinatorHandle, EmbeddedCoordinator, EmbeddedError, EmbeddedErrorKind,
};
pub use tls::ServerTls;
