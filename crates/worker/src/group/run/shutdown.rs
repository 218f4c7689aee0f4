//! How the loop ends: a graceful shutdown (stop every task, hand them over, leave), or the
//! member's own end (fenced, fatal, left).

use kroupier_coordinator::driver::{Events, MemberEvent};
use kroupier_coordinator::membership::MemberState;
use tokio::time::Instant;

use super::Loop;
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
        if let Some(instance_id) = &membership.group_instance_id
            && report.unresponsive.is_empty()
            && let Some(generation) = self.member.current().generation
        {
            crate::group::takeover::leave_note(
                &membership.group_id,
                instance_id,
                &generation.member_id,
            );
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
    pub(super) async fn hand_over(&self, member_events: &mut Events<MemberEvent>) {
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
            // The peers rejoin at once rather than at their next heartbeat.
            self.failover.rebalancing(Some(generation));
            loop {
                match member_events.recv().await {
                    Some(MemberEvent::Revoked { generation: g, .. }) => {
                        // Every task stopped already: the join gate may open at once.
                        let _ = self.member.revocations_done(g.generation_id).await;
                    }
                    Some(MemberEvent::Assigned { generation: g, .. })
                        if g.generation_id > generation =>
                    {
                        return Some(g.generation_id);
                    }
                    Some(
                        MemberEvent::Lost { .. }
                        | MemberEvent::Fenced { .. }
                        | MemberEvent::Fatal(_)
                        | MemberEvent::Left,
                    )
                    | None => return None,
                    Some(_) => {
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
