//! How tasks are stopped and restarted: plain config structs with documented defaults.

use std::time::Duration;

use kroupier_coordinator::backoff::Backoff;

/// When and how often a failed task is restarted.
///
/// The delay before restart `n` (n = 1 after the first failure) is
/// `min(max_backoff, initial_backoff × 2^(n−1))` times a random factor in
/// `[1 − jitter, 1 + jitter]`, capped at `max_backoff` again, so that tasks that failed together
/// do not restart together: the same [`Backoff`] as the coordinator's retries. After `max_attempts`
/// failed runs in a row the task is `FAILED` until a restart request.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartPolicy {
    /// Failed runs in a row before the task is marked `FAILED`. Default 5. Higher rides out
    /// longer outages of what the task depends on; lower surfaces broken tasks sooner. At least 1.
    pub max_attempts: u32,
    /// Delay before the first restart. Default 1 s. Lower recovers faster from blips; higher
    /// spares a struggling dependency.
    pub initial_backoff: Duration,
    /// Cap on the delay. Default 60 s. Bounds how long a task waits once its dependency is back.
    pub max_backoff: Duration,
    /// Fraction by which each delay varies at random either way, in `[0, 1]`. Default 0.2. 0 makes restarts
    /// deterministic (tests); higher spreads restarts of many tasks.
    pub jitter: f64,
    /// A run that lasted at least this long resets the count of failures in a row. Default 60 s.
    /// Lower forgives intermittent failures sooner; higher catches slow crash loops.
    pub reset_after: Duration,
    /// Liveness watch: a running task that reports no progress
    /// ([`TaskContext::report_progress`](crate::TaskContext::report_progress)) for this long
    /// counts as failed: it is cancelled, given the graceful stop timeout, dropped, and restarted
    /// with backoff. Default `None` (off); set it only for tasks that report progress regularly,
    /// well above their longest quiet period.
    pub stall_timeout: Option<Duration>,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            jitter: 0.2,
            reset_after: Duration::from_secs(60),
            stall_timeout: None,
        }
    }
}

/// A config value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config `{field}`: {reason}")]
pub struct InvalidConfig {
    /// The offending field.
    pub field: &'static str,
    /// Why, and what to set instead.
    pub reason: String,
}

impl InvalidConfig {
    pub(crate) fn new(field: &'static str, reason: impl Into<String>) -> Self {
        InvalidConfig {
            field,
            reason: reason.into(),
        }
    }
}

impl RestartPolicy {
    /// Checks that the values can work together.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn validate(&self) -> Result<(), InvalidConfig> {
        if self.max_attempts == 0 {
            return Err(InvalidConfig::new(
                "restart.max_attempts",
                "must be at least 1 (1 = never restart)",
            ));
        }
        if self.initial_backoff > self.max_backoff {
            return Err(InvalidConfig::new(
                "restart.initial_backoff",
                format!(
                    "{:?} exceeds restart.max_backoff {:?}; lower it or raise the cap",
                    self.initial_backoff, self.max_backoff
                ),
            ));
        }
        if self.stall_timeout.is_some_and(|stall| stall.is_zero()) {
            return Err(InvalidConfig::new(
                "restart.stall_timeout",
                "must be positive; use None to turn the liveness watch off",
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(InvalidConfig::new(
                "restart.jitter",
                format!("{} is outside [0, 1]", self.jitter),
            ));
        }
        Ok(())
    }

    /// The delay before restart number `restart` (1-based), jitter included.
    pub(crate) fn backoff(&self, restart: u32) -> Duration {
        Backoff::new(self.initial_backoff, self.max_backoff)
            .with_jitter(self.jitter)
            .delay(restart.saturating_sub(1))
    }
}

/// How the supervisor stops and restarts tasks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SupervisorConfig {
    /// How long a cancelled task may take to return before it is aborted. Default 5 s (as Kafka
    /// Connect's `task.shutdown.graceful.timeout.ms`). It must fit, with `abort_timeout`, inside
    /// the self-fencing margin; longer gives tasks time to flush.
    pub(crate) graceful_stop_timeout: Duration,
    /// How long to wait for an aborted task to unwind before reporting it unresponsive.
    /// Default 1 s. A task stuck in blocking code cannot be aborted; its lease is invalid anyway.
    pub(crate) abort_timeout: Duration,
    /// Restarts after failures.
    pub(crate) restart: RestartPolicy,
}

impl SupervisorConfig {
    /// The defaults: 5 s graceful stop, 1 s abort wait, default restart policy.
    pub(crate) fn new() -> Self {
        SupervisorConfig {
            graceful_stop_timeout: Duration::from_secs(5),
            abort_timeout: Duration::from_secs(1),
            restart: RestartPolicy::default(),
        }
    }

    /// Checks that the values can work together.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn validate(&self) -> Result<(), InvalidConfig> {
        self.restart.validate()
    }
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RestartPolicy {
            jitter: 0.0,
            max_backoff: Duration::from_secs(5),
            ..RestartPolicy::default()
        };
        let delays: Vec<u64> = (1..=5).map(|n| policy.backoff(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 5, 5]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn jitter_stays_within_its_fraction_and_the_cap() {
        let policy = RestartPolicy {
            jitter: 0.5,
            max_backoff: Duration::from_secs(5),
            ..RestartPolicy::default()
        };
        for _ in 0..100 {
            let delay = policy.backoff(3);
            assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_secs(5));
        }
    }

    #[test]
    fn validate_names_the_field() {
        let bad = RestartPolicy {
            max_attempts: 0,
            ..RestartPolicy::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "restart.max_attempts");
        let bad = RestartPolicy {
            jitter: 2.0,
            ..RestartPolicy::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "restart.jitter");
        let bad = RestartPolicy {
            stall_timeout: Some(Duration::ZERO),
            ..RestartPolicy::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "restart.stall_timeout");
        assert_eq!(SupervisorConfig::new().validate(), Ok(()));
    }
}
