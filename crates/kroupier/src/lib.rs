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
//! | [`worker`] | the rest of the worker runtime: config, status, task store, checkpoints, secrets |
//! | [`shutdown`] | the two-signal rule for programs: the first signal stops gracefully, a second exits |
//! | [`election`] | one leader among N replicas, with a fencing token (Schema Registry style) |
//! | [`assignor`] | who runs what: round-robin, sticky, incremental cooperative, or your own |
//! | [`observer`] | see a group (members, leader, generation, tasks) without joining it |
//! | [`protocol`] | the Kafka group member itself, for protocols of your own |
//! | [`connection`] | how to reach Kafka: bootstrap servers, TLS, SASL |
//! | `testing` (feature `testing`) | the embedded coordinator, to test workers with no Kafka |
//! | [`guide`] | "Write your first task", step by step |
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod guide;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use kroupier_worker::{
    Catalogue, ConfigProvider, FencingToken, Kind, LeaseError, Registry, RestartPolicy, Task,
    TaskContext, TaskError, TaskSpec, TaskState, TaskStatus, WorkerBuilder, WorkerConfig,
    WorkerError, WorkerEvent, WorkerExit, WorkerHandle, WorkerStatus,
};

pub use kroupier_worker::shutdown;

/// The worker runtime beyond the root's everyday items (each item is in one place): its config
/// in full, the status model, the task store and checkpoints, the wire format of kroupier's
/// protocol, and (feature `journal`) the task journal with its checks.
pub mod worker {
    /// Exactly-once output to Kafka (see [`ExactlyOnce`]).
    pub use kroupier_coordinator::log::TransactionError;
    pub use kroupier_worker::{
        AssignedTimes, BuildError, CatalogueError, CatalogueIter, GroupView, InvalidConfig, Lease,
        StatusConfig, SupervisorConfig, TaskConfigError, TaskLease, TaskView, TasksConfig,
    };
    pub use kroupier_worker::{ExactlyOnce, ExactlyOnceError, OutputTopic, TaskTransaction};
    pub use kroupier_worker::{checkpoint, config, protocol, store};

    #[cfg(feature = "journal")]
    #[cfg_attr(docsrs, doc(cfg(feature = "journal")))]
    pub use kroupier_worker::journal;
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
    pub use kroupier_coordinator::election::{
        ELECTION_PROTOCOL_NAME, ELECTION_PROTOCOL_TYPE, ElectionAssignment, ElectionEvent,
        ElectionMetadata, Elector, ElectorHandle, LeaderElection, choose_leader,
    };
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

/// Assignors: pure, deterministic functions from the group's members and the tasks to who runs
/// what. Implement [`Assignor`](assignor::Assignor) to plug in your own.
pub mod assignor {
    pub use kroupier_assignor::{
        ASSIGNOR_NAMES, AssignError, AssignmentInput, Assignor, Cooperative, CooperativeConfig,
        CooperativeState, HeldBack, HoldReason, Member, MemberId, MemberPlan, Plan,
        PreviousAssignment, PreviousOwner, RebalanceProtocol, RoundRobin, Sticky, TaskSet,
        Unplaced, UnplacedReason, by_name, check,
    };
}

/// See groups without joining them: ListGroups and DescribeGroups, decoded; and remove a
/// member as Kafka's admin client does.
pub mod observer {
    pub use kroupier_coordinator::connection::{Cluster, ClusterConfig, ConnectionError};
    pub use kroupier_coordinator::observer::{
        AssignmentDecoder, ConsumerGroupDescription, ConsumerMember, DecodedGroup,
        GroupDescription, GroupListing, GroupState, MemberDescription, Observer, Removal,
        TopicPartitions,
    };
}

/// How to reach Kafka: bootstrap servers and timeouts ([`ClusterConfig`](connection::ClusterConfig)),
/// TLS and SASL ([`Security`](connection::Security), from Kafka client properties), and the
/// [`Cluster`](connection::Cluster) a task store or an observer opens.
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
    pub use kroupier_coordinator::driver::{
        Member, MemberConfig, MemberError, MemberEvent, MemberEvents, MemberHandle, MemberStatus,
        RebalanceTimes, SharedEvents,
    };
    pub use kroupier_coordinator::membership::{
        AssignContext, AssignError, FatalError, FencingToken, Generation, GroupMember,
        GroupProtocol, Lease, LostReason, MemberAssignment, MemberState, MembershipConfig,
        ProtocolMetadata,
    };
}
