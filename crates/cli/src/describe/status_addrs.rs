//! Where each worker's status API is reached, read from its group metadata: for
//! `kroupier describe` and the console, which ask each worker for its task states.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kroupier_coordinator::observer::GroupDescription;

use crate::group_view::KroupierDecoder;

/// Each member's status API address (by the name the board knows it by), from its metadata.
/// An unspecified address (`0.0.0.0`, `::`) is reached on the host the member connected from.
pub(crate) fn status_addrs(description: &GroupDescription) -> BTreeMap<String, String> {
    let decoded = description.clone().decode(&KroupierDecoder);
    let mut addrs = BTreeMap::new();
    for (raw, member) in decoded.description.members.iter().zip(decoded.members) {
        let Some(metadata) = member.ok().and_then(|m| m.metadata) else {
            continue;
        };
        let Some(addr) = metadata.status_addr else {
            continue;
        };
        addrs.insert(metadata.worker_id, reachable(&addr, &raw.client_host));
    }
    addrs
}

/// `addr`, with an unspecified IP replaced by `client_host` (Kafka spells it `/1.2.3.4`).
fn reachable(addr: &str, client_host: &str) -> String {
    let Ok(socket) = addr.parse::<std::net::SocketAddr>() else {
        return addr.to_owned();
    };
    if !socket.ip().is_unspecified() {
        return addr.to_owned();
    }
    match client_host.trim_start_matches('/').parse::<IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, socket.port()).to_string(),
        Err(_) => addr.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_status_addresses_use_the_member_host() {
        assert_eq!(reachable("0.0.0.0:8080", "/10.0.0.7"), "10.0.0.7:8080");
        assert_eq!(reachable("127.0.0.1:8080", "/10.0.0.7"), "127.0.0.1:8080");
        assert_eq!(reachable("[::]:81", "/::1"), "[::1]:81");
        assert_eq!(reachable("worker-3:80", "/10.0.0.7"), "worker-3:80");
    }
}
