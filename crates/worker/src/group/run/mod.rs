//! The worker loop: turns the member's events into [`Runtime`] calls, keeps the task lease in
//! step with the membership's self-fencing deadline, and rejoins when the protocol asks.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::driver::{
    Events, MemberEvent, MemberHandle, RebalanceTimes, Subscribers,
};
use kroupier_coordinator::membership::MemberState;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod inputs;
mod shutdown;
mod store;

pub(crate) use store::StoreLink;

use super::reconciler::{Action, Reconciler, Settings, Takeover, rejoin_still_due};
use super::{AssignedTimes, WorkerError, WorkerEvent};
use crate::config::WorkerConfig;
use crate::runtime::{ApplyReport, Runtime, started_and_stopped};
use crate::supervisor::StopReport;

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
    pub(crate) events: Arc<Subscribers<WorkerEvent>>,
    /// Whether this worker's first assignment may be another process's (a static takeover).
    pub(crate) takeover: Takeover,
    /// Fast failover: told of every assignment and of every rebalance this worker starts.
    pub(crate) failover: super::failover::FastFailover,
    /// The task store, when enabled: its views become the effective catalogue.
    pub(crate) store: Option<StoreLink>,
}

/// The stops the loop awaits for the reconciler: the revocations of an applied assignment, and
/// what an eager revocation cancelled.
/// The last assignment that arrived: its generation, when, and where the rebalance's time
/// went until then (for [`AssignedTimes`]).
type Arrival = Option<(i32, Instant, RebalanceTimes)>;

#[derive(Default)]
struct Stops {
    revoking: Option<(i32, Waiting)>,
    stopping: Option<Stopping>,
}

/// The stop of every task an eager revocation cancelled.
type Stopping = Pin<Box<dyn Future<Output = StopReport> + Send>>;

impl Loop {
    /// Runs until `shutdown` fires (stop tasks, leave, `Ok`), or the member ends.
    pub(crate) async fn run(
        mut self,
        mut member_events: Events<MemberEvent>,
        shutdown: CancellationToken,
    ) -> Result<(), WorkerError> {
        let mut store = self.store.take();
        let code = store.as_ref().map(|s| s.code.clone()).unwrap_or_default();
        let mut status = self.member.status();
        let mut reconciler = Reconciler::new(Settings {
            stop_bound: self.config.stop_bound(),
            session_timeout: self.config.member.membership.session_timeout,
            takeover: self.takeover,
            self_fence_margin: self.config.self_fence_margin(),
            abort_timeout: self.config.abort_timeout(),
            rebalance_timeout: self.config.member.membership.rebalance_timeout,
        });
        let mut stops = Stops::default();
        let mut arrival: Arrival = None;
        loop {
            self.act(&mut reconciler, &mut stops, &arrival).await;
            if store.is_some() {
                // After every input: an assignment applied, a status change, a new view.
                self.placement(&mut reconciler);
                self.act(&mut reconciler, &mut stops, &arrival).await;
            }
            let timeout = reconciler.poll_timeout();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return self.stop_and_leave(&mut member_events).await,
                // The member's events before its status: a status that shows a later lease
                // than a loss still queued must not extend the lease of the lost generation.
                event = member_events.recv() => match event {
                    Some(MemberEvent::Assigned { generation, assignment, valid_until, times }) => {
                        let token = generation.token();
                        self.protocol.assigned(&generation);
                        arrival = Some((token.generation_id, Instant::now(), times));
                        self.runtime.board().rebalance_arrived(times.rebalance);
                        let valid_until = Instant::from_std(valid_until);
                        let assigned = self.assigned(&generation, valid_until, &assignment);
                        reconciler.handle_assigned(Instant::now(), assigned);
                    }
                    Some(MemberEvent::Revoked { generation, reason }) => {
                        tracing::debug!(generation = generation.generation_id, %reason,
                            "revoked; holding the rejoin");
                        self.runtime.rebalance_started();
                        let eager = self.protocol.is_eager(&generation.protocol_name);
                        reconciler.handle_revoked(generation.generation_id, eager);
                    }
                    Some(MemberEvent::Lost { generation, reason }) => {
                        let generation = generation.map(|g| g.generation_id);
                        tracing::warn!(?generation, ?reason, "membership lost; stopping every task");
                        let fence_deadline = reason.fence_deadline().map(Instant::from_std);
                        reconciler.handle_lost(Instant::now(), fence_deadline);
                        // At once, before any other input: no task of the lost generation
                        // passes a lease check from here on.
                        self.act(&mut reconciler, &mut stops, &arrival).await;
                        self.emit(WorkerEvent::Lost { generation });
                    }
                    Some(MemberEvent::Joined { generation }) => {
                        tracing::debug!(generation = generation.generation_id,
                            member_id = %generation.member_id, leader = generation.is_leader(),
                            "joined the group");
                        reconciler.handle_joined(Instant::now());
                    }
                    Some(MemberEvent::AssignmentFailed { generation, error }) => {
                        tracing::warn!(generation, %error, "the assignment failed; rejoining");
                    }
                    Some(event @ (MemberEvent::Fenced { .. } | MemberEvent::Fatal(_)
                        | MemberEvent::Left)) => {
                        return self.member_ended(Some(event)).await;
                    }
                    Some(_) => {}
                    None => return self.member_ended(None).await,
                },
                changed = status.changed() => {
                    if changed.is_err() {
                        // The driver ended; its last event says why.
                        let last = std::iter::from_fn(|| member_events.try_recv())
                            .filter(|e| matches!(e, MemberEvent::Fenced { .. }
                                | MemberEvent::Fatal(_) | MemberEvent::Left))
                            .last();
                        return self.member_ended(last).await;
                    }
                    let snapshot = status.borrow_and_update().clone();
                    if let Some(lease) = &snapshot.lease {
                        reconciler
                            .handle_lease(&lease.token, Instant::from_std(lease.valid_until));
                    }
                    self.runtime.board().set_unreachable(snapshot.unreachable.as_deref());
                }
                view = StoreLink::next(&mut store) => {
                    let offset = self.store_changed(&code, &view);
                    reconciler.handle_store_offset(Instant::now(), offset);
                }
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
                        Some(stopping) => stopping.await,
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
        }
    }

