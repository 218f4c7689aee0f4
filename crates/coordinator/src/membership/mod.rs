//! # The group membership state machine (sans-IO)
//!
//! `Membership` is one member of a Kafka group speaking FindCoordinator, JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup, as Kafka's `AbstractCoordinator` does, but without sockets, threads
//! or clock reads: the caller passes `now` into every input and sends the requests it asks for.
//! The same code therefore runs under the tokio driver and in deterministic tests on virtual time.
//!
//! ## The loop a driver runs
//!
//! 1. Feed inputs: `Membership::handle_response` (with the `RequestTag` of the request),
//!    `Membership::handle_request_failed`, `Membership::handle_disconnect`,
//!    `Membership::handle_timeout`, and commands (`Membership::request_rejoin`,
//!    `Membership::leave`, `Membership::set_assignment`, `Membership::update_metadata`,
//!    `Membership::revocation_done`).
//! 2. Drain `Membership::poll_event` (the [`MemberEvent`]s the driver delivers to the
//!    member's owner) and `Membership::poll_assignment_request`, then
//!    `Membership::poll_request` (send each
//!    `Outgoing`: FindCoordinator to any broker, the rest to the coordinator of the last
//!    `MemberEvent::CoordinatorChanged`), handling the events of each request before the next.
//!    `Membership::poll_request_with` reads the protocol's metadata right before a JoinGroup
//!    is built, so every JoinGroup carries the metadata of that moment.
//! 3. Sleep until `Membership::poll_timeout` or the next input, then call `handle_timeout`.
//!
//! `now` must never go backwards. On an assignment request the driver runs the
//! protocol's [`GroupProtocol::assign`] *off* this loop and feeds the result back with
//! `set_assignment`; heartbeats keep going meanwhile, and at every step the member waits for no
//! user code — except, by choice, at the join gate below.
//!
//! ## States
//!
//! ```text
//!                 request_rejoin / metadata changed / heartbeat REBALANCE_IN_PROGRESS
//!                 (emits Revoked; the generation is held and heartbeated until replaced)
//!          +------------------------------------------------------------------+
//!          v                                                                  |
//!  +---------------+  join gate (await_revocation): JoinGroup held until       |
//!  | Unjoined,     |  revocation_done(generation) or revoked_at +              |
//!  | gate closed   |  rebalance_timeout − margin; heartbeats go on             |
//!  +---------------+                                                           |
//!          | ack / bound passed / generation lost                              |
//!          v                                                                  |
//!  +--------------+ coordinator +----------+ JoinGroup ok  +--------------------+ set_assignment
//!  |  Unjoined /  |  known,     | Joining  |--- leader --->| AwaitingAssignment |---------+
//!  |  Finding-    |------------>| (Join in |               +--------------------+         |
//!  |  Coordinator |  backoff    |  flight) |--- follower, or KIP-814 skip -------------+   |
//!  +--------------+  elapsed    +----------+                                           v   v
//!     ^    ^   MEMBER_ID_REQUIRED: take the id |                               +-----------+
//!     |    +-----------------------------------+                               |  Syncing  |
//!     |    retry / rediscover / reset (Lost if a generation was held)         +-----------+
//!     |                                                                    SyncGroup ok |
//!     |  self-fence deadline passed (Lost)   +--------+   Assigned                      |
//!     +--------------------------------------| Stable |<--------------------------------+
//!        ILLEGAL_GENERATION / UNKNOWN_MEMBER  +--------+
//!
//!  any state --leave--> Leaving --LeaveGroup answered or failed--> Left
//!  any state --fatal error (FENCED_INSTANCE_ID: Fenced)----------> Fatal
//! ```
//!
//! The coordinator is tracked beside the state: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a
//! disconnect or an unanswered request make it unknown; a join or sync in flight then restarts
//! after rediscovery, while a stable member keeps its generation and heartbeats the new
//! coordinator (Kafka's behaviour: the group state moves with the coordinator).
//!
//! ## The join gate
//!
//! With [`MembershipConfig::await_revocation`], a rebalance that starts while the member is
//! stable emits `MemberEvent::Revoked` and holds the JoinGroup until
//! `Membership::revocation_done` names the revoked generation (the user's revoked work has
//! stopped, as Kafka Connect's `onJoinPrepare` does before it rejoins), or until
//! `rebalance_timeout − margin` has passed since the revocation
//! (`MembershipConfig::revocation_bound`), so the broker, which waits `rebalance_timeout` for
//! every member, never drops this one. Heartbeats for the held generation go on meanwhile. A
//! loss or `leave` opens the gate at once. `Membership::join_held` shows it.
//!
//! ## Heartbeats and self-fencing
//!
//! Heartbeats run on their own timer (`heartbeat_interval`, reset at send) whenever the member
//! holds a generation: in AwaitingAssignment and Syncing (Kafka's COMPLETING_REBALANCE), in
//! Stable, and while it rejoins from a generation (the broker answers REBALANCE_IN_PROGRESS,
//! which counts as success and keeps the session alive). The member records the *send* time of
//! every request that proved membership: each successful heartbeat, the SyncGroup that
//! delivered the assignment, and the JoinGroup that formed the generation (for a member that
//! held no generation before, whose work only starts after SyncGroup, the JoinGroup's receipt).
//! At `that + session_timeout − margin` with no newer success it emits `MemberEvent::Lost`, drops
//! the generation and rejoins: the broker, which measures from the later *receive* time,
//! cannot have given the work away yet. `Membership::lease` exposes the
//! fencing token `(generation_id, member_id)` with that deadline.
//!
//! Heartbeats only prove the session. While the member keeps a generation's work running
//! through a rebalance, its deadline is also capped `margin` before Kafka's rebalance
//! (join) and pending-sync timeouts could remove it ([`LostReason::RebalanceTimeout`]),
//! measured from the send time of its last request answered while the group was settled,
//! which the rebalance cannot have started before; the join gate's bound is measured from
//! the same instant. A heartbeat answered ILLEGAL_GENERATION while the member's JoinGroup is
//! in flight only means the broker formed the next generation first: heartbeats for the old
//! one stop and its deadline stands, and the JoinGroup response decides. Heartbeats wait
//! `request_timeout`, as Kafka's do: a late answer is still an answer.
//!
//! ## Errors
//!
//! `action_for` is the one map from an error code, per API, to an `ErrorAction`. Every
//! handler applies it; resets apply only if the response belongs to the current generation.
//!
//! The machine itself is internal to this crate (its requests and responses are
//! kafka-protocol's types, which kroupier does not promise to keep); a protocol author
//! implements [`GroupProtocol`] and runs it with the driver
//! ([`MemberHandle`](crate::driver::MemberHandle)).

mod action;
mod config;
mod event;
mod handle;
mod heartbeat;
mod io;
mod kafka_error;
mod machine;
mod protocol;
mod removal;
mod transition;

#[cfg(test)]
mod docs_table_tests;
#[cfg(test)]
mod error_table_tests;
#[cfg(test)]
mod join_gate_tests;
#[cfg(test)]
mod removal_tests;
#[cfg(test)]
mod tests;

pub use action::{Api, FatalError};
pub use config::{ConfigError, MembershipConfig};
pub(crate) use event::AssignmentRequest;
pub use event::{
    Coordinator, FencingToken, Generation, Lease, LostReason, MemberEvent, Metrics, RebalanceTimes,
};
pub(crate) use io::{LeaveGroup, Request, RequestTag, Response};
pub use kafka_error::KafkaError;
pub use machine::MemberState;
pub(crate) use machine::Membership;
// What only the machine's own tests and the election's model coordinator name.
#[cfg(test)]
pub(crate) use action::{ErrorAction, RetryBackoff, action_for};
#[cfg(test)]
pub(crate) use io::{FindCoordinator, Outgoing};
#[cfg(test)]
pub(crate) use machine::CommandError;
pub use protocol::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, ProtocolMetadata,
};
