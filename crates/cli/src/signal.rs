//! Waiting for ctrl-c or SIGTERM.

use std::io;

/// Returns when the process gets SIGINT (ctrl-c) or, on Unix, SIGTERM.
///
/// # Errors
/// When the signal handlers cannot be installed.
pub async fn terminated() -> io::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