    /// Carries out the reconciler's actions, in order.
    async fn act(&self, reconciler: &mut Reconciler, stops: &mut Stops, arrival: &Arrival) {
        while let Some(action) = reconciler.poll_action() {
            match action {
                Action::Apply {
                    change,
                    await_revocations,
                } => {
                    let token = change.token.clone();
                    let generation = token.generation_id;
                    let applying = Instant::now();
                    // The held ids before the change, shared rather than copied, and walked
                    // beside the sorted target set once: with tens of thousands of tasks, a
                    // lookup per task or a copy of every id is most of an assignment's cost
                    // on a worker whose tasks barely change.
                    let before = self.runtime.supervisor().held_ids();
                    let waiting = self.runtime.apply(&change);
                    let times = assigned_times(arrival, generation, applying);
                    reconciler.handle_applied(&token, true);
                    let leader = self
                        .member
                        .current()
                        .generation
                        .as_ref()
                        .is_some_and(|g| g.generation_id == generation && g.is_leader());
                    let (started, stopped) = started_and_stopped(&change.run, &before);
                    self.emit(WorkerEvent::Assigned {
                        generation,
                        member_id: token.member_id.to_string(),
                        leader,
                        started: started.into(),
                        stopped: stopped.into(),
                        tasks: Arc::new(change.run),
                        times,
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
                Action::RevokeAll => {
                    // Eager: stop everything before the rejoin; the next JoinGroup still claims
                    // it for a sticky leader.
                    let held = self.runtime.owned();
                    stops.stopping = Some(Box::pin(self.runtime.revoke_all()));
                    reconciler.handle_revoked_all(held);
                }
                Action::Lost { deadline } => {
                    *stops = Stops::default();
                    self.protocol.forget_generation();
                    // The stop runs in its own tokio task; the wait is not needed here.
                    drop(self.runtime.lost(deadline));
                }
                Action::ExtendLease { valid_until } => self.runtime.extend_lease(valid_until),
                Action::Advertise(advertised) => self.protocol.advertise(advertised),
                Action::ReadGroup => self.failover.assigned(),
            }
        }
    }

    async fn rejoin_if_current(&self, generation: i32, reason: &'static str) {
        let status = self.member.current();
        let current = status.generation.as_ref().map(|g| g.generation_id);
        if !rejoin_still_due(generation, current, status.state == MemberState::Stable) {
            tracing::debug!(
                generation,
                ?current,
                "follow-up rebalance not needed: the group moved on"
            );
            return;
        }
        tracing::info!(generation, reason, "rejoining");
        match self.member.rejoin(reason).await {
            Ok(()) => self.failover.rebalancing(Some(generation)),
            Err(error) => tracing::warn!(%error, "could not rejoin"),
        }
    }

    fn emit(&self, event: WorkerEvent) {
        // Nobody listening is fine.
        self.events.send(&event);
    }
}

/// Where the time behind an apply of `generation` that began at `applying` went.
fn assigned_times(arrival: &Arrival, generation: i32, applying: Instant) -> AssignedTimes {
    let (arrived, member) = match arrival {
        Some((g, arrived, times)) if *g == generation => (*arrived, *times),
        _ => (applying, RebalanceTimes::default()),
    };
    AssignedTimes {
        member,
        held: applying.saturating_duration_since(arrived),
        apply: applying.elapsed(),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
