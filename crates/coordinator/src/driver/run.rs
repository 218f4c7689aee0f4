//! The driver loop: one task owns the [`Membership`], feeds it time, responses and commands,
//! sends what it asks for, and delivers its events to every event stream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{Span, debug, info, info_span, warn};

use crate::connection::ConnectionError;
use crate::membership::{
    AssignError, AssignmentRequest, GroupProtocol, MemberAssignment, MemberEvent, MemberState,
    Membership, RequestTag, Response,
};

use super::error::MemberError;
use super::event::{MemberStatus, Subscribers};
use super::reach::{Reachability, WHAT_TO_CHECK};
use super::transport::Transport;

/// The driver's clock: the lease timeline (tokio's time, so that tests on paused time control
/// it, plus the time the host spent suspended; see [`crate::clock`]).
pub(crate) fn now() -> Instant {
    crate::clock::now()
}

/// A command from a [`MemberHandle`](super::MemberHandle).
#[derive(Debug)]
pub(crate) enum Command {
    Rejoin {
        reason: String,
    },
    RevocationDone {
        generation: i32,
    },
    UpdateMetadata {
        reply: oneshot::Sender<Result<(), MemberError>>,
    },
    Leave {
        reason: String,
        reply: oneshot::Sender<()>,
    },
}

type Sent = (RequestTag, Result<Response, ConnectionError>);
type Assigned = Result<Vec<MemberAssignment>, AssignError>;

enum Wake {
    Command(Option<Command>),
    Sent(RequestTag, Result<Response, ConnectionError>),
    Assigned(i32, Result<Assigned, tokio::task::JoinError>),
    Timeout,
}

struct Assigning {
    generation_id: i32,
    /// When the protocol's `assign` was handed to the blocking pool.
    started: Instant,
    task: JoinHandle<Assigned>,
}

/// The loop's state. Built by [`Member::new`](super::Member::new); run by [`Driver::run`].
pub(crate) struct Driver<P: GroupProtocol, T: Transport> {
    pub(crate) membership: Membership,
    pub(crate) protocol: Arc<P>,
    pub(crate) transport: Arc<T>,
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) events: Arc<Subscribers<MemberEvent>>,
    pub(crate) status: watch::Sender<MemberStatus>,
    pub(crate) in_flight: FuturesUnordered<BoxFuture<'static, Sent>>,
    assigning: Option<Assigning>,
    /// How long the last assignment this member computed took, with its generation.
    last_assign: Option<(i32, Duration)>,
    leave_waiters: Vec<oneshot::Sender<()>>,
    handles_gone: bool,
    coordinator_known: bool,
    rebalance: Option<Span>,
    /// Whether requests reach a broker; decides the warning and [`MemberStatus::unreachable`].
    reach: Reachability,
    /// What [`MemberStatus::unreachable`] says.
    unreachable: Option<String>,
}

impl<P: GroupProtocol, T: Transport> Driver<P, T> {
    pub(crate) fn new(
        membership: Membership,
        protocol: Arc<P>,
        transport: Arc<T>,
        commands: mpsc::Receiver<Command>,
        events: Arc<Subscribers<MemberEvent>>,
        status: watch::Sender<MemberStatus>,
    ) -> Self {
        Self {
            membership,
            protocol,
            transport,
            commands,
            events,
            status,
            in_flight: FuturesUnordered::new(),
            assigning: None,
            last_assign: None,
            leave_waiters: Vec::new(),
            handles_gone: false,
            coordinator_known: false,
            rebalance: None,
            reach: Reachability::default(),
            unreachable: None,
        }
    }

