//! The cooperative assignor's configuration and the state it carries between rounds.

use std::time::Duration;

use crate::AssignorError;
use crate::error::Repr;

/// Configuration of the [`Cooperative`](crate::Cooperative) assignor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CooperativeConfig {
    /// How long the tasks of a lost member (gone without leaving gracefully) wait for it to come
    /// back before they move. Default 0: move now. Connect's `scheduled.rebalance.max.delay.ms`
    /// (5 min) saves a restart from reshuffling, but leaves the tasks stopped that long.
    pub lost_task_delay: Duration,
    /// The first pause after two revoking rounds in a row. Default 40 ms, as Connect. Smaller
    /// reacts faster; larger damps revocation storms sooner.
    pub revocation_backoff: Duration,
    /// Each further revoking round multiplies the pause by this. Default 40, as Connect.
    pub revocation_backoff_multiplier: u32,
    /// The longest pause. Default 5 min. Longer bounds storms harder but delays balancing.
    pub revocation_backoff_max: Duration,
    /// Check every plan with `check::cooperative` (feature `testing`) before returning it.
    /// Default true; costs one pass over the tasks.
    pub validate_plans: bool,
}

impl Default for CooperativeConfig {
    fn default() -> Self {
        Self {
            lost_task_delay: Duration::ZERO,
            revocation_backoff: Duration::from_millis(40),
            revocation_backoff_multiplier: 40,
            revocation_backoff_max: Duration::from_secs(300),
            validate_plans: true,
        }
    }
}

impl CooperativeConfig {
    /// Checks the values are consistent.
    pub(crate) fn validate(&self) -> Result<(), AssignorError> {
        if self.revocation_backoff_multiplier == 0 {
            return Err(
                Repr::InvalidConfig("revocation_backoff_multiplier must be at least 1").into(),
            );
        }
        if self.revocation_backoff > self.revocation_backoff_max {
            return Err(Repr::InvalidConfig(
                "revocation_backoff must not exceed revocation_backoff_max",
            )
            .into());
        }
        Ok(())
    }

    /// The pause after `rounds` consecutive revoking rounds (`rounds` ≥ 1).
    pub(crate) fn backoff(&self, rounds: u32) -> Duration {
        let mut pause = self.revocation_backoff;
        for _ in 1..rounds {
            pause = pause.saturating_mul(self.revocation_backoff_multiplier);
            if pause >= self.revocation_backoff_max {
                break;
            }
        }
        pause.min(self.revocation_backoff_max)
    }
}

/// What the cooperative assignor remembers between rounds. The leader passes the
/// [`Plan::state`](crate::Plan::state) of one round into the next round's input; a new leader
/// starts from `Default`. Eager assignors pass it through unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CooperativeState {
    /// When the lost tasks now waiting may move (same epoch as `now`).
    pub(crate) lost_deadline: Option<Duration>,
    /// How many rounds in a row revoked tasks to balance load.
    pub(crate) revoking_rounds: u32,
    /// Until when balancing revocations are paused.
    pub(crate) backoff_deadline: Option<Duration>,
}

impl CooperativeState {
    unstable_pub! {
        /// A state with these parts (for tests of the cooperative assignor's history).
        pub fn from_parts(
            lost_deadline: Option<Duration>,
            revoking_rounds: u32,
            backoff_deadline: Option<Duration>,
        ) -> Self {
            Self {
                lost_deadline,
                revoking_rounds,
                backoff_deadline,
            }
        }
    }

    unstable_pub! {
        /// When the lost tasks now waiting may move (same epoch as `now`).
        pub fn lost_deadline(&self) -> Option<Duration> {
            self.lost_deadline
        }
    }

    unstable_pub! {
        /// How many rounds in a row revoked tasks to balance load.
        pub fn revoking_rounds(&self) -> u32 {
            self.revoking_rounds
        }
    }

    unstable_pub! {
        /// Until when balancing revocations are paused.
        pub fn backoff_deadline(&self) -> Option<Duration> {
            self.backoff_deadline
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_then_caps() {
        let config = CooperativeConfig::default();
        assert_eq!(config.backoff(1), Duration::from_millis(40));
        assert_eq!(config.backoff(2), Duration::from_millis(1600));
        assert_eq!(config.backoff(3), Duration::from_secs(64));
        assert_eq!(config.backoff(4), Duration::from_secs(300));
        assert_eq!(config.backoff(100), Duration::from_secs(300));
    }

    #[test]
    fn validate_rejects_bad_values() {
        assert!(CooperativeConfig::default().validate().is_ok());
        let zero = CooperativeConfig {
            revocation_backoff_multiplier: 0,
            ..CooperativeConfig::default()
        };
        assert!(zero.validate().is_err());
        let inverted = CooperativeConfig {
            revocation_backoff: Duration::from_secs(10),
            revocation_backoff_max: Duration::from_secs(1),
            ..CooperativeConfig::default()
        };
        assert!(inverted.validate().is_err());
    }
}
