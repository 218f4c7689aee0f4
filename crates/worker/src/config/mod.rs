//! The worker's configuration: [`WorkerConfig`] and its parts (re-exported at the crate root).

mod advertised;
pub(crate) mod properties;
#[cfg(test)]
mod tests;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use kroupier_coordinator::connection::Secret;

use kroupier_coordinator::driver::{MemberConfig, MemberError};

pub(crate) use properties::SecurityProperties;
pub use properties::{PropertiesError, PropertiesErrorKind};

use crate::supervisor::{InvalidConfig, RestartPolicy, SupervisorConfig};

/// The default status API address: loopback, a port the OS picks, so that any number of
/// workers start on one machine with the defaults. [`WorkerHandle::status_addr`] tells the port.
///
/// [`WorkerHandle::status_addr`]: crate::WorkerHandle::status_addr
pub(crate) const DEFAULT_STATUS_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// The longest abort timeout derived when none is set.
const MAX_DERIVED_ABORT_TIMEOUT: Duration = Duration::from_secs(1);

/// Everything a worker needs to join its group and run its tasks.
///
/// Timeouts mirror Kafka's consumer settings of the same names, with Kafka Connect's defaults.
/// Build it with [`WorkerConfig::new`] (or from Kafka client properties), change the fields you
/// need, and let [`validate`](Self::validate) (run by the builder) check the rules between them.
///
/// The settings, one nested struct (values that depend on others are derived unless set, and
/// [`WorkerConfig::validate`] names the rule that failed and what to set):
///
/// ```text
/// WorkerConfig
/// ├── worker_id, rack, capacity      what this worker tells the group about itself
/// ├── member: MemberConfig           the coordinator's own config, used as is (no copy)
/// │   ├── cluster                    bootstrap.servers, client.id, request.timeout.ms, ...
/// │   └── membership                 group.id, session/heartbeat/rebalance timeouts, instance id
/// ├── tasks: TasksConfig             graceful stop, abort (derived), restarts, the task store
/// └── status: StatusConfig           the status API's address (a free loopback port by default)
/// ```
///
/// # Kafka client properties
///
/// The same settings can come from Kafka client properties, as Kafka's own tools take them
/// (`--command-config FILE`): [`WorkerConfig::from_properties`] (a map),
/// [`WorkerConfig::from_properties_file`] (a Java `.properties` file) and
/// [`WorkerConfig::set_properties_file`] (a file's values over a program's own defaults).
///
/// | Property | Field |
/// |---|---|
/// | `bootstrap.servers` | `member.cluster.bootstrap_servers` (comma-separated) |
/// | `client.id` | `member.cluster.connection.client_id` |
/// | `client.rack` | `rack` |
/// | `group.id` | `member.membership.group_id` |
/// | `group.instance.id` | `member.membership.group_instance_id` |
/// | `session.timeout.ms` | `member.membership.session_timeout` |
/// | `heartbeat.interval.ms` | `member.membership.heartbeat_interval` |
/// | `rebalance.timeout.ms` | `member.membership.rebalance_timeout` |
/// | `request.timeout.ms` | `member.cluster.connection.request_timeout` (the member's requests too) |
/// | `retry.backoff.ms`, `retry.backoff.max.ms` | `member.cluster.retry_backoff`, `retry_backoff_max` (the member's retries too) |
/// | `reconnect.backoff.ms`, `reconnect.backoff.max.ms` | `member.cluster.reconnect_backoff`, `reconnect_backoff_max` |
/// | `socket.connection.setup.timeout.ms` | `member.cluster.connection.connect_timeout` |
/// | `task.shutdown.graceful.timeout.ms` (Kafka Connect's) | `tasks.graceful_stop_timeout` |
/// | `tasks.store.enabled` | `tasks.store.enabled` (`true`/`false`) |
/// | `tasks.store.topic` | `tasks.store.topic` |
/// | `tasks.store.checkpoint_topic` | `tasks.checkpoint.topic` |
/// | `tasks.store.transactional_id_prefix` | `tasks.transactional.id.prefix` |
/// | `kroupier.worker.id` | `worker_id` |
/// | `kroupier.capacity` | `capacity` |
/// | `kroupier.task.abort.timeout.ms` | `tasks.abort_timeout` |
/// | `kroupier.self.fence.margin.ms` | `member.membership.self_fence_margin` |
/// | `kroupier.group.min.session.timeout.ms` | `member.membership.min_session_timeout` |
/// | `kroupier.status.addr` | `status.addr` (`host:port`, or `none` to disable) |
/// | `kroupier.status.advertised.address` | `status.advertised_addr` (`host:port`; empty: the bound address) |
/// | `kroupier.status.token` | `status.token` (a bearer token; empty: none) |
/// | `kroupier.status.token.protect.reads` | `status.protect_reads` (`true`/`false`) |
/// | `kroupier.status.tls.certificate`, `kroupier.status.tls.key` | `status.tls_certificate`, `status.tls_key` (PEM files) |
/// | `kroupier.failover.fast` | `status.fast_failover` (`true`/`false`) |
/// | `security.protocol`, `sasl.*`, `ssl.*` | `member.cluster.security`, parsed by the coordinator's [`Security::from_properties`](kroupier_coordinator::connection::Security::from_properties) (its keys), from all the security keys read so far |
///
/// Any other key is an error that names it, so a misspelt setting never goes unnoticed; a bad
/// value is an error that names the key and what it expects.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kroupier_worker::WorkerConfig;
///
/// let mut config = WorkerConfig::new("orders");
/// config.member.cluster.bootstrap_servers = vec!["kafka-1:9092".into(), "kafka-2:9092".into()];
/// config.member.membership.session_timeout = Duration::from_secs(3);
/// config.member.membership.heartbeat_interval = Duration::from_millis(500);
/// // Derived from the session: the self-fencing margin, and from it the abort timeout.
/// let margin = config.member.membership.effective_self_fence_margin();
/// assert_eq!(margin, Duration::from_millis(500));
/// assert_eq!(config.abort_timeout(), Duration::from_millis(250));
/// assert_eq!(config.validate(), Ok(()));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// This worker's stable id, sent in its metadata and shown in status. Default
    /// `"worker-<process id>"`; set it to the host or pod name to tell workers apart.
    pub worker_id: String,
    /// Rack or zone (`client.rack`) for rack-aware assignors. Default `None`.
    pub rack: Option<String>,
    /// The most total task weight this worker accepts (capacity-aware assignors). Default
    /// `None` (no limit). Lower it on smaller machines.
    pub capacity: Option<u64>,
    /// The group membership: where Kafka is (`member.cluster`) and how to be a member
    /// (`member.membership`: group id, timeouts, static membership). This is the coordinator's
    /// own [`MemberConfig`], handed to the member as is. Defaults are Kafka Connect's, with
    /// client id `"kroupier-worker"`, the join gate on (`await_revocation`, which the worker
    /// needs: revoked tasks stop before the member rejoins), and no client-side minimum session
    /// timeout (`min_session_timeout` zero): the broker checks its own
    /// `group.min.session.timeout.ms` and its error names it. Set `min_session_timeout` to the
    /// broker's value to fail at build time instead.
    pub member: MemberConfig,
    /// How tasks are stopped and restarted.
    pub tasks: TasksConfig,
    /// The status HTTP API.
    pub status: StatusConfig,
    /// Kafka security properties (`security.protocol`, `sasl.*`, `ssl.*`) as read from client
    /// properties, kept until `apply_security_properties`
    /// builds the one setting connections use, `member.cluster.security` (set that directly in
    /// code, e.g. for an OAUTHBEARER token provider).
    pub(crate) security: SecurityProperties,
}

