//! `kroupier coordinator`: run the embedded coordinator (Kafka's group coordinator, in one
//! process, on one port) until ctrl-c or SIGTERM.
//!
//! Prints `bootstrap=HOST:PORT` once listening, like `scripts/kafka start`; point workers,
//! `kroupier describe` and `kroupier watch` at it. The default `127.0.0.1:9092` is Kafka's own
//! default port, so tools that assume a local Kafka find it; `--listen 127.0.0.1:0` picks a
//! free port.
//!
//! With `--ssl-cert` the listener speaks TLS (clients set `security.protocol=SSL` and trust the
//! CA that signed it with `ssl.truststore.location`); with `--ssl-client-ca` as well, every
//! client must present a certificate signed by that CA (mutual TLS; clients set
//! `ssl.keystore.location`). Files are PEM, as Kafka's `ssl.keystore.type=PEM`.
//!
//! Topics that clients create (the task store, checkpoints) live in memory unless `--data-dir`
//! names a directory: then their records survive a restart of the coordinator (group state
//! does not; members rejoin).

use std::error::Error;
use std::path::PathBuf;
use std::time::Duration;

use kroupier_embedded::{EmbeddedCoordinator, EmbeddedError, EmbeddedErrorKind, ServerTls};

use crate::command_config::UsageError;

/// Arguments of `kroupier coordinator`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Where to listen, `HOST:PORT` (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: String,
    /// The smallest session timeout members may ask for (Kafka's
    /// `group.min.session.timeout.ms`, 6000 there); lower lets demos fail over faster.
    #[arg(long, default_value_t = 1_000)]
    min_session_timeout_ms: u64,
    /// The largest session timeout members may ask for (Kafka's
    /// `group.max.session.timeout.ms`).
    #[arg(long, default_value_t = 1_800_000)]
    max_session_timeout_ms: u64,
    /// How long a new group waits for more members before its first rebalance (Kafka's
    /// `group.initial.rebalance.delay.ms`, 3000 there).
    #[arg(long, default_value_t = 0)]
    initial_rebalance_delay_ms: u64,
    /// The largest rebalance timeout members may ask for; a JoinGroup above it is refused with
    /// INVALID_SESSION_TIMEOUT (Kafka has no such bound). Higher lets one member that never
    /// rejoins stall its whole group longer.
    #[arg(long, default_value_t = 1_800_000)]
    max_rebalance_timeout_ms: u64,
    /// How long a group stays once it has no members before it is deleted (Kafka deletes an
    /// empty group without offsets within `offsets.retention.check.interval.ms`, 600000).
    #[arg(long, default_value_t = 600_000)]
    empty_group_retention_ms: u64,
    /// How many groups may exist at once; a JoinGroup that would create one more is refused
    /// with POLICY_VIOLATION.
    #[arg(long, default_value_t = 10_000)]
    max_groups: usize,
    /// How many client connections may be open at once; one more is closed at once (Kafka's
    /// `max.connections`).
    #[arg(long, default_value_t = 1_000)]
    max_connections: usize,
    /// How long a connection may send no request before it is closed (Kafka's
    /// `connections.max.idle.ms`).
    #[arg(long, default_value_t = 600_000)]
    connections_max_idle_ms: u64,
    /// Keep topics and their records in this directory (created if missing) across restarts:
    /// one append-only, checksummed file per topic plus a topic catalogue; a damaged tail after
    /// a crash is truncated with a warning. Without it, topics live in memory only. One
    /// coordinator per directory.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The largest record batch a producer may send (Kafka's `message.max.bytes`; a topic's
    /// `max.message.bytes` overrides it); a bigger one is refused with MESSAGE_TOO_LARGE.
    #[arg(long, default_value_t = 1 << 20)]
    max_message_bytes: usize,
    /// How many topics may exist at once; CreateTopics for one more is refused with
    /// POLICY_VIOLATION (kroupier needs two per group; topics keep every record and cannot be
    /// deleted here).
    #[arg(long, default_value_t = 1_000)]
    max_topics: usize,
    /// Serve TLS with the PEM certificate chain in this file (leaf first); it must name the
    /// host clients connect to (127.0.0.1 by default) in its subjectAltNames.
    #[arg(long, value_name = "PEM")]
    ssl_cert: Option<PathBuf>,
    /// The unencrypted PEM private key of --ssl-cert. Default: the key in the --ssl-cert file
    /// (a PEM key store holding both, as Kafka's `ssl.keystore.location`).
    #[arg(long, value_name = "PEM", requires = "ssl_cert")]
    ssl_key: Option<PathBuf>,
    /// Require every client to present a certificate signed by a CA in this PEM file (mutual
    /// TLS, Kafka's `ssl.client.auth=required`).
    #[arg(long, value_name = "PEM", requires = "ssl_cert")]
    ssl_client_ca: Option<PathBuf>,
}

