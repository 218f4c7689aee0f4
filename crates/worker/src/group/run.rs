//! The worker loop: turns the member's events into [`Runtime`] calls, keeps the task lease in
//! step with the membership's self-fencing deadline, and rejoins when the protocol asks.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::driver::{MemberEvent, MemberHandle, MemberStatus};
use kroupier_coordinator::membership::{FencingToken as GroupToken, Lease, MemberState};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::protocol::Stopping;
use super::reconciler::{Action, Assigned, Reconciler, Settings, Takeover};
use super::{WorkerError, WorkerEvent};
use crate::config::WorkerConfig;
use crate::protocol::Assignment;
use crate::runtime::{ApplyReport, Runtime};

type Waiting = Pin<Box<dyn Future<Output = ApplyReport> + Send>>;

/// The round trip a removed member's heartbeat is assumed to take at most when the new owners
/// of its tasks hold them back (docs/reliability.md states it).
pub(crate) const LOST_HOLD_ROUND_TRIP: Duration = Duration::from_millis(250);

/// The loop's state.
pub(crate) struct Loop {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) protocol: Arc<super::WorkerProtocol>,
    pub(crate) member: MemberHandle,
    pub(crate) config: WorkerConfig,
    pub(crate) events: broadcast::Sender<WorkerEvent>,
    /// Whether this worker's first assignment may be another process's (a static takeover).
    pub(crate) takeover: Takeover,
}

/// The stops the loop awaits for the reconciler: the revocations of an applied assignment, and
/// what an eager revocation cancelled.
#[derive(Default)]
struct Stops {
    revoking: Option<(i32, Waiting)>,
    stopping: Option<Stopping>,
}