/// How the worker stops and restarts its tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksConfig {
    /// How long a revoked task may take to return before it is aborted. Default 5 s (Kafka
    /// Connect's `task.shutdown.graceful.timeout.ms`). Longer lets tasks flush; the stop must
    /// fit in the join gate (`rebalance_timeout − self-fencing margin`), and a rebalance lasts
    /// as long as the slowest stop.
    pub graceful_stop_timeout: Duration,
    /// How long to wait for an aborted task to unwind. Default `None` = derived:
    /// `min(1 s, self-fencing margin / 2)`, so a lost worker stops its tasks before the group
    /// may hand them to another. Set it only to shorten it; it must stay below the margin.
    pub abort_timeout: Option<Duration>,
    /// Restarts of failed tasks.
    pub restart: RestartPolicy,
    /// The task store: tasks added, changed, paused and deleted at run time, kept in a
    /// compacted Kafka topic. Off by default.
    pub store: TaskStoreConfig,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            graceful_stop_timeout: Duration::from_secs(5),
            abort_timeout: None,
            restart: RestartPolicy::default(),
            store: TaskStoreConfig::default(),
        }
    }
}

/// The task store (see [`store`](crate::store)): when enabled, the worker runs the tasks
/// defined in code *and* those of the store's topic, and follows the store's changes as they
/// land (puts and deletes move tasks with a rebalance; pause, resume, config changes and
/// restarts are handled by the task's owner alone).
///
/// A store task with the id of a task defined in code replaces it: the store is what an
/// operator changes at run time, so it has the last word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStoreConfig {
    /// Whether the worker reads (and, on first use, creates) the store's topic
    /// (`tasks.store.enabled`). Default `false`: no topic appears for groups that do not use
    /// the store.
    pub enabled: bool,
    /// The topic (`tasks.store.topic`). Default `None`: `kroupier-tasks-<group id>`
    /// ([`tasks_topic`](crate::store::tasks_topic)); a group id with characters Kafka refuses
    /// in topic names needs it set.
    pub topic: Option<String>,
    /// The checkpoint topic (`tasks.checkpoint.topic`), where tasks' checkpoints go (see
    /// [`checkpoint`](crate::checkpoint)). Default `None`: `kroupier-checkpoints-<group id>`
    /// ([`checkpoints_topic`](crate::store::checkpoints_topic)).
    pub checkpoint_topic: Option<String>,
    /// What the transactional ids of exactly-once tasks start with
    /// (`tasks.transactional.id.prefix`); a task's id is this prefix and its task id (see
    /// [`TaskContext::exactly_once`](crate::TaskContext::exactly_once)). Default `None`:
    /// `kroupier-<group id>-`, so that the same task of the same group always has the same
    /// id, whichever worker runs it, and two groups never share one. Set it to grant ACLs by
    /// prefix.
    pub transactional_id_prefix: Option<String>,
}

