//! Examples of kroupier. Each binary in `src/bin/` is a program a user can copy.
//!
//! The library installs no signal handler; [`os_signals`] is how these binaries wire SIGTERM and
//! ctrl-c to it, under the two-signal rule of `kroupier::worker::shutdown`.
//!
//! Each binary takes `--command-config FILE`, Kafka client properties (`security.protocol`,
//! `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`, ...) as Kafka's own tools
//! do, read by [`command_config`].

pub mod beat;
pub mod consumer;
pub mod member;
pub mod single_writer;

use std::path::Path;

use futures::Stream;
use kroupier::worker::WorkerConfig;

/// The worker configuration of a `--command-config` file (the defaults without one), read by
/// [`WorkerConfig::from_properties_file`]: the keys of
/// [`kroupier::worker::config`](kroupier::worker::config#kafka-client-properties).
///
/// # Errors
/// A message for stderr naming the file and the key at fault (never a secret's value); the
/// binaries exit 2 with it.
pub fn command_config(path: Option<&Path>) -> Result<WorkerConfig, String> {
    match path {
        None => Ok(WorkerConfig::default()),
        Some(path) => WorkerConfig::from_properties_file(path)
            .map_err(|e| format!("--command-config {}: {e}", path.display())),
    }
}

/// SIGTERM and ctrl-c (SIGINT), one item per signal, for
/// [`two_signals`](kroupier::worker::shutdown::two_signals).
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
