//! # Time that keeps counting while the host is suspended
//!
//! Leases are measured on [`Instant`] (tokio's too), which is Linux's
//! `CLOCK_MONOTONIC`: it stops while a VM or a laptop is suspended. The broker's clock does not,
//! so a worker resumed after longer than its session would find its lease still valid while the
//! group has long given its work to others. `CLOCK_BOOTTIME` counts the suspended time too; the
//! difference between the two clocks grows by exactly the time spent suspended.
//!
//! kroupier therefore measures leases on its own timeline, [`now`]: the monotonic clock plus
//! the suspended time. The membership driver feeds it to the state machine, and task lease
//! checks compare against it, so a deadline passes during a suspend as it does for the broker.
//! Timers still sleep on the monotonic clock ([`to_monotonic`]); after a resume they fire late,
//! but every check made on waking reads the true time. Where `CLOCK_BOOTTIME` does not exist
//! (other systems), nothing is added: leases then assume the host is never suspended, as
//! docs/reliability.md states.
//!
//! The module's example is its first unit test, `the_module_example`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Suspends shorter than this are not counted: reading two clocks one after the other leaves a
/// few microseconds of noise, and a lease check must be deterministic on tokio's paused time.
const NOISE: Duration = Duration::from_millis(10);

/// The suspended-time counter when the process first asked.
static START: OnceLock<Duration> = OnceLock::new();

/// Suspended time simulated by [`simulate_suspend`], in nanoseconds.
static SIMULATED: AtomicU64 = AtomicU64::new(0);

/// How long the host has been suspended since this process first asked (0 below the noise).
pub fn suspended() -> Duration {
    let total = suspended_total();
    let start = *START.get_or_init(|| total);
    let real = total.saturating_sub(start);
    let real = if real < NOISE { Duration::ZERO } else { real };
    real + Duration::from_nanos(SIMULATED.load(Ordering::Relaxed))
}

/// The lease timeline's "now": the monotonic clock plus the time the host was suspended. Every
/// lease deadline, self-fencing deadline and send time kroupier compares is on this timeline,
/// so a suspend counts as time passed, as it does for the broker. Equal to
/// [`Instant::now`] (tokio's, so paused time in tests works) on a host that never slept.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std() + suspended()
}

/// The monotonic instant to sleep until for a lease-timeline `deadline`: tokio's timers run on
/// the monotonic clock, which did not count the suspended time.
pub fn to_monotonic(deadline: Instant) -> Instant {
    deadline.checked_sub(suspended()).unwrap_or(deadline)
}

/// Adds `duration` to the suspended time, as if the host had just slept that long. For tests of
/// what a suspend does to leases; it affects the whole process, so call it only from a test
/// binary of its own.
#[doc(hidden)]
pub fn simulate_suspend(duration: Duration) {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    SIMULATED.fetch_add(nanos, Ordering::Relaxed);
}

/// `CLOCK_BOOTTIME − CLOCK_MONOTONIC` (monotonic read first, so the reading between the two
/// calls only ever adds a few microseconds, which makes a lease check stricter, never looser).
#[cfg(target_os = "linux")]
fn suspended_total() -> Duration {
    use rustix::time::{ClockId, clock_gettime};
    let to_duration = |t: rustix::time::Timespec| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_nsec).unwrap_or(0),
        )
    };
    let monotonic = to_duration(clock_gettime(ClockId::Monotonic));
    let boottime = to_duration(clock_gettime(ClockId::Boottime));
    boottime.saturating_sub(monotonic)
}

#[cfg(not(target_os = "linux"))]
fn suspended_total() -> Duration {
    Duration::ZERO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_does_not_run_while_the_host_is_awake() {
        let before = suspended_total();
        std::thread::sleep(Duration::from_millis(20));
        assert!(suspended_total().saturating_sub(before) < Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_lease_timeline_is_tokio_time_on_a_host_that_never_slept() {
        let a = now();
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(now() - a, Duration::from_secs(3));
        assert_eq!(to_monotonic(a), a);
    }
}

#[cfg(test)]
mod module_example {
    /// What the module's documentation shows: kept as a test, since the module is public only
    /// with the `unstable` feature.
    #[test]
    fn the_module_example() {
        use crate::clock;

        let deadline = clock::now() + std::time::Duration::from_secs(7);
        // A lease check: valid while the lease timeline has not reached the deadline.
        assert!(clock::now() < deadline);
    }
}
