//! Leader election on the tokio driver: [`Elector`] runs a [`LeaderElection`] as a driven
//! group member and publishes its role.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::protocol::{ElectionEvent, LeaderElection};
use crate::driver::{
    Events, Member, MemberConfig, MemberError, MemberHandle, SharedEvents, Subscribers,
};
use crate::failover::{Failover, FastFailover};
use crate::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberEvent,
    ProtocolMetadata,
};

/// Added to the session timeout when a new leader waits for its predecessor's lease: clocks
/// and schedulers are not exact.
const HOLD_MARGIN: Duration = Duration::from_millis(250);

/// The election as the driver runs it: [`LeaderElection`] plus the channels its role changes
/// go out on, and the member's event stream it follows. Following it only locks mutexes and
/// sends on channels, so it never blocks the driver, beside which it runs.
#[derive(Debug)]
struct ElectorProtocol {
    election: LeaderElection,
    /// The member's events (set once the member is built): every assignment and loss, in
    /// order. Read beside the driver, and caught up on before each JoinGroup.
    events: SharedEvents,
    roles: Arc<Roles>,
    /// Fast failover, if it is on: it follows the leader the last assignment named.
    failover: Option<Failover>,
    /// How long a new leader waits for a predecessor that was not proven gone: the session
    /// timeout and a margin (the predecessor's lease ends within its session of its last
    /// heartbeat, which came before its removal, which came before this assignment).
    hold_for: Duration,
}

/// Where role changes go out, and a `Leader` role held back until the previous leader can no
/// longer act.
#[derive(Debug)]
struct Roles {
    events: Subscribers<ElectionEvent>,
    role: Mutex<Option<ElectionEvent>>,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    /// Counts holds: only the latest one's end releases the role.
    epoch: u64,
    /// Until when a `Leader` role is held back.
    until: Option<Instant>,
    /// The `Leader` role waiting for `until` (the latest one; any other role cancels it).
    pending: Option<ElectionEvent>,
}

impl Roles {
    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `event`, or holds it back if it is a `Leader` role inside a hold; any other
    /// role cancels a held one.
    fn send(&self, event: ElectionEvent) {
        let mut held = self.held();
        let holding = held.until.is_some_and(|until| Instant::now() < until);
        if holding && matches!(event, ElectionEvent::Leader { .. }) {
            held.pending = Some(event);
            return;
        }
        held.pending = None;
        self.emit(event);
    }

    /// Holds every `Leader` role back until `until` or the [`release`](Self::release) of the
    /// returned epoch.
    fn hold_until(&self, until: Instant) -> u64 {
        let mut held = self.held();
        held.epoch += 1;
        held.until = Some(held.until.map_or(until, |current| current.max(until)));
        held.epoch
    }

    /// Ends the hold of `epoch` (unless a later one replaced it) and sends the held role.
    fn release(&self, epoch: u64) {
        let mut held = self.held();
        if held.epoch != epoch {
            return;
        }
        held.until = None;
        if let Some(event) = held.pending.take() {
            self.emit(event);
        }
    }

    fn emit(&self, event: ElectionEvent) {
        *self.role() = Some(event.clone());
        self.events.send(&event);
    }

    fn role(&self) -> MutexGuard<'_, Option<ElectionEvent>> {
        self.role.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ElectorProtocol {
    /// Takes in every member event already delivered, in order, and publishes the role
    /// changes: run before each JoinGroup, so that its metadata claims the generation this
    /// member just led even when the rejoin follows the assignment in the same driver step.
    fn catch_up(&self) {
        if self
            .events
            .take_in(|event| self.election.handle_event(&event))
        {
            self.publish();
        }
    }

    /// Takes in one member event: the election follows it, and its role changes go out.
    fn take(&self, event: &MemberEvent) {
        self.election.handle_event(event);
        self.publish();
    }

    /// Publishes the role changes the election queued.
    fn publish(&self) {
        while let Some(event) = self.election.poll_event() {
            if let (ElectionEvent::Leader { .. }, Some(failover)) = (&event, &self.failover) {
                if let Some(previous) = self.election.succeeded() {
                    self.hold(failover, previous);
                }
            }
            self.roles.send(event);
        }
        if let Some(failover) = &self.failover {
            failover.follow(self.election.watched());
        }
    }

    /// This member leads after `previous`, whose end its link has not proven (yet): a third
    /// party may have removed `previous` while it lives (an operator's LeaveGroup, KIP-345's
    /// recipe), and then it acts until its next heartbeat, or its lease ends. Hold the role
    /// back until the link proves `previous` gone (a crash, a resignation) or its session has
    /// passed. With fast failover off nothing is held, as before: that case's fencing is the
    /// token alone.
    fn hold(&self, failover: &Failover, previous: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(%previous, "no runtime to time the hold: leading at once");
            return;
        };
        let epoch = self.roles.hold_until(Instant::now() + self.hold_for);
        tracing::info!(%previous, hold = ?self.hold_for,
            "leading once the previous leader is proven gone, or after its session: it may \
             still be acting");
        let (roles, failover, wait) = (self.roles.clone(), failover.clone(), self.hold_for);
        runtime.spawn(async move {
            tokio::select! {
                () = failover.ended(&previous) => {
                    tracing::debug!(%previous, "the previous leader is proven gone: leading");
                }
                () = tokio::time::sleep(wait) => {
                    tracing::info!(%previous, "the previous leader's session has passed: leading");
                }
            }
            roles.release(epoch);
        });
    }

