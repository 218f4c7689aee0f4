//! What the proxy does to the traffic right now: the fault on the links, its scope, the
//! per-API delays of responses, and the APIs whose requests are dropped. The handle publishes a [`Policy`] through a `watch` channel;
//! every connection reads the current one for each frame and reacts to a cut at once.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use super::rewrite::Role;

/// A fault on the proxied links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Close every proxied connection in scope and refuse new ones (accept, then close at
    /// once): the client sees its connections reset and its reconnects fail.
    Cut,
    /// Accept connections and read their requests, but never forward them and never answer:
    /// the client sees requests time out. Responses already on their way are dropped too.
    Blackhole,
    /// Forward every frame, in either direction, this long after the proxy read it (a round
    /// trip grows by twice the delay). Order on a connection is kept.
    Delay(Duration),
}

/// Which connections a [`Fault`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every connection of the proxied client: bootstrap, brokers and group coordinator.
    All,
    /// Only connections to the group coordinator, the address FindCoordinator returned: the
    /// client can still reach the cluster, and find the coordinator, but not talk to it.
    Coordinator,
}

impl Scope {
    /// Whether a connection accepted on a listener of `role` is in this scope.
    pub fn covers(self, role: Role) -> bool {
        match self {
            Scope::All => true,
            Scope::Coordinator => role == Role::Coordinator,
        }
    }
}

/// The proxy's current behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The fault on the links and its scope; `None` forwards everything.
    pub(crate) link: Option<(Fault, Scope)>,
    /// Extra delay of the responses of each API key (by key number), on every connection.
    pub(crate) response_delays: HashMap<i16, Duration>,
    /// The API keys (by key number) whose requests are read and never forwarded, on every
    /// connection.
    pub(crate) dropped_requests: HashSet<i16>,
}

impl Policy {
    /// The fault that applies to a connection of `role`, if any.
    pub(crate) fn fault_for(&self, role: Role) -> Option<Fault> {
        self.link
            .and_then(|(fault, scope)| scope.covers(role).then_some(fault))
    }

    /// Whether connections of `role` are cut.
    pub(crate) fn cuts(&self, role: Role) -> bool {
        self.fault_for(role) == Some(Fault::Cut)
    }

    /// Whether frames of connections of `role` are dropped.
    pub(crate) fn blackholes(&self, role: Role) -> bool {
        self.fault_for(role) == Some(Fault::Blackhole)
    }

    /// Whether a request of `api_key` read now is dropped rather than forwarded.
    pub(crate) fn drops_request(&self, api_key: i16) -> bool {
        self.dropped_requests.contains(&api_key)
    }

    /// Drops (`drop == true`) or forwards again the requests of `api_key`.
    pub(crate) fn set_dropped_request(&mut self, api_key: ApiKey, drop: bool) {
        if drop {
            self.dropped_requests.insert(api_key as i16);
        } else {
            self.dropped_requests.remove(&(api_key as i16));
        }
    }

    /// How long to hold a request read now on a connection of `role`.
    pub(crate) fn request_delay(&self, role: Role) -> Duration {
        match self.fault_for(role) {
            Some(Fault::Delay(delay)) => delay,
            _ => Duration::ZERO,
        }
    }

    /// How long to hold a response to `api_key` read now on a connection of `role`.
    pub(crate) fn response_delay(&self, role: Role, api_key: Option<i16>) -> Duration {
        let extra = api_key
            .and_then(|key| self.response_delays.get(&key))
            .copied()
            .unwrap_or_default();
        self.request_delay(role) + extra
    }

    /// Sets the extra delay of `api_key` responses (zero removes it).
    pub(crate) fn set_response_delay(&mut self, api_key: ApiKey, delay: Duration) {
        if delay.is_zero() {
            self.response_delays.remove(&(api_key as i16));
        } else {
            self.response_delays.insert(api_key as i16, delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coordinator_scope_spares_broker_connections() {
        let policy = Policy {
            link: Some((Fault::Cut, Scope::Coordinator)),
            ..Policy::default()
        };
        assert!(policy.cuts(Role::Coordinator));
        assert!(!policy.cuts(Role::Broker));
        let policy = Policy {
            link: Some((Fault::Blackhole, Scope::All)),
            ..Policy::default()
        };
        assert!(policy.blackholes(Role::Broker) && policy.blackholes(Role::Coordinator));
    }

    #[test]
    fn response_delays_add_to_the_link_delay_for_their_api_only() {
        let mut policy = Policy {
            link: Some((Fault::Delay(Duration::from_millis(10)), Scope::All)),
            ..Policy::default()
        };
        policy.set_response_delay(ApiKey::Heartbeat, Duration::from_millis(700));
        let heartbeat = Some(ApiKey::Heartbeat as i16);
        let join = Some(ApiKey::JoinGroup as i16);
        assert_eq!(
            policy.response_delay(Role::Coordinator, heartbeat),
            Duration::from_millis(710)
        );
        assert_eq!(
            policy.response_delay(Role::Coordinator, join),
            Duration::from_millis(10)
        );
        policy.set_response_delay(ApiKey::Heartbeat, Duration::ZERO);
        assert!(policy.response_delays.is_empty());
    }

    #[test]
    fn dropped_requests_are_per_api_and_can_be_forwarded_again() {
        let mut policy = Policy::default();
        policy.set_dropped_request(ApiKey::JoinGroup, true);
        assert!(policy.drops_request(ApiKey::JoinGroup as i16));
        assert!(!policy.drops_request(ApiKey::Heartbeat as i16));
        assert!(!policy.blackholes(Role::Coordinator), "the links stay up");
        policy.set_dropped_request(ApiKey::JoinGroup, false);
        assert_eq!(policy, Policy::default());
    }
}
