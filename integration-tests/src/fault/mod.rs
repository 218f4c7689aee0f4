//! # Link faults for one worker: a Kafka-aware TCP proxy
//!
//! [`FaultProxy`] sits between *one* worker process and the Kafka cluster (or kroupier's
//! embedded coordinator, which speaks the same protocol); the other workers connect directly
//! and stay healthy. Give the worker [`FaultProxy::bootstrap`] as its bootstrap address. The
//! proxy forwards each connection to the real broker, and rewrites the broker addresses in
//! Metadata responses and FindCoordinator responses (every version, including the v4+
//! `coordinators` array) to listeners of its own — one per upstream address it has seen, made
//! on demand — so *all* of the worker's traffic, coordinator traffic included, flows through it.
//!
//! Coordinator addresses get listeners apart from broker addresses, even when both name the
//! same broker: connections to the address FindCoordinator returned are the coordinator
//! connections, which [`Scope::Coordinator`] targets alone.
//!
//! Faults switch at run time: [`cut`](FaultProxy::cut) (close every connection in scope, refuse
//! new ones), [`blackhole`](FaultProxy::blackhole) (accept and read, never forward, never
//! answer), [`delay`](FaultProxy::delay) (forward every frame late), and
//! [`delay_responses`](FaultProxy::delay_responses) (hold only the responses of one API, such
//! as Heartbeat), and [`drop_requests`](FaultProxy::drop_requests) (never forward the requests
//! of one API, such as JoinGroup, while every other request still gets through).
//! [`heal`](FaultProxy::heal) restores plain forwarding.
//!
//! [`FaultProxy::start_tcp`] is the same proxy for a link that is not Kafka (a worker's status
//! API): it forwards plain bytes to one address, with the same faults, and rewrites nothing.
//!
//! The proxy listens on 127.0.0.1 only, runs on the test's tokio runtime (or a runtime of its
//! own when started outside one), and stops — listeners and connections — when the handle is
//! dropped.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use kafka_protocol::messages::ApiKey;
//! use kroupier_integration_tests::fault::{FaultProxy, Scope};
//!
//! let proxy = FaultProxy::start("127.0.0.1:9092").expect("the proxy listens");
//! let bootstrap = proxy.bootstrap(); // hand this to the worker under test
//! # let _ = bootstrap;
//! proxy.cut(Scope::Coordinator); // the worker can reach the cluster, not its coordinator
//! proxy.heal();
//! proxy.delay_responses(ApiKey::Heartbeat, Duration::from_millis(1_200));
//! proxy.heal();
//! // The worker's JoinGroup never reaches the broker; its heartbeats still do.
//! proxy.drop_requests(ApiKey::JoinGroup);
//! proxy.heal();
//! drop(proxy); // stops everything
//! ```

mod link;
mod policy;
mod raw;
pub mod rewrite;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use link::{Counters, Shared};
use policy::Policy;
pub use policy::{Fault, Scope};
pub use rewrite::Role;

/// A running proxy in front of one Kafka cluster. Dropping it stops the proxy.
#[derive(Debug)]
pub struct FaultProxy {
    shared: Arc<Shared>,
    bootstrap: SocketAddr,
    /// The runtime the proxy made for itself when started outside one.
    runtime: Option<tokio::runtime::Runtime>,
}

/// What the proxy has done so far; see [`FaultProxy::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted on bootstrap and broker listeners.
    pub broker_connections: u64,
    /// Connections accepted on coordinator listeners.
    pub coordinator_connections: u64,
    /// Connections closed at once because their role was cut.
    pub refused: u64,
    /// Frames forwarded, either way.
    pub forwarded: u64,
    /// Frames dropped, either way: by a blackhole, and requests of a dropped API.
    pub dropped: u64,
    /// Requests dropped because their API's requests are dropped
    /// ([`drop_requests`](FaultProxy::drop_requests)); also counted in `dropped`.
    pub requests_dropped: u64,
    /// Frames held by a delay, either way.
    pub delayed: u64,
    /// Metadata and FindCoordinator responses rewritten.
    pub rewritten: u64,
}

impl FaultProxy {
    /// Starts a proxy for the cluster at `upstream` (`host:port[,host:port...]`; the first
    /// address is the one proxied as bootstrap). It runs on the current tokio runtime when
    /// called inside one, else on a runtime of its own (one worker thread).
    ///
    /// # Errors
    /// When no listener can be bound on 127.0.0.1, or the runtime cannot be built.
    pub fn start(upstream: &str) -> io::Result<Self> {
        Self::start_with(upstream, false)
    }

