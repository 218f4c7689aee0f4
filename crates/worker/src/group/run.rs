//! The worker loop: turns the member's events into [`Runtime`] calls, keeps the task lease in
//! step with the membership's self-fencing deadline, and rejoins when the protocol asks.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::driver::{MemberEvent, MemberHandle, MemberStatus};
use kroupier_coordinator::membership::{FencingToken as GroupToken, Lease, MemberState};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::protocol::Stopping;
use super::{WorkerError, WorkerEvent};
use crate::config::WorkerConfig;
use crate::context::FencingToken;
use crate::protocol::Assignment;
use crate::runtime::{ApplyReport, AssignmentChange, Runtime};

type Waiting = Pin<Box<dyn Future<Output = ApplyReport> + Send>>;

/// A rejoin the loop owes the group once revocations are done or a delay has passed.
struct FollowUp {
    /// The generation that asked for it; skipped if the group moved on meanwhile.
    generation: i32,
    /// Not before this instant.
    not_before: Instant,
    /// Why (KIP-800 reason).
    reason: &'static str,
}

/// The loop's state.
pub(crate) struct Loop {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) protocol: Arc<super::WorkerProtocol>,
    pub(crate) member: MemberHandle,
    pub(crate) config: WorkerConfig,
    pub(crate) events: broadcast::Sender<WorkerEvent>,
}

