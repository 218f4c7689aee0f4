//! Where a member's fast-failover endpoint listens, and what it advertises.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Fast failover's settings: where the member's endpoint listens and which address it
/// advertises. Given to [`Failover::bind`](super::Failover::bind) (any protocol) or to
/// [`Elector::with_fast_failover`](crate::election::Elector::with_fast_failover).
///
/// With fast failover on, each member listens on a small TCP endpoint and advertises it in its
/// metadata; followers keep one connection to the endpoint of the member they depend on. Only
/// the end of that member's process (or its resignation) is acted on: a paused, partitioned or
/// slow member is left to its session, as without fast failover. The proof and its assumptions
/// are described in docs/guide-protocols.md and docs/reliability.md.
///
/// On one host the default is enough. Across hosts, listen on an address the other members can
/// reach (or on `0.0.0.0:0` and [`advertise`](Self::advertise) this host's address): a
/// loopback address is trusted only by members in the same network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastFailover {
    pub(crate) listen: SocketAddr,
    pub(crate) advertise: Option<IpAddr>,
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
    /// namespace (not a proxy's or a NAT's), or the member is not built.
    #[must_use]
    pub fn advertise(mut self, ip: IpAddr) -> Self {
        self.advertise = Some(ip);
        self
    }
}
