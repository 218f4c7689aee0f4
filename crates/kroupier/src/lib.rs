#![doc = include_str!("../README.md")]
//!
//! # The crate
//!
//! Everything is named here, once; each item has one path. The everyday API is at the root,
//! the rest is grouped by what it is for.
//!
//! **At the root: a worker and its tasks.**
//!
//! | Item | For |
//! |---|---|
//! | [`Task`], [`Kind`] | a task is a struct; its kind is the name workers agree on and its config type |
//! | [`TaskSpec`] | task instances (id, kind, config, weight) given in code |
//! | [`TaskContext`] | what a running task holds: cancellation, progress, checkpoints, exactly-once output |
//! | [`FencingToken`], [`TaskLease`], [`LeaseError`] | whether this worker still owns the task; the token to write with |
//! | [`TaskError`] | how a task run ends in failure |
//! | [`WorkerBuilder`], [`WorkerConfig`], [`BuildError`], [`BuildErrorKind`] | build a worker: config, task kinds, tasks, assignors |
//! | [`WorkerHandle`], [`Events`], [`WorkerEvent`], [`WorkerExit`], [`WorkerError`], [`WorkerErrorKind`] | the running worker: its events, how it ended, why it failed |
//! | [`TaskState`], [`TaskStatus`], [`WorkerStatus`] | what the worker runs, as its status API shows it |
//! | [`RestartPolicy`] | how failed tasks restart |
//! | [`ConfigProvider`] | secrets in task configs, resolved when a task starts |
//! | [`shutdown`] | the two-signal rule for programs: the first signal stops gracefully, a second exits |
//!
//! **Modules.**
//!
//! | Module | For |
//! |---|---|
//! | [`worker`] | the rest of the worker runtime: config parts, the task store, checkpoints, exactly-once output, status details |
//! | [`assignor`] | who runs what: the [`Assignor`](assignor::Assignor) trait, round-robin, sticky and incremental cooperative, the input and plan types of an assignor of your own |
//! | [`election`] | one leader among N replicas, with a fencing token (Schema Registry style) |
//! | [`failover`] | fast failover for any protocol: a member whose process ended is removed in milliseconds |
//! | [`protocol`] | the generic Kafka group member, for protocols of your own |
//! | [`connection`] | how to reach Kafka: bootstrap servers, timeouts, TLS, SASL |
//! | `testing` (feature `testing`) | the embedded coordinator, to test workers with no Kafka |
//! | [`guide`] | "Write your first task", step by step |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(unreachable_pub)]

pub mod guide;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use kroupier_worker::{
    BuildError, BuildErrorKind, ConfigProvider, FencingToken, Kind, LeaseError, RestartPolicy,
    Task, TaskContext, TaskError, TaskLease, TaskSpec, TaskState, TaskStatus, WorkerBuilder,
    WorkerConfig, WorkerError, WorkerErrorKind, WorkerEvent, WorkerExit, WorkerHandle,
    WorkerStatus,
};

/// An ordered stream of events, none dropped: a worker's ([`WorkerHandle::events`]), an
/// elector's role changes ([`election::ElectorHandle::events`]) and a group member's
/// ([`protocol::MemberHandle::events`]).
pub use kroupier_coordinator::driver::Events;

pub use kroupier_worker::shutdown;

/// The worker runtime beyond the root's everyday items: the parts of [`WorkerConfig`], the
/// task store and checkpoints, exactly-once output, the status details, and (feature
/// `journal`) the task journal with its checks.
pub mod worker {
    /// Exactly-once output to Kafka (see [`ExactlyOnce`]).
    pub use kroupier_coordinator::log::TransactionError;
    // Details of the status model and of the tasks' errors, with the kinds of those errors.
    pub use kroupier_worker::{
        AssignedTimes, GroupView, LeaseErrorKind, TaskConfigError, TaskConfigErrorKind, TaskView,
    };
    pub use kroupier_worker::{ExactlyOnce, ExactlyOnceError, OutputTopic, TaskTransaction};
    // The parts of [`WorkerConfig`](crate::WorkerConfig), and its errors.
    pub use kroupier_worker::{
        InvalidConfig, PropertiesError, PropertiesErrorKind, StatusConfig, TaskStoreConfig,
        TasksConfig,
    };
    // The task store (a group's tasks in a compacted topic) and checkpoints (a task's saved
    // state, which follows it when it moves).
    pub use kroupier_worker::{checkpoint, store};

