//! # The worker loop's decisions, sans-IO
//!
//! [`Reconciler`] decides what the worker does with each of its group member's events, and
//! when, without doing any of it: no tasks, no sockets, no clock reads. The tokio loop in
//! `run.rs` feeds it the member's events and the completion of the stops it started, and
//! carries out what it asks, in the order it asks. Like the membership machine it sits on,
//! it is driven on virtual time in its tests.
//!
//! Inputs: [`handle_joined`](Reconciler::handle_joined),
//! [`handle_assigned`](Reconciler::handle_assigned) then
//! [`handle_applied`](Reconciler::handle_applied) once the loop tried the apply,
//! [`handle_revoked`](Reconciler::handle_revoked), [`handle_lost`](Reconciler::handle_lost),
//! [`handle_lease`](Reconciler::handle_lease),
//! [`handle_store_offset`](Reconciler::handle_store_offset),
//! [`handle_placement`](Reconciler::handle_placement),
//! [`handle_revoked_all`](Reconciler::handle_revoked_all),
//! [`handle_revocations_stopped`](Reconciler::handle_revocations_stopped),
//! [`handle_revoked_stopped`](Reconciler::handle_revoked_stopped),
//! [`handle_timeout`](Reconciler::handle_timeout). Outputs:
//! [`poll_action`](Reconciler::poll_action) and [`poll_timeout`](Reconciler::poll_timeout).
//!
//! What it decides, one function each:
//!
//! - **What of an assignment runs** (`check::check`, from
//!   [`handle_assigned`](Reconciler::handle_assigned)): not the tasks this worker's catalogue
//!   lacks (unless the leader assigned from further in the task store: they wait for this
//!   worker's view, a wait reported once it outlasts the rebalance timeout), the revocation
//!   of a task both assigned and revoked, no revocation of a task not held here.
//! - **Apply** ([`handle_assigned`](Reconciler::handle_assigned), `start`, `apply`): the
//!   assignment of a generation, as a runtime change, only while that generation is live (its
//!   assignment came and no loss since), with the latest lease of that generation (a held
//!   start applies later than its assignment came).
//! - **Read the group for fast failover** ([`handle_assigned`](Reconciler::handle_assigned)):
//!   after an assignment is applied or held back, unless it revokes tasks (a follow-up round
//!   replaces it a moment later). Tasks whose previous
//!   owner vanished (the assignment's `lost`) start only after the hold the leader set, which
//!   a later assignment that keeps them here cannot shorten, and a
//!   static worker that may have replaced a live process with its instance id starts
//!   nothing until that process's lease has surely ended (see [`Takeover`]).
//! - **Acknowledge a revocation** (the join gate; `maybe_ack`): only once the revoked tasks have stopped —
//!   those of the last assignment's revocations and, with an eager assignor, everything the
//!   revocation cancelled.
//! - **Rejoin** ([`handle_timeout`](Reconciler::handle_timeout)): the follow-up round of the
//!   incremental cooperative protocol, once revoked tasks stopped, or after the delay the
//!   leader asked for; never for a generation the group has left. And
//!   ([`handle_placement`](Reconciler::handle_placement)) the leader's rebalance when the task
//!   store moved the placement away from the round it led, once per generation.
//! - **Revoke all** ([`handle_revoked`](Reconciler::handle_revoked)): with an eager assignor,
//!   every task stops when a rebalance starts.
//! - **Lost, with a deadline** ([`handle_lost`](Reconciler::handle_lost)): every task stops by
//!   the instant the group may hand it to others (a self-fencing deadline plus the margin, or
//!   the abort timeout after a loss the coordinator reported).
//! - **Extend the tasks' lease** ([`handle_lease`](Reconciler::handle_lease)): only for the
//!   live membership the tasks were granted under, never after a loss.
//! - **Advertise** (`publish`, after every input): what the next JoinGroup's metadata says
//!   beside the runtime's tasks — a held start's claims, an eager revocation's claims (from
//!   [`handle_revoked_all`](Reconciler::handle_revoked_all) until the next assignment or a
//!   loss), the lost tasks' hold, a static takeover's wait, whether it may travel compressed.
//!   `WorkerProtocol::protocols` reads the snapshot; it decides nothing.
//! - **A graceful shutdown's end** ([`shutdown`]): once every task stopped, whether a static
//!   worker leaves a note for its successor, whether a dynamic one hands its tasks over in one
//!   more rebalance, and what each event of that rebalance means.
//!
//! One transition travels one way, once: the loop never decides, it only does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::lease::FencingToken;
use tokio::time::Instant;

