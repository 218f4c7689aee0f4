//! # kroupier-worker
//!
//! The worker runtime: user tasks defined as Rust structs, started and stopped under supervision
//! as the group's assignment changes, with a status API.
//!
//! ```
//! use std::time::Duration;
//! use kroupier_worker::{Kind, Task, TaskContext, TaskError, TaskState, WorkerBuilder, WorkerConfig};
//! use serde::{Deserialize, Serialize};
//!
//! /// A task is a plain struct; its config comes from the catalogue through serde.
//! #[derive(Serialize, Deserialize)]
//! struct Beat {
//!     every_ms: u64,
//! }
//!
//! impl Task for Beat {
//!     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
//!         let mut ticks = tokio::time::interval(Duration::from_millis(self.every_ms));
//!         loop {
//!             tokio::select! {
//!                 _ = ctx.cancelled() => return Ok(()),
//!                 _ = ticks.tick() => {}
//!             }
//!             // Fails once this worker may have lost the task: then stop, never write.
//!             let token = ctx.check_lease()?;
//!             ctx.report_progress(format!("beat at generation {}", token.generation_id));
//!         }
//!     }
//! }
//!
//! const BEAT: Kind<Beat> = Kind::new("beat");
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! # let coordinator = kroupier_embedded::EmbeddedCoordinator::builder().bind("127.0.0.1:0").await.unwrap();
//! # let bootstrap = coordinator.bootstrap();
//! // Kafka's bootstrap servers (here kroupier's embedded coordinator, which speaks the same
//! // protocol) and the group the workers share.
//! let mut config = WorkerConfig::new("beats");
//! config.member.cluster.bootstrap_servers = vec![bootstrap];
//!
//! let worker = WorkerBuilder::new(config)
//!     .register(BEAT)
//!     .typed_task(&BEAT, "beat-0", Beat { every_ms: 100 })
//!     .typed_task(&BEAT, "beat-1", Beat { every_ms: 100 })
//!     .spawn()
//!     .await
//!     .unwrap();
//!
//! // Alone in the group, this worker is assigned both tasks.
//! while worker.tasks().iter().filter(|t| t.state == TaskState::Running).count() < 2 {
//!     tokio::time::sleep(Duration::from_millis(20)).await;
//! }
//! assert_eq!(worker.owned().len(), 2);
//!
//! // Stops every task (each within its bound), then leaves the group.
//! worker.shutdown().await.unwrap();
//! # }
//! ```
//!
//! - [`Task`] and [`Kind`] (registered with [`WorkerBuilder::register`]); the task instances
//!   ([`TaskSpec`], given with [`WorkerBuilder::task`] or kept in the [`store`]);
//! - [`TaskContext`]: what a task runs with: fencing token ([`FencingToken`]), lease
//!   ([`TaskLease`]), cancellation; [`RestartPolicy`] says how failed tasks are restarted;
//! - [`checkpoint`]: task state saved in a compacted Kafka topic, which follows a task when it
//!   moves ([`TaskContext::save_checkpoint`], [`TaskContext::last_checkpoint`]);
//! - [`WorkerConfig`] (nested settings, derived defaults, Kafka client properties)
//!   and [`WorkerBuilder`] (assignors as values, typed task kinds), which spawns a
//!   [`WorkerHandle`]: the worker loop that joins the Kafka group with kroupier's protocol,
//!   its [`WorkerEvent`]s, and the status HTTP API ([`WorkerStatus`], [`TaskStatus`]);
//! - [`shutdown`]: the two-signal rule for binaries (the library handles no OS signal);
//! - [`store`]: the task store, a group's tasks in a compacted Kafka topic;
//! - `journal` (with the `journal` feature): the task journal each beat is written to, and the
//!   checks over it (and over leader elections) that witness no task running on two workers
//!   at once; the demo, the examples and kroupier's tests use it.

#![warn(unreachable_pub)]

/// Declares a `pub` item (a function, a method, a constant) shared with kroupier's own crates
/// (the command line, the tests, the benchmarks) but not promised to users: `pub` and hidden
/// from the docs with the `unstable` feature, `pub(crate)` without it.
macro_rules! unstable_pub {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        $(#[$attr])*
        #[cfg(feature = "unstable")]
        #[doc(hidden)]
        pub $($item)*
        $(#[$attr])*
        #[cfg(not(feature = "unstable"))]
        #[allow(dead_code)]
        pub(crate) $($item)*
    };
}

mod builder;
mod catalogue;
pub mod checkpoint;
mod config;
mod context;
mod error;
mod exactly_once;
mod generator;
mod group;
mod lease;
// The status API's server, and the one HTTP client the workers and the console share: internal.
// kroupier's command line reaches `http::client` through the `unstable` feature, which promises
// nothing.
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub mod http;
#[cfg(not(feature = "unstable"))]
#[allow(dead_code, unreachable_pub, unused_imports)]
mod http;
// Public with the `journal` feature: the demo, the examples and the tests write and check
// journals; a worker needs none of it.
mod java_properties;
#[cfg(feature = "journal")]
pub mod journal;
#[cfg(not(feature = "journal"))]
#[allow(dead_code, unreachable_pub, unused_imports)]
mod journal;
// The wire format of kroupier groups (member metadata, assignments): internal. The CLI, the
// tests and the fuzz targets decode it through the `unstable` feature, which promises nothing.
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub mod protocol;
#[cfg(not(feature = "unstable"))]
#[allow(dead_code, unreachable_pub, unused_imports)]
mod protocol;
mod runtime;
mod secrets;
pub mod shutdown;
mod status;
pub mod store;
mod supervisor;
mod task;
mod task_id;

pub use builder::WorkerBuilder;
pub use catalogue::TaskSpec;
// The set of task instances a worker holds: the builder's tasks and the task store's make it.
// kroupier's tests and benchmarks build one directly (`unstable`).
#[cfg(not(feature = "unstable"))]
pub(crate) use catalogue::Catalogue;
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use catalogue::{Catalogue, CatalogueError, CatalogueErrorKind, CatalogueIter};
pub use config::{
    PropertiesError, PropertiesErrorKind, StatusConfig, TaskStoreConfig, TasksConfig, WorkerConfig,
};
pub use context::TaskContext;
pub use error::{BuildError, BuildErrorKind, WorkerError, WorkerErrorKind};
pub use exactly_once::{ExactlyOnce, ExactlyOnceError, OutputTopic, TaskTransaction};
pub use group::{AssignedTimes, WorkerEvent, WorkerExit, WorkerHandle};
pub use lease::{FencingToken, LeaseError, LeaseErrorKind, TaskLease};
pub use secrets::ConfigProvider;
pub use status::{GroupView, TaskState, TaskStatus, TaskView, WorkerStatus};
pub use supervisor::{InvalidConfig, RestartPolicy};
// The registry of task kinds: users register kinds through `WorkerBuilder::register`; kroupier's
// own tests build one directly (`unstable`).
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use task::Registry;
#[cfg(not(feature = "unstable"))]
#[allow(unused_imports)]
pub(crate) use task::Registry;
pub use task::{Kind, Task, TaskConfigError, TaskConfigErrorKind, TaskError};