    /// Stops acting on any role, then closes the endpoint: its followers may prove this
    /// member's end only once it no longer acts.
    fn resign(&self) {
        self.election.resign();
        self.publish();
        if let Some(failover) = &self.failover {
            failover.resign();
        }
    }
}

impl GroupProtocol for ElectorProtocol {
    fn protocol_type(&self) -> &str {
        self.election.protocol_type()
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        self.catch_up();
        self.election.protocols()
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        self.election.assign(context, members)
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
        Self::build(config, id.into(), eligible, None)
    }

    /// [`Elector::new`] with [`FastFailover`] on: the endpoint is bound now, and served (with
    /// the link to the leader) by the returned driver.
    ///
    /// # Errors
    /// As [`Member::new`]; [`MemberError::InvalidConfig`] (field `fast_failover`) when
    /// the endpoint cannot listen, or would advertise an address that is not this host's.
    #[allow(clippy::new_ret_no_self)]
    pub fn with_fast_failover(
        config: MemberConfig,
        id: impl Into<String>,
        eligible: bool,
        fast_failover: FastFailover,
    ) -> Result<
        (
            ElectorHandle,
            impl Future<Output = Result<(), MemberError>> + Send + 'static,
        ),
        MemberError,
    > {
        Self::build(config, id.into(), eligible, Some(fast_failover))
    }

    fn build(
        config: MemberConfig,
        id: String,
        eligible: bool,
        fast_failover: Option<FastFailover>,
    ) -> Result<
        (
            ElectorHandle,
            impl Future<Output = Result<(), MemberError>> + Send + 'static,
        ),
        MemberError,
    > {
        let failover = fast_failover.as_ref().map(Failover::bind).transpose()?;
        let mut election = LeaderElection::new(id, eligible);
        if let Some(failover) = &failover {
            election = election.with_endpoint(failover.endpoint().clone());
        }
        let events = Subscribers::default();
        let first = events.subscribe();
        let protocol = Arc::new(ElectorProtocol {
            election,
            events: SharedEvents::default(),
            roles: Arc::new(Roles {
                events,
                role: Mutex::default(),
                held: Mutex::default(),
            }),
            failover: failover.clone(),
            hold_for: config.membership.session_timeout + HOLD_MARGIN,
        });
        let (member, driver) = Member::new(config.clone(), protocol.clone())?;
        protocol.events.attach(member.events());
        let beside = failover
            .map(|failover| failover.run(&member, &config))
            .transpose()?;
        let following = protocol.clone();
        let driver = async move {
            // The endpoint and the link run beside the driver, and never end it.
            let beside = async move {
                if let Some(beside) = beside {
                    beside.await;
                }
                std::future::pending::<()>().await;
            };
            let driver = async {
                tokio::select! {
                    ended = driver => ended,
                    () = beside => Ok(()),
                }
            };
            // The member's events are followed in the driver's own task: each is taken in as
            // soon as the driver yields, and none is left when it ends.
            following
                .events
                .drive(driver, |event| following.take(&event))
                .await
        };
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
    first_events: Mutex<Option<Events<ElectionEvent>>>,
}

impl ElectorHandle {
    /// Every role change, in order, none dropped. The first call receives all changes since
    /// the member was built; later calls receive changes from the moment of the call.
    pub fn events(&self) -> Events<ElectionEvent> {
        let first = self
            .first_events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        first.unwrap_or_else(|| self.protocol.roles.events.subscribe())
    }

    /// The latest role (`None` until the first generation is assigned).
    pub fn role(&self) -> Option<ElectionEvent> {
        self.protocol.roles.role().clone()
    }

