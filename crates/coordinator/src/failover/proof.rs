//! What a member may conclude from a refused connection, and who it may conclude it about.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;
use std::time::Duration;

use super::FailoverEndpoint;

/// How long one probe waits for a connection: a refusal is immediate on a live host.
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);

/// A new random identity for one endpoint: what its identity line names.
pub fn new_process_identity() -> String {
    format!(
        "{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// The kernel's boot id and the inode of this process's network namespace: equal for two
/// processes exactly when they share one network stack (host names are shared by containers,
/// pods and VMs alike). `None` where the system does not say.
pub fn own_network() -> Option<&'static str> {
    static OWN: OnceLock<Option<String>> = OnceLock::new();
    OWN.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let namespace = std::fs::metadata("/proc/self/ns/net").ok()?.ino();
        Some(format!("{}/{namespace}", boot.trim()))
    })
    .as_deref()
}

/// Whether `advertised` (`host:port`) names a socket of this network namespace: every address
/// it resolves to is loopback, unspecified, or an address of this namespace. An address that
/// belongs to something else — a proxy, a NAT, a load balancer — could refuse while this
/// member runs, so it is never advertised; the error says why.
pub fn advertised_is_own(advertised: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = advertised
        .to_socket_addrs()
        .map_err(|e| format!("`{advertised}` does not resolve here ({e})"))?
        .collect();
    let Some(first) = addrs.first().copied() else {
        return Err(format!("`{advertised}` resolves to no address"));
    };
    for addr in addrs {
        let ip = addr.ip();
        if ip.is_loopback() || ip.is_unspecified() {
            continue;
        }
        // Binding succeeds only to an address of this network namespace.
        if UdpSocket::bind(SocketAddr::new(ip, 0)).is_err() {
            return Err(format!(
                "`{advertised}` resolves to {ip}, which is not an address of this host's \
                 network (a proxy or a NAT in front of the endpoint)"
            ));
        }
    }
    Ok(first)
}

/// Whether `addr` may only be dialled from the advertiser's own network (its loopback, or
/// "any address").
fn is_local_only(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback() || addr.ip().is_unspecified()
}

/// The address to dial for `endpoint`, if a member in the network `own` may trust what it
/// sees there: a resolved socket address (an unspecified one is dialled on loopback), and a
/// loopback or unspecified one only from the advertiser's own network namespace — from any
/// other, the same address is another namespace's loopback, where a forwarder or a namesake
/// may listen.
pub(crate) fn dialable(endpoint: &FailoverEndpoint, own: Option<&str>) -> Option<SocketAddr> {
    let addr: SocketAddr = endpoint.addr.parse().ok()?;
    if addr.port() == 0 || endpoint.process.is_empty() {
        return None;
    }
    if is_local_only(&addr) {
        let same = own.is_some() && endpoint.network.as_deref() == own;
        if !same {
            return None;
        }
    }
    if addr.ip().is_unspecified() {
        let loopback = if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        return Some(SocketAddr::new(loopback, addr.port()));
    }
    Some(addr)
}

/// Whether a new connection to `addr` is refused (nothing listens there, in this network).
/// Blocks for at most 200 ms (`PROBE_TIMEOUT`); a timeout, a success or any other error is no
/// refusal.
pub fn refused(addr: SocketAddr) -> bool {
    matches!(
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(addr: &str, network: Option<&str>) -> FailoverEndpoint {
        FailoverEndpoint {
            addr: addr.to_owned(),
            process: "p-1".to_owned(),
            network: network.map(str::to_owned),
        }
    }

    #[test]
    fn a_loopback_endpoint_is_dialled_only_from_its_own_network() {
        let here = Some("boot/1");
        assert!(dialable(&endpoint("127.0.0.1:7", here), here).is_some());
        assert_eq!(
            dialable(&endpoint("0.0.0.0:7", here), here),
            Some("127.0.0.1:7".parse().unwrap()),
            "any address is dialled on loopback"
        );
        // The same host name, the same port: but another namespace's loopback.
        assert!(dialable(&endpoint("127.0.0.1:7", Some("boot/2")), here).is_none());
        assert!(dialable(&endpoint("127.0.0.1:7", None), here).is_none());
        assert!(
            dialable(&endpoint("127.0.0.1:7", None), None).is_none(),
            "two unknown networks are not the same one"
        );
        assert!(dialable(&endpoint("[::1]:7", Some("boot/2")), here).is_none());
        // A routable address is dialled from anywhere: the identity line says who answers.
        assert!(dialable(&endpoint("10.0.0.3:7", Some("boot/2")), here).is_some());
        assert!(dialable(&endpoint("10.0.0.3:7", None), None).is_some());
        assert!(dialable(&endpoint("not an address", here), here).is_none());
        assert!(dialable(&endpoint("10.0.0.3:0", here), here).is_none());
        let mut anonymous = endpoint("10.0.0.3:7", here);
        anonymous.process.clear();
        assert!(dialable(&anonymous, here).is_none(), "no identity to check");
    }

    #[test]
    fn only_this_network_s_own_addresses_are_advertised() {
        assert!(advertised_is_own("127.0.0.1:8083").is_ok());
        assert!(advertised_is_own("0.0.0.0:8083").is_ok());
        assert!(advertised_is_own("localhost:8083").is_ok());
        // TEST-NET-3 is nobody's address: a proxy or a NAT would be in front.
        let error = advertised_is_own("203.0.113.7:8083").unwrap_err();
        assert!(error.contains("not an address of this host"), "{error}");
        assert!(advertised_is_own("no-such-host.invalid:8083").is_err());
    }

    #[test]
    fn the_network_identity_names_the_boot_and_the_namespace() {
        let network = own_network().expect("Linux says which network namespace this is");
        let (boot, inode) = network.rsplit_once('/').unwrap();
        assert_eq!(boot.len(), 36, "the kernel's boot id: {boot}");
        assert!(
            inode.parse::<u64>().is_ok(),
            "the namespace's inode: {inode}"
        );
        assert_ne!(new_process_identity(), new_process_identity());
    }

    #[test]
    fn only_a_closed_port_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(!refused(addr), "it listens");
        drop(listener);
        assert!(refused(addr), "nothing listens");
    }
}
