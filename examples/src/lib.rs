//! Examples of kroupier. Each binary in `src/bin/` is a program a user can copy.
//!
//! The library installs no signal handler; [`os_signals`] is how these binaries wire SIGTERM and
//! ctrl-c to it, under the two-signal rule of `kroupier::worker::shutdown`.

pub mod beat;

use futures::Stream;

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

/// Completes at the first SIGTERM or ctrl-c (for programs with no graceful stop to cut short).
pub async fn terminated() {
    use futures::StreamExt;
    let _ = os_signals().next().await;
}
