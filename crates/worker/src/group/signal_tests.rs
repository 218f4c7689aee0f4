//! The two-signal rule of `until_signal`, on paused time with signals from a channel.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{SignalSource, WorkerError, WorkerExit, until_signals};

struct Channel(mpsc::UnboundedReceiver<()>);

impl SignalSource for Channel {
    async fn next(&mut self) {
        if self.0.recv().await.is_none() {
            std::future::pending::<()>().await
        }
    }
}

/// A worker whose graceful shutdown takes `stop` once `shutdown` is cancelled.
async fn worker(shutdown: CancellationToken, stop: Duration) -> Result<(), WorkerError> {
    shutdown.cancelled().await;
    tokio::time::sleep(stop).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn one_signal_stops_gracefully() {
    let shutdown = CancellationToken::new();
    let (tx, rx) = mpsc::unbounded_channel();
    tx.send(()).unwrap();
    let start = Instant::now();
    let exit = until_signals(
        worker(shutdown.clone(), Duration::from_secs(2)),
        shutdown.clone(),
        &mut Channel(rx),
    )
    .await;
    assert!(matches!(exit, Ok(WorkerExit::Shutdown)), "{exit:?}");
    assert!(shutdown.is_cancelled());
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "waited for the graceful stop"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_signal_exits_at_once() {
    let shutdown = CancellationToken::new();
    let (tx, rx) = mpsc::unbounded_channel();
    tx.send(()).unwrap();
    let start = Instant::now();
    let second = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.send(()).unwrap();
        tx
    });
    let exit = until_signals(
        worker(shutdown.clone(), Duration::from_secs(60)),
        shutdown.clone(),
        &mut Channel(rx),
    )
    .await;
    assert!(matches!(exit, Ok(WorkerExit::Interrupted)), "{exit:?}");
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(300),
        "did not wait for the stop"
    );
    drop(second.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_ends_by_itself_is_reported_as_left() {
    let shutdown = CancellationToken::new();
    let (_tx, rx) = mpsc::unbounded_channel();
    let exit = until_signals(
        async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(())
        },
        shutdown.clone(),
        &mut Channel(rx),
    )
    .await;
    assert!(matches!(exit, Ok(WorkerExit::Left)), "{exit:?}");
    assert!(!shutdown.is_cancelled());
}