use super::advertised::Advertised;
use super::check::{self, CatchUp, Local};
use super::protocol::AssignedFrom;
use crate::runtime::AssignmentChange;

#[path = "reconciler_advertise.rs"]
mod advertise;
#[path = "reconciler_io.rs"]
mod io;
#[path = "reconciler_shutdown.rs"]
pub(crate) mod shutdown;
pub(crate) use io::{Action, Assigned, REJECTED_REJOIN_DELAY, Settings, Takeover};

/// A rejoin the worker owes the group once revocations are done or a delay has passed.
#[derive(Debug, Clone, Copy)]
struct FollowUp {
    generation: i32,
    not_before: Instant,
    reason: &'static str,
}

/// An apply waiting for the loop's report.
#[derive(Debug, Clone)]
struct Pending {
    token: FencingToken,
    await_revocations: bool,
    follow_up: Option<FollowUp>,
    /// It completes an assignment already applied (its held lost tasks): the revocation wait
    /// and follow-up of that first apply stand.
    completes: bool,
}

/// A held start: the full assignment, applied at `at` unless a newer one or a loss came first.
#[derive(Debug, Clone)]
struct Held {
    at: Instant,
    assigned: Assigned,
    /// The assignment was applied without its lost tasks: this completes it. Otherwise nothing
    /// of it was applied yet (a takeover's wait).
    completes: bool,
}

/// Adds to `assigned` the held lost `tasks` it keeps here, with `left` of their hold.
fn keep_hold(assigned: &mut Assigned, tasks: &BTreeSet<String>, left: Duration) {
    let Some(a) = assigned.assignment.as_mut() else {
        return;
    };
    let kept: Vec<String> = tasks
        .iter()
        .filter(|task| a.tasks.contains(*task))
        .cloned()
        .collect();
    if kept.is_empty() {
        return;
    }
    a.lost.extend(kept);
    a.lost_hold = Some(a.lost_hold.map_or(left, |hold| hold.max(left)));
}

/// Whether a [`Action::Rejoin`] for `generation` is still due when the loop carries it out:
/// the member is still stable in that generation. If the group moved on meanwhile (another
/// rebalance began, or a newer generation came), that rebalance already does what the rejoin
/// was for.
pub(crate) fn rejoin_still_due(generation: i32, current: Option<i32>, stable: bool) -> bool {
    current == Some(generation) && stable
}

/// What identifies a held start: its generation and when it is due.
type HeldKey = Option<(i32, Instant)>;

