//! Starting a worker: a few named starts, in the order each needs the one before it.
//!
//! 1. [`StatusSocket::bind`]: the status API's socket (and its TLS), bound first so that its
//!    address is in the first metadata, and held by the loop for as long as it lives: a
//!    refused connection there proves the process ended.
//! 2. The task store, read to its end before joining (the first metadata carries its offset).
//! 3. [`protocol`]: the worker's group protocol with its holds (a removed member's, a static
//!    takeover's) and its status address.
//! 4. [`FastFailoverStart::prepare`]: whether fast failover can be on, and the members to tell
//!    before joining; [`FastFailoverStart::run`] once the member exists.
//! 5. The member (`Member::new`) and its driver.
//! 6. [`serve_status`]: the status API's server, until the worker has ended.
//! 7. The worker loop.

use std::net::SocketAddr;
use std::sync::Arc;

use kroupier_assignor::Assignor;
use kroupier_coordinator::driver::{Member, MemberHandle, Subscribers};
use kroupier_coordinator::observer::GroupDescription;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::advertised::{Advertised, TakeoverHold};
use super::protocol::WorkerProtocol;
use super::{
    WorkerError, WorkerHandle, failover, leader, open_store, proof, reconciler, run, takeover,
};
use crate::config::WorkerConfig;
use crate::error::WorkerDetail;
use crate::runtime::Runtime;

/// Binds the status API, joins the group and starts the worker loop; with `store`, follows
/// that store (the store to write to and the views to follow) instead of opening the
/// configured one: the tests hold a worker's views back to make it a laggard.
pub(crate) async fn spawn(
    config: WorkerConfig,
    runtime: Runtime,
    assignors: Vec<Arc<dyn Assignor>>,
    store: Option<(crate::store::TaskStore, run::StoreLink)>,
) -> Result<WorkerHandle, WorkerError> {
    let runtime = Arc::new(runtime);
    let shutdown = CancellationToken::new();
    let status = StatusSocket::bind(&config).await?;

    // The task store is read to its end before joining: the first metadata already carries
    // the store offset, and the catalogue has every stored task.
    let store = match (store, config.tasks.store.enabled) {
        (Some((store, link)), _) => {
            let view = link.views.borrow().clone();
            runtime.set_desired(crate::runtime::desired::Desired::merge(&link.code, &view));
            Some((store, link))
        }
        (None, true) => Some(open_store(&config, &runtime).await?),
        (None, false) => None,
    };
    let protocol = protocol(&config, &runtime, assignors);
    // The status API's address lets peers prove this process's end (see proof.rs): the
    // configured advertised address when the API is reached elsewhere than where it binds.
    let advertised_addr = status.as_ref().map(|status| {
        config
            .status
            .advertised_addr
            .clone()
            .unwrap_or_else(|| status.addr.to_string())
    });
    let tls = status.as_ref().is_some_and(|s| s.tls.is_some());
    let provable = proof::provable(advertised_addr.as_deref(), tls);
    if let Some(addr) = &advertised_addr {
        protocol.set_status_addr(addr.clone(), provable.is_ok());
    }
    // Before joining: a static worker's join may replace a live process (see takeover.rs).
    let (takeover, description) = takeover::policy(
        &config.member.cluster,
        &config.member.membership.group_id,
        config.member.membership.group_instance_id.as_deref(),
        |why| runtime.board().set_unreachable(why),
    )
    .await;
    // The first JoinGroup goes out before the loop runs: it advertises a static takeover's
    // wait already (the reconciler publishes every later change).
    let before_join = (takeover == reconciler::Takeover::MustWait).then_some(
        TakeoverHold::BeforeJoin(config.member.membership.session_timeout),
    );
    protocol.advertise(Arc::new(Advertised::before_join(before_join)));
    let fast = FastFailoverStart::prepare(&config, provable, advertised_addr, description).await;

    let (member, driver) = Member::new(config.member.clone(), protocol.clone())?;
    // The worker loop owns the member's event stream; the protocol reads the member's status
    // for the metadata of a JoinGroup that follows a loss the loop has not taken in yet.
    let member_events = member.events();
    protocol.follow_member(member.status());
    tokio::spawn(driver);
    let (failover, fast_failover) = fast.run(&config, &protocol, &member);

    let server_stop = CancellationToken::new();
    let (status_addr, port_guard, server) = match status {
        Some(status) => {
            let server = serve_status(
                &config,
                &runtime,
                store.as_ref().map(|(store, _)| store),
                fast_failover.then_some(&failover),
                status.listener,
                status.tls,
                server_stop.clone(),
            );
            (Some(status.addr), Some(status.port_guard), Some(server))
        }
        None => (None, None, None),
    };

    let events = Arc::new(Subscribers::default());
    let worker_loop = run::Loop {
        runtime: runtime.clone(),
        protocol,
        member: member.clone(),
        takeover,
        config,
        events: events.clone(),
        failover,
        store: store.map(|(_, link)| link),
    };
    let loop_shutdown = shutdown.clone();
    let task = tokio::spawn(async move {
        let ended = worker_loop.run(member_events, loop_shutdown).await;
        // The status port stays bound for as long as the loop lives.
        drop(port_guard);
        ended
    });
    Ok(WorkerHandle {
        runtime,
        member,
        status_addr,
        events,
        shutdown,
        server_stop,
        server,
        task,
    })
}

