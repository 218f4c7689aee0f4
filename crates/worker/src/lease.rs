//! What a task's ownership rests on: the worker's [`Lease`] and each task's [`TaskLease`].
//!
//! A worker owns a task only while its group membership is healthy. The runtime keeps one
//! [`Lease`] per worker — kroupier's one lease type, the same the coordinator crate's membership
//! and leader election hand out: the fencing token of the current generation and the instant
//! until which the membership is surely valid (the self-fencing deadline, extended by every
//! heartbeat that succeeds). Each task's [`TaskLease`] combines it with the task's own
//! cancellation and the worker's shutdown.
//!
//! [`TaskLease::check`] is cheap (a read lock on a `watch` value, a clock read, an atomic load) and
//! fails as soon as the task may belong to someone else:
//! - the task was revoked, or the worker is shutting down (the cancellation token fired);
//! - the self-fencing deadline passed without a successful heartbeat;
//! - the member was fenced: its member id changed, or the generation went backwards.
//!
//! Call it right before every side effect. The fencing token it returns (generation, member id)
//! can go along with the write to an external store that supports conditional writes.
//!
//! [`TaskLease::lost`] is cancel safe: dropping it loses nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use kroupier_coordinator::membership::FencingToken;
pub(crate) use kroupier_coordinator::membership::Lease;

/// The lease before the first assignment: generation -1, no member id, already expired.
pub(crate) fn no_lease() -> Lease {
    Lease {
        token: FencingToken::new(-1, ""),
        valid_until: kroupier_coordinator::clock::now(),
    }
}

/// Why a lease check failed. Returned from `run` (with `?`), it stops the task without counting
/// as a failure. Its message says why; [`kind`](Self::kind) sorts it for code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct LeaseError(LeaseDetail);

/// Why a [`LeaseError`] happened, for code that acts on it (the message says the rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseErrorKind {
    /// The group revoked the task from this worker: stop side effects and return.
    Revoked,
    /// The worker is shutting down: stop side effects and return.
    ShuttingDown,
    /// No heartbeat succeeded in time: the member may have been removed from the group and the
    /// task handed to another worker. The task runs again once the group assigns it again.
    Expired,
    /// The member was fenced: it now holds another membership than the one the task was
    /// granted in. Stop side effects; the runtime restarts the task if it is assigned again.
    Fenced,
}

impl LeaseError {
    /// Why the check failed.
    pub fn kind(&self) -> LeaseErrorKind {
        match &self.0 {
            LeaseDetail::Revoked { .. } => LeaseErrorKind::Revoked,
            LeaseDetail::ShuttingDown { .. } => LeaseErrorKind::ShuttingDown,
            LeaseDetail::Expired { .. } => LeaseErrorKind::Expired,
            LeaseDetail::Fenced { .. } => LeaseErrorKind::Fenced,
        }
    }

    /// The task whose lease failed.
    pub fn task_id(&self) -> &str {
        match &self.0 {
            LeaseDetail::Revoked { task_id }
            | LeaseDetail::ShuttingDown { task_id }
            | LeaseDetail::Expired { task_id, .. }
            | LeaseDetail::Fenced { task_id, .. } => task_id,
        }
    }

    unstable_pub! {
        /// How long ago the lease expired, for an error of kind `Expired`.
        pub fn late(&self) -> Option<Duration> {
            match &self.0 {
                LeaseDetail::Expired { late, .. } => Some(*late),
                _ => None,
            }
        }
    }
}

impl From<LeaseDetail> for LeaseError {
    fn from(detail: LeaseDetail) -> Self {
        Self(detail)
    }
}

