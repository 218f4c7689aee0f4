//! The worker's configuration: plain data, documented defaults, [`WorkerConfig::validate`].

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::supervisor::{InvalidConfig, RestartPolicy, SupervisorConfig};

/// The default status API address: loopback only, Kafka Connect's REST port.
pub const DEFAULT_STATUS_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8083);

/// Everything a worker needs to join its group and run its tasks.
///
/// Timeouts mirror Kafka's consumer settings of the same names, with Kafka Connect's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// `bootstrap.servers`: `host:port` of one or more brokers. Default `["127.0.0.1:9092"]`.
    /// Several addresses let the worker start while one broker is down.
    pub bootstrap_servers: Vec<String>,
    /// `group.id`: workers with the same group id share the catalogue's tasks. Default
    /// `"kroupier"`; name it after the application.
    pub group_id: String,
    /// `client.id`, shown by DescribeGroups. Default `"kroupier-worker"`.
    pub client_id: String,
    /// This worker's stable id, sent in its metadata and shown in status. Default
    /// `"worker-<process id>"`; set it to the host or pod name to tell workers apart.
    pub worker_id: String,
    /// Assignor names offered to the group, most preferred first (`cooperative`, `sticky`,
    /// `round-robin`). Default `["cooperative"]`. Offer the old and the new name during a
    /// rolling change of assignor.
    pub assignors: Vec<String>,
    /// `session.timeout.ms`. Default 10 s. Shorter fails over faster but removes workers on
    /// long pauses.
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms`. Default 3 s. About a third of the session timeout.
    pub heartbeat_interval: Duration,
    /// `rebalance.timeout.ms`. Default 60 s. How long the group waits for every worker to
    /// rejoin, revocations included; at least the session timeout.
    pub rebalance_timeout: Duration,
    /// `group.instance.id` (KIP-345 static membership). Default `None`. A static worker that
    /// restarts within its session timeout gets its tasks back without a rebalance; one that is
    /// gone for good holds its tasks idle for a whole session timeout.
    pub group_instance_id: Option<String>,
    /// Self-fencing margin. Default `None` = `max(heartbeat_interval, session_timeout / 10)`.
    /// A worker whose heartbeats have failed for `session_timeout − margin` stops every task;
    /// the margin is the time it has to do so before the group may hand them to another worker.
    pub self_fence_margin: Option<Duration>,
    /// How long the tasks of a worker that vanished wait before going to others (KIP-415's
    /// `scheduled.rebalance.max.delay.ms`). Default 0 = at once. Connect's 5 min default spares
    /// moves when a worker comes back quickly but idles its tasks that long.
    pub lost_task_delay: Duration,
    /// How long a revoked task may take to return before it is aborted. Default 5 s.
    pub graceful_stop_timeout: Duration,
    /// How long to wait for an aborted task to unwind. Default 1 s.
    pub abort_timeout: Duration,
    /// Restarts of failed tasks.
    pub restart: RestartPolicy,
    /// Where the status API listens. Default `Some(127.0.0.1:8083)`; `None` disables it. Bind
    /// to a non-loopback address only behind access control: the API can restart tasks.
    pub status_addr: Option<SocketAddr>,
    /// The most total task weight this worker accepts (capacity-aware assignors). Default
    /// `None` (no limit). Lower it on smaller machines.
    pub capacity: Option<u64>,
    /// Rack or zone (`client.rack`) for rack-aware assignors. Default `None`.
    pub rack: Option<String>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            bootstrap_servers: vec!["127.0.0.1:9092".to_owned()],
            group_id: "kroupier".to_owned(),
            client_id: "kroupier-worker".to_owned(),
            worker_id: format!("worker-{}", std::process::id()),
            assignors: vec!["cooperative".to_owned()],
            session_timeout: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(3),
            rebalance_timeout: Duration::from_secs(60),
            group_instance_id: None,
            self_fence_margin: None,
            lost_task_delay: Duration::ZERO,
            graceful_stop_timeout: Duration::from_secs(5),
            abort_timeout: Duration::from_secs(1),
            restart: RestartPolicy::default(),
            status_addr: Some(DEFAULT_STATUS_ADDR),
            capacity: None,
            rack: None,
        }
    }
}

impl WorkerConfig {
    /// The defaults, for `group_id`.
    pub fn new(group_id: impl Into<String>) -> Self {
        WorkerConfig {
            group_id: group_id.into(),
            ..Self::default()
        }
    }

    /// The self-fencing margin in effect.
    pub fn effective_self_fence_margin(&self) -> Duration {
        self.self_fence_margin
            .unwrap_or_else(|| self.heartbeat_interval.max(self.session_timeout / 10))
    }

    /// The supervisor's part of the config.
    pub fn supervisor(&self) -> SupervisorConfig {
        SupervisorConfig {
            graceful_stop_timeout: self.graceful_stop_timeout,
            abort_timeout: self.abort_timeout,
            restart: self.restart.clone(),
        }
    }

    /// Checks every field and their relations; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.bootstrap_servers.is_empty() {
            return Err(InvalidConfig::new(
                "bootstrap_servers",
                "give at least one host:port",
            ));
        }
        if let Some(server) = self.bootstrap_servers.iter().find(|s| !is_host_port(s)) {
            return Err(InvalidConfig::new(
                "bootstrap_servers",
                format!("`{server}` is not host:port"),
            ));
        }
        for (field, value) in [
            ("group_id", &self.group_id),
            ("client_id", &self.client_id),
            ("worker_id", &self.worker_id),
        ] {
            if value.is_empty() {
                return Err(InvalidConfig::new(field, "must not be empty"));
            }
        }
        if self.assignors.is_empty() {
            return Err(InvalidConfig::new(
                "assignors",
                "offer at least one assignor name",
            ));
        }
        if let Some(name) = self
            .assignors
            .iter()
            .find(|name| !kroupier_assignor::ASSIGNOR_NAMES.contains(&name.as_str()))
        {
            return Err(InvalidConfig::new(
                "assignors",
                format!(
                    "`{name}` is not an assignor; use {}",
                    kroupier_assignor::ASSIGNOR_NAMES.join(", ")
                ),
            ));
        }
        if let Some(name) = duplicate(&self.assignors) {
            return Err(InvalidConfig::new(
                "assignors",
                format!("`{name}` is offered twice"),
            ));
        }
        if let Some(id) = &self.group_instance_id {
            let charset = id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if id.is_empty() || id.len() > 249 || !charset {
                return Err(InvalidConfig::new(
                    "group_instance_id",
                    "use 1 to 249 characters of [a-zA-Z0-9._-]",
                ));
            }
        }
        if self.heartbeat_interval.is_zero() || self.session_timeout.is_zero() {
            return Err(InvalidConfig::new(
                "heartbeat_interval",
                "timeouts must be positive",
            ));
        }
        let margin = self.effective_self_fence_margin();
        if self.heartbeat_interval + margin >= self.session_timeout {
            return Err(InvalidConfig::new(
                "heartbeat_interval",
                format!(
                    "{:?} plus the self-fencing margin {margin:?} must stay below the session \
                     timeout {:?}, or the worker fences itself between two heartbeats",
                    self.heartbeat_interval, self.session_timeout
                ),
            ));
        }
        if self.rebalance_timeout < self.session_timeout {
            return Err(InvalidConfig::new(
                "rebalance_timeout",
                "must be at least the session timeout",
            ));
        }
        if self.abort_timeout >= margin {
            return Err(InvalidConfig::new(
                "abort_timeout",
                format!(
                    "{:?} must be below the self-fencing margin {margin:?}, so that a lost \
                     worker stops its tasks before others may start them",
                    self.abort_timeout
                ),
            ));
        }
        // Revoked tasks must be stopped before the member rejoins; the join gate holds the
        // JoinGroup for at most `rebalance_timeout − margin`, so the worst-case stop must fit.
        let stop = self.graceful_stop_timeout + self.abort_timeout;
        let gate = self.rebalance_timeout.saturating_sub(margin);
        if stop >= gate {
            return Err(InvalidConfig::new(
                "graceful_stop_timeout",
                format!(
                    "{:?} plus the abort timeout {:?} must stay below the rebalance timeout \
                     {:?} minus the self-fencing margin {margin:?}, or the member rejoins \
                     while revoked tasks are still stopping; raise rebalance_timeout or \
                     shorten the stop",
                    self.graceful_stop_timeout, self.abort_timeout, self.rebalance_timeout
                ),
            ));
        }
        self.restart.validate()
    }
}

fn is_host_port(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && port.parse::<u16>().is_ok_and(|port| port != 0)
    })
}

fn duplicate(names: &[String]) -> Option<&str> {
    names
        .iter()
        .enumerate()
        .find(|(i, name)| names[..*i].contains(name))
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_longer_than_the_join_gate_is_rejected() {
        let mut config = WorkerConfig::new("orders");
        config.rebalance_timeout = Duration::from_secs(10);
        config.session_timeout = Duration::from_secs(10);
        // margin 3 s (heartbeat interval), gate 7 s; 6 s graceful + 1 s abort does not fit.
        config.graceful_stop_timeout = Duration::from_secs(6);
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, "graceful_stop_timeout");
        config.graceful_stop_timeout = Duration::from_secs(5);
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn defaults_are_valid() {
        let config = WorkerConfig::new("orders");
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.effective_self_fence_margin(), Duration::from_secs(3));
        assert_eq!(config.status_addr, Some("127.0.0.1:8083".parse().unwrap()));
        assert_eq!(
            config.supervisor().graceful_stop_timeout,
            Duration::from_secs(5)
        );
    }

    fn field(change: impl FnOnce(&mut WorkerConfig)) -> &'static str {
        let mut config = WorkerConfig::new("orders");
        change(&mut config);
        config.validate().unwrap_err().field
    }

    #[test]
    fn each_bad_value_names_its_field() {
        assert_eq!(field(|c| c.bootstrap_servers.clear()), "bootstrap_servers");
        assert_eq!(
            field(|c| c.bootstrap_servers = vec!["kafka".into()]),
            "bootstrap_servers"
        );
        assert_eq!(field(|c| c.group_id.clear()), "group_id");
        assert_eq!(field(|c| c.worker_id.clear()), "worker_id");
        assert_eq!(field(|c| c.assignors.clear()), "assignors");
        assert_eq!(field(|c| c.assignors = vec!["range".into()]), "assignors");
        assert_eq!(
            field(|c| c.assignors = vec!["sticky".into(), "sticky".into()]),
            "assignors"
        );
        assert_eq!(
            field(|c| c.group_instance_id = Some("a b".into())),
            "group_instance_id"
        );
        assert_eq!(
            field(|c| c.heartbeat_interval = Duration::from_secs(8)),
            "heartbeat_interval"
        );
        assert_eq!(
            field(|c| c.rebalance_timeout = Duration::from_secs(1)),
            "rebalance_timeout"
        );
        assert_eq!(
            field(|c| c.abort_timeout = Duration::from_secs(4)),
            "abort_timeout"
        );
        assert_eq!(
            field(|c| c.restart.max_attempts = 0),
            "restart.max_attempts"
        );
    }

    #[test]
    fn host_ports() {
        assert!(is_host_port("127.0.0.1:9092"));
        assert!(is_host_port("[::1]:9092"));
        assert!(!is_host_port(":9092"));
        assert!(!is_host_port("kafka:0"));
    }
}
