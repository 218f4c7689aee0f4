//! The membership driver (JoinGroup, SyncGroup, heartbeats) on a thread of its own.
//!
//! A worker starting 300,000 tasks queues 300,000 first polls on the application's tokio
//! runtime; a heartbeat due meanwhile waits behind all of them, and on a busy machine that can
//! be longer than the session timeout: the worker self-fences while it is perfectly alive. A
//! task that blocks a runtime thread (a synchronous call where an `.await` belongs) does the
//! same. Kafka's Java clients run their heartbeat on a thread of its own for this reason; so
//! does kroupier: the driver runs on a single-threaded tokio runtime in its own thread, with
//! its own timers and its own connections to the coordinator, whatever the tasks do.
//!
//! The thread lives as long as the driver, and no longer than the runtime that spawned it: when
//! that runtime shuts down (a test ending, an application returning from `main` without
//! shutting the worker down), the driver is dropped as a spawned task would have been.

use std::future::Future;

/// Runs `driver` on a new thread named `kroupier-membership` with a single-threaded tokio
/// runtime, until it completes or the calling runtime shuts down.
///
/// # Errors
/// The error building that runtime or starting the thread (out of resources).
pub(crate) fn spawn<E: Send + 'static>(
    driver: impl Future<Output = Result<(), E>> + Send + 'static,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("kroupier-membership")
        .build()?;
    // Dropped with the calling runtime's tasks when that runtime shuts down.
    let (alive, caller_gone) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _alive = alive;
        std::future::pending::<()>().await;
    });
    std::thread::Builder::new()
        .name("kroupier-membership".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = driver => {}
                    _ = caller_gone => {}
                }
            });
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_driver_keeps_time_while_the_callers_runtime_is_blocked() {
        let caller = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (beats, mut seen) = tokio::sync::mpsc::unbounded_channel();
        caller.block_on(async {
            spawn(async move {
                let mut ticks = tokio::time::interval(Duration::from_millis(10));
                for _ in 0..20 {
                    ticks.tick().await;
                    let _ = beats.send(std::time::Instant::now());
                }
                Ok::<(), ()>(())
            })
            .unwrap();
            // The caller's only thread is busy (as with a flood of task starts): the driver's
            // timer goes on beating on its own thread.
            std::thread::sleep(Duration::from_millis(300));
        });
        let mut count = 0;
        while seen.try_recv().is_ok() {
            count += 1;
        }
        assert!(
            count >= 10,
            "only {count} beats while the caller was blocked"
        );
    }

    #[test]
    fn the_driver_ends_with_the_callers_runtime() {
        let caller = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (ended, done) = std::sync::mpsc::channel::<()>();
        caller.block_on(async {
            spawn(async move {
                // Dropped (and `ended` with it) when the caller's runtime shuts down.
                let _ended = ended;
                std::future::pending::<()>().await;
                Ok::<(), ()>(())
            })
            .unwrap();
            tokio::task::yield_now().await;
        });
        drop(caller);
        assert_eq!(
            done.recv_timeout(Duration::from_secs(5)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
            "the driver was dropped"
        );
    }
}
