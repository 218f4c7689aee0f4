//! The worker loop's side of the task store: each new view of the store becomes the effective
//! catalogue; the owner of a changed task acts on it at once, and the leader starts a rebalance
//! when placement changed (see `runtime::desired` for who does what).

use std::any::Any;
use std::sync::{Arc, MutexGuard, PoisonError};

use kroupier_coordinator::membership::MemberState;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Loop;
use crate::catalogue::Catalogue;
use crate::runtime::desired::Desired;
use crate::store::StoreView;

/// The task store as the worker loop follows it.
pub(crate) struct StoreLink {
    /// The tasks defined in code, merged with every view.
    pub(crate) code: Catalogue,
    /// The latest view, kept current by the store's tail.
    pub(crate) views: watch::Receiver<Arc<StoreView>>,
    /// Whatever keeps the tail running (dropped with the loop).
    pub(crate) _tail: Box<dyn Any + Send + Sync>,
}

impl StoreLink {
    /// The next view, once the tail published one; never completes once the tail has ended
    /// (the worker keeps its last view).
    pub(crate) async fn next(link: &mut Option<StoreLink>) -> Arc<StoreView> {
        let Some(store) = link.as_mut() else {
            return std::future::pending().await;
        };
        if store.views.changed().await.is_err() {
            tracing::error!("the task store's tail ended; the worker keeps its last view");
            *link = None;
            return std::future::pending().await;
        }
        store.views.borrow_and_update().clone()
    }
}

/// A wait for this worker's view of the store to reach the offset an assignment was computed
/// from: the assigned tasks it does not know yet start once it does. Bounded by the rebalance
/// timeout, after which the wait is reported (the tasks still start if the view gets there).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CatchUp {
    /// The leader's offset.
    pub(crate) offset: i64,
    /// When the wait began.
    pub(crate) since: Instant,
    /// When it is overdue.
    pub(crate) deadline: Instant,
}

impl Loop {
    fn catch_up(&self) -> MutexGuard<'_, Option<CatchUp>> {
        self.catch_up.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts waiting for the view to reach `offset` (an assignment from further in the store).
    pub(super) fn await_store_offset(&self, offset: i64) {
        let now = Instant::now();
        let mut wait = self.catch_up();
        let since = wait.map_or(now, |w| w.since);
        *wait = Some(CatchUp {
            offset: wait.map_or(offset, |w| w.offset.max(offset)),
            since,
            deadline: since + self.config.member.membership.rebalance_timeout,
        });
    }

    /// When the current catch-up wait is overdue, if there is one.
    pub(super) fn catch_up_deadline(&self) -> Option<Instant> {
        self.catch_up().map(|w| w.deadline)
    }

    /// The wait outlasted the rebalance timeout: say so, once.
    pub(super) fn catch_up_overdue(&self) {
        let Some(wait) = self.catch_up().take() else {
            return;
        };
        let own = self.runtime.desired().offset;
        tracing::warn!(
            leader_offset = wait.offset,
            own_offset = ?own,
            waited_ms = wait.since.elapsed().as_millis() as u64,
            "this worker's view of the task store has not reached the offset its assignment \
             was computed from; the assigned tasks it does not know are not running (check \
             that it can read the store's topic); they start if the view gets there"
        );
    }

    /// The view moved: the end of a catch-up wait it completes.
    fn caught_up(&self, offset: Option<i64>) {
        let mut wait = self.catch_up();
        if let (Some(w), Some(offset)) = (*wait, offset)
            && offset >= w.offset
        {
            tracing::info!(
                offset,
                waited_ms = w.since.elapsed().as_millis() as u64,
                "this worker's view of the task store caught up with its assignment"
            );
            *wait = None;
        }
    }

    /// A new view of the store: install the effective catalogue and let the owner act (the
    /// loop then checks whether, as leader, it must rebalance).
    pub(super) fn store_changed(&self, code: &Catalogue, view: &StoreView) {
        let desired = Desired::merge_after(&self.runtime.desired(), code, view);
        let offset = desired.offset;
        let changes = self.runtime.set_desired(desired);
        self.caught_up(offset);
        if changes.is_empty() {
            return;
        }
        let done = self.runtime.apply_desired(&changes);
        tracing::info!(
            ?offset,
            added = changes.added.len(),
            removed = changes.removed.len(),
            paused = changes.paused.len(),
            resumed = changes.resumed.len(),
            reconfigured = changes.reconfigured.len(),
            restarted = changes.restarted.len(),
            placement = changes.placement,
            stopped_here = done.stopped.len(),
            restarted_here = done.restarted.len(),
            started_here = done.started.len(),
            "the task store changed"
        );
    }

    /// The leader of the current generation starts a rebalance when the effective catalogue's
    /// placement (task ids, kinds, weights) differs from the one it assigned from: a task was
    /// added or deleted in the task store, maybe while the round was under way. Once per
    /// generation; other members do nothing (the leader sees the same change).
    pub(super) async fn check_placement(&self) {
        let Some(from) = self.protocol.assigned_from() else {
            return;
        };
        let status = self.member.current();
        let leads = status
            .generation
            .as_ref()
            .is_some_and(|g| g.generation_id == from.generation && g.is_leader());
        if !leads || status.state != MemberState::Stable {
            return;
        }
        let desired = self.runtime.desired();
        if desired.placement() == from.placement {
            return;
        }
        {
            let mut asked = self
                .placement_rejoin
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *asked == Some(from.generation) {
                return;
            }
            *asked = Some(from.generation);
        }
        tracing::info!(
            generation = from.generation,
            assigned_from = ?from.store_offset,
            now_at = ?desired.offset,
            "task store placement changed (a task added or deleted); the leader rebalances"
        );
        self.rejoin_if_current(
            from.generation,
            "the task store changed placement (a task added or deleted)",
        )
        .await;
    }
}