    /// Starts a plain TCP proxy in front of `upstream` (one `host:port`, any service): it
    /// forwards bytes as they come and reads no Kafka frame, for links that are not Kafka,
    /// such as a worker's status API and its peers' fast-failover links to it. The faults of
    /// [`Scope::All`] apply as to Kafka links: a [`cut`](Self::cut) closes the connections
    /// and closes new ones at once (they are still accepted, never refused), a
    /// [`blackhole`](Self::blackhole) accepts connections and drops every byte either way, a
    /// [`delay`](Self::delay) holds every chunk. Either side's close closes the other, and a
    /// connection whose upstream refuses is accepted, then closed. [`addr`](Self::addr) is the
    /// address to give clients.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_tcp(upstream: &str) -> io::Result<Self> {
        Self::start_with(upstream, true)
    }

    fn start_with(upstream: &str, plain: bool) -> io::Result<Self> {
        let upstream = upstream
            .split(',')
            .map(str::trim)
            .find(|a| !a.is_empty())
            .ok_or_else(|| io::Error::other(format!("no address in {upstream:?}")))?;
        let (runtime, handle) = match tokio::runtime::Handle::try_current() {
            Ok(handle) => (None, handle),
            Err(_) => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("kroupier-fault-proxy")
                    .enable_all()
                    .build()?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let shared = Arc::new(Shared {
            policy: watch::Sender::new(Policy::default()),
            listeners: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
            runtime: handle,
            counters: Counters::default(),
            plain,
        });
        let bootstrap = shared.listener_for(Role::Broker, upstream)?;
        Ok(Self {
            shared,
            bootstrap,
            runtime,
        })
    }

    /// The bootstrap address to give the worker under test, `127.0.0.1:PORT`.
    pub fn bootstrap(&self) -> String {
        self.bootstrap.to_string()
    }

    /// The proxy's first listener, the one in front of `upstream` (for a Kafka proxy, the
    /// [`bootstrap`](Self::bootstrap) address).
    pub fn addr(&self) -> SocketAddr {
        self.bootstrap
    }

    /// Applies `fault` to the connections in `scope`, replacing the fault in force (the
    /// per-API response delays and dropped requests stay).
    pub fn apply(&self, fault: Fault, scope: Scope) {
        self.shared
            .policy
            .send_modify(|policy| policy.link = Some((fault, scope)));
    }

    /// Closes every connection in `scope` and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self, scope: Scope) {
        self.apply(Fault::Cut, scope);
    }

    /// Reads and drops every frame of the connections in `scope`, new ones included, until
    /// [`heal`](Self::heal): requests time out, nothing is answered.
    pub fn blackhole(&self, scope: Scope) {
        self.apply(Fault::Blackhole, scope);
    }

    /// Forwards every frame of the connections in `scope` `delay` late, either way.
    pub fn delay(&self, scope: Scope, delay: Duration) {
        self.apply(Fault::Delay(delay), scope);
    }

    /// Holds every response to `api_key` (on any connection) `delay` longer before the client
    /// gets it; requests reach the broker on time. Zero removes the delay.
    pub fn delay_responses(&self, api_key: ApiKey, delay: Duration) {
        self.shared
            .policy
            .send_modify(|policy| policy.set_response_delay(api_key, delay));
    }

    /// Reads every request of `api_key` (on any connection) and never forwards it, until
    /// [`forward_requests`](Self::forward_requests) or [`heal`](Self::heal): the broker never
    /// sees it, the client never gets an answer and waits out its request timeout. Requests of
    /// other APIs, on the same connection too, go through as before (a broker serves a
    /// connection's requests in order, and never saw the dropped one).
    pub fn drop_requests(&self, api_key: ApiKey) {
        self.shared
            .policy
            .send_modify(|policy| policy.set_dropped_request(api_key, true));
    }

    /// Forwards the requests of `api_key` again (undoes [`drop_requests`](Self::drop_requests)
    /// for that API alone). Requests dropped so far stay unanswered.
    pub fn forward_requests(&self, api_key: ApiKey) {
        self.shared
            .policy
            .send_modify(|policy| policy.set_dropped_request(api_key, false));
    }

    /// Removes every fault, delay and dropped API: frames are forwarded as they come.
    /// Connections that a cut closed stay closed; the client makes new ones. Requests already
    /// dropped stay unanswered: [`cut`](Self::cut) before healing when the client should not
    /// wait out their timeout.
    pub fn heal(&self) {
        self.shared.policy.send_replace(Policy::default());
    }

    /// The fault in force and its scope, if any.
    pub fn fault(&self) -> Option<(Fault, Scope)> {
        self.shared.policy.borrow().link
    }

    /// The proxy listeners made so far: role, upstream `host:port`, and the listener's address.
    pub fn listeners(&self) -> Vec<(Role, String, SocketAddr)> {
        let listeners = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<_> = listeners
            .iter()
            .map(|((role, upstream), addr)| (*role, upstream.clone(), *addr))
            .collect();
        out.sort_by_key(|(_, _, addr)| addr.port());
        out
    }

    /// What the proxy has done so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        let read = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
        Stats {
            broker_connections: read(&c.accepted_broker),
            coordinator_connections: read(&c.accepted_coordinator),
            refused: read(&c.refused),
            forwarded: read(&c.forwarded),
            dropped: read(&c.dropped),
            requests_dropped: read(&c.requests_dropped),
            delayed: read(&c.delayed),
            rewritten: read(&c.rewritten),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.cancel();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
