//! Whether the member's requests reach Kafka, and when to say that they do not.
//!
//! Kafka's clients warn when a broker cannot be reached ("Connection to node -1 could not be
//! established. Broker may not be available."); a member that only retries would be silent for
//! as long as it runs. [`Reachability`] is the one place that decides: the driver feeds it every
//! request's outcome and wakes at [`poll_timeout`](Reachability::poll_timeout); once no request
//! has reached a broker for [`WARN_AFTER`], [`poll_warning`](Reachability::poll_warning) says so,
//! then again every [`WARN_EVERY`] while it lasts, and [`reached`](Reachability::reached) says
//! when it ended. Sans-IO: the caller passes `now`.

use std::time::{Duration, Instant};

/// How long requests may fail before the member warns: long enough for a retried request to
/// ride out a broker restart's first refusals, short enough to warn within 5 s of the start.
pub(crate) const WARN_AFTER: Duration = Duration::from_secs(3);

/// How often the warning repeats while no request reaches a broker.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(30);

/// What an operator should check when no broker can be used, whatever the error.
pub(crate) const WHAT_TO_CHECK: &str = "check the bootstrap servers (`bootstrap.servers`, \
     `--bootstrap`) and that `security.protocol` (and the TLS and SASL settings) matches the \
     broker's listener";

/// Tracks requests failing to reach any broker. See the [module guide](self).
#[derive(Debug, Default)]
pub(crate) struct Reachability {
    /// When the first failure since the last success came.
    failing_since: Option<Instant>,
    /// The last failure, as the connection layer explained it.
    last_error: String,
    /// When the member last warned about this outage.
    warned_at: Option<Instant>,
}

impl Reachability {
    /// A request failed without an answer from a broker (connection refused, TLS handshake cut,
    /// timeout) with `error`.
    pub(crate) fn failed(&mut self, now: Instant, error: String) {
        self.failing_since.get_or_insert(now);
        self.last_error = error;
    }

    /// A broker answered (whatever the answer). Returns how long the outage lasted when the
    /// member had warned about it, so that its end is said too.
    pub(crate) fn reached(&mut self, now: Instant) -> Option<Duration> {
        let since = self.failing_since.take()?;
        self.warned_at
            .take()
            .map(|_| now.saturating_duration_since(since))
    }

    /// When [`poll_warning`](Self::poll_warning) has something to say, if requests are failing.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let since = self.failing_since?;
        Some(match self.warned_at {
            None => since + WARN_AFTER,
            Some(warned) => warned + WARN_EVERY,
        })
    }

    /// A warning due at `now`: how long no request has reached a broker, and the last error.
    pub(crate) fn poll_warning(&mut self, now: Instant) -> Option<(Duration, &str)> {
        let due = self.poll_timeout()?;
        let since = self.failing_since?;
        if now < due {
            return None;
        }
        self.warned_at = Some(now);
        Some((now.saturating_duration_since(since), &self.last_error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn warns_after_a_few_seconds_then_rarely_then_says_when_it_ended() {
        let t0 = Instant::now();
        let mut r = Reachability::default();
        assert_eq!(r.poll_timeout(), None);
        r.failed(t0, "refused".into());
        assert_eq!(r.poll_timeout(), Some(t0 + WARN_AFTER));
        assert_eq!(r.poll_warning(t0 + s(1)), None);
        // Failures go on; the first one still counts.
        r.failed(t0 + s(2), "refused again".into());
        assert_eq!(r.poll_warning(t0 + s(3)), Some((s(3), "refused again")));
        // At most once per WARN_EVERY while it lasts.
        assert_eq!(r.poll_warning(t0 + s(10)), None);
        assert_eq!(r.poll_timeout(), Some(t0 + s(3) + WARN_EVERY));
        assert_eq!(r.poll_warning(t0 + s(33)), Some((s(33), "refused again")));
        // Recovery is said once, with the outage's length.
        assert_eq!(r.reached(t0 + s(40)), Some(s(40)));
        assert_eq!(r.reached(t0 + s(41)), None);
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn a_failure_that_heals_within_the_grace_is_never_said() {
        let t0 = Instant::now();
        let mut r = Reachability::default();
        r.failed(t0, "reset".into());
        assert_eq!(r.reached(t0 + s(1)), None);
        assert_eq!(r.poll_warning(t0 + s(10)), None);
        // A new outage starts its own grace.
        r.failed(t0 + s(20), "refused".into());
        assert_eq!(r.poll_warning(t0 + s(22)), None);
        assert_eq!(r.poll_warning(t0 + s(23)), Some((s(3), "refused")));
    }
}
