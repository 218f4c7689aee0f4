//! # Proofs that a vanished worker's process is gone
//!
//! Kafka cannot tell its members whether one that left the group crashed (its leases ended
//! with its session) or was removed while it still runs: by a third party's LeaveGroup, by a
//! rebalance timeout, or frozen in a pause. Removing a member early, or handing its tasks over
//! without a hold, is safe only on a *proof* that its process ended. A refused connection is
//! evidence, not proof: it says that nothing listens on that address *in the prober's
//! network*, and nothing about a process the prober cannot reach, or about who listened there
//! before. This module turns it into a proof only where the prober knows what it probed:
//!
//! - **Identity, not host names.** Each worker advertises a random [`Identity::process`] that
//!   its `/watch` names, and its [`Identity::network`]: the kernel's boot id and the inode of
//!   its network namespace, which no two namespaces share (host names are shared by
//!   containers, pods and VMs alike).
//! - **A link that reached the process** ([`Proofs::linked`]): a peer's `/watch` answered with
//!   the process identity that member advertised. When that link ends and a new connection to
//!   the same address is then *refused*, the process that listened there is gone — the worker
//!   holds its status port for as long as its loop runs (`group/mod.rs`, `hold_port`).
//! - **The same network, without a link** ([`nearby_is_gone`]): a prober whose network
//!   identity equals the peer's probes the peer's own address in the peer's own network
//!   namespace, so a refusal comes from the kernel that would hold the peer's socket.
//!
//! Anything else — a refusal from another network, a loopback address seen from another
//! namespace, a peer never linked, an HTTPS peer (a bare link names nobody), an advertised
//! address that is not the worker's own (a proxy, a NAT) — proves nothing, and the member is
//! left to its session, with its tasks held back for as long as its lease may run. What no
//! process can prove (a firewall that answers with REJECT, a hypervisor pause) is listed in
//! `docs/reliability.md`, *Assumptions*.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock, PoisonError};

use kroupier_coordinator::failover::proof as shared;

/// Who this process is, as its group's members see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// A random id, new with every process: its `/watch` names it.
    pub(crate) process: String,
    /// The kernel's boot id and this network namespace's inode (`None` where the system does
    /// not say: then no peer probes this worker without a link).
    pub(crate) network: Option<String>,
}

/// This process's identity, made once (the coordinator crate's fast failover makes the
/// parts: `kroupier_coordinator::failover::proof`).
pub(crate) fn own() -> &'static Identity {
    static OWN: OnceLock<Identity> = OnceLock::new();
    OWN.get_or_init(|| Identity {
        process: shared::new_process_identity(),
        network: shared::own_network().map(str::to_owned),
    })
}

/// Whether `advertised` (`host:port`) names this worker's own socket: every address it
/// resolves to is loopback, unspecified, or an address of this network namespace. An address
/// that belongs to something else — a proxy, a NAT, a load balancer — could refuse while this
/// worker runs, so its refusal must never count; the error says why, for the log.
pub(crate) fn advertised_is_own(advertised: &str) -> Result<(), String> {
    shared::advertised_is_own(advertised).map(|_| ())
}

/// Whether this worker's peers can prove its end, with its status API advertised at
/// `advertised` (`None`: no status API) and speaking HTTPS or not; the error says why not.
/// Where they cannot, the worker advertises no identity and fast failover stays off.
pub(crate) fn provable(advertised: Option<&str>, https: bool) -> Result<(), String> {
    match advertised {
        None => Err("no status API".to_owned()),
        Some(_) if https => Err(
            "the status API speaks HTTPS, and a peer's link cannot tell \
                                 which process answers it"
                .to_owned(),
        ),
        Some(addr) => advertised_is_own(addr),
    }
}

/// The socket address a status address (`ip:port`) is dialled at: an unspecified address on
/// loopback. `None` for a host name, which may resolve elsewhere between a link and a probe.
pub(crate) fn dial_addr(addr: &str) -> Option<SocketAddr> {
    let mut addr = addr.parse::<SocketAddr>().ok()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    Some(addr)
}

/// Whether a connection to `addr` is refused (nothing listens there, in this network). An
/// unspecified address is probed on loopback. Blocks for at most one probe (200 ms).
pub(crate) fn refused(addr: &str) -> bool {
    dial_addr(addr).is_some_and(shared::refused)
}

/// Whether `addr` is one that only a prober in the advertiser's own network may dial (its
/// loopback, or "any address").
pub(crate) fn is_local_only(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .map(|a| a.ip().is_loopback() || a.ip().is_unspecified())
        .unwrap_or(false)
}

/// Whether the worker that advertised `status_addr` from the network `network` is surely
/// gone, without a link: only when this process shares that network (same kernel, same
/// namespace), and a connection there is refused. Blocks for at most one probe (200 ms).
pub(crate) fn nearby_is_gone(status_addr: &str, network: Option<&str>) -> bool {
    let Some(network) = network else {
        return false;
    };
    own().network.as_deref() == Some(network) && refused(status_addr)
}

