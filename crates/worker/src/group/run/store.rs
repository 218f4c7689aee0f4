//! The worker loop's side of the task store: each new view of the store becomes the effective
//! catalogue; the owner of a changed task acts on it at once, and the leader starts a rebalance
//! when placement changed (see `runtime::desired` for who does what).

use std::any::Any;
use std::sync::Arc;

use kroupier_coordinator::membership::MemberState;
use tokio::sync::watch;

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

impl Loop {
    /// A new view of the store: install the effective catalogue and let the owner act (the
    /// loop then checks whether, as leader, it must rebalance). Returns the view's offset, for
    /// the reconciler's catch-up wait.
    pub(super) fn store_changed(&self, code: &Catalogue, view: &StoreView) -> Option<i64> {
        let desired = Desired::merge_after(&self.runtime.desired(), code, view);
        let offset = desired.offset;
        let changes = self.runtime.set_desired(desired);
        if changes.is_empty() {
            return offset;
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
        offset
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
