//! SIGTERM and ctrl-c: the OS side of shutdown, which the libraries leave to this binary.

use std::io;

use futures::{Stream, StreamExt};

/// SIGINT (ctrl-c) and, on Unix, SIGTERM, one item per signal, for
/// [`two_signals`](kroupier_worker::shutdown::two_signals). The handlers are installed by this
/// call, so a signal that comes before the first poll is not lost.
///
/// # Errors
/// When the SIGTERM handler cannot be installed.
pub(crate) fn signals() -> io::Result<impl Stream<Item = ()> + Unpin> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(not(unix))]
    let term = ();
    Ok(Box::pin(futures::stream::unfold(
        term,
        |mut term| async move {
            #[cfg(unix)]
            {
                tokio::select! {
                    result = tokio::signal::ctrl_c() => result.ok()?,
                    _ = term.recv() => {}
                }
            }
            #[cfg(not(unix))]
            tokio::signal::ctrl_c().await.ok()?;
            Some(((), term))
        },
    )))
}

/// Returns when the process gets SIGINT (ctrl-c) or, on Unix, SIGTERM.
///
/// # Errors
/// When the signal handlers cannot be installed.
pub(crate) async fn terminated() -> io::Result<()> {
    let mut signals = signals()?;
    match signals.next().await {
        Some(()) => Ok(()),
        None => Err(io::Error::other("cannot listen for ctrl-c")),
    }
}
