//! # kroupier-embedded
//!
//! An in-process group coordinator that speaks Kafka's wire protocol, so that kroupier workers
//! run with zero setup on one machine (the demo, fast fault-injecting tests). Real Apache Kafka
//! stays the engine for multi-machine deployments.
//!
//! - Kafka's classic group state machine, sans-IO, on virtual time (a private module: its
//!   settings are [`Builder`]'s).
//! - [`EmbeddedCoordinator`]: the TCP server in front of it, with fault injection (`Faults`,
//!   feature `testing`) and stop/restart on the same port; TLS and mutual TLS with
//!   [`ServerTls`].
//! - Single-partition topics for kroupier's task store and checkpoints (CreateTopics, Produce,
//!   Fetch with long polling, ListOffsets, and Metadata listing them), in memory or, with
//!   [`Builder::data_dir`], in checksummed append-only files that survive a restart. No
//!   compaction: every record is kept, tombstones included.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kroupier_embedded::EmbeddedError> {
//! let coordinator = kroupier_embedded::EmbeddedCoordinator::builder()
//!     .bind("127.0.0.1:0")
//!     .await?;
//! println!("bootstrap={}", coordinator.bootstrap());
//! coordinator.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![warn(unreachable_pub)]

mod group;
mod log;
mod server;

// The request path on bytes, for kroupier's fuzz targets (`unstable`, which promises nothing).
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use server::fuzzing;

#[cfg(test)]
pub(crate) use server::SUPPORTED_VERSIONS;
pub use server::{
    Builder, CoordinatorHandle, EmbeddedCoordinator, EmbeddedError, EmbeddedErrorKind, ServerTls,
};
// What a test reads of a group (`CoordinatorHandle::describe_group`, feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub use group::{GroupDescription, GroupState, MemberDescription};
#[cfg(any(test, feature = "testing"))]
pub use server::{Fault, Faults, ServedApi};
