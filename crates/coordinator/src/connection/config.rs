//! Configuration of broker connections and of the cluster client: plain structs with
//! `Duration`s, documented defaults (Kafka's client defaults where Kafka has one) and
//! `validate()`.

use std::time::Duration;

use super::error::ConnectionError;
use super::security::Security;
use crate::connection::Detail;
use crate::wire::DEFAULT_MAX_RESPONSE_FRAME;

/// Settings of one connection to one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// The client id sent in every request header (shown by DescribeGroups). Default
    /// `"kroupier"`. Name your application here so operators can tell clients apart.
    pub client_id: String,
    /// How long a request may wait for its response. Default 30 s (Kafka's
    /// `request.timeout.ms`). The one home of this setting: a group member's FindCoordinator,
    /// Heartbeat and LeaveGroup wait this long too, and its JoinGroup and SyncGroup
    /// `max(request_timeout, rebalance_timeout + 5 s)`, since the broker holds them for the
    /// rebalance. Shorter finds a dead broker sooner; too short closes healthy connections
    /// under load.
    pub request_timeout: Duration,
    /// How long to wait for TCP connect and the ApiVersions exchange. Default 10 s (Kafka's
    /// `socket.connection.setup.timeout.ms`).
    pub connect_timeout: Duration,
    /// The largest response frame accepted. Default 64 MiB: a JoinGroup response to the
    /// leader or a DescribeGroups response holds every member's metadata. Larger admits bigger
    /// groups; smaller bounds memory against a misbehaving broker.
    pub max_response_frame: usize,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            client_id: "kroupier".to_owned(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_frame: DEFAULT_MAX_RESPONSE_FRAME,
        }
    }
}

impl ConnectionConfig {
    /// Checks the settings (as part of the cluster config's check).
    ///
    /// # Errors
    /// `InvalidConfig` naming the field at fault.
    pub(crate) fn validate(&self) -> Result<(), ConnectionError> {
        if self.client_id.len() > i16::MAX as usize {
            return Err(invalid("client_id", "is longer than 32767 bytes"));
        }
        if self.request_timeout.is_zero() {
            return Err(invalid("request_timeout", "must be positive"));
        }
        if self.connect_timeout.is_zero() {
            return Err(invalid("connect_timeout", "must be positive"));
        }
        if self.max_response_frame < 1024 {
            return Err(invalid("max_response_frame", "must be at least 1024 bytes"));
        }
        Ok(())
    }
}

/// Settings of a [`Cluster`](super::Cluster): where to start, and how to back off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `host:port` of one or more brokers to start from. No default: required. Several
    /// addresses let kroupier start while one broker is down.
    pub bootstrap_servers: Vec<String>,
    /// Settings of each broker connection.
    pub connection: ConnectionConfig,
    /// TLS and SASL of every broker connection. Default PLAINTEXT (neither), as in Kafka. Read
    /// it from Kafka's client properties with [`Security::from_properties`].
    pub security: Security,
    /// First delay before reconnecting after a failed connect. Default 50 ms (Kafka's
    /// `reconnect.backoff.ms`).
    pub reconnect_backoff: Duration,
    /// Cap on the reconnect delay. Default 1 s (Kafka's `reconnect.backoff.max.ms`). Higher
    /// spares a struggling cluster; lower recovers sooner.
    pub reconnect_backoff_max: Duration,
    /// First delay before retrying a retriable error (coordinator loading or moving). Default
    /// 100 ms (Kafka's `retry.backoff.ms`). The one home of this setting: a group member's
    /// retries back off from it too.
    pub retry_backoff: Duration,
    /// Cap on the retry delay. Default 1 s (Kafka's `retry.backoff.max.ms`), for the cluster
    /// client and a group member alike.
    pub retry_backoff_max: Duration,
    /// How long a coordinator lookup keeps retrying retriable errors before it fails. Default
    /// 30 s: long enough for `__consumer_offsets` to be created and loaded on a fresh cluster.
    pub coordinator_lookup_timeout: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            connection: ConnectionConfig::default(),
            security: Security::default(),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_secs(1),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            coordinator_lookup_timeout: Duration::from_secs(30),
        }
    }
}

impl ClusterConfig {
    /// The defaults, starting from `bootstrap` (`host:port[,host:port...]`).
    pub fn new(bootstrap: &str) -> Self {
        Self {
            bootstrap_servers: bootstrap
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            ..Self::default()
        }
    }

    /// Checks the settings: [`Cluster::new`](super::Cluster::new) and
    /// [`MemberConfig::validate`](crate::driver::MemberConfig::validate) run it.
    ///
    /// # Errors
    /// `InvalidConfig` naming the field at fault.
    pub(crate) fn validate(&self) -> Result<(), ConnectionError> {
        if self.bootstrap_servers.is_empty() {
            return Err(invalid(
                "bootstrap_servers",
                "is empty; give at least one `host:port`",
            ));
        }
        for addr in &self.bootstrap_servers {
            let port = addr
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok());
            if port.is_none() {
                return Err(invalid(
                    "bootstrap_servers",
                    &format!("has `{addr}`, which is not `host:port`"),
                ));
            }
        }
        self.connection.validate()?;
        if self.reconnect_backoff.is_zero() || self.retry_backoff.is_zero() {
            return Err(invalid(
                "reconnect_backoff/retry_backoff",
                "must be positive",
            ));
        }
        if self.reconnect_backoff_max < self.reconnect_backoff {
            return Err(invalid(
                "reconnect_backoff_max",
                "must be at least reconnect_backoff",
            ));
        }
        if self.retry_backoff_max < self.retry_backoff {
            return Err(invalid(
                "retry_backoff_max",
                "must be at least retry_backoff",
            ));
        }
        if self.coordinator_lookup_timeout.is_zero() {
            return Err(invalid("coordinator_lookup_timeout", "must be positive"));
        }
        Ok(())
    }
}

fn invalid(field: &'static str, reason: &str) -> ConnectionError {
    ConnectionError::from(Detail::InvalidConfig {
        field,
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_only_a_bootstrap_address() {
        assert!(ClusterConfig::default().validate().is_err());
        let config = ClusterConfig::new("127.0.0.1:9092, localhost:9093");
        assert_eq!(
            config.bootstrap_servers,
            ["127.0.0.1:9092", "localhost:9093"]
        );
        config.validate().unwrap();
    }

    #[test]
    fn bad_settings_name_their_field() {
        let field_of =
            |config: ClusterConfig| match config.validate().map_err(ConnectionError::into_detail) {
                Err(Detail::InvalidConfig { field, .. }) => field,
                other => panic!("expected InvalidConfig, got {other:?}"),
            };
        assert_eq!(field_of(ClusterConfig::new("no-port")), "bootstrap_servers");
        let mut c = ClusterConfig::new("h:1");
        c.connection.request_timeout = Duration::ZERO;
        assert_eq!(field_of(c), "request_timeout");
        let mut c = ClusterConfig::new("h:1");
        c.retry_backoff_max = Duration::from_millis(1);
        assert_eq!(field_of(c), "retry_backoff_max");
        let mut c = ClusterConfig::new("h:1");
        c.connection.max_response_frame = 10;
        assert_eq!(field_of(c), "max_response_frame");
    }
}
