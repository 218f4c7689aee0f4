//! What the reconciler publishes for the next JoinGroup: the part of the worker's metadata
//! that its decisions set (claims beside the runtime's tasks, holds, the encoding), which
//! `WorkerProtocol::protocols` reads as one snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// How long the process a static worker may have replaced can still run its tasks (see
/// `takeover.rs`), which its metadata tells the leader as
/// [`takeover_hold`](crate::protocol::MemberMetadata::takeover_hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TakeoverHold {
    /// Before this worker first joined: a whole session timeout. That process's lease ends at
    /// most one session after this worker's JoinGroup replaced it, and the leader's hold
    /// counts from a later moment (the new owner's receipt of its assignment).
    BeforeJoin(Duration),
    /// Once it joined: until this instant (its first join plus one session timeout).
    Until(Instant),
}

impl TakeoverHold {
    /// What is left of the hold at `now`; `None` once it is over.
    pub(crate) fn left(self, now: Instant) -> Option<Duration> {
        match self {
            TakeoverHold::BeforeJoin(session) => Some(session),
            TakeoverHold::Until(at) => Some(at.saturating_duration_since(now)),
        }
        .filter(|d| !d.is_zero())
    }
}

/// The reconciler's part of the next JoinGroup's metadata. The large sets are shared, not
/// copied, between snapshots: a worker may hold 100,000 tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Advertised {
    /// Tasks assigned here whose start is held back (a static takeover's wait, lost tasks'
    /// hold), with the generation they were granted in: still claimed, so a rebalance
    /// meanwhile keeps them here rather than handing them to a third worker while their
    /// previous owner may run them.
    pub(crate) held_claims: Arc<BTreeMap<String, i32>>,
    /// After an eager revocation: what this member held before it stopped everything, so that
    /// a sticky leader gives it back.
    pub(crate) eager_previous: Option<Arc<BTreeMap<String, i32>>>,
    /// Lost tasks held back here, and until when: the leader keeps the hold on them wherever
    /// they go.
    pub(crate) holding_lost: Option<(BTreeSet<String>, Instant)>,
    /// A static takeover's wait, if any.
    pub(crate) takeover: Option<TakeoverHold>,
    /// The last assignment came from a leader that reads compressed envelopes: this member's
    /// metadata may travel compressed.
    pub(crate) leader_reads_compressed: bool,
}

impl Advertised {
    /// Before the first join: only a static takeover's wait, if there is one.
    pub(crate) fn before_join(takeover: Option<TakeoverHold>) -> Self {
        Advertised {
            takeover,
            ..Advertised::default()
        }
    }
}