/// What this worker's links learned of its peers' processes, by member id: fast failover
/// writes it, the leader reads it to decide which vanished members need no hold.
#[derive(Debug, Default)]
pub(crate) struct Proofs {
    members: Mutex<HashMap<String, Witness>>,
}

/// What one member's link saw.
#[derive(Debug, Clone)]
struct Witness {
    /// The address the link reached the member's process at.
    status_addr: String,
    /// The link ended and the address then refused: the process is gone.
    dead: bool,
}

impl Proofs {
    fn members(&self) -> std::sync::MutexGuard<'_, HashMap<String, Witness>> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A link to `member_id` at `status_addr` was answered by the process it advertised.
    pub(crate) fn linked(&self, member_id: &str, status_addr: &str) {
        self.members()
            .entry(member_id.to_owned())
            .or_insert_with(|| Witness {
                status_addr: status_addr.to_owned(),
                dead: false,
            });
    }

    /// The process of `member_id` is proved gone (its link ended, its address refuses).
    pub(crate) fn dead(&self, member_id: &str, status_addr: &str) {
        self.members().insert(
            member_id.to_owned(),
            Witness {
                status_addr: status_addr.to_owned(),
                dead: true,
            },
        );
    }

    /// Forgets the members not in `keep` (they left the group long ago).
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.members().retain(|member_id, _| keep(member_id));
    }

    /// Whether the process of `member_id` is proved gone: a link saw it end, or a link reached
    /// it and its address refuses now. Blocks for at most one probe.
    pub(crate) fn is_gone(&self, member_id: &str) -> bool {
        let witness = self.members().get(member_id).cloned();
        match witness {
            Some(Witness { dead: true, .. }) => true,
            Some(Witness { status_addr, .. }) => refused(&status_addr),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_closed_port_in_this_network_is_a_gone_worker() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let here = own().network.clone();
        assert!(here.is_some(), "Linux says which network namespace this is");
        assert!(!nearby_is_gone(&addr, here.as_deref()), "it listens: alive");
        drop(listener);
        assert!(
            nearby_is_gone(&addr, here.as_deref()),
            "nothing listens: gone"
        );
    }

    #[test]
    fn a_refusal_in_another_network_proves_nothing() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        // The same host name, the same port: but another namespace's loopback.
        let elsewhere = format!("{}/1", own().network.as_deref().unwrap_or("boot"));
        assert!(!nearby_is_gone(&addr, Some(&elsewhere)));
        assert!(
            !nearby_is_gone(&addr, None),
            "an unknown network proves nothing"
        );
        assert!(!nearby_is_gone("not an address", own().network.as_deref()));
    }

    #[test]
    fn identities_differ_by_process_and_name_the_namespace() {
        let me = own();
        assert_eq!(me.process.len(), 32, "128 random bits, in hex");
        assert_eq!(own(), me, "made once per process");
        let network = me.network.as_deref().unwrap();
        let (boot, inode) = network.rsplit_once('/').unwrap();
        assert_eq!(boot.len(), 36, "the kernel's boot id: {boot}");
        assert!(
            inode.parse::<u64>().is_ok(),
            "the namespace's inode: {inode}"
        );
    }

    #[test]
    fn only_the_worker_s_own_addresses_are_advertised_for_proofs() {
        assert_eq!(advertised_is_own("127.0.0.1:8083"), Ok(()));
        assert_eq!(advertised_is_own("0.0.0.0:8083"), Ok(()));
        assert_eq!(advertised_is_own("localhost:8083"), Ok(()));
        // TEST-NET-3 is nobody's address: a proxy or a NAT would be in front.
        let error = advertised_is_own("203.0.113.7:8083").unwrap_err();
        assert!(error.contains("not an address of this host"), "{error}");
        assert!(advertised_is_own("no-such-host.invalid:8083").is_err());
    }

    #[test]
    fn no_proof_is_offered_over_https_through_a_proxy_or_without_a_status_api() {
        assert_eq!(provable(Some("127.0.0.1:8083"), false), Ok(()));
        assert!(
            provable(Some("127.0.0.1:8083"), true)
                .unwrap_err()
                .contains("HTTPS")
        );
        assert!(
            provable(Some("203.0.113.7:8083"), false).is_err(),
            "a proxy's address"
        );
        assert!(provable(None, false).is_err());
    }

    #[test]
    fn only_a_linked_member_whose_address_refuses_is_proved_gone() {
        let proofs = Proofs::default();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        assert!(!proofs.is_gone("m-1"), "never linked");
        proofs.linked("m-1", &addr);
        assert!(!proofs.is_gone("m-1"), "linked and listening");
        drop(listener);
        assert!(proofs.is_gone("m-1"), "linked, and now refused");
        proofs.dead("m-2", "127.0.0.1:1");
        assert!(proofs.is_gone("m-2"));
        proofs.retain(|m| m == "m-2");
        assert!(!proofs.is_gone("m-1"), "forgotten");
    }
}