/// Where the status API listens, and who may use it.
///
/// Access rule: without a [`token`](Self::token) anyone who reaches the address may use every
/// route. With one, writes (any method but `GET` and `HEAD`, e.g. `POST /tasks/{id}/restart`)
/// need `Authorization: Bearer <token>` and are answered 401 without it; reads (`/status`,
/// `/metrics`) need it too when [`protect_reads`](Self::protect_reads) is set. `/healthz` and
/// `/readyz` stay open, so probes need no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusConfig {
    /// The address. Default `Some(127.0.0.1:0)`: loopback, a free port picked by the OS (logged
    /// and given by [`WorkerHandle::status_addr`](crate::WorkerHandle::status_addr)), so that
    /// several workers run on one machine. Set a fixed port for scrapers and probes; `None`
    /// disables the API. Bind to a non-loopback address only with a token (and TLS): the API
    /// can restart tasks.
    pub addr: Option<SocketAddr>,
    /// The `host:port` peers and tools use to reach the status API, when it differs from
    /// [`addr`](Self::addr) (NAT, containers, a proxy in front), like Kafka's
    /// `advertised.listeners` (`kroupier.status.advertised.address`). It is what this worker
    /// advertises in its member metadata: its peers' fast-failover links and the leader's
    /// liveness check connect there, and a connection refused *there* proves this worker gone:
    /// whatever is in front must refuse only when the worker is, or turn
    /// [`fast_failover`](Self::fast_failover) off. Default `None`: the bound address.
    pub advertised_addr: Option<String>,
    /// The bearer token writes need (`kroupier.status.token`). Default `None`: no token. Never
    /// shown by `Debug` or in logs.
    pub token: Option<Secret>,
    /// Whether reads (`/status`, `/metrics`) need the token too
    /// (`kroupier.status.token.protect.reads`). Default `false`: scrapers need no secret, but
    /// anyone who reaches the address sees task ids and errors.
    pub protect_reads: bool,
    /// A PEM file with the certificate chain to serve HTTPS with
    /// (`kroupier.status.tls.certificate`); needs [`tls_key`](Self::tls_key). Default `None`:
    /// plain HTTP, where a token crosses the network in the clear.
    pub tls_certificate: Option<PathBuf>,
    /// A PEM file with the certificate's private key, unencrypted (`kroupier.status.tls.key`).
    /// Default `None`.
    pub tls_key: Option<PathBuf>,
    /// Fast failover (`kroupier.failover.fast`): watch the peers' status APIs, remove a peer
    /// whose process provably ended (its port refuses connections) at once, and tell the peers
    /// to rejoin when a rebalance starts instead of waiting for their next heartbeat. Default
    /// `true`: a crashed worker's tasks run elsewhere in about a rebalance's round trips, not
    /// after its session timeout; a paused, partitioned or slow worker still waits for its
    /// session (docs/reliability.md). Needs the status API ([`addr`](Self::addr)).
    pub fast_failover: bool,
}

