//! # kroupier-coordinator
//!
//! A generic member of a Kafka group (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) for any protocol, and leader election on top of it: the capability Java's
//! internal `AbstractCoordinator` gives Kafka Connect, Kafka Streams and Schema Registry, as a
//! public, typed Rust API.
//!
//! It knows nothing of tasks: a protocol ([`membership::GroupProtocol`]) plugs in its
//! metadata and the leader's assignment function.
//!
//! ```no_run
//! use kroupier_coordinator::driver::MemberConfig;
//! use kroupier_coordinator::election::{ElectionEvent, Elector};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // One of N replicas; the same group id everywhere, a stable id per replica.
//! let config = MemberConfig::new("127.0.0.1:9092", "schema-registry-leader");
//! let elector = Elector::spawn(config, "replica-1", true)?;
//! let mut events = elector.events();
//! while let Some(event) = events.recv().await {
//!     match event {
//!         // Act as leader only while `is_leader()` holds: it turns false as soon as this
//!         // member may have lost the generation (self-fencing), before anyone else leads.
//!         ElectionEvent::Leader { token } => println!("leading with {token:?}"),
//!         ElectionEvent::Follower { leader_id, .. } => println!("following {leader_id:?}"),
//!         ElectionEvent::Lost { .. } => println!("lost the generation; stop acting"),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! What this crate promises (its public API): the generic member ([`driver::Member`], its
//! [`MemberConfig`](driver::MemberConfig), [`MemberHandle`](driver::MemberHandle),
//! [`MemberEvent`](driver::MemberEvent)s and [`MemberError`](driver::MemberError), the
//! [`GroupProtocol`](membership::GroupProtocol) trait), [`election`], [`failover`], and the
//! settings a user gives to reach Kafka ([`connection`]: bootstrap servers, timeouts, TLS,
//! SASL).
//!
//! The layers, bottom up (each module's guide says why it is shaped as it is):
//! - `wire`: Kafka framing and decoding guarded against hostile frames, both directions;
//! - [`connection`]: broker connections, ApiVersions negotiation, coordinator discovery;
//! - `codec`: the versioned payload codec kroupier's member metadata and assignments use;
//! - [`membership`]: the sans-IO group membership state machine and the error table;
//! - [`driver`]: the tokio driver that owns IO and time around it;
//! - [`election`]: sticky leader election as a group protocol on the driver;
//! - [`failover`]: fast failover on a proof that a followed member's process ended;
//! - `observer`: DescribeGroups and ListGroups, to see a group without joining it;
//! - `log`: a single-partition compacted topic as a log (Produce, Fetch, ListOffsets,
//!   CreateTopics) and a transactional producer, for state kept in Kafka such as a task store.
//!
//! # The `unstable` feature
//! `wire`, `codec`, `backoff`, `clock`, `observer`, `log`, the broker connection itself and the
//! failover's link and proof are shared with kroupier's own crates (the worker runtime, the
//! embedded coordinator, the command line) through the `unstable` feature, which makes them
//! public but hidden from the docs and promises no stability. Without the feature they are
//! private to this crate. Use kroupier's facade crate for the task store, the observer and
//! exactly-once output.

#![warn(unreachable_pub)]

/// Declares a module shared with kroupier's other crates but not promised to users: public
/// and hidden from the docs with the `unstable` feature (which kroupier-worker and
/// kroupier-embedded turn on), `$vis` without it.
macro_rules! unstable_mod {
    ($(#[$attr:meta])* $vis:vis $name:ident) => {
        $(#[$attr])*
        #[cfg(feature = "unstable")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "unstable"))]
        #[allow(dead_code, unused_imports, unreachable_pub)]
        $vis mod $name;
    };
}

/// Declares a `pub` item (a function, a method, a type) shared with kroupier's other crates but
/// not promised to users: `pub` and hidden from the docs with the `unstable` feature,
/// `pub(crate)` without it. For one item of a public type or module; a whole internal module is
/// declared with `unstable_mod!`.
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

unstable_mod!(backoff);
unstable_mod!(clock);
unstable_mod!(codec);
pub mod connection;
pub mod driver;
pub mod election;
pub mod failover;
// Internal: the worker's task store, checkpoints and exactly-once output use it (`unstable`).
unstable_mod!(pub(crate) log);
pub mod membership;
// Internal: the command line and the worker runtime use it (`unstable`), and fast failover.
unstable_mod!(pub(crate) observer);
unstable_mod!(
    /// Kafka's framing and request/response decoding, both directions. Internal: the embedded
    /// coordinator serves the same wire format through the `unstable` feature, which makes no
    /// promise of stability (the module is hidden from the docs).
    wire
);