/// The status API's socket, bound, with a second handle on it and its TLS acceptor.
struct StatusSocket {
    listener: tokio::net::TcpListener,
    /// A second handle on the socket, held by the worker loop: the port stays bound for as
    /// long as the loop lives, even if the server were to stop early, so a refused connection
    /// there always means the loop has ended (fast failover and the leader's hold rely on it).
    port_guard: std::net::TcpListener,
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
}

impl StatusSocket {
    /// Binds `config.status.addr` and loads its certificates (a bad file fails the spawn,
    /// before anything joins); `None` when the status API is off.
    async fn bind(config: &WorkerConfig) -> Result<Option<StatusSocket>, WorkerError> {
        let Some(addr) = config.status.addr else {
            return Ok(None);
        };
        let listener = crate::http::bind(addr)
            .await
            .map_err(WorkerDetail::StatusApi)?;
        let (listener, port_guard) = hold_port(listener).map_err(WorkerDetail::StatusApi)?;
        let addr = listener.local_addr().map_err(WorkerDetail::StatusApi)?;
        let tls = match (&config.status.tls_certificate, &config.status.tls_key) {
            (Some(certificate), Some(key)) => Some(
                crate::http::tls::acceptor(certificate, key).map_err(WorkerDetail::StatusApi)?,
            ),
            _ => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let token = config.status.token.is_some();
        // Where peers and tools reach it (kroupier.status.advertised.address), if elsewhere.
        let advertised = config.status.advertised_addr.as_deref();
        tracing::info!(worker = %config.worker_id, %addr, advertised, scheme, token,
            "status API listening");
        Ok(Some(StatusSocket {
            listener,
            port_guard,
            addr,
            tls,
        }))
    }
}

/// The worker's group protocol, with the holds that depend on the config.
fn protocol(
    config: &WorkerConfig,
    runtime: &Arc<Runtime>,
    assignors: Vec<Arc<dyn Assignor>>,
) -> Arc<WorkerProtocol> {
    let protocol = Arc::new(WorkerProtocol::new(runtime.clone(), assignors));
    // A member that Kafka removed while it still runs passes its lease checks for up to one
    // session; without a proof that its process ended, the new owners of its tasks wait that
    // long, plus a round trip (see leader::LostHold).
    protocol.set_lost_hold(leader::LostHold {
        round_trip: run::LOST_HOLD_ROUND_TRIP,
        session_timeout: config.member.membership.session_timeout,
    });
    protocol.set_heartbeat_interval(config.member.membership.heartbeat_interval);
    protocol
}

/// Fast failover, decided before the member joins and started once it exists.
struct FastFailoverStart {
    /// Whether it is on.
    on: bool,
    handle: failover::FastFailover,
    inbox: Option<failover::Inbox>,
    /// The members before this worker joins, to tell them to rejoin at once.
    members: Vec<failover::Peer>,
    advertised_addr: Option<String>,
}

impl FastFailoverStart {
    /// Fast failover needs a status API whose end its peers can prove: its port is what proves
    /// a process gone. Where no proof is possible, failover waits for the session.
    async fn prepare(
        config: &WorkerConfig,
        provable: Result<(), String>,
        advertised_addr: Option<String>,
        description: Option<GroupDescription>,
    ) -> FastFailoverStart {
        let on = match (&provable, config.status.fast_failover) {
            (Ok(()), on) => on,
            (Err(why), true) if advertised_addr.is_some() => {
                tracing::warn!(reason = %why,
                    "fast failover is off: this worker's peers could not prove its end, so its \
                     tasks move one session timeout after a crash (see docs/reliability.md)");
                false
            }
            (Err(_), _) => false,
        };
        if on
            && let Some(addr) = advertised_addr
                .as_deref()
                .filter(|a| proof::is_local_only(a))
            && !addr.starts_with("127.")
        {
            tracing::info!(%addr,
                "the status API is advertised as an unspecified address: only peers in this \
                 network namespace can watch it; set kroupier.status.advertised.address for \
                 fast failover across hosts");
        }
        if !on {
            return FastFailoverStart {
                on,
                handle: failover::FastFailover::off(),
                inbox: None,
                members: Vec::new(),
                advertised_addr,
            };
        }
        let (handle, inbox) = failover::FastFailover::channel();
        let members = failover::members_before_join(
            &config.member.cluster,
            &config.member.membership.group_id,
            description,
        )
        .await;
        FastFailoverStart {
            on,
            handle,
            inbox: Some(inbox),
            members,
            advertised_addr,
        }
    }

