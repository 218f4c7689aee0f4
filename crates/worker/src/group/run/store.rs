//! The worker loop's side of the task store: each new view of the store becomes the effective
//! catalogue; the owner of a changed task acts on it at once, and the leader starts a rebalance
//! when placement changed (see `runtime::desired` for who does what).

use std::any::Any;
use std::sync::Arc;

use kroupier_coordinator::membership::MemberState;
use tokio::sync::watch;

use super::Loop;
use crate::catalogue::Catalogue;
use crate::group::reconciler::Reconciler;
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

    /// What the reconciler needs to decide whether this leader rebalances for a placement
    /// change: what its last round was assigned from, the generation it leads while stable,
    /// and the effective catalogue's placement and offset now.
    pub(super) fn placement(&self, reconciler: &mut Reconciler) {
        let status = self.member.current();
        let leading = status
            .generation
            .as_ref()
            .filter(|g| g.is_leader() && status.state == MemberState::Stable)
            .map(|g| g.generation_id);
        let desired = self.runtime.desired();
        reconciler.handle_placement(
            self.protocol.assigned_from(),
            leading,
            desired.placement(),
            desired.offset,
        );
    }
}