/// The worker loop's state machine. See the [module guide](self).
#[derive(Debug)]
pub(crate) struct Reconciler {
    settings: Settings,
    /// Whether this member joined since the process started (a takeover's wait counts from
    /// its first join).
    joined_once: bool,
    /// The generation (and member id) whose assignment arrived and was not lost since: only
    /// its assignments apply, and only its member's lease extends the tasks'.
    live: Option<FencingToken>,
    /// The member id the tasks' lease was last granted to (by the last apply).
    granted_to: Option<FencingToken>,
    /// The latest lease the member's status showed, and until when.
    lease: Option<(FencingToken, Instant)>,
    /// After an eager revocation: what was held before it, claimed until the next assignment.
    eager_previous: Option<Arc<BTreeMap<String, i32>>>,
    /// Whether the last assignment's leader reads compressed envelopes.
    reads_compressed: bool,
    /// The last snapshot published, with what identifies its held claims.
    published: Option<(Arc<Advertised>, HeldKey)>,
    /// The wait for this worker's view of the task store to reach an assignment's offset.
    catch_up: Option<CatchUp>,
    /// The generation in which this leader last rebalanced for a placement change.
    placement_rejoin: Option<i32>,
    /// This worker's task store offset, as last reported.
    store_offset: Option<i64>,
    /// The generation whose assignment was applied last (and not lost since).
    stable: Option<FencingToken>,
    pending: Option<Pending>,
    /// The generation whose revocations are stopping (the loop awaits them).
    revoking: Option<i32>,
    /// Whether an eager revocation's stop is running (the loop awaits it).
    stopping: bool,
    /// The join gate: the generation whose revocation waits to be acknowledged.
    ack: Option<i32>,
    follow_up: Option<FollowUp>,
    /// Nothing from the group starts before this instant (a static takeover's wait).
    start_not_before: Option<Instant>,
    held: Option<Held>,
    /// Lost tasks held back, and until when. They keep that hold in any later assignment
    /// that keeps them here — a cooperative follow-up round, any rebalance within the hold,
    /// after an eager revocation or a loss — since this member claims them meanwhile, and the
    /// leader then no longer marks them lost.
    holding_lost: Option<(BTreeSet<String>, Instant)>,
    actions: VecDeque<Action>,
}

impl Reconciler {
    /// A reconciler with `settings`, before the first join.
    pub(crate) fn new(settings: Settings) -> Self {
        Reconciler {
            settings,
            joined_once: false,
            live: None,
            granted_to: None,
            lease: None,
            eager_previous: None,
            reads_compressed: false,
            published: None,
            catch_up: None,
            store_offset: None,
            placement_rejoin: None,
            stable: None,
            pending: None,
            revoking: None,
            stopping: false,
            ack: None,
            follow_up: None,
            start_not_before: None,
            held: None,
            holding_lost: None,
            actions: VecDeque::new(),
        }
    }

    // ----- inputs -----

    /// The member joined a generation.
    pub(crate) fn handle_joined(&mut self, now: Instant) {
        if std::mem::replace(&mut self.joined_once, true) {
            return;
        }
        if self.settings.takeover == Takeover::MustWait {
            self.start_not_before = Some(now + self.settings.session_timeout);
        }
        self.publish();
    }

    /// SyncGroup delivered an assignment: its generation is live from now on. What of it
    /// this worker runs is decided here ([`check::check`]): tasks its catalogue lacks are
    /// dropped, unless the leader assigned from further in the task store (then they wait for
    /// this worker's view, [`handle_store_offset`](Self::handle_store_offset)).
    pub(crate) fn handle_assigned(&mut self, now: Instant, mut assigned: Assigned) {
        if let Some(assignment) = assigned.assignment.take() {
            let local = std::mem::take(&mut assigned.local);
            let (checked, wait) = check::check(assignment, &assigned.token, &local);
            assigned.assignment = Some(checked);
            self.store_offset = local.offset;
            if let Some(offset) = wait {
                let bound = self.settings.rebalance_timeout;
                self.catch_up = Some(check::wait_for(self.catch_up, now, offset, bound));
            }
        }
        self.live = Some(assigned.token.clone());
        self.reads_compressed = assigned.reads_compressed;
        // The new assignment says what this member owns: the eager claims are over.
        self.eager_previous = None;
        let read_group = assigned.eager
            || assigned
                .assignment
                .as_ref()
                .is_none_or(|a| a.revoked.is_empty());
        self.start(now, assigned);
        if read_group {
            self.actions.push_back(Action::ReadGroup);
        }
        self.publish();
    }

