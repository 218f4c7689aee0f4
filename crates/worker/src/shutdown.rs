//! The two-signal rule for binaries: the first signal stops gracefully, a second one exits at
//! once.
//!
//! The library installs no signal handler: [`WorkerHandle::run_until`] takes any future as its
//! shutdown trigger (as axum's `with_graceful_shutdown` does), and the application decides what
//! ends it. [`two_signals`] is the usual policy of a service, apart from the OS: it takes any
//! stream of signals (SIGTERM and ctrl-c from `tokio::signal` in a binary, a channel in a test),
//! hands `run` a [`FirstSignal`] future, and returns [`Outcome::Interrupted`] when a second
//! signal comes before `run` has finished — an operator who presses ctrl-c twice means it.
//!
//! # Examples
//!
//! ```no_run
//! use kroupier_worker::shutdown::{Outcome, two_signals};
//! # async fn demo(worker: kroupier_worker::WorkerHandle) {
//! // In a binary: SIGTERM or ctrl-c, as a stream (here ctrl-c only).
//! let signals = Box::pin(futures::stream::unfold((), |()| async {
//!     let _ = tokio::signal::ctrl_c().await;
//!     Some(((), ()))
//! }));
//! match two_signals(signals, |first| worker.run_until(first)).await {
//!     Outcome::Finished(Ok(exit)) => println!("stopped: {exit:?}"),
//!     Outcome::Finished(Err(error)) => eprintln!("failed: {error}"),
//!     Outcome::Interrupted => std::process::exit(130),
//! }
//! # }
//! ```
//!
//! # Cancel safety
//!
//! Dropping the future of [`two_signals`] drops `run`'s future; for
//! [`WorkerHandle::run_until`] that leaves the worker running in the background, like a dropped
//! handle.
//!
//! [`WorkerHandle::run_until`]: crate::WorkerHandle::run_until

use std::fmt;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How [`two_signals`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<T> {
    /// `run` finished (by itself, or after the first signal): its output.
    Finished(T),
    /// A second signal came while `run` was still stopping: it was dropped unfinished. Exit at
    /// once (status 130 is the convention after ctrl-c).
    Interrupted,
}

/// Completes at the first signal [`two_signals`] sees; pass it as the shutdown trigger.
pub struct FirstSignal(Pin<Box<WaitForCancellationFutureOwned>>);

impl Future for FirstSignal {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for FirstSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FirstSignal")
    }
}

/// Runs `run(first_signal)` under the two-signal rule: the first item of `signals` completes
/// the [`FirstSignal`] future `run` was given (start a graceful stop), a second one returns
/// [`Outcome::Interrupted`] at once, dropping `run`. A stream that ends sends no more signals.
pub async fn two_signals<S, F, R>(mut signals: S, run: F) -> Outcome<R::Output>
where
    S: Stream + Unpin,
    F: FnOnce(FirstSignal) -> R,
    R: Future,
{
    let first = CancellationToken::new();
    let mut run = pin!(run(FirstSignal(Box::pin(first.clone().cancelled_owned()))));
    loop {
        tokio::select! {
            output = &mut run => return Outcome::Finished(output),
            signal = signals.next() => {
                if signal.is_none() {
                    // No more signals will come: only `run` can end this.
                    return Outcome::Finished(run.await);
                }
                if first.is_cancelled() {
                    tracing::warn!("second signal: exiting without waiting for the stop");
                    return Outcome::Interrupted;
                }
                tracing::info!("signal received: stopping gracefully (again to exit at once)");
                first.cancel();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The two-signal rule on paused time, with signals from a channel.

    use std::time::Duration;

    use futures::channel::mpsc;
    use tokio::time::Instant;

    use super::*;

    /// A worker whose graceful stop takes `stop` once `shutdown` completes.
    async fn worker(shutdown: FirstSignal, stop: Duration) -> &'static str {
        shutdown.await;
        tokio::time::sleep(stop).await;
        "stopped"
    }

    #[tokio::test(start_paused = true)]
    async fn one_signal_stops_gracefully() {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(()).unwrap();
        let start = Instant::now();
        let outcome = two_signals(rx, |first| worker(first, Duration::from_secs(2))).await;
        assert_eq!(outcome, Outcome::Finished("stopped"));
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(2),
            "waited for the graceful stop"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_signal_exits_at_once() {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(()).unwrap();
        let start = Instant::now();
        let second = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            tx.unbounded_send(()).unwrap();
            tx
        });
        let outcome = two_signals(rx, |first| worker(first, Duration::from_secs(60))).await;
        assert_eq!(outcome, Outcome::Interrupted);
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(300),
            "did not wait for the stop"
        );
        drop(second.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_that_ends_by_itself_is_finished_without_a_signal() {
        let (_tx, rx) = mpsc::unbounded::<()>();
        let start = Instant::now();
        let outcome = two_signals(rx, |_first| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            "left"
        })
        .await;
        assert_eq!(outcome, Outcome::Finished("left"));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn an_ended_stream_leaves_the_run_to_finish() {
        let (tx, rx) = mpsc::unbounded::<()>();
        drop(tx);
        let outcome = two_signals(rx, |_first| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "done"
        })
        .await;
        assert_eq!(outcome, Outcome::Finished("done"));
    }
}
