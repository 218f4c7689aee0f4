//! # Leader election on the group membership machinery
//!
//! The election is a small [`GroupProtocol`](crate::membership::GroupProtocol) (crate-internal,
//! sans-IO, tested on virtual time): each member offers its stable id, whether it is eligible,
//! and the latest generation it led. The Kafka group leader's assign function picks
//!
//! 1. among eligible members that claim to have led, the one with the latest generation
//!    (sticky: the current leader keeps leading while it stays in the group), else
//! 2. the eligible member with the lowest stable id (ties broken by member id),
//!
//! and every member receives the same assignment naming the leader. Members turn the
//! membership's events ([`MemberEvent`](crate::membership::MemberEvent)) into [`ElectionEvent`]s: `Leader { token }` when they lead
//! a generation, `Follower` otherwise, and `Lost` when the generation is lost (self-fencing
//! included), so a leader cut off from the coordinator stops acting before anyone else leads.
//! A rebalance alone (`Revoked`) changes nothing: the leader keeps its role, and its fencing
//! token stays valid while its heartbeats succeed.
//!
//! The [`Elector`] follows the member's event stream in the driver's own task, and catches up
//! on it before every JoinGroup, so that the next JoinGroup after an assignment carries the
//! leadership claim.
//!
//! [`Elector`] runs all of this on the tokio [driver](crate::driver): `Elector::spawn(config,
//! id, eligible)` returns an [`ElectorHandle`] with a lossless stream of the member's role changes
//! ([`Events`](crate::driver::Events)`<`[`ElectionEvent`]`>`) and its latest role,
//! and [`ElectorHandle::is_leader`] checks the fencing token's deadline at the moment of the
//! call. [`ElectorHandle::leave`] resigns *before* LeaveGroup, so a leader that shuts down
//! has stopped before another is elected.
//!
//! **Fast failover** (opt-in, off by default): with [`Elector::with_fast_failover`] and a [`FastFailover`](crate::failover::FastFailover),
//! each member listens on a small TCP endpoint and advertises it
//! ([`FailoverEndpoint`](crate::failover::FailoverEndpoint), in the election metadata, v1); the
//! assignment names the leader's endpoint (the election assignment, v1), and every follower keeps
//! a link to it. When a link that read the leader's identity ends and the leader's address then
//! *refuses* a connection, the leader's process ended (or it resigned): the follower removes it
//! from the group (LeaveGroup naming its member id and instance id) and rejoins at once, so a
//! new leader is elected in milliseconds instead of after the session timeout. Nothing else
//! (a timeout, a pause, a link that ends while the address accepts, another identity, another
//! network's loopback) is acted on; such a leader is replaced after its session, as before.
//! Fencing is unchanged: the new leader's generation, and so its token, is higher.
//!
//! ```no_run
//! use kroupier_coordinator::driver::MemberConfig;
//! use kroupier_coordinator::election::{ElectionEvent, Elector};
//!
//! # async fn example() -> Result<(), kroupier_coordinator::driver::MemberError> {
//! let elector = Elector::spawn(MemberConfig::new("127.0.0.1:9092", "schedulers"), "node-1", true)?;
//! let mut roles = elector.events();
//! while let Some(role) = roles.recv().await {
//!     match role {
//!         ElectionEvent::Leader { token } => println!("leading generation {}", token.generation_id),
//!         ElectionEvent::Follower { leader_id, .. } => println!("following {leader_id:?}"),
//!         ElectionEvent::Lost { .. } => println!("stopped"),
//!     }
//! }
//! elector.leave().await;
//! # Ok(()) }
//! ```

mod elector;
mod protocol;
unstable_mod!(wire);

#[cfg(test)]
pub(crate) mod model_coordinator;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use elector::{Elector, ElectorHandle};
pub use protocol::ElectionEvent;
#[cfg(test)]
pub(crate) use protocol::{LeaderElection, choose_leader};
// What members offer and what the leader sends, as bytes on the wire: kroupier's fuzz targets
// and tests decode them (`unstable`); a user runs the election through `Elector`.
#[allow(unused_imports)]
pub(crate) use protocol::{ELECTION_PROTOCOL_NAME, ELECTION_PROTOCOL_TYPE};
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use wire::{ElectionAssignment, ElectionMetadata};
#[cfg(not(feature = "unstable"))]
#[allow(unused_imports)]
pub(crate) use wire::{ElectionAssignment, ElectionMetadata};