    /// Starts what `assigned` asks for: at once, or held (a takeover's wait, lost tasks'
    /// hold).
    fn start(&mut self, now: Instant, mut assigned: Assigned) {
        self.held = None;
        // Lost tasks held back by an earlier assignment keep their hold in this one.
        self.holding_lost = self.holding_lost.take().filter(|(_, until)| *until > now);
        if let Some((tasks, until)) = &self.holding_lost {
            keep_hold(&mut assigned, tasks, *until - now);
        }
        if let Some(at) = self.start_not_before.filter(|t| *t > now) {
            tracing::warn!(
                generation = assigned.token.generation_id,
                wait_ms = (at - now).as_millis() as u64,
                "this static worker may have replaced a live process with its instance id; its \
                 tasks start once that process's lease has surely ended"
            );
            self.held = Some(Held {
                at,
                assigned,
                completes: false,
            });
            return;
        }
        let lost_hold = assigned
            .assignment
            .as_ref()
            .filter(|a| !a.lost.is_empty())
            .and_then(|a| a.lost_hold)
            .filter(|d| !d.is_zero());
        match lost_hold {
            Some(hold) => {
                // Start everything but the lost tasks now, and all of it after the hold.
                let mut now_part = assigned.clone();
                if let Some(a) = now_part.assignment.as_mut() {
                    a.tasks = &a.tasks - &a.lost;
                    a.lost.clear();
                }
                self.apply(now, now_part, false);
                if let Some(a) = &assigned.assignment {
                    self.holding_lost = Some((a.lost.clone(), now + hold));
                }
                self.held = Some(Held {
                    at: now + hold,
                    assigned,
                    completes: true,
                });
            }
            None => self.apply(now, assigned, false),
        }
    }

    /// The loop tried the last [`Action::Apply`] of `token`: `applied` is false if its
    /// generation was lost or superseded before it could apply.
    pub(crate) fn handle_applied(&mut self, token: &FencingToken, applied: bool) {
        let Some(pending) = self.pending.take_if(|p| &p.token == token) else {
            return;
        };
        if !applied {
            tracing::debug!(
                generation = token.generation_id,
                "assignment lost before it applied"
            );
            return;
        }
        self.stable = Some(pending.token.clone());
        self.granted_to = Some(pending.token.clone());
        if pending.completes {
            return;
        }
        self.ack = None;
        self.stopping = false;
        // A newer assignment supersedes what the last one asked for.
        self.revoking = pending
            .await_revocations
            .then_some(pending.token.generation_id);
        self.follow_up = pending.follow_up;
    }

    /// A rebalance started: the member holds its JoinGroup until the revocation of
    /// `generation` is acknowledged. `eager`: the group's assignor revokes everything when a
    /// rebalance starts, so every task stops now ([`Action::RevokeAll`]) and the
    /// acknowledgement waits for that stop.
    pub(crate) fn handle_revoked(&mut self, generation: i32, eager: bool) {
        self.stable = None;
        // An eager assignor hands everything out again in the next generation: what this one
        // held back must not start any more.
        self.held = self.held.take().filter(|h| !h.assigned.eager);
        self.ack = Some(generation);
        self.stopping = eager;
        if eager {
            self.actions.push_back(Action::RevokeAll);
        }
        self.maybe_ack();
        self.publish();
    }

    /// The eager revocation ([`Action::RevokeAll`]) stopped `held`, each task with the
    /// generation it was granted in: the next JoinGroup still claims them, so that a sticky
    /// leader gives them back.
    pub(crate) fn handle_revoked_all(&mut self, held: BTreeMap<String, i32>) {
        self.eager_previous = Some(Arc::new(held));
        self.publish();
    }

    /// The membership was lost: every task stops ([`Action::Lost`]) by the instant the group
    /// may hand them to others — `fence_deadline` (a self-fencing loss's deadline) plus the
    /// margin, or at once plus the abort timeout when the coordinator reported the loss (the
    /// work may be elsewhere already). Nothing of the generation applies any more.
    pub(crate) fn handle_lost(&mut self, now: Instant, fence_deadline: Option<Instant>) {
        let deadline = match fence_deadline {
            Some(deadline) => deadline + self.settings.self_fence_margin,
            None => now + self.settings.abort_timeout,
        };
        self.actions.push_back(Action::Lost { deadline });
        self.live = None;
        self.stable = None;
        self.pending = None;
        self.revoking = None;
        self.follow_up = None;
        self.ack = None;
        self.stopping = false;
        self.held = None;
        self.eager_previous = None;
        self.reads_compressed = false;
        self.publish();
    }

