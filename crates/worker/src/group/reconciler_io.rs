//! The reconciler's settings, its inputs' and outputs' types: what the loop hands it and what
//! it asks the loop to do.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Local;
use crate::group::advertised::Advertised;
use crate::lease::FencingToken;
use crate::protocol::Assignment;
use crate::runtime::AssignmentChange;

/// Whether this worker's first assignment may belong to a process it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takeover {
    /// A dynamic member, or a static one whose previous process is known to have stopped
    /// every task: start at once.
    Clean,
    /// A static member that may have replaced a live process with the same
    /// `group.instance.id`: the coordinator showed a member holding that id before this one
    /// joined, and no handover note proved it stopped (see `takeover.rs`). That process keeps
    /// passing its lease checks until its own deadline, at most one session timeout after its
    /// last heartbeat, which came before this member's first JoinGroup replaced it: nothing
    /// starts here until one session timeout after this member first joined, whoever computed
    /// the assignment (Kafka's handing over the old assignment without a rebalance, or a
    /// rebalance that was in progress when this member joined: then the assignment names this
    /// member, yet may hold the old process's tasks).
    MustWait,
}

/// The reconciler's fixed settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Graceful stop plus abort: the longest revoked tasks take to stop.
    pub(crate) stop_bound: Duration,
    /// The session timeout: how long a replaced process may hold its lease.
    pub(crate) session_timeout: Duration,
    /// See [`Takeover`].
    pub(crate) takeover: Takeover,
    /// The self-fencing margin: after a self-fencing deadline passed, the time left before the
    /// group may hand the tasks to others.
    pub(crate) self_fence_margin: Duration,
    /// How long a task may take to stop once aborted: the bound of a stop after a loss the
    /// coordinator reported (no deadline of its own).
    pub(crate) abort_timeout: Duration,
    /// The rebalance timeout: how long a wait for the task store's view may take before it
    /// is reported.
    pub(crate) rebalance_timeout: Duration,
}

/// An assignment delivered by SyncGroup, with what the loop learned around it.
#[derive(Debug, Clone)]
pub(crate) struct Assigned {
    /// The generation and this member's id in it.
    pub(crate) token: FencingToken,
    /// The leader's member id.
    pub(crate) leader: String,
    /// Whether the group's assignor is eager (revokes everything before each rebalance).
    pub(crate) eager: bool,
    /// The decoded assignment; `None` if it was empty or did not decode (run nothing). As the
    /// leader sent it: [`handle_assigned`](super::Reconciler::handle_assigned) checks it against
    /// `local`.
    pub(crate) assignment: Option<Assignment>,
    /// What this worker knows locally about the assignment's tasks.
    pub(crate) local: Local,
    /// The lease of this generation.
    pub(crate) valid_until: Instant,
    /// The assignment's bytes were rejected (they did not decode): the member runs nothing
    /// and rejoins after [`REJECTED_REJOIN_DELAY`], so the group recovers without it.
    pub(crate) rejected: bool,
    /// The leader reads compressed envelopes (its assignment's version says so).
    pub(crate) reads_compressed: bool,
}

/// How long after rejecting an assignment the member rejoins: soon, but not in a tight loop
/// with a leader that keeps sending the same bytes.
pub(crate) const REJECTED_REJOIN_DELAY: Duration = Duration::from_secs(1);

/// What the loop must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Apply `change` through the runtime (its generation is live: the reconciler emits no
    /// other), then report with [`Reconciler::handle_applied`](super::Reconciler::handle_applied); if `await_revocations`, wait for the revoked tasks to
    /// stop and report with [`Reconciler::handle_revocations_stopped`](super::Reconciler::handle_revocations_stopped).
    Apply {
        /// The change.
        change: AssignmentChange,
        /// Whether the loop must wait for its revocations before a follow-up rejoin.
        await_revocations: bool,
    },
    /// The revoked tasks of `generation` stopped: open the join gate.
    AckRevocation {
        /// The generation whose revocation is acknowledged.
        generation: i32,
    },
    /// Rejoin the group (the follow-up round of `generation`), if it is still the current one.
    Rejoin {
        /// The generation that asked for it.
        generation: i32,
        /// Why (KIP-800 reason).
        reason: &'static str,
    },
    /// An eager revocation: stop every task now (lease checks fail from the call), await the
    /// stop and report it with [`Reconciler::handle_revoked_stopped`](super::Reconciler::handle_revoked_stopped).
    RevokeAll,
    /// The membership is lost: stop every task now (lease checks fail from the call), all of
    /// them by `deadline`, the instant the group may hand them to others; forget what this
    /// member led.
    Lost {
        /// When every task must have stopped.
        deadline: Instant,
    },
    /// A heartbeat extended the lease of the live membership: the tasks' lease follows.
    ExtendLease {
        /// The new self-fencing deadline.
        valid_until: Instant,
    },
    /// What the next JoinGroup's metadata must say changed: publish it for the protocol.
    Advertise(Arc<Advertised>),
    /// Fast failover reads the group anew: after an assignment, once it is applied (or held
    /// back), so that decoding every member's metadata does not compete with starting and
    /// stopping tasks; and not after one that revokes tasks, which the follow-up round
    /// replaces a moment later (eager assignors hand tasks over within one round).
    ReadGroup,
}
