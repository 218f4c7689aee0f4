#![doc = include_str!("../README.md")]
//!
//! # The crate
//!
//! The everyday API is at the root: the [`Task`] trait and its [`TaskContext`], the
//! [`WorkerBuilder`] and its [`WorkerConfig`], the running [`WorkerHandle`], and the
//! [`FencingToken`] a task writes with. The rest is grouped by what it is for:
//!
//! | Module | For |
//! |---|---|
//! | [`worker`] | everything of the worker runtime: supervision, catalogue, status API, journal |
//! | [`shutdown`] | the two-signal rule for programs: the first signal stops gracefully, a second exits |
//! | [`election`] | one leader among N replicas, with a fencing token (Schema Registry style) |
//! | [`assignor`] | who runs what: round-robin, sticky, incremental cooperative, or your own |
//! | [`observer`] | see a group (members, leader, generation, tasks) without joining it |
//! | [`coordinator`] | the Kafka group member itself, for protocols of your own |
//! | `testing` (feature `testing`) | the embedded coordinator, to test workers with no Kafka |
//! | [`guide`] | "Write your first task", step by step |
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod guide;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use kroupier_worker::{
    Catalogue, FencingToken, Kind, LeaseError, Registry, RestartPolicy, Task, TaskContext,
    TaskError, TaskSpec, TaskState, TaskStatus, WorkerBuilder, WorkerConfig, WorkerError,
    WorkerEvent, WorkerExit, WorkerHandle, WorkerStatus,
};

pub use kroupier_worker::shutdown;

/// The worker runtime in full: [`Task`]s started, stopped and restarted under supervision as
/// the group's assignment changes, the status API and the task journal. The root of this crate
/// re-exports what most programs need.
pub mod worker {
    pub use kroupier_worker::*;
}

/// Leader election: one eligible replica leads, leadership is sticky, and a leader that may
/// have lost its generation knows it before anyone else leads.
///
/// ```no_run
/// use kroupier::election::{ElectionEvent, Elector, MemberConfig};
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = MemberConfig::new("127.0.0.1:9092", "registry-leader");
/// let elector = Elector::spawn(config, "replica-1", true)?;
/// let mut events = elector.events();
/// while let Ok(event) = events.recv().await {
///     if let ElectionEvent::Leader { token } = event {
///         // Write with the token: a store that keeps the highest generation it has seen
///         // refuses a deposed leader's late writes.
///         println!("leading with {token:?}");
///     }
/// }
/// # Ok(()) }
/// ```
pub mod election {
    pub use kroupier_coordinator::driver::{MemberConfig, MemberError};
    pub use kroupier_coordinator::election::*;
}

/// Assignors: pure, deterministic functions from the group's members and the tasks to who runs
/// what. Implement [`Assignor`](assignor::Assignor) to plug in your own.
pub mod assignor {
    pub use kroupier_assignor::*;
}

/// See groups without joining them: ListGroups and DescribeGroups, decoded.
pub mod observer {
    pub use kroupier_coordinator::connection::{Cluster, ClusterConfig, ConnectionError};
    pub use kroupier_coordinator::observer::*;
}

/// The Kafka group member for any protocol (the `AbstractCoordinator` of Kafka's Java clients,
/// as a public API): connections, the sans-IO membership state machine and its driver.
pub use kroupier_coordinator as coordinator;
