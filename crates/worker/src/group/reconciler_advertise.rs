//! What the reconciler publishes for the next JoinGroup's metadata ([`Action::Advertise`]),
//! and the reads it is built from.

use std::sync::Arc;

use tokio::time::Instant;

use super::{Action, HeldKey, Reconciler, Takeover};
use crate::group::advertised::{Advertised, TakeoverHold};

impl Reconciler {
    /// What identifies the held start, if any (its generation and when it is due): when it is
    /// unchanged, so are [`held_claims`](Self::held_claims).
    pub(super) fn held_key(&self) -> HeldKey {
        self.held
            .as_ref()
            .map(|h| (h.assigned.token.generation_id, h.at))
    }

    /// The tasks of a held start, with the generation they were granted in: the member still
    /// claims them in its JoinGroup metadata, so that a rebalance during the wait keeps them
    /// here rather than handing them to a third worker while their previous owner may run them.
    pub(crate) fn held_claims(&self) -> Vec<(String, i32)> {
        self.held
            .as_ref()
            .and_then(|h| {
                let generation = h.assigned.token.generation_id;
                let a = h.assigned.assignment.as_ref()?;
                Some(a.tasks.iter().map(|t| (t.clone(), generation)).collect())
            })
            .unwrap_or_default()
    }

    /// Until when a static takeover's wait holds every start here (see [`Takeover`]), once
    /// this member joined.
    pub(crate) fn takeover_until(&self) -> Option<Instant> {
        self.start_not_before
    }

    /// The static takeover's wait the worker advertises, so that the leader holds back the
    /// replaced process's tasks wherever they go: a whole session before the first join, then
    /// until [`takeover_until`](Self::takeover_until).
    pub(super) fn takeover_hold(&self) -> Option<TakeoverHold> {
        if !self.joined_once {
            return (self.settings.takeover == Takeover::MustWait)
                .then_some(TakeoverHold::BeforeJoin(self.settings.session_timeout));
        }
        self.takeover_until().map(TakeoverHold::Until)
    }

    /// Publishes what the next JoinGroup's metadata must say ([`Action::Advertise`]) when it
    /// changed: the held start's claims (rebuilt only when the held start changed: they copy
    /// every held task id), an eager revocation's claims, the lost tasks' hold, a takeover's
    /// wait and the encoding.
    pub(super) fn publish(&mut self) {
        let key = self.held_key();
        let held_claims = match &self.published {
            Some((last, last_key)) if *last_key == key => last.held_claims.clone(),
            _ => Arc::new(self.held_claims().into_iter().collect()),
        };
        let next = Advertised {
            held_claims,
            eager_previous: self.eager_previous.clone(),
            holding_lost: self.holding_lost.clone(),
            takeover: self.takeover_hold(),
            leader_reads_compressed: self.reads_compressed,
        };
        let unchanged = self.published.as_ref().is_some_and(|(last, last_key)| {
            *last_key == key
                && Arc::ptr_eq(&last.held_claims, &next.held_claims)
                && match (&last.eager_previous, &next.eager_previous) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (a, b) => a.is_none() && b.is_none(),
                }
                && last.holding_lost == next.holding_lost
                && last.takeover == next.takeover
                && last.leader_reads_compressed == next.leader_reads_compressed
        });
        if unchanged {
            return;
        }
        let next = Arc::new(next);
        self.published = Some((next.clone(), key));
        self.actions.push_back(Action::Advertise(next));
    }
}