    #[cfg(feature = "journal")]
    #[cfg_attr(docsrs, doc(cfg(feature = "journal")))]
    pub use kroupier_worker::journal;
}

/// Assignors: pure, deterministic functions from the group's members and the tasks to who runs
/// what: [`RoundRobin`](assignor::RoundRobin), [`Sticky`](assignor::Sticky) and
/// [`Cooperative`](assignor::Cooperative), or your own: implement
/// [`Assignor`](assignor::Assignor) over an [`AssignmentInput`](assignor::AssignmentInput) and
/// return a [`Plan`](assignor::Plan). This is the `kroupier-assignor` crate, whose root is
/// already the assignor's API and nothing else.
#[doc(inline)]
pub use kroupier_assignor as assignor;

/// Leader election: one eligible replica leads, leadership is sticky, and a leader that may
/// have lost its generation knows it before anyone else leads. Its member's settings are
/// [`MemberConfig`](crate::protocol::MemberConfig).
///
/// ```no_run
/// use kroupier::election::{ElectionEvent, Elector};
/// use kroupier::protocol::MemberConfig;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = MemberConfig::new("127.0.0.1:9092", "registry-leader");
/// let elector = Elector::spawn(config, "replica-1", true)?;
/// let mut events = elector.events();
/// while let Some(event) = events.recv().await {
///     if let ElectionEvent::Leader { token } = event {
///         // Write with the token: a store that keeps the highest generation it has seen
///         // refuses a deposed leader's late writes.
///         println!("leading with {token:?}");
///     }
/// }
/// # Ok(()) }
/// ```
pub mod election {
    pub use kroupier_coordinator::election::{ElectionEvent, Elector, ElectorHandle};
}

/// Fast failover for any group protocol: when the process of the member a follower depends on
/// ends on a live host, the follower proves it in milliseconds (a link that read the member's
/// identity ended, and its address then refuses), removes it from the group and rejoins,
/// instead of waiting for its session timeout. Leader election turns it on with
/// [`Elector::with_fast_failover`](election::Elector::with_fast_failover); any other protocol
/// holds a [`Failover`](failover::Failover). Anything short of a proof (a timeout, a pause,
/// another network's loopback) leaves the member to its session.
pub mod failover {
    pub use kroupier_coordinator::failover::{
        Failover, FailoverEndpoint, FailoverTarget, FastFailover, InvalidFailoverEndpoint,
    };
}

/// How to reach Kafka: bootstrap servers and timeouts ([`ClusterConfig`](connection::ClusterConfig)),
/// TLS and SASL ([`Security`](connection::Security), from Kafka client properties), and the
/// [`Cluster`](connection::Cluster) a task store opens.
pub mod connection {
    pub use kroupier_coordinator::connection::{
        ClientIdentity, Cluster, ClusterConfig, ConnectionConfig, ConnectionError,
        OAuthBearerToken, Sasl, Secret, Security, SecurityError, SecurityProtocol, TlsConfig,
        TokenProvider, TrustRoots,
    };
}

/// The Kafka group member for any protocol (the `AbstractCoordinator` of Kafka's Java clients,
/// as a public API): implement [`GroupProtocol`](protocol::GroupProtocol) — its metadata and
/// the leader's assignment — and run it with [`Member`](protocol::Member). The member joins,
/// syncs, heartbeats, fences itself when it may have lost its generation, and reports what
/// happens as one ordered stream of [`MemberEvent`](protocol::MemberEvent)s, which the
/// protocol's owner acts on.
pub mod protocol {
    // The member, its settings, its handle and what it reports.
    pub use kroupier_coordinator::driver::{
        Member, MemberConfig, MemberError, MemberEvent, MemberHandle, MemberStatus, RebalanceTimes,
        SharedEvents,
    };
    // What a protocol implements, the types of its methods, and the types the member's status
    // and events carry (its lease, coordinator, counters, and the API an error came from).
    pub use kroupier_coordinator::membership::{
        Api, AssignContext, AssignError, ConfigError, Coordinator, FatalError, Generation,
        GroupMember, GroupProtocol, KafkaError, Lease, LostReason, MemberAssignment, MemberState,
        MembershipConfig, Metrics, ProtocolMetadata,
    };
}