    /// The member's status shows `lease` valid until `valid_until` (a heartbeat, join or sync
    /// succeeded): the tasks' lease follows it if it is the live membership's, the one the
    /// tasks were granted under. Never after a loss: tasks of a lost generation must not
    /// resume on a later lease.
    pub(crate) fn handle_lease(&mut self, lease: &FencingToken, valid_until: Instant) {
        self.lease = Some((lease.clone(), valid_until));
        let member = |t: &FencingToken| *t.member_id == *lease.member_id;
        if self.live.as_ref().is_some_and(member) && self.granted_to.as_ref().is_some_and(member) {
            self.actions.push_back(Action::ExtendLease { valid_until });
        }
    }

    /// This worker's view of the task store reached `offset`: a catch-up wait it completes
    /// ends.
    pub(crate) fn handle_store_offset(&mut self, now: Instant, offset: Option<i64>) {
        self.store_offset = offset;
        if let (Some(wait), Some(offset)) = (self.catch_up, offset)
            && offset >= wait.offset
        {
            tracing::info!(
                offset,
                waited_ms = now.saturating_duration_since(wait.since).as_millis() as u64,
                "this worker's view of the task store caught up with its assignment"
            );
            self.catch_up = None;
        }
    }

    /// The task store's effective catalogue places tasks as `placement` (a fingerprint of task
    /// ids, kinds and weights) at store offset `offset`; `from` is what the round this member
    /// last led was assigned from, and `leading` the generation it leads while stable, if any.
    /// The leader of that very generation rebalances when the placement moved away from it (a
    /// task added or deleted in the store, maybe while the round was under way), once per
    /// generation; other members do nothing (the leader sees the same change).
    pub(crate) fn handle_placement(
        &mut self,
        from: Option<AssignedFrom>,
        leading: Option<i32>,
        placement: u64,
        offset: Option<i64>,
    ) {
        let Some(from) = from.filter(|from| leading == Some(from.generation)) else {
            return;
        };
        if placement == from.placement || self.placement_rejoin == Some(from.generation) {
            return;
        }
        self.placement_rejoin = Some(from.generation);
        tracing::info!(
            generation = from.generation,
            assigned_from = ?from.store_offset,
            now_at = ?offset,
            "task store placement changed (a task added or deleted); the leader rebalances"
        );
        self.actions.push_back(Action::Rejoin {
            generation: from.generation,
            reason: "the task store changed placement (a task added or deleted)",
        });
    }

    /// The revocations of the assignment of `generation` have stopped.
    pub(crate) fn handle_revocations_stopped(&mut self, now: Instant, generation: i32) {
        if self.revoking != Some(generation) {
            return;
        }
        self.revoking = None;
        let not_before = self.follow_up.map_or(now, |f| f.not_before);
        self.follow_up = Some(FollowUp {
            generation,
            not_before,
            reason: "revoked tasks stopped (incremental cooperative follow-up)",
        });
        self.maybe_ack();
    }

    /// The tasks an eager revocation cancelled have stopped.
    pub(crate) fn handle_revoked_stopped(&mut self) {
        self.stopping = false;
        self.maybe_ack();
    }

