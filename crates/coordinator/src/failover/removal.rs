//! What a member does with a proof that another member's process ended: remove it from the
//! group, as Kafka's admin client does, unless Kafka means to keep its place.

use std::time::Duration;

use super::link::Gone;
use crate::observer::{Observer, Removal};

/// How long one LeaveGroup naming an ended member may take.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether a member whose end was proven (`gone`) keeps its place in the group (left to its
/// session) rather than being removed: a static member (`is_static`) that stopped in order, as
/// Kafka's static membership intends (it keeps its place through a restart). A dynamic member
/// never keeps it: it sent LeaveGroup itself if it stopped in order, and Kafka gives a new
/// process a new member id anyway.
pub fn keeps_place(gone: Gone, is_static: bool) -> bool {
    is_static && gone.orderly
}

/// Removes `member_id` (and its `group_instance_id`, if static) from `group` with LeaveGroup
/// v3+, as Kafka's admin client does, saying `reason`; logs how it went. A failure only leaves
/// the member to its session.
pub async fn remove(
    observer: &Observer,
    group: &str,
    member_id: &str,
    group_instance_id: Option<&str>,
    reason: &str,
) {
    let removed = observer.remove_member(group, member_id, group_instance_id, reason);
    match tokio::time::timeout(REMOVE_TIMEOUT, removed).await {
        Ok(Ok(Removal::Removed)) => {
            tracing::info!(member = %member_id, "removed the ended member from the group");
        }
        Ok(Ok(_)) => tracing::debug!(member = %member_id, "the ended member had left already"),
        Ok(Err(error)) => tracing::warn!(member = %member_id, %error,
            "could not remove the ended member; the group drops it after its session"),
        Err(_) => tracing::warn!(member = %member_id,
            "removing the ended member timed out; the group drops it after its session"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_static_member_that_stopped_in_order_keeps_its_place() {
        let crash = Gone { orderly: false };
        let stop = Gone { orderly: true };
        assert!(!keeps_place(crash, false));
        assert!(!keeps_place(crash, true), "a static member seen to crash");
        assert!(!keeps_place(stop, false), "a dynamic member left anyway");
        assert!(keeps_place(stop, true));
    }
}