impl Default for StatusConfig {
    fn default() -> Self {
        StatusConfig {
            addr: Some(DEFAULT_STATUS_ADDR),
            advertised_addr: None,
            token: None,
            protect_reads: false,
            tls_certificate: None,
            tls_key: None,
            fast_failover: true,
        }
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        let mut member = MemberConfig::new("127.0.0.1:9092", "kroupier");
        "kroupier-worker".clone_into(&mut member.cluster.connection.client_id);
        // Revoked tasks stop before this worker rejoins (the worker loop acknowledges).
        member.membership.await_revocation = true;
        // The broker enforces its own session bounds; a client-side guess of them only refuses
        // sessions the broker would take.
        member.membership.min_session_timeout = Duration::ZERO;
        WorkerConfig {
            worker_id: format!("worker-{}", std::process::id()),
            rack: None,
            capacity: None,
            member,
            tasks: TasksConfig::default(),
            status: StatusConfig::default(),
            security: SecurityProperties::default(),
        }
    }
}

impl WorkerConfig {
    /// The defaults, for `group_id`.
    pub fn new(group_id: impl Into<String>) -> Self {
        let mut config = Self::default();
        config.member.membership.group_id = group_id.into();
        config
    }

    /// The self-fencing margin in effect: the configured one, or
    /// `max(heartbeat_interval, session_timeout / 10)`.
    pub(crate) fn self_fence_margin(&self) -> Duration {
        self.member.membership.effective_self_fence_margin()
    }

    /// The abort timeout in effect: the configured one, or `min(1 s, self-fencing margin / 2)`.
    pub fn abort_timeout(&self) -> Duration {
        self.tasks
            .abort_timeout
            .unwrap_or_else(|| MAX_DERIVED_ABORT_TIMEOUT.min(self.self_fence_margin() / 2))
    }

    /// The longest a revoked task takes to stop: graceful stop timeout + abort timeout.
    pub(crate) fn stop_bound(&self) -> Duration {
        self.tasks.graceful_stop_timeout + self.abort_timeout()
    }

    /// The supervisor's part of the config, with the derived values resolved.
    pub(crate) fn supervisor(&self) -> SupervisorConfig {
        SupervisorConfig {
            graceful_stop_timeout: self.tasks.graceful_stop_timeout,
            abort_timeout: self.abort_timeout(),
            restart: self.tasks.restart.clone(),
        }
    }

