//! # The tokio driver of a group member
//!
//! [`Member::new`] builds a member from a [`MemberConfig`] and a
//! [`GroupProtocol`] and returns a [`MemberHandle`] and the
//! driver future (tower's `Buffer::pair` idea: the caller decides where the driver runs);
//! [`Member::spawn`] runs it on the current tokio runtime.
//!
//! The driver is one loop that owns the sans-IO `Membership`
//! and feeds it `now`, responses, failures and commands:
//!
//! ```text
//!   handle ──commands──▶ ┌──────────── driver loop ────────────┐ ──events──▶ each stream
//!                        │ Membership (sans-IO)                │ ──status──▶ watch
//!   responses/failures ─▶│  poll_event   ─▶ MemberEvent        │
//!   (by request tag)     │  poll_request ─▶ send concurrently  │
//!                        │   (JoinGroup: protocols() read now) │
//!   sleep_until(timeout)▶│  AssignmentRequested ─▶ spawn_blocking(assign)
//!                        └─────────────────────────────────────┘
//! ```
//!
//! - Every request goes out concurrently with its own timeout: FindCoordinator to any
//!   bootstrap broker, JoinGroup and SyncGroup over the member's *join* connection to the
//!   coordinator, Heartbeat and LeaveGroup over its *control* connection. A broker reads one
//!   request per connection at a time and parks JoinGroup for the whole rebalance, so
//!   heartbeats never queue behind it. Connections are re-made after the coordinator moves.
//! - The leader's [`assign`](crate::membership::GroupProtocol::assign) runs on tokio's
//!   blocking pool, so a slow assignor never delays a heartbeat.
//!
//! The membership's one event type, [`MemberEvent`], leaves the driver as an ordered stream
//! that drops nothing ([`MemberHandle::events`]): the protocol's owner acts on assignment,
//! revocation and loss from it; the protocol itself only offers metadata and assigns. Each
//! step queues every pending event on the streams and publishes the status
//! ([`MemberHandle::current`], whose lease a loss ends) *before* it sends the next request, and
//! reads the protocol's [`protocols`](crate::membership::GroupProtocol::protocols) right
//! before each JoinGroup: a protocol whose metadata depends on the member's state reads it
//! there, fresh.
//!
//! ## The join gate
//!
//! With `MembershipConfig::await_revocation` (off by default; the worker turns it on) a
//! rebalance that starts while the member is stable emits [`MemberEvent::Revoked`] and holds
//! the JoinGroup until [`MemberHandle::revocations_done`] names that generation — the owner
//! calls it once the revoked work has stopped — or until `rebalance_timeout − margin` has passed, so the broker never drops the member
//! for a slow revocation. Heartbeats go on meanwhile; a loss opens the gate at once. This is
//! Kafka Connect's `onJoinPrepare` (revoked tasks stop before JoinGroup) without blocking the
//! heartbeat.
//!
//! ## Contract for protocols
//!
//! `protocols` runs *on the driver loop*: it must return quickly and never block. The loop is
//! the heartbeat timer; a call that blocks for longer than `session_timeout − margin` makes
//! the member fence itself (it reports `Lost` the moment it runs again). Events go through
//! unbounded channels and wait for nobody.
//!
//! ## Self-fencing
//!
//! [`MemberHandle::is_token_valid`] checks the fencing token against the lease's deadline
//! with the clock, not with the driver's last word, so it turns false in time even when the
//! driver is starved.
//!
//! ## Shutdown
//!
//! [`MemberHandle::leave`] (or [`close`](MemberHandle::close), or dropping every handle)
//! revokes the generation, sends LeaveGroup for a dynamic member (for a static one only with
//! `leave_group_on_close_static`) and ends the driver with `Ok(())`. Dropping the driver
//! future instead stops at once, without LeaveGroup: the broker removes the member after its
//! session timeout, as after a crash.
//!
//! ## Observability
//!
//! A member whose requests reach no broker for 3 s (connection refused, a TLS handshake the
//! listener cuts, timeouts) logs a WARN line with the last error and what to check (bootstrap
//! servers, `security.protocol`), again every 30 s while it lasts, and an INFO line once a
//! broker answers; [`MemberStatus::unreachable`] says the same meanwhile. Kafka's clients warn
//! alike ("Connection to node -1 could not be established").
//!
//! Each rebalance runs in a `rebalance` tracing span carrying its reason and generation.
//! [`MemberStatus::metrics`] holds Kafka-like coordinator metrics: rebalances total and
//! failed, the last rebalance's latency, heartbeats sent and failed, and the last heartbeat's
//! age ([`Metrics::last_heartbeat_age`](crate::membership::Metrics::last_heartbeat_age)).
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//! use kroupier_coordinator::driver::{Member, MemberConfig, MemberEvent};
//! use kroupier_coordinator::membership::{
//!     AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, ProtocolMetadata,
//! };
//!
//! /// Every member gets the whole (one-word) assignment.
//! struct Everyone;
//!
//! impl GroupProtocol for Everyone {
//!     fn protocol_type(&self) -> &str {
//!         "my-protocol"
//!     }
//!     fn protocols(&self) -> Vec<ProtocolMetadata> {
//!         vec![ProtocolMetadata::new("v1", b"".to_vec())]
//!     }
//!     fn assign(
//!         &self,
//!         _context: &AssignContext,
//!         members: &[GroupMember],
//!     ) -> Result<Vec<MemberAssignment>, AssignError> {
//!         let all = |m: &GroupMember| MemberAssignment::new(m.member_id.clone(), b"all".to_vec());
//!         Ok(members.iter().map(all).collect())
//!     }
//! }
//!
//! # async fn example() -> Result<(), kroupier_coordinator::driver::MemberError> {
//! let config = MemberConfig::new("127.0.0.1:9092", "my-group");
//! let (handle, driver) = Member::new(config, Arc::new(Everyone))?;
//! let mut events = handle.events();
//! tokio::spawn(driver);
//! while let Some(event) = events.recv().await {
//!     if let MemberEvent::Assigned { generation, .. } = event {
//!         println!("generation {} assigned", generation.generation_id);
//!         break;
//!     }
//! }
//! handle.close().await;
//! # Ok(()) }
//! ```
//!
//! # Cancel safety
//!
//! The driver future may be dropped at any await point; that is a crash from the group's
//! point of view (no LeaveGroup). Every [`MemberHandle`] method is cancel safe.

