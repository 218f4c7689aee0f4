//! Capped exponential backoff with jitter, as Kafka's clients use between reconnects and retries.
//!
//! The one backoff computation of kroupier: broker reconnects and request retries
//! ([`connection`](crate::connection)), the membership's retry delays (its error table names a
//! `RetryBackoff` policy; the sans-IO machine draws no random
//! numbers, so it takes [`base_delay`] without jitter) and the worker's task restarts
//! (`kroupier_worker::RestartPolicy`).
//!
//! The n-th delay (from 0) is `initial × 2ⁿ`, capped at `max`, times a random factor in
//! `[1 − jitter, 1 + jitter]`, and capped at `max` again, so `max` is a hard bound. The jitter
//! spreads out clients that failed together so they do not retry in lockstep. The random number
//! generator is a type parameter so tests can seed it.
//!
//! The module's example is its first unit test, `the_module_example`.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The default jitter: ±20 %, as Kafka's `ExponentialBackoff`.
pub const DEFAULT_JITTER: f64 = 0.2;

/// The delay before attempt `attempt` (from 0) without jitter: `initial × 2^attempt`, capped at
/// `max`.
pub fn base_delay(initial: Duration, max: Duration, attempt: u32) -> Duration {
    initial
        .checked_mul(1u32 << attempt.min(31))
        .unwrap_or(max)
        .min(max)
}

/// Capped exponential backoff with jitter.
#[derive(Debug, Clone)]
pub struct Backoff<R = StdRng> {
    initial: Duration,
    max: Duration,
    jitter: f64,
    attempts: u32,
    rng: R,
}

impl Backoff<StdRng> {
    /// A backoff from `initial` up to `max`, with ±20 % jitter, seeded from the OS.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self::with_rng(initial, max, StdRng::from_os_rng())
    }
}

impl<R: Rng> Backoff<R> {
    /// A backoff from `initial` up to `max`, with ±20 % jitter drawn from `rng`.
    pub fn with_rng(initial: Duration, max: Duration, rng: R) -> Self {
        Self {
            initial,
            max: max.max(initial),
            jitter: DEFAULT_JITTER,
            attempts: 0,
            rng,
        }
    }

    /// Sets the jitter fraction (clamped to `0.0..=1.0`; 0 = none).
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// The delay before the next attempt; each call counts one attempt.
    pub fn next_delay(&mut self) -> Duration {
        let attempt = self.attempts;
        self.attempts = self.attempts.saturating_add(1);
        self.delay(attempt)
    }

    /// The delay before attempt `attempt` (from 0), jitter included, without counting it: for a
    /// caller that keeps its own count (a task's restarts).
    pub fn delay(&mut self, attempt: u32) -> Duration {
        let base = base_delay(self.initial, self.max, attempt);
        let factor = if self.jitter > 0.0 {
            self.rng.random_range(1.0 - self.jitter..=1.0 + self.jitter)
        } else {
            1.0
        };
        base.mul_f64(factor).min(self.max)
    }

    /// Starts over from `initial` (after a success).
    pub fn reset(&mut self) {
        self.attempts = 0;
    }

    /// How many delays were taken since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: u64) -> Backoff {
        Backoff::with_rng(
            Duration::from_millis(50),
            Duration::from_secs(1),
            StdRng::seed_from_u64(seed),
        )
    }

    #[test]
    fn delays_double_within_the_jitter_and_stop_at_the_cap() {
        let mut backoff = seeded(1);
        for n in 0..12u32 {
            let base = (50.0 * 2f64.powi(n as i32)).min(1000.0);
            let ms = backoff.next_delay().as_secs_f64() * 1000.0;
            assert!(
                ms >= base * 0.8 - 1e-6 && ms <= (base * 1.2).min(1000.0) + 1e-6,
                "attempt {n}: {ms} ms for base {base}"
            );
        }
        assert_eq!(backoff.attempts(), 12);
    }

    #[test]
    fn the_same_seed_gives_the_same_delays_and_jitter_varies_them() {
        let a: Vec<_> = (0..5)
            .scan(seeded(9), |b, _| Some(b.next_delay()))
            .collect();
        let b: Vec<_> = (0..5)
            .scan(seeded(9), |b, _| Some(b.next_delay()))
            .collect();
        let c: Vec<_> = (0..5)
            .scan(seeded(10), |b, _| Some(b.next_delay()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn reset_starts_over_and_no_jitter_is_exact() {
        let mut backoff = seeded(3).with_jitter(0.0);
        let delays: Vec<_> = (0..7).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [50, 100, 200, 400, 800, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), Duration::from_millis(50));
    }

    #[test]
    fn many_attempts_never_overflow() {
        let mut backoff = seeded(4);
        for _ in 0..100 {
            assert!(backoff.next_delay() <= Duration::from_secs(1));
        }
    }
}

#[cfg(test)]
mod module_example {
    /// What the module's documentation shows: kept as a test, since the module is public only
    /// with the `unstable` feature.
    #[test]
    fn the_module_example() {
        use crate::backoff::Backoff;
        use rand::{SeedableRng, rngs::StdRng};
        use std::time::Duration;

        let mut backoff = Backoff::with_rng(
            Duration::from_millis(100),
            Duration::from_secs(1),
            StdRng::seed_from_u64(7),
        );
        let first = backoff.next_delay();
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        backoff.reset();
        assert_eq!(backoff.attempts(), 0);
    }
}