impl Loop {
    /// Runs until `shutdown` fires (stop tasks, leave, `Ok`), or the member ends.
    pub(crate) async fn run(
        self,
        mut member_events: broadcast::Receiver<MemberEvent>,
        shutdown: CancellationToken,
    ) -> Result<(), WorkerError> {
        let mut status = self.member.status();
        let mut revoking: Option<(i32, Waiting)> = None;
        let mut follow_up: Option<FollowUp> = None;
        let mut last_applied: Option<GroupToken> = None;
        // The join gate: the generation whose revocation the member waits for, and the stop
        // of what an eager `on_revoked` cancelled.
        let mut ack: Option<i32> = None;
        let mut stopping: Option<Stopping> = None;
        loop {
            if let Some(generation) = ack
                && revoking.is_none()
                && stopping.is_none()
            {
                ack = None;
                tracing::info!(generation, "revoked tasks stopped; the member rejoins");
                if let Err(error) = self.member.revocations_done(generation).await {
                    tracing::warn!(%error, "could not acknowledge the revocation");
                }
            }
            let follow_up_at = follow_up.as_ref().map(|f| f.not_before);
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return self.stop_and_leave().await,
                changed = status.changed() => {
                    if changed.is_err() {
                        // The driver ended; its last event says why.
                        let last = std::iter::from_fn(|| member_events.try_recv().ok())
                            .filter(|e| matches!(e, MemberEvent::Fenced { .. }
                                | MemberEvent::Fatal { .. } | MemberEvent::Left))
                            .last();
                        return self.member_ended(last).await;
                    }
                    let snapshot = status.borrow_and_update().clone();
                    self.extend_lease(&snapshot);
                }
                event = member_events.recv() => match event {
                    Ok(MemberEvent::Assigned { token, assignment }) => {
                        let Some(applied) = self.assigned(&token, &assignment).await else {
                            continue;
                        };
                        last_applied = Some(token.clone());
                        ack = None;
                        stopping = None;
                        let (waiting, next) = applied;
                        // A newer assignment supersedes what the last one asked for.
                        revoking = waiting.map(|waiting| (token.generation_id, waiting));
                        follow_up = next;
                    }
                    Ok(MemberEvent::Revoked { generation, reason }) => {
                        // Rejoin only once the revoked tasks stopped: those of the last
                        // assignment's revocations (`revoking`) and, with an eager assignor,
                        // everything `on_revoked` cancelled.
                        tracing::debug!(generation, %reason, "revoked; holding the rejoin");
                        ack = Some(generation);
                        stopping = self.protocol.take_revocation();
                    }
                    Ok(MemberEvent::Lost { generation, reason }) => {
                        revoking = None;
                        follow_up = None;
                        ack = None;
                        stopping = None;
                        tracing::warn!(?generation, ?reason, "membership lost; tasks stopped");
                        self.emit(WorkerEvent::Lost { generation });
                    }
                    Ok(MemberEvent::Joined { generation, member_id, leader }) => {
                        tracing::debug!(generation, %member_id, leader, "joined the group");
                    }
                    Ok(MemberEvent::AssignmentFailed { generation, error }) => {
                        tracing::warn!(generation, %error, "the assignment failed; rejoining");
                    }
                    Ok(event @ (MemberEvent::Fenced { .. } | MemberEvent::Fatal { .. }
                        | MemberEvent::Left)) => {
                        return self.member_ended(Some(event)).await;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "worker fell behind the member's events");
                        // An assignment may be among the skipped events: apply the current one.
                        let now = self.member.current();
                        // So may a revocation whose rejoin waits for this loop.
                        if let Some(generation) = now.join_held {
                            ack = Some(generation);
                            stopping = stopping.take().or_else(|| self.protocol.take_revocation());
                        }
                        let current = now.generation.as_ref().map(|g| g.token());
                        if let (MemberState::Stable, Some(token), Some(bytes)) =
                            (now.state, current, now.assignment.as_ref())
                            && last_applied.as_ref() != Some(&token)
                            && let Some((waiting, next)) = self.assigned(&token, bytes).await
                        {
                            last_applied = Some(token.clone());
                            revoking = waiting.map(|waiting| (token.generation_id, waiting));
                            follow_up = next;
                        }
                    }
                    Err(RecvError::Closed) => return self.member_ended(None).await,
                },
                report = async {
                    match revoking.as_mut() {
                        Some((_, waiting)) => waiting.await,
                        None => std::future::pending().await,
                    }
                } => {
                    let generation = revoking.take().map_or(-1, |(generation, _)| generation);
                    let stopped = report.stopped.graceful.len() + report.stopped.aborted.len();
                    tracing::info!(generation, stopped, "revoked tasks stopped");
                    let not_before = follow_up
                        .as_ref()
                        .map_or_else(Instant::now, |f| f.not_before);
                    follow_up = Some(FollowUp {
                        generation,
                        not_before,
                        reason: "revoked tasks stopped (incremental cooperative follow-up)",
                    });
                }
                report = async {
                    match stopping.as_mut() {
                        Some(stopping) => stopping.stopped().await,
                        None => std::future::pending().await,
                    }
                } => {
                    stopping = None;
                    let stopped = report.graceful.len() + report.aborted.len();
                    tracing::info!(stopped, "tasks of the revoked generation stopped");
                }
                () = sleep_until(follow_up_at), if revoking.is_none() => {
                    if let Some(f) = follow_up.take() {
                        self.rejoin_if_current(&f).await;
                    }
                }
            }
        }
    }

    /// Applies an assignment. Returns the wait for its revocations (if any) and the follow-up
    /// rejoin it asks for; `None` if the assignment is already stale.
    async fn assigned(
        &self,
        token: &GroupToken,
        bytes: &[u8],
    ) -> Option<(Option<Waiting>, Option<FollowUp>)> {
        let Some((lease, leader_id, protocol)) = self.lease_for(token).await else {
            tracing::debug!(
                generation = token.generation_id,
                "assignment superseded before it applied"
            );
            return None;
        };
        let assignment = if bytes.is_empty() {
            None
        } else {
            match Assignment::decode(bytes) {
                Ok(assignment) => Some(assignment),
                Err(error) => {
                    tracing::error!(%error, "the leader's assignment does not decode; running nothing");
                    None
                }
            }
        };
        let (run, revoke, delay, fingerprint) = match &assignment {
            Some(a) => (
                a.tasks.clone(),
                a.revoked.clone(),
                a.rebalance_delay,
                Some(a.catalogue_fingerprint),
            ),
            None => (BTreeSet::new(), BTreeSet::new(), None, None),
        };
        let before: BTreeSet<String> = self.runtime.owned().into_keys().collect();
        let change = AssignmentChange {
            token: FencingToken::new(token.generation_id, token.member_id.as_str()),
            leader: leader_id.clone(),
            valid_until: Instant::from_std(lease.valid_until),
            run: run.clone(),
            revoke: revoke.clone(),
            leader_catalogue_fingerprint: fingerprint,
        };
        let Some(waiting) = self
            .protocol
            .if_live(token.generation_id, &token.member_id, || {
                self.runtime.apply(change)
            })
        else {
            tracing::debug!(
                generation = token.generation_id,
                "assignment lost before it applied"
            );
            return None;
        };
        let leader = leader_id == token.member_id;
        let started: Vec<String> = run.difference(&before).cloned().collect();
        let stopped: Vec<String> = before.difference(&run).cloned().collect();
        self.emit(WorkerEvent::Assigned {
            generation: token.generation_id,
            member_id: token.member_id.clone(),
            leader,
            tasks: run,
            started,
            stopped,
        });

        let generation = token.generation_id;
        let guard = self.config.graceful_stop_timeout + self.config.abort_timeout;
        let mut follow_up = delay.map(|d| FollowUp {
            generation,
            not_before: Instant::now() + d,
            reason: "scheduled follow-up rebalance",
        });
        // Eager assignors revoked everything when the rebalance started and hand tasks to their
        // new owners in the same round: their revocations need no follow-up round.
        let eager = kroupier_assignor::by_name(&protocol)
            .is_ok_and(|a| a.protocol() == kroupier_assignor::RebalanceProtocol::Eager);
        if revoke.is_empty() || eager {
            // Revoking members rejoin once their tasks stopped; a leader without revocations
            // rejoins only after a delay, or as a guard if nobody else started the follow-up.
            follow_up = if leader {
                follow_up.map(|mut f| {
                    if delay.is_some_and(|d| d.is_zero()) {
                        f.not_before = Instant::now() + guard + Duration::from_secs(1);
                        f.reason = "follow-up rebalance guard";
                    }
                    f
                })
            } else {
                None
            };
            drop(waiting);
            return Some((None, follow_up));
        }
        Some((Some(Box::pin(waiting)), follow_up))
    }

    /// Waits (briefly) until the member's status shows the lease of `token`; with the leader's
    /// member id and the protocol (assignor) the group selected.
    async fn lease_for(&self, token: &GroupToken) -> Option<(Lease, String, String)> {
        let mut status = self.member.status();
        let settled = |s: &MemberStatus| {
            s.stopped
                || s.lease.as_ref().is_some_and(|l| &l.token == token)
                || s.generation
                    .as_ref()
                    .is_some_and(|g| g.generation_id > token.generation_id)
                || (s.lease.is_none() && s.generation.is_none())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), status.wait_for(settled)).await;
        let s = status.borrow();
        let lease = s.lease.clone().filter(|l| &l.token == token)?;
        let generation = s
            .generation
            .as_ref()
            .filter(|g| g.generation_id == token.generation_id);
        let leader = generation.map(|g| g.leader_id.clone()).unwrap_or_default();
        let protocol = generation
            .map(|g| g.protocol_name.clone())
            .unwrap_or_default();
        Some((lease, leader, protocol))
    }

    /// A heartbeat (or join, or sync) succeeded: the tasks' lease follows the membership's.
    fn extend_lease(&self, status: &MemberStatus) {
        let Some(lease) = &status.lease else {
            return;
        };
        let current = self.runtime.supervisor().member_lease();
        if *current.token.member_id == *lease.token.member_id {
            // Never after a loss: tasks of a lost generation must not resume on a later lease.
            self.protocol.if_member_live(&lease.token.member_id, || {
                self.runtime
                    .extend_lease(Instant::from_std(lease.valid_until));
            });
        }
    }

    async fn rejoin_if_current(&self, follow_up: &FollowUp) {
        let status = self.member.current();
        let current = status.generation.as_ref().map(|g| g.generation_id);
        if current != Some(follow_up.generation) || status.state != MemberState::Stable {
            tracing::debug!(
                generation = follow_up.generation,
                ?current,
                "follow-up rebalance not needed: the group moved on"
            );
            return;
        }
        tracing::info!(
            generation = follow_up.generation,
            reason = follow_up.reason,
            "rejoining"
        );
        if let Err(error) = self.member.rejoin(follow_up.reason).await {
            tracing::warn!(%error, "could not rejoin");
        }
    }

    /// Graceful shutdown: stop every task, then LeaveGroup.
    async fn stop_and_leave(&self) -> Result<(), WorkerError> {
        let deadline =
            Instant::now() + self.config.graceful_stop_timeout + self.config.abort_timeout;
        let report = self.runtime.shutdown(deadline).await;
        tracing::info!(
            graceful = report.graceful.len(),
            aborted = report.aborted.len(),
            unresponsive = report.unresponsive.len(),
            "tasks stopped; leaving the group"
        );
        self.emit(WorkerEvent::Stopped);
        let leave = self.member.leave("the worker is shutting down");
        if tokio::time::timeout(self.config.session_timeout, leave)
            .await
            .is_err()
        {
            tracing::warn!(
                "LeaveGroup did not complete; the group drops this worker after its session timeout"
            );
        }
        Ok(())
    }

    /// The member stopped by itself (fenced, fatal, or its driver ended): stop every task.
    async fn member_ended(&self, event: Option<MemberEvent>) -> Result<(), WorkerError> {
        let deadline = Instant::now() + self.config.abort_timeout;
        let _ = self.runtime.lost(deadline).await;
        let _ = self.runtime.shutdown(Instant::now()).await;
        self.emit(WorkerEvent::Stopped);
        match event {
            Some(MemberEvent::Left) => Ok(()),
            Some(MemberEvent::Fenced { group_instance_id }) => {
                Err(WorkerError::Fenced { group_instance_id })
            }
            Some(MemberEvent::Fatal { error }) => Err(WorkerError::Fatal(error.to_string())),
            _ => Err(WorkerError::MemberStopped),
        }
    }

    fn emit(&self, event: WorkerEvent) {
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