impl Loop {
    /// Runs until `shutdown` fires (stop tasks, leave, `Ok`), or the member ends.
    pub(crate) async fn run(
        self,
        mut member_events: broadcast::Receiver<MemberEvent>,
        shutdown: CancellationToken,
    ) -> Result<(), WorkerError> {
        let mut status = self.member.status();
        let mut reconciler = Reconciler::new(Settings {
            stop_bound: self.config.stop_bound(),
            session_timeout: self.config.member.membership.session_timeout,
            takeover: self.takeover,
        });
        let mut stops = Stops::default();
        loop {
            self.act(&mut reconciler, &mut stops).await;
            let timeout = reconciler.poll_timeout();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return self.stop_and_leave(&mut member_events).await,
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
                        if let Some(assigned) = self.assigned(&token, &assignment).await {
                            reconciler.handle_assigned(Instant::now(), assigned);
                        }
                    }
                    Ok(MemberEvent::Revoked { generation, reason }) => {
                        tracing::debug!(generation, %reason, "revoked; holding the rejoin");
                        stops.stopping = self.protocol.take_revocation();
                        reconciler.handle_revoked(generation, stops.stopping.is_some());
                    }
                    Ok(MemberEvent::Lost { generation, reason }) => {
                        stops = Stops::default();
                        reconciler.handle_lost();
                        tracing::warn!(?generation, ?reason, "membership lost; tasks stopped");
                        self.emit(WorkerEvent::Lost { generation });
                    }
                    Ok(MemberEvent::Joined { generation, member_id, leader }) => {
                        tracing::debug!(generation, %member_id, leader, "joined the group");
                        reconciler.handle_joined(Instant::now());
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
                        self.lagged(&mut reconciler, &mut stops).await;
                    }
                    Err(RecvError::Closed) => return self.member_ended(None).await,
                },
                report = async {
                    match stops.revoking.as_mut() {
                        Some((_, waiting)) => waiting.await,
                        None => std::future::pending().await,
                    }
                } => {
                    let generation = stops.revoking.take().map_or(-1, |(generation, _)| generation);
                    let stopped = report.stopped.graceful.len() + report.stopped.aborted.len();
                    tracing::info!(generation, stopped, "revoked tasks stopped");
                    reconciler.handle_revocations_stopped(Instant::now(), generation);
                }
                report = async {
                    match stops.stopping.as_mut() {
                        Some(stopping) => stopping.stopped().await,
                        None => std::future::pending().await,
                    }
                } => {
                    stops.stopping = None;
                    let stopped = report.graceful.len() + report.aborted.len();
                    tracing::info!(stopped, "tasks of the revoked generation stopped");
                    reconciler.handle_revoked_stopped();
                }
                () = sleep_until(timeout) => reconciler.handle_timeout(Instant::now()),
            }
            self.protocol.set_held_claims(reconciler.held_claims());
        }
    }

    /// Carries out the reconciler's actions, in order.
    async fn act(&self, reconciler: &mut Reconciler, stops: &mut Stops) {
        while let Some(action) = reconciler.poll_action() {
            match action {
                Action::Apply {
                    change,
                    await_revocations,
                } => {
                    let generation = change.token.generation;
                    let token = GroupToken {
                        generation_id: generation,
                        member_id: change.token.member_id.to_string(),
                    };
                    let run = change.run.clone();
                    let before: Vec<String> = self.runtime.owned().into_keys().collect();
                    let waiting = self
                        .protocol
                        .if_live(generation, &token.member_id, || self.runtime.apply(change));
                    reconciler.handle_applied(&token, waiting.is_some());
                    let Some(waiting) = waiting else { continue };
                    let leader = self
                        .member
                        .current()
                        .generation
                        .as_ref()
                        .is_some_and(|g| g.generation_id == generation && g.is_leader());
                    self.emit(WorkerEvent::Assigned {
                        generation,
                        member_id: token.member_id.clone(),
                        leader,
                        started: run
                            .iter()
                            .filter(|t| !before.contains(t))
                            .cloned()
                            .collect(),
                        stopped: before
                            .iter()
                            .filter(|t| !run.contains(*t))
                            .cloned()
                            .collect(),
                        tasks: run,
                    });
                    if await_revocations {
                        stops.revoking = Some((generation, Box::pin(waiting)));
                    }
                }
                Action::AckRevocation { generation } => {
                    if let Err(error) = self.member.revocations_done(generation).await {
                        tracing::warn!(%error, "could not acknowledge the revocation");
                    }
                }
                Action::Rejoin { generation, reason } => {
                    self.rejoin_if_current(generation, reason).await;
                }
            }
        }
    }

    /// The loop missed events: catch up from the member's current status.
    async fn lagged(&self, reconciler: &mut Reconciler, stops: &mut Stops) {
        let now = self.member.current();
        // A revocation whose rejoin waits for this loop may be among the skipped events.
        let join_held = now.join_held;
        if join_held.is_some() && stops.stopping.is_none() {
            stops.stopping = self.protocol.take_revocation();
        }
        // So may an assignment: the current one is applied if it was not.
        let current = match (now.state, now.generation.as_ref(), now.assignment.as_ref()) {
            (MemberState::Stable, Some(generation), Some(bytes)) => {
                self.assigned(&generation.token(), bytes).await
            }
            _ => None,
        };
        reconciler.handle_lagged(Instant::now(), join_held, stops.stopping.is_some(), current);
    }

    /// What the reconciler needs of an assignment: its lease, leader and assignor, and the
    /// decoded bytes; `None` if the assignment is already stale.
    async fn assigned(&self, token: &GroupToken, bytes: &[u8]) -> Option<Assigned> {
        let Some((lease, leader, protocol)) = self.lease_for(token).await else {
            tracing::debug!(
                generation = token.generation_id,
                "assignment superseded before it applied"
            );
            return None;
        };
        let mut rejected = false;
        let assignment = if bytes.is_empty() {
            None
        } else {
            match Assignment::decode(bytes) {
                Ok(assignment) => Some(self.checked(assignment, token)),
                Err(error) => {
                    tracing::error!(
                        %error,
                        "the leader's assignment does not decode; running nothing and rejoining"
                    );
                    rejected = true;
                    None
                }
            }
        };
        Some(Assigned {
            token: token.clone(),
            leader,
            eager: self.protocol.is_eager(&protocol),
            assignment,
            valid_until: Instant::from_std(lease.valid_until),
            rejected,
        })
    }

    /// Drops what no leader may ask of this worker, with a logged reason: tasks its catalogue
    /// does not have (a leader with another catalogue, or a broken one) and tasks both to run
    /// and to revoke (the revocation wins); and revocations of tasks it does not run. The rest
    /// of the assignment stands.
    fn checked(&self, mut assignment: Assignment, token: &GroupToken) -> Assignment {
        let catalogue = self.runtime.supervisor().catalogue();
        let unknown: Vec<String> = assignment
            .tasks
            .iter()
            .filter(|t| !catalogue.contains(t))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            tracing::error!(
                generation = token.generation_id,
                tasks = ?unknown,
                "the leader assigned tasks this worker's catalogue does not have; not starting them"
            );
            for task in &unknown {
                assignment.tasks.remove(task);
                assignment.lost.remove(task);
            }
        }
        let both: Vec<String> = assignment
            .tasks
            .intersection(&assignment.revoked)
            .cloned()
            .collect();
        if !both.is_empty() {
            tracing::error!(
                generation = token.generation_id,
                tasks = ?both,
                "the leader both assigned and revoked these tasks; stopping them"
            );
            for task in &both {
                assignment.tasks.remove(task);
                assignment.lost.remove(task);
            }
        }
        // A revocation of a task this worker does not run asks nothing of it (and must not
        // start a follow-up round that a leader repeating itself would turn into a loop).
        let owned = self.runtime.owned();
        assignment.revoked.retain(|task| owned.contains_key(task));
        if assignment.generation != token.generation_id {
            tracing::warn!(
                sync_group = token.generation_id,
                assignment = assignment.generation,
                "the assignment names another generation than SyncGroup's; SyncGroup's is used"
            );
        }
        assignment
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

    async fn rejoin_if_current(&self, generation: i32, reason: &'static str) {
        let status = self.member.current();
        let current = status.generation.as_ref().map(|g| g.generation_id);
        if current != Some(generation) || status.state != MemberState::Stable {
            tracing::debug!(
                generation,
                ?current,
                "follow-up rebalance not needed: the group moved on"
            );
            return;
        }
        tracing::info!(generation, reason, "rejoining");
        if let Err(error) = self.member.rejoin(reason).await {
            tracing::warn!(%error, "could not rejoin");
        }
    }

    /// Graceful shutdown: stop every task, then LeaveGroup.
    async fn stop_and_leave(
        &self,
        member_events: &mut broadcast::Receiver<MemberEvent>,
    ) -> Result<(), WorkerError> {
        let deadline = Instant::now() + self.config.stop_bound();
        let report = self.runtime.shutdown(deadline).await;
        tracing::info!(
            graceful = report.graceful.len(),
            aborted = report.aborted.len(),
            unresponsive = report.unresponsive.len(),
            "tasks stopped; leaving the group"
        );
        let membership = &self.config.member.membership;
        if let Some(instance_id) = &membership.group_instance_id
            && report.unresponsive.is_empty()
            && let Some(generation) = self.member.current().generation
        {
            super::takeover::leave_note(&membership.group_id, instance_id, &generation.member_id);
        }
        self.emit(WorkerEvent::Stopped);
        let stopped = report.graceful.len() + report.aborted.len();
        if membership.group_instance_id.is_none() && report.unresponsive.is_empty() && stopped > 0 {
            self.hand_over(member_events).await;
        }
        let leave = self.member.leave("the worker is shutting down");
        if tokio::time::timeout(self.config.member.membership.session_timeout, leave)
            .await
            .is_err()
        {
            tracing::warn!(
                "LeaveGroup did not complete; the group drops this worker after its session timeout"
            );
        }
        Ok(())
    }

    /// After its tasks stopped, a dynamic worker rejoins once saying so (`leaving` in its
    /// metadata) before it sends LeaveGroup: the leader then gives its tasks to others at once,
    /// as tasks nobody runs, rather than as the tasks of a member Kafka removed, which the next
    /// owners would hold back in case their previous owner still ran them. Bounded by the
    /// session timeout; on any failure the worker just leaves (its tasks are then held back).
    async fn hand_over(&self, member_events: &mut broadcast::Receiver<MemberEvent>) {
        let status = self.member.current();
        let Some(generation) = status.generation.as_ref().map(|g| g.generation_id) else {
            return;
        };
        if status.state != MemberState::Stable {
            return;
        }
        self.protocol.set_leaving();
        let handed_over = async {
            self.member
                .rejoin("the worker is shutting down: its tasks are stopped and go to others")
                .await
                .ok()?;
            loop {
                match member_events.recv().await {
                    Ok(MemberEvent::Revoked { generation: g, .. }) => {
                        // Every task stopped already: the join gate may open at once.
                        let _ = self.member.revocations_done(g).await;
                    }
                    Ok(MemberEvent::Assigned { token, .. }) if token.generation_id > generation => {
                        return Some(token.generation_id);
                    }
                    Ok(
                        MemberEvent::Lost { .. }
                        | MemberEvent::Fenced { .. }
                        | MemberEvent::Fatal { .. }
                        | MemberEvent::Left,
                    )
                    | Err(RecvError::Closed) => return None,
                    Ok(_) | Err(RecvError::Lagged(_)) => {
                        if let Some(g) = self.member.current().join_held {
                            let _ = self.member.revocations_done(g).await;
                        }
                    }
                }
            }
        };
        let timeout = self.config.member.membership.session_timeout;
        match tokio::time::timeout(timeout, handed_over).await {
            Ok(Some(next)) => tracing::info!(generation = next, "tasks handed over; leaving"),
            _ => tracing::warn!("could not hand the tasks over in a rebalance; leaving anyway"),
        }
    }

    /// The member stopped by itself (fenced, fatal, or its driver ended): stop every task.
    async fn member_ended(&self, event: Option<MemberEvent>) -> Result<(), WorkerError> {
        let deadline = Instant::now() + self.config.abort_timeout();
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
