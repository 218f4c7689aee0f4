//! The user's side of a driven member: commands, events and status.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, watch};

use crate::membership::{FencingToken, MemberEvent};

use super::error::MemberError;
use super::event::{Events, MemberStatus, Subscribers};
use super::run::{Command, now};

/// A handle to a running member: send it commands, subscribe to its events, read its status.
///
/// Clones share the member. When the last clone is dropped the member leaves the group
/// (LeaveGroup for a dynamic member; a static one only if
/// `leave_group_on_close_static` is set) and its driver ends.
#[derive(Debug, Clone)]
pub struct MemberHandle {
    pub(crate) commands: mpsc::Sender<Command>,
    pub(crate) events: Arc<Subscribers<MemberEvent>>,
    /// The stream created with the member, so the first subscriber misses no event.
    pub(crate) first_events: Arc<Mutex<Option<Events<MemberEvent>>>>,
    pub(crate) status: watch::Receiver<MemberStatus>,
}

impl MemberHandle {
    /// The member's events ([`MemberEvent`](crate::membership::MemberEvent)): every one, in
    /// the order the member saw them, none dropped — the stream a protocol's owner acts on
    /// (assignment, revocation, loss). The first call receives every event since the member was
    /// built; later calls receive events from the moment of the call.
    ///
    /// The driver queues each event before it sends the next request, and before it reads the
    /// protocol's metadata for a JoinGroup.
    pub fn events(&self) -> Events<MemberEvent> {
        let first = self
            .first_events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        first.unwrap_or_else(|| self.events.subscribe())
    }

    unstable_pub! {
        /// A watch of the member's status, updated after every step of its driver (kroupier's
        /// worker and tests follow it; a user reads [`current`](Self::current) and the
        /// events).
        pub fn status(&self) -> watch::Receiver<MemberStatus> {
            self.status.clone()
        }
    }

    /// The current status.
    pub fn current(&self) -> MemberStatus {
        self.status.borrow().clone()
    }

    /// Whether `token` is the current generation's and still valid now. Check it before every
    /// action that must not happen twice; it turns false at the self-fencing deadline even if
    /// the driver cannot run.
    pub fn is_token_valid(&self, token: &FencingToken) -> bool {
        self.status.borrow().is_token_valid(token, now())
    }

    /// Rejoin the group with `reason` (KIP-800). Note that Kafka starts a rebalance for a
    /// follower's JoinGroup only if its metadata changed; the leader's always rebalances.
    ///
    /// # Errors
    /// [`MemberError::Stopped`] if the driver is not running.
    pub async fn rejoin(&self, reason: impl Into<String>) -> Result<(), MemberError> {
        let reason = reason.into();
        self.commands
            .send(Command::Rejoin { reason })
            .await
            .map_err(|_| MemberError::Stopped)
    }

    /// The work of `generation`, revoked by
    /// [`MemberEvent::Revoked`](crate::membership::MemberEvent::Revoked),
    /// has stopped: the member may rejoin. Only needed with the join gate
    /// (`MembershipConfig::await_revocation`): the JoinGroup of a rebalance that started while
    /// the member was stable waits for this call, or for `rebalance_timeout − margin` after
    /// the revocation, whichever comes first. A call for another generation is ignored.
    ///
    /// # Errors
    /// [`MemberError::Stopped`] if the driver is not running.
    pub async fn revocations_done(&self, generation: i32) -> Result<(), MemberError> {
        self.commands
            .send(Command::RevocationDone { generation })
            .await
            .map_err(|_| MemberError::Stopped)
    }

    /// Reads the protocol's [`protocols`](crate::membership::GroupProtocol::protocols) again and
    /// rejoins if they changed, so the leader sees the new metadata (a follower-initiated
    /// rebalance).
    ///
    /// # Errors
    /// [`MemberError::InvalidConfig`] if the new metadata is invalid, or
    /// [`MemberError::Stopped`].
    pub async fn update_metadata(&self) -> Result<(), MemberError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::UpdateMetadata { reply })
            .await
            .map_err(|_| MemberError::Stopped)?;
        answer.await.map_err(|_| MemberError::Stopped)?
    }

    /// Leaves the group and waits for the driver to end: [`MemberEvent::Revoked`](
    /// crate::membership::MemberEvent::Revoked) goes to the event streams, then LeaveGroup goes
    /// out (dynamic members; static ones only with
    /// `leave_group_on_close_static`). Returns at once if the member already stopped or its
    /// driver was dropped; waits for as long as a driver that exists is not polled.
    pub async fn leave(&self, reason: impl Into<String>) {
        let (reply, done) = oneshot::channel();
        let reason = reason.into();
        if self
            .commands
            .send(Command::Leave { reason, reply })
            .await
            .is_ok()
        {
            // An error means the driver ended (or was dropped) meanwhile: also done.
            let _ = done.await;
        }
    }

    /// [`leave`](Self::leave) with a standard reason, consuming the handle.
    pub async fn close(self) {
        self.leave("the member was closed").await;
    }

    /// A handle that does not keep the member in the group: the member leaves when every
    /// [`MemberHandle`] is dropped, whatever weak handles remain (a task that runs beside the
    /// driver holds one).
    pub(crate) fn downgrade(&self) -> WeakMember {
        WeakMember {
            commands: self.commands.downgrade(),
        }
    }

    /// Waits until the driver has ended (left, fenced, fatal, or its future dropped).
    pub async fn stopped(&self) {
        let mut status = self.status.clone();
        // An error means the driver (the sender) is gone: stopped as well.
        let _ = status.wait_for(|s| s.stopped).await;
    }
}

/// See [`MemberHandle::downgrade`].
#[derive(Debug, Clone)]
pub(crate) struct WeakMember {
    commands: mpsc::WeakSender<Command>,
}

impl WeakMember {
    /// [`MemberHandle::rejoin`], if a handle still exists.
    pub(crate) async fn rejoin(&self, reason: impl Into<String>) -> Result<(), MemberError> {
        let commands = self.commands.upgrade().ok_or(MemberError::Stopped)?;
        let reason = reason.into();
        commands
            .send(Command::Rejoin { reason })
            .await
            .map_err(|_| MemberError::Stopped)
    }
}