/// The error itself, with the fields its message is made of (crate-internal: the lease
/// constructs it; users see the message and the [`LeaseErrorKind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LeaseDetail {
    /// The group revoked the task from this worker: stop side effects and return.
    #[error("task `{task_id}` was revoked from this worker; stop side effects and return")]
    Revoked {
        /// The task.
        task_id: String,
    },
    /// The worker is shutting down: stop side effects and return.
    #[error("worker is shutting down; task `{task_id}` must stop side effects and return")]
    ShuttingDown {
        /// The task.
        task_id: String,
    },
    /// No heartbeat succeeded in time: the member may have been removed from the group and the
    /// task handed to another worker. The task runs again once the group assigns it again.
    #[error(
        "lease on task `{task_id}` expired {late:?} ago (self-fencing: no heartbeat succeeded in \
         time); stop side effects, the task runs again once the group assigns it again"
    )]
    Expired {
        /// The task.
        task_id: String,
        /// How long ago the lease expired.
        late: Duration,
    },
    /// The member was fenced: it now holds another membership than the one the task was
    /// granted in. Stop side effects; the runtime restarts the task if it is assigned again.
    #[error(
        "task `{task_id}` was granted in {granted} but this worker is now {current}; stop side effects"
    )]
    Fenced {
        /// The task.
        task_id: String,
        /// The token the task was started with.
        granted: FencingToken,
        /// The worker's current token.
        current: FencingToken,
    },
}

/// One task's lease: the worker's [`Lease`], the task's cancellation and the worker's
/// shutdown.
#[derive(Debug, Clone)]
pub struct TaskLease {
    pub(crate) task_id: Arc<str>,
    granted: FencingToken,
    member: watch::Receiver<Lease>,
    /// The task's own cancellation (its context's `cancelled`).
    pub(crate) cancel: CancellationToken,
    shutdown: CancellationToken,
}

impl TaskLease {
    pub(crate) fn new(
        task_id: Arc<str>,
        granted: FencingToken,
        member: watch::Receiver<Lease>,
        cancel: CancellationToken,
        shutdown: CancellationToken,
    ) -> Self {
        TaskLease {
            task_id,
            granted,
            member,
            cancel,
            shutdown,
        }
    }

    /// Checks the lease now; returns the worker's current fencing token while it is valid.
    pub fn check(&self) -> Result<FencingToken, LeaseError> {
        let task_id = || self.task_id.to_string();
        // The runtime dropped its side: nothing extends the lease any more.
        let runtime_gone = self.member.has_changed().is_err();
        let member = self.member.borrow();
        if self.shutdown.is_cancelled() || runtime_gone {
            return Err(LeaseDetail::ShuttingDown { task_id: task_id() }.into());
        }
        if self.cancel.is_cancelled() {
            return Err(LeaseDetail::Revoked { task_id: task_id() }.into());
        }
        if member.token.member_id != self.granted.member_id
            || member.token.generation_id < self.granted.generation_id
        {
            return Err(LeaseDetail::Fenced {
                task_id: task_id(),
                granted: self.granted.clone(),
                current: member.token.clone(),
            }
            .into());
        }
        // The lease timeline: a suspended host's time counts (see kroupier_coordinator::clock).
        let now = kroupier_coordinator::clock::now();
        if now >= member.valid_until {
            return Err(LeaseDetail::Expired {
                task_id: task_id(),
                late: now - member.valid_until,
            }
            .into());
        }
        Ok(member.token.clone())
    }

    /// The task's id.
    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Whether [`check`](Self::check) passes now.
    pub fn is_valid(&self) -> bool {
        self.check().is_ok()
    }

    /// The fencing token the task was started with.
    pub fn granted(&self) -> &FencingToken {
        &self.granted
    }

    /// Until when the lease is valid unless revoked earlier (the worker's self-fencing deadline).
    pub fn valid_until(&self) -> std::time::Instant {
        self.member.borrow().valid_until
    }

    /// Completes when the lease stops being valid, with the reason. Cancel safe.
    pub async fn lost(&self) -> LeaseError {
        let mut member = self.member.clone();
        loop {
            if let Err(error) = self.check() {
                return error;
            }
            let until = member.borrow_and_update().valid_until;
            tokio::select! {
                _ = self.cancel.cancelled() => {}
                _ = self.shutdown.cancelled() => {}
                _ = tokio::time::sleep_until(to_monotonic(until)) => {}
                changed = member.changed() => {
                    if changed.is_err() {
                        return LeaseDetail::ShuttingDown {
                            task_id: self.task_id.to_string(),
                        }
                        .into();
                    }
                }
            }
        }
    }
}

/// The monotonic instant at which the lease-timeline instant `until` comes.
fn to_monotonic(until: std::time::Instant) -> Instant {
    Instant::from_std(kroupier_coordinator::clock::to_monotonic(until))
}