    /// Time passed: due follow-ups and held starts, and a catch-up wait that outlasted the
    /// rebalance timeout (reported once; the tasks still start if the view gets there).
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if let Some(wait) = self.catch_up.take_if(|w| w.deadline <= now) {
            tracing::warn!(
                leader_offset = wait.offset,
                own_offset = ?self.store_offset,
                waited_ms = now.saturating_duration_since(wait.since).as_millis() as u64,
                "this worker's view of the task store has not reached the offset its \
                 assignment was computed from; the assigned tasks it does not know are not \
                 running (check that it can read the store's topic); they start if the view \
                 gets there"
            );
        }
        if let Some(held) = self.held.take_if(|h| h.at <= now) {
            if self.start_not_before.is_some_and(|t| t <= now) {
                self.start_not_before = None;
            }
            if held.completes {
                self.apply(now, held.assigned, true);
            } else {
                self.start(now, held.assigned);
            }
        }
        if self.revoking.is_none()
            && let Some(f) = self.follow_up.take_if(|f| f.not_before <= now)
        {
            if self.stable.as_ref().map(|t| t.generation_id) == Some(f.generation) {
                self.actions.push_back(Action::Rejoin {
                    generation: f.generation,
                    reason: f.reason,
                });
            } else {
                tracing::debug!(
                    generation = f.generation,
                    "follow-up rebalance not needed: the group moved on"
                );
            }
        }
        self.publish();
    }

    // ----- outputs -----

    /// The next action, in order.
    pub(crate) fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) has work next.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let follow_up = self
            .follow_up
            .filter(|_| self.revoking.is_none())
            .map(|f| f.not_before);
        let held = self.held.as_ref().map(|h| h.at);
        let catch_up = self.catch_up.map(|w| w.deadline);
        [follow_up, held, catch_up].into_iter().flatten().min()
    }

    // ----- internals -----

    /// Asks the loop to apply `assigned`; `completes`: it completes an earlier apply of the
    /// same assignment (its held lost tasks), which keeps that apply's waits and follow-up.
    fn apply(&mut self, now: Instant, assigned: Assigned, completes: bool) {
        let token = assigned.token.clone();
        if self.live.as_ref() != Some(&token) {
            // Lost or superseded since it came: nothing of it runs.
            tracing::debug!(
                generation = token.generation_id,
                "assignment no longer live"
            );
            return;
        }
        let generation = token.generation_id;
        // Moved, not copied: the sets may hold tens of thousands of ids.
        let (run, revoke, delay, fingerprint) = match assigned.assignment {
            Some(a) => (
                a.tasks,
                a.revoked,
                a.rebalance_delay,
                Some(a.catalogue_fingerprint),
            ),
            None => (BTreeSet::new(), BTreeSet::new(), None, None),
        };
        let leader = *assigned.leader == *token.member_id;
        let mut follow_up = delay.map(|d| FollowUp {
            generation,
            not_before: now + d,
            reason: "scheduled follow-up rebalance",
        });
        if assigned.rejected {
            follow_up = Some(FollowUp {
                generation,
                not_before: now + REJECTED_REJOIN_DELAY,
                reason: "the leader's assignment for this member did not decode",
            });
        }
        // Eager assignors revoked everything when the rebalance started and hand tasks to
        // their new owners in the same round: their revocations need no follow-up round.
        let await_revocations = !revoke.is_empty() && !assigned.eager;
        if !await_revocations && !assigned.rejected {
            // Revoking members rejoin once their tasks stopped; a leader without revocations
            // rejoins only after a delay, or as a guard if nobody else started the follow-up.
            follow_up = if leader {
                follow_up.map(|mut f| {
                    if delay.is_some_and(|d| d.is_zero()) {
                        f.not_before = now + self.settings.stop_bound + Duration::from_secs(1);
                        f.reason = "follow-up rebalance guard";
                    }
                    f
                })
            } else {
                None
            };
        }
        if completes {
            follow_up = self.follow_up;
        }
        let await_revocations = await_revocations && !completes;
        // A held start applies later than its assignment came: heartbeats have extended the
        // lease since.
        let extended = self
            .lease
            .as_ref()
            .filter(|(lease, _)| *lease == token)
            .map(|(_, until)| *until);
        let change = AssignmentChange {
            token: token.clone(),
            leader: assigned.leader,
            valid_until: extended.map_or(assigned.valid_until, |e| e.max(assigned.valid_until)),
            run,
            revoke,
            leader_catalogue_fingerprint: fingerprint,
        };
        self.pending = Some(Pending {
            token,
            await_revocations,
            follow_up,
            completes,
        });
        self.actions.push_back(Action::Apply {
            change,
            await_revocations,
        });
    }

    /// Acknowledges the held revocation once nothing it waits for still runs.
    fn maybe_ack(&mut self) {
        if self.revoking.is_none()
            && !self.stopping
            && let Some(generation) = self.ack.take()
        {
            tracing::info!(generation, "revoked tasks stopped; the member rejoins");
            self.actions.push_back(Action::AckRevocation { generation });
        }
    }
}

#[cfg(test)]
#[path = "reconciler_tests.rs"]
mod tests;