    /// Checks every field and the rules between them. Each rule is checked in one place: the
    /// membership's own rules (group id, `group.instance.id`, timeouts) by
    /// [`MemberConfig::validate`], the worker's here.
    ///
    /// # Errors
    /// The first rule that fails: [`InvalidConfig::field`] is the field's path in this struct
    /// (`member.membership.session_timeout`, `tasks.abort_timeout`), and the reason says what
    /// to set.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.worker_id.is_empty() {
            return Err(InvalidConfig::new(
                "worker_id",
                "must not be empty; use the host or pod name",
            ));
        }
        if self.member.cluster.connection.client_id.is_empty() {
            return Err(InvalidConfig::new(
                "member.cluster.connection.client_id",
                "must not be empty; name the application (client.id)",
            ));
        }
        self.member.validate().map_err(member_error)?;
        if self.status.tls_certificate.is_some() != self.status.tls_key.is_some() {
            return Err(InvalidConfig::new(
                "status.tls_certificate",
                "and status.tls_key go together: set both (kroupier.status.tls.certificate and \
                 kroupier.status.tls.key) to serve HTTPS, or neither",
            ));
        }
        if let Some(advertised) = &self.status.advertised_addr {
            advertised::check(advertised)
                .map_err(|reason| InvalidConfig::new("status.advertised_addr", reason))?;
        }
        if self.status.protect_reads && self.status.token.is_none() {
            return Err(InvalidConfig::new(
                "status.protect_reads",
                "needs a token to protect the reads with: set status.token \
                 (kroupier.status.token)",
            ));
        }
        if !self.member.membership.await_revocation {
            return Err(InvalidConfig::new(
                "member.membership.await_revocation",
                "must be true for a worker: revoked tasks stop before it rejoins, so no task \
                 runs on two workers at once",
            ));
        }
        let margin = self.self_fence_margin();
        let abort = self.abort_timeout();
        if abort >= margin {
            return Err(InvalidConfig::new(
                "tasks.abort_timeout",
                format!(
                    "{abort:?} must be below the self-fencing margin {margin:?}, so that a lost \
                     worker stops its tasks before others may start them; leave it unset to \
                     derive it (half the margin, at most 1 s)"
                ),
            ));
        }
        // Revoked tasks must be stopped before the member rejoins; the join gate holds the
        // JoinGroup for at most `rebalance_timeout − margin`, so the worst-case stop must fit.
        let gate = self.member.membership.revocation_bound();
        if self.stop_bound() >= gate {
            return Err(InvalidConfig::new(
                "tasks.graceful_stop_timeout",
                format!(
                    "{:?} plus the abort timeout {abort:?} must stay below the rebalance timeout \
                     {:?} minus the self-fencing margin {margin:?}, or the member rejoins while \
                     revoked tasks are still stopping; raise \
                     member.membership.rebalance_timeout or shorten the stop",
                    self.tasks.graceful_stop_timeout, self.member.membership.rebalance_timeout
                ),
            ));
        }
        self.tasks.restart.validate()
    }
}

/// The membership's (or cluster's) own error, with the path of the field in [`WorkerConfig`].
fn member_error(error: MemberError) -> InvalidConfig {
    let field = match &error {
        MemberError::InvalidConfig(error) => member_field(error.field()),
        _ => "member",
    };
    InvalidConfig::new(field, error.to_string())
}

/// The path of a field [`ConfigError::field`](kroupier_coordinator::membership::ConfigError::field)
/// names: the membership's, or the cluster's (the request timeout and retry backoff among them).
fn member_field(field: &str) -> &'static str {
    match field {
        "group_id" => "member.membership.group_id",
        "group_instance_id" => "member.membership.group_instance_id",
        "session_timeout" => "member.membership.session_timeout",
        "heartbeat_interval" => "member.membership.heartbeat_interval",
        "rebalance_timeout" => "member.membership.rebalance_timeout",
        "retry_backoff" => "member.cluster.retry_backoff",
        "retry_backoff_max" => "member.cluster.retry_backoff_max",
        "request_timeout" => "member.cluster.connection.request_timeout",
        "bootstrap_servers" => "member.cluster.bootstrap_servers",
        "client_id" => "member.cluster.connection.client_id",
        "connect_timeout" => "member.cluster.connection.connect_timeout",
        "reconnect_backoff_max" => "member.cluster.reconnect_backoff_max",
        "reconnect_backoff/retry_backoff"
        | "coordinator_lookup_timeout"
        | "security"
        | "cluster" => "member.cluster",
        _ => "member.membership",
    }
}
