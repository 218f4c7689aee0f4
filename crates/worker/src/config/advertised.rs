//! The status API's advertised address (`kroupier.status.advertised.address`): the `host:port`
//! peers and tools use to reach this worker's status API when it differs from where the API
//! binds (NAT, containers, a proxy in front), as Kafka's `advertised.listeners` does for a
//! broker. Peers connect to it as given, so it must name one port a client can dial: a host
//! name, an IPv4 address or a bracketed IPv6 address, and a port from 1 to 65535.

use std::net::Ipv6Addr;

/// What an advertised address looks like, for errors.
pub(super) const EXPECTED: &str = "`host:port` (a host name, an IPv4 address or a bracketed \
                                   IPv6 address, and a port from 1 to 65535), as peers dial it";

/// Checks that `value` is a `host:port` a peer can dial; the error says what is wrong.
pub(super) fn check(value: &str) -> Result<(), String> {
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err(format!("`{value}` has no port: expected {EXPECTED}"));
    };
    match port.parse::<u16>() {
        Ok(0) => {
            return Err(format!(
                "`{value}` advertises port 0, which nobody can dial"
            ));
        }
        Ok(_) => {}
        Err(_) => return Err(format!("`{value}` has no valid port: expected {EXPECTED}")),
    }
    let valid_host = match host.strip_prefix('[') {
        Some(rest) => rest
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<Ipv6Addr>().is_ok()),
        None => is_host_name(host),
    };
    if valid_host {
        Ok(())
    } else {
        Err(format!("`{value}` has no valid host: expected {EXPECTED}"))
    }
}

/// A DNS name or an IPv4 address: dot-separated labels of letters, digits, `-` and `_`, none
/// empty, none starting or ending with `-`.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn host_names_and_addresses_with_a_port_are_dialable() {
        for value in [
            "127.0.0.1:9083",
            "worker-3.kroupier.svc.cluster.local:8083",
            "localhost:1",
            "[::1]:65535",
            "[2001:db8::7]:8083",
        ] {
            assert_eq!(check(value), Ok(()), "{value}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for (value, reason) in [
            ("localhost", "no port"),
            ("", "no port"),
            ("host:", "no valid port"),
            ("host:http", "no valid port"),
            ("host:65536", "no valid port"),
            ("host:0", "port 0"),
            (":8083", "no valid host"),
            ("::1:8083", "no valid host"),
            ("[::1:8083", "no valid host"),
            ("[not-ip]:8083", "no valid host"),
            ("http://host:8083", "no valid host"),
            ("bad host:8083", "no valid host"),
            ("-host:8083", "no valid host"),
            ("a..b:8083", "no valid host"),
        ] {
            let error = check(value).expect_err(value);
            assert!(error.contains(reason), "{value}: {error}");
        }
    }
}
