//! What a member advertises about its endpoint, in binary (the election's codec) and as one
//! line of text (for protocols whose metadata is JSON, or a consumer's `user_data`).

use std::fmt;
use std::str::FromStr;

use crate::codec::{DecodeError, Reader, Writer};

/// A member's fast-failover endpoint, as it advertises it (see
/// [`FastFailover`](super::FastFailover)): where its followers link to, and what proves that a
/// link reached it.
///
/// A protocol carries it opaquely: the election's codec writes it in binary; any other protocol
/// can carry its text form, `to_string()` here and `parse()` there (`v1 ADDR PROCESS NETWORK`,
/// `-` for no network), without knowing its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailoverEndpoint {
    /// The endpoint's address, `ip:port` (never a host name: it must mean one socket).
    pub addr: String,
    /// A random identity, new with every endpoint: the first line of every link names it.
    pub process: String,
    /// The kernel's boot id and the inode of the member's network namespace; a loopback
    /// address is trusted only by members whose network is the same. `None` where the system
    /// does not say.
    pub network: Option<String>,
}

/// The first word of the text form.
const TEXT_VERSION: &str = "v1";

impl FailoverEndpoint {
    /// Body: `addr: string, process: string, network: nullable string`.
    pub(crate) fn encode(&self, writer: &mut Writer) {
        writer.string(&self.addr);
        writer.string(&self.process);
        writer.nullable_string(self.network.as_deref());
    }

    pub(crate) fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            addr: reader.string("endpoint.addr")?,
            process: reader.string("endpoint.process")?,
            network: reader.nullable_string("endpoint.network")?,
        })
    }
}

impl fmt::Display for FailoverEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let network = self.network.as_deref().unwrap_or("-");
        write!(f, "{TEXT_VERSION} {} {} {network}", self.addr, self.process)
    }
}

impl FromStr for FailoverEndpoint {
    type Err = InvalidFailoverEndpoint;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |why: &str| InvalidFailoverEndpoint(format!("`{text}`: {why}"));
        let words: Vec<&str> = text.split(' ').collect();
        let [version, addr, process, network] = words[..] else {
            return Err(invalid("expected `v1 ADDR PROCESS NETWORK`"));
        };
        if version != TEXT_VERSION {
            return Err(invalid("not a version this kroupier reads"));
        }
        if addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(invalid("the address is not `ip:port`"));
        }
        if process.is_empty() || network.is_empty() {
            return Err(invalid("an empty field"));
        }
        Ok(Self {
            addr: addr.to_owned(),
            process: process.to_owned(),
            network: (network != "-").then(|| network.to_owned()),
        })
    }
}

/// A text form of [`FailoverEndpoint`] that does not parse; the message quotes it and says
/// why. A protocol treats such a member as one without fast failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFailoverEndpoint(String);

impl fmt::Display for InvalidFailoverEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid fast-failover endpoint {}", self.0)
    }
}

impl std::error::Error for InvalidFailoverEndpoint {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_round_trips_with_and_without_a_network() {
        for network in [Some("boot-id/4026531840".to_owned()), None] {
            let endpoint = FailoverEndpoint {
                addr: "10.0.0.7:41234".into(),
                process: "9f3c0a".into(),
                network,
            };
            assert_eq!(endpoint.to_string().parse(), Ok(endpoint));
        }
    }

    #[test]
    fn text_that_is_not_an_endpoint_is_refused_with_why() {
        for (text, why) in [
            ("", "expected"),
            ("v1 10.0.0.7:1 p", "expected"),
            ("v1 10.0.0.7:1 p n extra", "expected"),
            ("v2 10.0.0.7:1 p n", "version"),
            ("v1 db-host:1 p n", "ip:port"),
            ("v1 10.0.0.7:1  n", "empty"),
        ] {
            let error = text.parse::<FailoverEndpoint>().unwrap_err().to_string();
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }
}
