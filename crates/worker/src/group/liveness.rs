//! # Is a vanished worker's process gone?
//!
//! When a worker vanishes from the group, the leader cannot tell from Kafka whether its session
//! expired (the process crashed or froze, and its leases have ended) or a third party removed
//! it while it still runs (it learns only at its next heartbeat). So the next owners of its
//! tasks hold them back for its heartbeat interval (see `leader.rs`) — unless the leader can
//! see that the process is gone.
//!
//! A live worker keeps its status API listening for as long as it runs. The kernel closes a
//! process's listening sockets when it ends, and a connection to a port nobody listens on is
//! refused at once. So a refused connection to the address the worker advertised proves its
//! process is gone; anything else — the connection succeeds (the process runs, or is paused:
//! its socket still accepts), times out (the host is down or unreachable), or fails otherwise —
//! proves nothing, and the hold stays. A loopback address is checked only from the same host.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long the leader waits for one connection: a refusal is immediate on a live host.
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);

/// The name of this machine, if the system says.
pub(crate) fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

/// Whether the worker that advertised `status_addr` on `host` is surely gone, as seen from a
/// process on `own_host`. Blocks for at most [`PROBE_TIMEOUT`].
pub(crate) fn is_gone(status_addr: &str, host: Option<&str>, own_host: Option<&str>) -> bool {
    let Ok(addr) = status_addr.parse::<SocketAddr>() else {
        return false;
    };
    let same_host = host.is_some() && host == own_host;
    if (addr.ip().is_loopback() || addr.ip().is_unspecified()) && !same_host {
        // Its loopback is not ours: there is nothing to check from here.
        return false;
    }
    let addr = if addr.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
    } else {
        addr
    };
    matches!(
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_closed_port_on_this_host_is_a_gone_worker() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let host = Some("this-host");
        assert!(!is_gone(&addr, host, host), "it listens: alive");
        drop(listener);
        assert!(is_gone(&addr, host, host), "nothing listens: gone");
    }

    #[test]
    fn another_host_s_loopback_proves_nothing() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        assert!(!is_gone(&addr, Some("elsewhere"), Some("here")));
        assert!(!is_gone(&addr, None, None), "unknown hosts prove nothing");
        assert!(!is_gone("not an address", Some("here"), Some("here")));
    }
}