    /// Runs until the member has left (after [`MemberHandle::leave`](super::MemberHandle::leave)
    /// or once every handle is dropped), or stops on a fatal error.
    pub(crate) async fn run(mut self) -> Result<(), MemberError> {
        self.start_rebalance("member started".to_owned());
        loop {
            self.step();
            if let Some(result) = self.outcome() {
                self.status.send_modify(|s| s.stopped = true);
                for waiter in self.leave_waiters.drain(..) {
                    let _ = waiter.send(());
                }
                return result;
            }
            let deadline = [self.membership.poll_timeout(), self.reach.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match self.wake(deadline).await {
                Wake::Command(Some(command)) => self.command(command),
                Wake::Command(None) => {
                    self.handles_gone = true;
                    self.leave("every handle to the member was dropped".to_owned());
                }
                Wake::Sent(tag, result) => self.on_sent(tag, result),
                Wake::Assigned(generation_id, result) => {
                    if let Some(a) = self.assigning.take() {
                        let took = now().saturating_duration_since(a.started);
                        self.last_assign = Some((generation_id, took));
                    }
                    self.on_assigned(generation_id, result);
                }
                Wake::Timeout => self.membership.handle_timeout(now()),
            }
        }
    }

    /// Waits for the next input. Cancel safe: every branch is.
    async fn wake(&mut self, deadline: Option<Instant>) -> Wake {
        let handles_gone = self.handles_gone;
        let commands = &mut self.commands;
        let in_flight = &mut self.in_flight;
        let assigning = &mut self.assigning;
        let sleep = async move {
            match deadline {
                Some(at) => {
                    let at = crate::clock::to_monotonic(at);
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await
                }
                None => std::future::pending().await,
            }
        };
        let assigned = async move {
            match assigning.as_mut() {
                Some(a) => (a.generation_id, (&mut a.task).await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            command = commands.recv(), if !handles_gone => Wake::Command(command),
            Some((tag, result)) = in_flight.next(), if !in_flight.is_empty() => {
                Wake::Sent(tag, result)
            }
            (generation_id, result) = assigned => Wake::Assigned(generation_id, result),
            () = sleep => Wake::Timeout,
        }
    }

    /// Drains the membership's requests and events until both are empty, then publishes the
    /// status.
    fn step(&mut self) {
        let span = self.rebalance.clone().unwrap_or_else(Span::none);
        let _entered = span.enter();
        // Events first, then one request, then the events that request produced: every event
        // so far is on the owner's stream, and the status (whose lease a loss ends) published,
        // before a request goes out; the protocol's metadata is read right before each
        // JoinGroup.
        loop {
            while let Some(event) = self.membership.poll_event() {
                self.on_event(event);
            }
            if let Some(request) = self.membership.poll_assignment_request() {
                self.start_assign(request);
            }
            self.publish();
            let protocol = &self.protocol;
            let Some(out) = self
                .membership
                .poll_request_with(now(), || Some(protocol.protocols()))
            else {
                if self.membership.has_events() {
                    continue;
                }
                break;
            };
            let transport = self.transport.clone();
            let tag = out.tag;
            debug!(tag = tag.seq(), api = ?out.request.api(), "send");
            let sent = transport.send(out.request, out.timeout);
            self.in_flight
                .push(Box::pin(async move { (tag, sent.await) }));
        }
        self.sync_coordinator();
        self.warn_if_unreachable();
        self.publish();
    }

    /// Warns (at most every so often) while no request reaches a broker; see [`Reachability`].
    fn warn_if_unreachable(&mut self) {
        let group = &self.membership.config().group_id;
        if let Some((failing, error)) = self.reach.poll_warning(now()) {
            let text = format!(
                "no usable connection to Kafka for {} s, still retrying: {WHAT_TO_CHECK}; last \
                 error: {error}",
                failing.as_secs()
            );
            warn!(%group, "{text}");
            self.unreachable = Some(text);
        }
    }

    fn outcome(&self) -> Option<Result<(), MemberError>> {
        match self.membership.state() {
            MemberState::Left => Some(Ok(())),
            MemberState::Fatal => Some(Err(match self.membership.fatal_error() {
                Some(crate::membership::FatalError::FencedInstanceId) => MemberError::Fenced {
                    group_instance_id: self.membership.config().group_instance_id.clone(),
                },
                Some(error) => MemberError::Fatal(error.clone()),
                None => MemberError::Stopped,
            })),
            _ => None,
        }
    }

    /// When the membership forgets the coordinator, drop its connections (a parked JoinGroup
    /// must not hold up the next one).
    fn sync_coordinator(&mut self) {
        let known = self.membership.coordinator().is_some();
        if self.coordinator_known && !known {
            self.transport.set_coordinator(None);
        }
        self.coordinator_known = known;
    }

    fn publish(&self) {
        let m = &self.membership;
        let status = MemberStatus {
            state: m.state(),
            generation: m.generation().cloned(),
            assignment: m.assignment().cloned(),
            lease: m.lease(),
            coordinator: m.coordinator().cloned(),
            metrics: m.metrics().clone(),
            join_held: m.join_held().map(|(generation, _)| generation),
            unreachable: self.unreachable.clone(),
            stopped: false,
        };
        self.status.send_if_modified(|s| {
            let changed = *s != status;
            if changed {
                *s = status;
            }
            changed
        });
    }

    fn emit(&self, event: &MemberEvent) {
        // No stream open is fine: the status holds the latest state.
        self.events.send(event);
    }

    fn start_rebalance(&mut self, reason: String) {
        let group = self.membership.config().group_id.clone();
        self.rebalance = Some(info_span!(
            "rebalance",
            %group,
            %reason,
            generation = tracing::field::Empty
        ));
    }

    /// Does the driver's part of `event` (connections, the rebalance span, the leader's
    /// timing), then delivers it to every stream.
    fn on_event(&mut self, mut event: MemberEvent) {
        match &mut event {
            MemberEvent::CoordinatorChanged(c) => {
                self.transport.set_coordinator(Some(c));
                self.coordinator_known = true;
            }
            MemberEvent::Joined { generation } => {
                if let Some(span) = &self.rebalance {
                    span.record("generation", generation.generation_id);
                }
            }
            MemberEvent::Assigned {
                generation, times, ..
            } => {
                self.rebalance = None;
                times.assign = self
                    .last_assign
                    .filter(|(g, _)| *g == generation.generation_id)
                    .map(|(_, took)| took);
            }
            MemberEvent::Revoked { reason, .. } => {
                self.start_rebalance(reason.clone());
            }
            MemberEvent::Lost { reason, .. } => {
                self.start_rebalance(format!("generation lost: {reason:?}"));
            }
            _ => {}
        }
        self.emit(&event);
    }

    /// The membership asks this member, the leader, for an assignment: the protocol's
    /// `assign` runs on the blocking pool, never here.
    fn start_assign(&mut self, request: AssignmentRequest) {
        if let Some(old) = self.assigning.take() {
            old.task.abort();
        }
        let protocol = self.protocol.clone();
        let AssignmentRequest { context, members } = request;
        let generation_id = context.generation_id;
        let task = tokio::task::spawn_blocking(move || protocol.assign(&context, &members));
        self.assigning = Some(Assigning {
            generation_id,
            started: now(),
            task,
        });
    }

    fn on_sent(&mut self, tag: RequestTag, result: Result<Response, ConnectionError>) {
        let span = self.rebalance.clone().unwrap_or_else(Span::none);
        let _entered = span.enter();
        match result {
            Ok(response) => {
                if let Some(outage) = self.reach.reached(now()) {
                    let group = &self.membership.config().group_id;
                    info!(%group, after_s = outage.as_secs(), "Kafka is reachable again");
                    self.unreachable = None;
                }
                self.membership.handle_response(now(), tag, response)
            }
            Err(error) if error.is_fatal() => {
                self.membership
                    .handle_fatal_failure(now(), error.to_string());
            }
            Err(error) => {
                debug!(tag = tag.seq(), %error, "request failed");
                self.reach.failed(now(), error.to_string());
                self.membership.handle_request_failed(now(), tag);
            }
        }
    }

    fn on_assigned(
        &mut self,
        generation_id: i32,
        result: Result<Assigned, tokio::task::JoinError>,
    ) {
        let result = result.unwrap_or_else(|e| {
            Err(AssignError::Failed(format!(
                "the assignor panicked or was cancelled: {e}"
            )))
        });
        match result {
            Ok(assignments) => {
                if let Err(error) = self.membership.set_assignment(generation_id, assignments) {
                    debug!(%error, "assignment dropped");
                }
            }
            Err(error) => {
                warn!(generation = generation_id, %error, "the leader's assignment failed; rejoining");
                self.membership
                    .assignment_failed(now(), generation_id, error);
            }
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Rejoin { reason } => {
                self.membership.request_rejoin(now(), reason);
            }
            Command::RevocationDone { generation } => {
                self.membership.revocation_done(now(), generation);
            }
            Command::UpdateMetadata { reply } => {
                let result = self
                    .membership
                    .update_metadata(now(), self.protocol.protocols())
                    .map_err(MemberError::from);
                let _ = reply.send(result);
            }
            Command::Leave { reason, reply } => {
                self.leave_waiters.push(reply);
                self.leave(reason);
            }
        }
    }

    /// Revoke the held generation (Kafka's `onLeavePrepare`), then leave.
    fn leave(&mut self, reason: String) {
        if matches!(
            self.membership.state(),
            MemberState::Leaving | MemberState::Left | MemberState::Fatal
        ) {
            return;
        }
        if let Some(generation) = self.membership.generation().cloned() {
            self.emit(&MemberEvent::Revoked {
                generation,
                reason: reason.clone(),
            });
        }
        if let Some(a) = self.assigning.take() {
            a.task.abort();
        }
        self.membership.leave(now(), reason);
    }
}
