//! Leader election on the tokio driver: [`Elector`] runs a [`LeaderElection`] as a driven
//! group member and publishes its role.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{broadcast, watch};

use super::protocol::{ElectionEvent, LeaderElection};
use crate::connection::Cluster;
use crate::driver::{Member, MemberConfig, MemberError, MemberHandle};
use crate::failover::endpoint::Endpoint;
use crate::failover::{self, Watched};
use crate::membership::{
    AssignContext, AssignError, Generation, GroupMember, GroupProtocol, LostReason,
    MemberAssignment, ProtocolMetadata,
};
use crate::observer::Observer;

/// The election as the driver runs it: [`LeaderElection`] plus the channels its role changes
/// go out on. Its callbacks only lock a mutex and send on channels, so they never block the
/// driver loop.
#[derive(Debug)]
struct ElectorProtocol {
    election: LeaderElection,
    events: broadcast::Sender<ElectionEvent>,
    role: watch::Sender<Option<ElectionEvent>>,
    /// The leader to link to (fast failover), as the last assignment named it.
    watched: watch::Sender<Option<Watched>>,
    /// This member's fast-failover endpoint, if it is on.
    endpoint: Option<Arc<Endpoint>>,
}

impl ElectorProtocol {
    /// Publishes the role changes the election queued.
    fn publish(&self) {
        while let Some(event) = self.election.poll_event() {
            self.role.send_replace(Some(event.clone()));
            let _ = self.events.send(event);
        }
        let watched = self.election.watched();
        self.watched.send_if_modified(|current| {
            let changed = *current != watched;
            *current = watched;
            changed
        });
    }

    /// Stops acting on any role, then closes the endpoint: its followers may prove this
    /// member's end only once it no longer acts.
    fn resign(&self) {
        self.election.resign();
        self.publish();
        if let Some(endpoint) = &self.endpoint {
            endpoint.close();
        }
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

/// Fast failover for an [`Elector`]: when the leader's process ends on a live host, its
/// followers prove it within milliseconds, remove it from the group and elect another, instead
/// of waiting for its session timeout. Off unless given to
/// [`Elector::with_fast_failover`] or [`Elector::spawn_with_fast_failover`].
///
/// Each member listens on a small TCP endpoint ([`listen`](Self::listen), default
/// `127.0.0.1:0`) and advertises it in its metadata; followers keep one connection to the
/// leader's. Only the end of the leader's process (or its resignation) is acted on: a paused,
/// partitioned or slow leader is left to its session, as without fast failover. The proof and
/// its assumptions are described in docs/guide-protocols.md and docs/reliability.md.
///
/// On one host the default is enough. Across hosts, listen on an address the other members can
/// reach (or on `0.0.0.0:0` and [`advertise`](Self::advertise) this host's address): a
/// loopback address is trusted only by members in the same network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastFailover {
    listen: SocketAddr,
    advertise: Option<IpAddr>,
}

impl Default for FastFailover {
    fn default() -> Self {
        Self::new()
    }
}

impl FastFailover {
    /// Listen on `127.0.0.1` at a port the system picks; advertise that address.
    pub fn new() -> Self {
        Self {
            listen: SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
            advertise: None,
        }
    }

    /// Listen on `addr` (port 0: the system picks one).
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Advertise `ip` (with the bound port) instead of the listening address: needed when
    /// listening on every address (`0.0.0.0`). It must be an address of this host's network
    /// namespace (not a proxy's or a NAT's), or the elector is not built.
    #[must_use]
    pub fn advertise(mut self, ip: IpAddr) -> Self {
        self.advertise = Some(ip);
        self
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
    /// As [`Member::new`]; [`MemberError::InvalidClusterConfig`] (field `fast_failover`) when
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
        let endpoint = match &fast_failover {
            Some(settings) => Some(Arc::new(
                Endpoint::bind(settings.listen, settings.advertise).map_err(|reason| {
                    MemberError::InvalidClusterConfig {
                        field: "fast_failover",
                        reason,
                    }
                })?,
            )),
            None => None,
        };
        let mut election = LeaderElection::new(id, eligible);
        if let Some(endpoint) = &endpoint {
            election = election.with_endpoint(endpoint.advertised().clone());
        }
        let (events, first) = broadcast::channel(config.event_capacity.max(1));
        let (role, _) = watch::channel(None);
        let (watched, targets) = watch::channel(None);
        let protocol = Arc::new(ElectorProtocol {
            election,
            events,
            role,
            watched,
            endpoint: endpoint.clone(),
        });
        let group = config.membership.group_id.clone();
        let cluster = config.cluster.clone();
        let (member, driver) = Member::new(config, protocol.clone())?;
        let beside = match endpoint {
            Some(endpoint) => {
                let cluster = Cluster::new(cluster).map_err(MemberError::from_cluster)?;
                let observer = Observer::new(Arc::new(cluster));
                let weak = member.downgrade();
                Some((endpoint, observer, targets, group, weak))
            }
            None => None,
        };
        let driver = async move {
            // The endpoint and the link run beside the driver, and never end it.
            let beside = async move {
                if let Some((endpoint, observer, targets, group, member)) = beside {
                    tokio::join!(
                        endpoint.serve(),
                        failover::watch_leader(targets, observer, group, member)
                    );
                }
                std::future::pending::<()>().await;
            };
            tokio::select! {
                ended = driver => ended,
                () = beside => Ok(()),
            }
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

    /// [`Elector::with_fast_failover`] with the driver spawned on the current tokio runtime.
    ///
    /// # Errors
    /// As [`Elector::with_fast_failover`].
    ///
    /// # Panics
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn_with_fast_failover(
        config: MemberConfig,
        id: impl Into<String>,
        eligible: bool,
        fast_failover: FastFailover,
    ) -> Result<ElectorHandle, MemberError> {
        let (handle, driver) = Self::with_fast_failover(config, id, eligible, fast_failover)?;
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::codec::Versioned;
    use crate::election::ElectionMetadata;
    use crate::failover::endpoint::PROCESS_LINE;
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
        assert!(handle.protocol.endpoint.is_none());
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
                MemberError::InvalidClusterConfig {
                    field: "fast_failover",
                    ..
                }
            ),
            "{error}"
        );
    }
}