mod config;
mod error;
mod event;
mod handle;
mod reach;
mod run;
mod transport;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::membership::{GroupProtocol, Membership, MembershipConfig};

pub use crate::membership::{MemberEvent, RebalanceTimes};
pub use config::MemberConfig;
pub use error::MemberError;
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use event::Subscribers;
#[cfg(not(feature = "unstable"))]
pub(crate) use event::Subscribers;
pub use event::{Events, MemberStatus, SharedEvents};
pub use handle::MemberHandle;
pub(crate) use handle::WeakMember;

use run::Driver;
use transport::{KafkaTransport, Transport};

/// How many commands may wait for the driver before a handle's call waits.
const COMMAND_QUEUE: usize = 32;

/// Builds driven group members. See the [module guide](self).
#[derive(Debug)]
pub struct Member;

impl Member {
    /// A member running `protocol` in the group of `config`: its handle and its driver. Nothing
    /// happens until the driver is polled; spawn it (or use [`Member::spawn`]).
    ///
    /// # Errors
    /// [`MemberError::InvalidConfig`] when the
    /// configuration or the protocol's metadata is invalid.
    #[allow(clippy::new_ret_no_self)] // A handle and its driver, as tower's `Buffer::pair`.
    pub fn new<P: GroupProtocol>(
        config: MemberConfig,
        protocol: Arc<P>,
    ) -> Result<
        (
            MemberHandle,
            impl Future<Output = Result<(), MemberError>> + Send + 'static,
        ),
        MemberError,
    > {
        let config = config.validated()?;
        let transport = KafkaTransport::new(config.cluster).map_err(MemberError::from_cluster)?;
        Self::with_transport(config.membership, protocol, Arc::new(transport))
    }

    /// [`Member::new`], with the driver spawned on the current tokio runtime.
    ///
    /// # Errors
    /// As [`Member::new`].
    ///
    /// # Panics
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn<P: GroupProtocol>(
        config: MemberConfig,
        protocol: Arc<P>,
    ) -> Result<MemberHandle, MemberError> {
        let (handle, driver) = Self::new(config, protocol)?;
        tokio::spawn(driver);
        Ok(handle)
    }

    pub(crate) fn with_transport<P: GroupProtocol, T: Transport>(
        config: MembershipConfig,
        protocol: Arc<P>,
        transport: Arc<T>,
    ) -> Result<
        (
            MemberHandle,
            impl Future<Output = Result<(), MemberError>> + Send + 'static,
        ),
        MemberError,
    > {
        let membership = Membership::new(config, protocol.protocol_type(), protocol.protocols())?;
        let (commands_tx, commands) = mpsc::channel(COMMAND_QUEUE);
        let events = Arc::new(Subscribers::default());
        let first = events.subscribe();
        let (status_tx, status) = watch::channel(MemberStatus::initial());
        let handle = MemberHandle {
            commands: commands_tx,
            events: events.clone(),
            first_events: Arc::new(Mutex::new(Some(first))),
            status,
        };
        let driver = Driver::new(membership, protocol, transport, commands, events, status_tx);
        Ok((handle, driver.run()))
    }
}
