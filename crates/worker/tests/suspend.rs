//! A host suspended past a task's lease: once it resumes, the lease check fails at once,
//! although the monotonic clock (which stopped during the suspend) says the deadline is ahead.
//!
//! A test binary of its own: simulating a suspend moves the whole process's lease timeline.

use std::time::Duration;

use kroupier_coordinator::clock;
use kroupier_worker::{FencingToken, LeaseErrorKind, TaskContext};
use tokio::time::Instant;

#[tokio::test]
async fn a_suspend_longer_than_the_lease_expires_it() {
    let valid_until = Instant::from_std(clock::now()) + Duration::from_secs(7);
    let (ctx, _cancel, _member) =
        TaskContext::detached("task-0", FencingToken::new(3, "m1"), valid_until);
    assert!(ctx.check_lease().is_ok());

    // The host sleeps for a minute: monotonic time stands still, the broker's does not.
    clock::simulate_suspend(Duration::from_secs(60));
    assert!(
        Instant::now() < valid_until,
        "the monotonic clock did not move"
    );
    match ctx.check_lease() {
        Err(e) if e.kind() == LeaseErrorKind::Expired => {
            let late = e.late().unwrap();
            assert!(late >= Duration::from_secs(52), "late by {late:?}");
        }
        other => panic!("the lease must have expired, got {other:?}"),
    }
    // A task waiting for its lease to end learns it at once.
    let lost = tokio::time::timeout(Duration::from_secs(1), ctx.lease().lost()).await;
    assert!(
        matches!(&lost, Ok(e) if e.kind() == LeaseErrorKind::Expired),
        "{lost:?}"
    );
}
