//! What a driven member tells its users: a stream of events and a watched status.

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::membership::{
    Coordinator, FencingToken, Generation, Lease, MemberEvent, MemberState, Metrics,
};

/// An ordered stream of events, none dropped: a member's [`MemberEvent`]s
/// ([`MemberHandle::events`](super::MemberHandle::events)), an elector's role changes, a
/// worker's changes.
///
/// The stream is unbounded: events come a few per rebalance, and a reader that stops reading
/// should drop its stream.
#[derive(Debug)]
pub struct Events<T> {
    pub(crate) receiver: mpsc::UnboundedReceiver<T>,
}

impl<T> Events<T> {
    /// The next event; `None` once the sender (the driver, the elector, the worker) has ended
    /// and every event was read. Cancel safe.
    pub async fn recv(&mut self) -> Option<T> {
        self.receiver.recv().await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        self.receiver.try_recv().ok()
    }

    /// [`recv`](Self::recv) as a poll (for [`SharedEvents`]).
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.receiver.poll_recv(cx)
    }
}

/// A member's event stream read from two places by its owner: a task that waits for each
/// event ([`drive`](Self::drive)), and the protocol's
/// [`protocols`](crate::membership::GroupProtocol::protocols), which first takes in what
/// already arrived ([`take_in`](Self::take_in)) so that the JoinGroup's metadata reflects every
/// earlier event — the driver queues them all before it reads the metadata. Each event is
/// handled once, in order, under the stream's lock: a handler must not call back into the same
/// `SharedEvents`.
#[derive(Debug, Default)]
pub struct SharedEvents(Mutex<Option<Events<MemberEvent>>>);

impl SharedEvents {
    /// Reads `events` from now on (the protocol exists before its member, whose stream comes
    /// after).
    pub fn attach(&self, events: Events<MemberEvent>) {
        *self.lock() = Some(events);
    }

    /// Hands every event already delivered to `handle`, in order; whether there was any.
    pub fn take_in(&self, mut handle: impl FnMut(MemberEvent)) -> bool {
        let mut events = self.lock();
        let Some(stream) = events.as_mut() else {
            return false;
        };
        let mut any = false;
        while let Some(event) = stream.try_recv() {
            handle(event);
            any = true;
        }
        any
    }

    /// Waits for the next event and hands it to `handle`; `false` once the stream ended (or
    /// none is attached). Cancel safe: an event is handled in the poll that receives it.
    async fn recv_with(&self, mut handle: impl FnMut(MemberEvent)) -> bool {
        std::future::poll_fn(|cx| {
            let mut events = self.lock();
            let Some(stream) = events.as_mut() else {
                return Poll::Ready(false);
            };
            match stream.poll_recv(cx) {
                Poll::Ready(Some(event)) => {
                    handle(event);
                    Poll::Ready(true)
                }
                Poll::Ready(None) => Poll::Ready(false),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    /// Runs `driver` (the member's driver future) with its events handed to `handle` beside
    /// it, in the same task: each as soon as the driver yields, and the last ones once the
    /// driver ended. What the owner of a protocol of its own runs instead of the bare driver;
    /// `handle` runs under the stream's lock: it must not call back into this `SharedEvents`.
    pub async fn drive<F: Future>(
        &self,
        driver: F,
        mut handle: impl FnMut(MemberEvent),
    ) -> F::Output {
        let output = {
            let follow = async {
                while self.recv_with(&mut handle).await {}
                std::future::pending::<Infallible>().await
            };
            tokio::select! {
                output = driver => output,
                never = follow => match never {},
            }
        };
        self.take_in(&mut handle);
        output
    }

    fn lock(&self) -> MutexGuard<'_, Option<Events<MemberEvent>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

unstable_pub! {
    /// Where a sender delivers events of type `T` (a member's, an elector's roles, a
    /// worker's changes): one channel per [`Events`] stream handed out, dropped once its stream
    /// is.
    #[derive(Debug)]
    pub struct Subscribers<T>(Mutex<Vec<mpsc::UnboundedSender<T>>>);
}

impl<T> Default for Subscribers<T> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<T: Clone> Subscribers<T> {
    unstable_pub! {
        /// A new stream, receiving every event from now on.
        pub fn subscribe(&self) -> Events<T> {
            let (sender, receiver) = mpsc::unbounded_channel();
            self.lock().push(sender);
            Events { receiver }
        }
    }

    unstable_pub! {
        /// Delivers `event` to every stream still open.
        pub fn send(&self, event: &T) {
            self.lock()
                .retain(|sender| sender.send(event.clone()).is_ok());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<mpsc::UnboundedSender<T>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A snapshot of the member, published after every step of its driver (see
/// [`MemberHandle::current`](super::MemberHandle::current)).
#[derive(Debug, Clone, PartialEq)]
pub struct MemberStatus {
    /// The membership's state.
    pub state: MemberState,
    /// The generation the member is in (also while it rejoins from it).
    pub generation: Option<Generation>,
    /// The assignment of the stable generation.
    pub assignment: Option<Bytes>,
    /// The fencing token with its self-fencing deadline.
    pub lease: Option<Lease>,
    /// The coordinator, if known.
    pub coordinator: Option<Coordinator>,
    /// Counters like Kafka's coordinator metrics.
    pub metrics: Metrics,
    /// While the join gate holds the JoinGroup: the generation whose revocation awaits
    /// [`MemberHandle::revocations_done`](super::MemberHandle::revocations_done).
    pub join_held: Option<i32>,
    /// While no request of the member has reached a broker for a few seconds (3 s): why, and
    /// what to check — the text of the WARN line the member logs then (again every 30 s while
    /// it lasts). `None` once a broker answers.
    pub unreachable: Option<String>,
    /// Whether the driver has returned (left, fenced or fatal). A driver future that was
    /// dropped cannot say so; [`MemberHandle::stopped`](super::MemberHandle::stopped) notices
    /// both.
    pub stopped: bool,
}

impl MemberStatus {
    pub(crate) fn initial() -> Self {
        Self {
            state: MemberState::FindingCoordinator,
            generation: None,
            assignment: None,
            lease: None,
            coordinator: None,
            metrics: Metrics::default(),
            join_held: None,
            unreachable: None,
            stopped: false,
        }
    }

    /// Whether this member leads its current generation.
    pub fn is_leader(&self) -> bool {
        self.generation.as_ref().is_some_and(Generation::is_leader)
    }

    /// Whether `token` is the current generation's and its lease is still valid at `now`.
    pub(crate) fn is_token_valid(&self, token: &FencingToken, now: Instant) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|lease| &lease.token == token && lease.is_valid(now))
    }
}
