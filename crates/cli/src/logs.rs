//! Where the long-running subcommands (`coordinator`, `worker`) log: stderr, filtered by
//! `RUST_LOG` (`warn` when unset), with colours only when stderr is a terminal, so that a log
//! file or a log collector gets plain text.

use std::io::IsTerminal;

/// Installs the log subscriber for this process.
pub(crate) fn init() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
}
