//! Examples of kroupier. Each binary in `src/bin/` is a program a user can copy.
//!
//! The library installs no signal handler; [`os_signals`] is how these binaries wire SIGTERM and
//! ctrl-c to it, under the two-signal rule of `kroupier::shutdown`.
//!
//! Each binary takes `--command-config FILE`, Kafka client properties (`security.protocol`,
//! `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`, ...) as Kafka's own tools
//! do, read by [`SessionArgs::worker_config`]: a flag given wins over the file's key, and the
//! file's key over the example's default.

pub mod beat;
pub mod consumer;
pub mod files;
pub mod member;
pub mod numbers;
pub mod single_writer;

use std::path::Path;
use std::time::Duration;

use futures::Stream;
use kroupier::WorkerConfig;

/// The examples' `session.timeout.ms` when neither `--session-timeout-ms` nor the
/// `--command-config` file sets it.
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The examples' `heartbeat.interval.ms` when neither `--heartbeat-interval-ms` nor the
/// `--command-config` file sets it.
const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

/// Kafka's session settings, as the examples take them. A flag wins when it is given; else the
/// `--command-config` file's key; else the example's default (as Kafka's own tools do: a flag
/// left out does not override the file).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Kafka's `session.timeout.ms`: how soon a dead member's work moves (default: the
    /// `--command-config` file's, else 10000).
    #[arg(long)]
    pub session_timeout_ms: Option<u64>,
    /// Kafka's `heartbeat.interval.ms`; about a third of the session timeout (default: the
    /// `--command-config` file's, else 3000).
    #[arg(long)]
    pub heartbeat_interval_ms: Option<u64>,
}

impl SessionArgs {
    /// The worker configuration: the examples' session defaults, then the keys of the
    /// `--command-config` file at `path` (any key of
    /// [`kroupier::WorkerConfig`](kroupier::WorkerConfig#kafka-client-properties)), then
    /// the session flags that were given.
    ///
    /// # Errors
    /// A message for stderr naming the file and the key at fault (never a secret's value); the
    /// binaries exit 2 with it.
    pub fn worker_config(&self, path: Option<&Path>) -> Result<WorkerConfig, String> {
        let mut config = WorkerConfig::default();
        let membership = &mut config.member.membership;
        membership.session_timeout = DEFAULT_SESSION_TIMEOUT;
        membership.heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL;
        if let Some(path) = path {
            config
                .set_properties_file(path)
                .map_err(|e| format!("--command-config {}: {e}", path.display()))?;
        }
        let membership = &mut config.member.membership;
        if let Some(ms) = self.session_timeout_ms {
            membership.session_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.heartbeat_interval_ms {
            membership.heartbeat_interval = Duration::from_millis(ms);
        }
        Ok(config)
    }
}

/// SIGTERM and ctrl-c (SIGINT), one item per signal, for
/// [`two_signals`](kroupier::shutdown::two_signals).
///
/// The handlers are installed when this is called, so a signal that comes before the first
/// poll is not lost. If SIGTERM cannot be listened for, only ctrl-c is (with a warning).
pub fn os_signals() -> impl Stream<Item = ()> + Unpin {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|error| eprintln!("cannot listen for SIGTERM: {error}"))
        .ok();
    #[cfg(not(unix))]
    let term: Option<()> = None;
    Box::pin(futures::stream::unfold(term, |mut term| async move {
        #[cfg(unix)]
        if let Some(signal) = term.as_mut() {
            tokio::select! {
                _ = signal.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return Some(((), term));
        }
        // Without a ctrl-c handler there is no signal to wait for: the stream ends.
        tokio::signal::ctrl_c().await.ok().map(|()| ((), term))
    }))
}

/// Logs to stderr, filtered by `RUST_LOG` (`warn` when unset): the examples' stdout is for
/// their JSON lines. Colours only when stderr is a terminal: a log file gets plain text.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
}

/// Completes at the first SIGTERM or ctrl-c (for programs with no graceful stop to cut short).
pub async fn terminated() {
    use futures::StreamExt;
    let _ = os_signals().next().await;
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kroupier-examples-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the test dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write the properties file");
        path
    }

    #[test]
    fn the_files_session_settings_win_over_the_defaults() {
        let path = file(
            "session.properties",
            "session.timeout.ms=500\nheartbeat.interval.ms=100\n",
        );
        let config = SessionArgs::default().worker_config(Some(&path)).unwrap();
        let membership = &config.member.membership;
        assert_eq!(membership.session_timeout, Duration::from_millis(500));
        assert_eq!(membership.heartbeat_interval, Duration::from_millis(100));
    }

    #[test]
    fn a_flag_given_wins_over_the_file() {
        let path = file("flags.properties", "session.timeout.ms=500\n");
        let flags = SessionArgs {
            session_timeout_ms: Some(6_000),
            heartbeat_interval_ms: None,
        };
        let config = flags.worker_config(Some(&path)).unwrap();
        let membership = &config.member.membership;
        assert_eq!(membership.session_timeout, Duration::from_secs(6));
        assert_eq!(membership.heartbeat_interval, DEFAULT_HEARTBEAT_INTERVAL);
    }

    #[test]
    fn without_flags_or_file_the_defaults_hold() {
        let config = SessionArgs::default().worker_config(None).unwrap();
        let membership = &config.member.membership;
        assert_eq!(membership.session_timeout, DEFAULT_SESSION_TIMEOUT);
        assert_eq!(membership.heartbeat_interval, DEFAULT_HEARTBEAT_INTERVAL);
    }
}
