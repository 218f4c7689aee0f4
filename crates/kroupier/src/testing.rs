//! Test workers with no Kafka: the embedded coordinator, in your test's process.
//!
//! The embedded coordinator speaks Kafka's group protocol on a loopback port, so a worker built
//! exactly as in production (same [`WorkerBuilder`](crate::WorkerBuilder), same tasks) joins it,
//! gets its assignment and runs its tasks; start several workers to see tasks move. It is
//! `kroupier-embedded`, re-exported.
//!
//! Enable the feature for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! kroupier = { version = "0.1", features = ["testing"] }
//! ```
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kroupier::testing::EmbeddedError> {
//! let coordinator = kroupier::testing::coordinator().await?;
//! let config = kroupier::testing::worker_config(&coordinator, "orders");
//! assert_eq!(config.member.cluster.bootstrap_servers, [coordinator.bootstrap()]);
//! coordinator.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The [crate's front page](crate) and the [guide](crate::guide#test-it-without-kafka) run a
//! worker on it.

pub use kroupier_embedded::{
    Builder, Config, ConfigError, CoordinatorHandle, EmbeddedCoordinator, EmbeddedError, Fault,
    Faults,
};

use crate::WorkerConfig;

/// Starts an embedded coordinator on a free loopback port, with its defaults (no initial
/// rebalance delay, session timeouts from 1 s). Stop it with [`CoordinatorHandle::shutdown`];
/// dropping the handle stops it too.
///
/// For other settings (fault injection, limits), use [`EmbeddedCoordinator::builder`].
///
/// # Errors
/// [`EmbeddedError::Bind`] when no loopback port can be bound.
pub async fn coordinator() -> Result<CoordinatorHandle, EmbeddedError> {
    EmbeddedCoordinator::builder().bind("127.0.0.1:0").await
}

/// A [`WorkerConfig`] for group `group_id` on `coordinator`: its bootstrap address. Everything
/// else is [`WorkerConfig::new`]'s default (the status API on a free loopback port, so tests
/// running at once never collide); change what the test needs.
pub fn worker_config(coordinator: &CoordinatorHandle, group_id: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(group_id);
    config.member.cluster.bootstrap_servers = vec![coordinator.bootstrap()];
    config
}
