//! How the loop ends: a graceful shutdown (stop every task, hand them over, leave), or the
//! member's own end (fenced, fatal, left). What follows the stops is the reconciler's decision
//! (`reconciler_shutdown.rs`); this carries it out.

use kroupier_coordinator::driver::{Events, MemberEvent};
use kroupier_coordinator::membership::MemberState;
use tokio::time::Instant;

use super::Loop;
use crate::group::reconciler::shutdown::{HandOver, Seen, Step, leaves_note};
use crate::group::{WorkerDetail, WorkerError, WorkerEvent};

impl Loop {
    /// Graceful shutdown: stop every task, then LeaveGroup.
    pub(super) async fn stop_and_leave(
        &self,
        member_events: &mut Events<MemberEvent>,
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
        let static_member = membership.group_instance_id.is_some();
        let unresponsive = report.unresponsive.len();
        let status = self.member.current();
        if leaves_note(static_member, unresponsive, status.generation.is_some())
            && let (Some(instance_id), Some(generation)) =
                (&membership.group_instance_id, &status.generation)
        {
            crate::group::takeover::leave_note(
                &membership.group_id,
                instance_id,
                &generation.member_id,
            );
        }
        self.emit(WorkerEvent::Stopped);
        let stopped = report.graceful.len() + report.aborted.len();
        let stable_in = status
            .generation
            .as_ref()
            .filter(|_| status.state == MemberState::Stable)
            .map(|g| g.generation_id);
        if let Some(hand_over) =
            HandOver::after_stops(static_member, stopped, unresponsive, stable_in)
        {
            self.hand_over(hand_over, member_events).await;
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

    /// Carries out `hand_over` ([`HandOver`]): rejoins once saying it is leaving (`leaving` in
    /// its metadata), acknowledges revocations as the hand-over's steps say, until a newer
    /// generation is assigned. Bounded by the session timeout; on any failure the worker just
    /// leaves (its tasks are then held back).
    pub(super) async fn hand_over(
        &self,
        hand_over: HandOver,
        member_events: &mut Events<MemberEvent>,
    ) {
        let generation = hand_over.from();
        self.protocol.set_leaving();
        let handed_over = async {
            self.member
                .rejoin("the worker is shutting down: its tasks are stopped and go to others")
                .await
                .ok()?;
            // The peers rejoin at once rather than at their next heartbeat.
            self.failover.rebalancing(Some(generation));
            loop {
                let seen = match member_events.recv().await {
                    Some(MemberEvent::Revoked { generation: g, .. }) => {
                        Seen::Revoked(g.generation_id)
                    }
                    Some(MemberEvent::Assigned { generation: g, .. }) => {
                        Seen::Assigned(g.generation_id)
                    }
                    Some(
                        MemberEvent::Lost { .. }
                        | MemberEvent::Fenced { .. }
                        | MemberEvent::Fatal(_)
                        | MemberEvent::Left,
                    )
                    | None => Seen::Ended,
                    Some(_) => Seen::Other,
                };
                match hand_over.on_event(seen) {
                    Step::Acknowledge(g) => {
                        let _ = self.member.revocations_done(g).await;
                    }
                    Step::AcknowledgeHeld => {
                        if let Some(g) = self.member.current().join_held {
                            let _ = self.member.revocations_done(g).await;
                        }
                    }
                    Step::Done(next) => return Some(next),
                    Step::Abort => return None,
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
    pub(super) async fn member_ended(&self, event: Option<MemberEvent>) -> Result<(), WorkerError> {
        let deadline = Instant::now() + self.config.abort_timeout();
        let _ = self.runtime.lost(deadline).await;
        let _ = self.runtime.shutdown(Instant::now()).await;
        self.emit(WorkerEvent::Stopped);
        match event {
            Some(MemberEvent::Left) => Ok(()),
            Some(MemberEvent::Fenced { group_instance_id }) => {
                Err(WorkerDetail::Fenced { group_instance_id }.into())
            }
            Some(MemberEvent::Fatal(error)) => Err(WorkerDetail::Fatal(error.to_string()).into()),
            _ => Err(WorkerDetail::MemberStopped.into()),
        }
    }
}