    /// Starts the links to the peers beside the member, and tells the members from before the
    /// join to rejoin; the handle the loop and the status API use, and whether it is on.
    fn run(
        self,
        config: &WorkerConfig,
        protocol: &WorkerProtocol,
        member: &MemberHandle,
    ) -> (failover::FastFailover, bool) {
        if let Some(inbox) = self.inbox {
            let settings = failover::Settings {
                group_id: config.member.membership.group_id.clone(),
                cluster: config.member.cluster.clone(),
                token: config.status.token.clone(),
                own_addr: self.advertised_addr.unwrap_or_default(),
                proofs: protocol.proofs(),
            };
            tokio::spawn(failover::run(inbox, settings, member.clone()));
            self.handle.joining(self.members);
        }
        (self.handle, self.on)
    }
}

/// Serves the status API ([`crate::http`]) on `listener` until `stop`: the runtime's routes,
/// the task store's writes (with a store), and `failover`'s routes (when fast failover is on).
fn serve_status(
    config: &WorkerConfig,
    runtime: &Runtime,
    store: Option<&crate::store::TaskStore>,
    failover: Option<&failover::FastFailover>,
    listener: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
    stop: CancellationToken,
) -> JoinHandle<()> {
    let access = crate::http::access::Access {
        token: config.status.token.clone(),
        protect_reads: config.status.protect_reads,
    };
    let writes = store.map(|store| Arc::new(store.clone()) as Arc<dyn crate::http::TaskWrites>);
    let mut router = crate::http::routes(runtime, writes);
    if let Some(failover) = failover {
        let hints = Arc::new(failover.clone());
        let routes = crate::http::failover::router(hints, super::own_process_id(), stop.clone());
        router = router.merge(routes);
    }
    let router = crate::http::finish(access.protect(router));
    tokio::spawn(async move {
        let stopped = async move { stop.cancelled().await };
        let served = crate::http::serve(listener, tls, router, stopped);
        if let Err(error) = served.await {
            tracing::error!(%error, "the status API stopped");
        }
    })
}

/// Splits the status API's listener into the one the server accepts on and a second handle on
/// the same socket (the port stays bound until both are dropped).
pub(super) fn hold_port(
    listener: tokio::net::TcpListener,
) -> std::io::Result<(tokio::net::TcpListener, std::net::TcpListener)> {
    let listener = listener.into_std()?;
    let guard = listener.try_clone()?;
    listener.set_nonblocking(true)?;
    Ok((tokio::net::TcpListener::from_std(listener)?, guard))
}
