//! Leader election on the tokio driver: [`Elector`] runs a [`LeaderElection`] as a driven
//! group member and publishes its role.

use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{broadcast, watch};

use super::protocol::{ElectionEvent, LeaderElection};
use crate::driver::{Member, MemberConfig, MemberError, MemberHandle};
use crate::membership::{
    AssignContext, AssignError, Generation, GroupMember, GroupProtocol, LostReason,
    MemberAssignment, ProtocolMetadata,
};

/// The election as the driver runs it: [`LeaderElection`] plus the channels its role changes
/// go out on. Its callbacks only lock a mutex and send on channels, so they never block the
/// driver loop.
#[derive(Debug)]
struct ElectorProtocol {
    election: LeaderElection,
    events: broadcast::Sender<ElectionEvent>,
    role: watch::Sender<Option<ElectionEvent>>,
}

impl ElectorProtocol {
    /// Publishes the role changes the election queued.
    fn publish(&self) {
        while let Some(event) = self.election.poll_event() {
            self.role.send_replace(Some(event.clone()));
            let _ = self.events.send(event);
        }
    }

    fn resign(&self) {
        self.election.resign();
        self.publish();
    }
}

impl GroupProtocol for ElectorProtocol {
    fn protocol_type(&self) -> &str {
        self.election.protocol_type()
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        self.election.protocols()
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        self.election.assign(context, members)
    }

    fn on_assigned(&self, generation: &Generation, assignment: &Bytes) {
        self.election.on_assigned(generation, assignment);
        self.publish();
    }

    fn on_revoked(&self, generation: &Generation) {
        self.election.on_revoked(generation);
        self.publish();
    }

    fn on_lost(&self, generation: Option<&Generation>, reason: &LostReason) {
        self.election.on_lost(generation, reason);
        self.publish();
    }
}

/// Builds leader-election members on the driver.
#[derive(Debug)]
pub struct Elector;

impl Elector {
    /// A member of the election group of `config` with stable id `id` (the same across
    /// restarts; the lowest eligible id leads when nobody led before) that may lead if
    /// `eligible`: its handle and its driver, to run where the caller likes.
    ///
    /// # Errors
    /// As [`Member::new`].
    #[allow(clippy::new_ret_no_self)] // A handle and its driver, as tower's `Buffer::pair`.
    pub fn new(
        config: MemberConfig,
        id: impl Into<String>,
        eligible: bool,
    ) -> Result<
        (
            ElectorHandle,
            impl Future<Output = Result<(), MemberError>> + Send + 'static,
        ),
        MemberError,
    > {
        let (events, first) = broadcast::channel(config.event_capacity.max(1));
        let (role, _) = watch::channel(None);
        let protocol = Arc::new(ElectorProtocol {
            election: LeaderElection::new(id, eligible),
            events,
            role,
        });
        let (member, driver) = Member::new(config, protocol.clone())?;
        let handle = ElectorHandle {
            member,
            protocol,
            first_events: Mutex::new(Some(first)),
        };
        Ok((handle, driver))
    }

    /// [`Elector::new`] with the driver spawned on the current tokio runtime.
    ///
    /// # Errors
    /// As [`Member::new`].
    ///
    /// # Panics
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn(
        config: MemberConfig,
        id: impl Into<String>,
        eligible: bool,
    ) -> Result<ElectorHandle, MemberError> {
        let (handle, driver) = Self::new(config, id, eligible)?;
        tokio::spawn(driver);
        Ok(handle)
    }
}

/// A handle to one member of a leader election.
///
/// Dropping it resigns (this member stops leading at once) and the member leaves the group.
#[derive(Debug)]
pub struct ElectorHandle {
    member: MemberHandle,
    protocol: Arc<ElectorProtocol>,
    first_events: Mutex<Option<broadcast::Receiver<ElectionEvent>>>,
}

impl ElectorHandle {
    /// Every role change. The first call receives all changes since the member was built;
    /// later calls receive changes from the moment of the call.
    pub fn events(&self) -> broadcast::Receiver<ElectionEvent> {
        let first = self
            .first_events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        first.unwrap_or_else(|| self.protocol.events.subscribe())
    }

    /// A watch of the latest role (`None` until the first generation is assigned).
    pub fn role(&self) -> watch::Receiver<Option<ElectionEvent>> {
        self.protocol.role.subscribe()
    }

    /// Whether this member leads *now*: its last role is `Leader` and that generation's
    /// fencing token is still valid (the self-fencing deadline has not passed). Check it
    /// before every action only the leader may take.
    pub fn is_leader(&self) -> bool {
        match &*self.protocol.role.borrow() {
            Some(ElectionEvent::Leader { token }) => self.member.is_token_valid(token),
            _ => false,
        }
    }

    /// The underlying member: status, metrics, events.
    pub fn member(&self) -> &MemberHandle {
        &self.member
    }

    /// Resigns (reporting [`ElectionEvent::Lost`] if it held a role, so a leader stops
    /// before anyone else can be elected), then leaves the group and waits for the driver to
    /// end.
    pub async fn leave(&self) {
        self.protocol.resign();
        self.member.leave("the elector left the election").await;
    }
}

impl Drop for ElectorHandle {
    fn drop(&mut self) {
        self.protocol.resign();
    }
}