    /// Whether this member leads *now*: its last role is `Leader` and that generation's
    /// fencing token is still valid (the self-fencing deadline has not passed). Check it
    /// before every action only the leader may take.
    pub fn is_leader(&self) -> bool {
        match &*self.protocol.roles.role() {
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::codec::Versioned;
    use crate::election::ElectionMetadata;
    use crate::failover::link::PROCESS_LINE;
    use crate::failover::proof;

    /// The endpoint's address, as the elector advertises it in its metadata.
    fn advertised(handle: &ElectorHandle) -> (SocketAddr, String) {
        let offered = handle.protocol.protocols();
        let metadata = ElectionMetadata::decode(&offered[0].metadata).unwrap();
        let endpoint = metadata
            .endpoint
            .expect("fast failover advertises its endpoint");
        assert_eq!(endpoint.network.as_deref(), proof::own_network());
        (endpoint.addr.parse().unwrap(), endpoint.process)
    }

    #[tokio::test]
    async fn the_endpoint_refuses_only_after_the_elector_resigns() {
        // Nothing listens at the bootstrap address: the member never joins, which is all the
        // endpoint needs.
        let config = MemberConfig::new("127.0.0.1:1", "g");
        let (handle, driver) =
            Elector::with_fast_failover(config, "a", true, FastFailover::new()).unwrap();
        let (addr, process) = advertised(&handle);
        let driver = tokio::spawn(driver);
        let mut link = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut line = vec![0u8; PROCESS_LINE.len() + process.len() + 1];
        link.read_exact(&mut line).await.unwrap();
        assert_eq!(line, format!("{PROCESS_LINE}{process}\n").as_bytes());

        // The driver (and the serving loop with it) is dropped, but the handle could still
        // act: the address must not refuse.
        driver.abort();
        let _ = driver.await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!proof::refused(addr), "the handle still holds the endpoint");

        drop(handle);
        assert!(proof::refused(addr), "resigned: the endpoint is closed");
    }

    #[tokio::test]
    async fn without_the_setting_nothing_is_advertised_or_bound() {
        let config = MemberConfig::new("127.0.0.1:1", "g");
        let (handle, _driver) = Elector::new(config, "a", true).unwrap();
        let offered = handle.protocol.protocols();
        let metadata = ElectionMetadata::decode(&offered[0].metadata).unwrap();
        assert_eq!(metadata.endpoint, None);
        assert!(handle.protocol.failover.is_none());
    }

    #[test]
    fn an_endpoint_that_cannot_be_advertised_is_a_config_error() {
        let config = MemberConfig::new("127.0.0.1:1", "g");
        let settings = FastFailover::new()
            .listen("0.0.0.0:0".parse().unwrap())
            .advertise("203.0.113.7".parse().unwrap());
        let Err(error) = Elector::with_fast_failover(config, "a", true, settings) else {
            panic!("built with another host's address");
        };
        assert!(
            matches!(
                &error,
                MemberError::InvalidConfig(e) if e.field() == "fast_failover"
            ),
            "{error}"
        );
    }

    fn roles() -> (Roles, Events<ElectionEvent>) {
        let events = Subscribers::default();
        let received = events.subscribe();
        let roles = Roles {
            events,
            role: Mutex::default(),
            held: Mutex::default(),
        };
        (roles, received)
    }

    fn leader(generation_id: i32) -> ElectionEvent {
        ElectionEvent::Leader {
            token: crate::membership::FencingToken {
                generation_id,
                member_id: "m".into(),
            },
        }
    }

    #[test]
    fn a_held_leader_role_goes_out_only_when_the_latest_hold_ends() {
        let (roles, mut received) = roles();
        let first = roles.hold_until(Instant::now() + Duration::from_secs(60));
        roles.send(leader(2));
        assert!(received.try_recv().is_none(), "held back");
        assert_eq!(*roles.role(), None, "is_leader reads the role: not yet");

        // A later hold (another predecessor) outlives the first one's end.
        let second = roles.hold_until(Instant::now() + Duration::from_secs(60));
        roles.send(leader(3));
        roles.release(first);
        assert!(received.try_recv().is_none(), "the second hold still runs");
        roles.release(second);
        assert_eq!(received.try_recv(), Some(leader(3)), "the latest role");
        assert!(
            received.try_recv().is_none(),
            "generation 2's role never went out"
        );

        // Outside a hold, roles go out at once.
        roles.send(leader(4));
        assert_eq!(received.try_recv(), Some(leader(4)));
    }

    #[test]
    fn any_other_role_cancels_a_held_leader_role() {
        let (roles, mut received) = roles();
        let epoch = roles.hold_until(Instant::now() + Duration::from_secs(60));
        roles.send(leader(2));
        let lost = ElectionEvent::Lost {
            generation_id: Some(2),
        };
        roles.send(lost.clone());
        assert_eq!(received.try_recv(), Some(lost));
        roles.release(epoch);
        assert!(
            received.try_recv().is_none(),
            "the cancelled role stays unsent"
        );
    }
}