impl Args {
    /// The TLS settings the flags ask for, if any.
    fn tls(&self) -> Option<ServerTls> {
        let certificate = self.ssl_cert.clone()?;
        let key = self.ssl_key.clone().unwrap_or_else(|| certificate.clone());
        let tls = ServerTls::new(certificate, key);
        Some(match &self.ssl_client_ca {
            Some(ca) => tls.require_client_certificates(ca.clone()),
            None => tls,
        })
    }
}

/// Runs the command until ctrl-c or SIGTERM. Logs go to stderr, warnings and errors by default
/// (`RUST_LOG` sets the level): a damaged data file truncated at start, connections refused
/// over the limit, bad requests.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    crate::logs::init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut builder = EmbeddedCoordinator::builder();
        if let Some(tls) = args.tls() {
            builder = builder.tls(tls);
        }
        if let Some(dir) = &args.data_dir {
            builder = builder.data_dir(dir.clone());
        }
        // A Produce carrying a batch just over the limit must still fit in a request frame, to
        // be answered MESSAGE_TOO_LARGE instead of having its connection closed.
        let frame = (2 << 20).max(args.max_message_bytes.saturating_add(1 << 20));
        let coordinator = builder
            .min_session_timeout(Duration::from_millis(args.min_session_timeout_ms))
            .max_session_timeout(Duration::from_millis(args.max_session_timeout_ms))
            .initial_rebalance_delay(Duration::from_millis(args.initial_rebalance_delay_ms))
            .max_rebalance_timeout(Duration::from_millis(args.max_rebalance_timeout_ms))
            .empty_group_retention(Duration::from_millis(args.empty_group_retention_ms))
            .max_groups(args.max_groups)
            .max_connections(args.max_connections)
            .connections_max_idle(Duration::from_millis(args.connections_max_idle_ms))
            .max_message_bytes(args.max_message_bytes)
            .max_topics(args.max_topics)
            .max_request_frame(frame)
            .bind(args.listen.as_str())
            .await
            .map_err(usage_or_failure)?;
        println!("bootstrap={}", coordinator.bootstrap());
        crate::signal::terminated().await?;
        coordinator.shutdown().await;
        Ok(())
    })
}

/// A start that failed on the flags themselves (settings that contradict each other, a TLS file
/// that does not load, a `--listen` that is no address) is bad input, exit 2; the rest (a port in
/// use, a data directory that cannot be written) is a failure, exit 1.
fn usage_or_failure(error: EmbeddedError) -> Box<dyn Error> {
    let io_kind = error
        .source()
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    match error.kind() {
        EmbeddedErrorKind::Config | EmbeddedErrorKind::Tls => UsageError(error.to_string()).into(),
        EmbeddedErrorKind::Bind if io_kind == Some(std::io::ErrorKind::InvalidInput) => {
            UsageError(error.to_string()).into()
        }
        _ => error.into(),
    }
}
