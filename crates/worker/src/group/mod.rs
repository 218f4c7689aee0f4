//! # The worker in its Kafka group
//!
//! [`WorkerBuilder::spawn`](crate::WorkerBuilder::spawn) joins the group with the kroupier
//! [`WorkerProtocol`] on `kroupier-coordinator`'s driver and runs the worker loop;
//! [`WorkerBuilder::run`](crate::WorkerBuilder::run) does the same and also handles SIGTERM and
//! ctrl-c.
//!
//! ```text
//!  member event            worker loop                              runtime
//!  ───────────────────     ──────────────────────────────────────   ──────────────────────────
//!  Revoked (callback)      status: rebalancing; eager: stop all     rebalance_started / revoke_all
//!  Revoked (event)         once revoked tasks stopped (eager stop,  (stop futures complete →
//!                          last assignment's revocations): ack      revocations_done → JoinGroup)
//!  Assigned                wait for the generation's lease, apply   apply(change)
//!                          revocations? rejoin once they stopped    (future completes → rejoin)
//!                          leader + follow-up delay? rejoin later
//!  lease extended          every successful heartbeat               extend_lease(valid_until)
//!  Lost (callback)         stop every task within the margin        lost(deadline)
//!  Fenced / Fatal          stop every task, report the error        lost + shutdown
//!  SIGTERM / ctrl-c        stop every task, then LeaveGroup, Ok     shutdown(deadline)
//! ```
//!
//! The member runs with the join gate (`await_revocation`): after a revocation its JoinGroup
//! waits until the loop acknowledges it with `revocations_done`, or at most `rebalance_timeout
//! − margin`, so revoked tasks have stopped before the leader can give them to anyone else,
//! and the metadata of that JoinGroup (read from the runtime right before it is sent) claims
//! exactly what still runs here. Heartbeats go on meanwhile.
//!
//! The task lease always follows the membership's self-fencing deadline (send time of the last
//! heartbeat that succeeded + session timeout − margin), so no task passes a lease check after
//! the group may have handed it to another worker.
//!
//! # Examples
//!
//! ```no_run
//! use kroupier_worker::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Copy { table: String }
//!
//! impl Task for Copy {
//!     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
//!         ctx.cancelled().await;
//!         Ok(())
//!     }
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = WorkerConfig::new("orders");
//! config.bootstrap_servers = vec!["127.0.0.1:9092".into()];
//! let exit = WorkerBuilder::new(config)
//!     .register::<Copy>("copy")
//!     .task(TaskSpec::new("copy-0", "copy", serde_json::json!({"table": "orders"})))
//!     .run()
//!     .await?;
//! println!("worker ended: {exit:?}");
//! # Ok(()) }
//! ```

mod leader;
mod protocol;
mod run;

#[cfg(test)]
mod signal_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use kroupier_coordinator::driver::{Member, MemberConfig, MemberError, MemberHandle};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use protocol::WorkerProtocol;

use crate::builder::BuildError;
use crate::config::WorkerConfig;
use crate::runtime::Runtime;

/// Why a worker stopped with an error, or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The worker's config, catalogue or registry is invalid.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The group member could not be built (its config is invalid).
    #[error("cannot start the group member: {0}")]
    Member(#[from] MemberError),
    /// The status API could not listen.
    #[error(transparent)]
    StatusApi(std::io::Error),
    /// Another process joined with this worker's `group.instance.id`; every task was stopped.
    #[error(
        "fenced: another worker joined with group.instance.id {group_instance_id:?}; give every \
         worker its own instance id"
    )]
    Fenced {
        /// The instance id.
        group_instance_id: Option<String>,
    },
    /// The member stopped on an error it cannot recover from; every task was stopped.
    #[error("the group member stopped: {0}")]
    Fatal(String),
    /// The member's driver ended unexpectedly; every task was stopped. Start the worker again.
    #[error("the group member's driver ended; every task was stopped; start the worker again")]
    MemberStopped,
    /// The worker loop panicked (a bug: report it).
    #[error("the worker loop panicked: {0}")]
    Panicked(String),
}

/// How [`WorkerBuilder::run`](crate::WorkerBuilder::run) ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerExit {
    /// SIGTERM or ctrl-c: tasks stopped, LeaveGroup sent.
    Shutdown,
    /// A second signal came during the graceful shutdown: it was cut short.
    Interrupted,
    /// The member left the group by itself.
    Left,
}

/// A change the worker made, for logs and UIs ([`WorkerHandle::events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerEvent {
    /// An assignment was applied.
    Assigned {
        /// The generation.
        generation: i32,
        /// This worker's member id in it.
        member_id: String,
        /// Whether this worker leads the generation.
        leader: bool,
        /// The full target set.
        tasks: BTreeSet<String>,
        /// Tasks started by this change.
        started: Vec<String>,
        /// Tasks stopped by this change.
        stopped: Vec<String>,
    },
    /// The membership was lost (self-fenced or reset): every task was stopped.
    Lost {
        /// The generation lost.
        generation: Option<i32>,
    },
    /// The worker stopped every task for good (shutdown, fenced, fatal).
    Stopped,
}

/// A running worker: its runtime, its group member, and the way to stop it.
///
/// Dropping the handle leaves the worker running in the background (like a dropped
/// `JoinHandle`); call [`shutdown`](Self::shutdown) to stop it.
#[derive(Debug)]
pub struct WorkerHandle {
    runtime: Arc<Runtime>,
    member: MemberHandle,
    status_addr: Option<SocketAddr>,
    events: broadcast::Sender<WorkerEvent>,
    shutdown: CancellationToken,
    server_stop: CancellationToken,
    task: JoinHandle<Result<(), WorkerError>>,
}

impl WorkerHandle {
    /// The runtime (tasks, status board).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The group member (status, lease, metrics).
    pub fn member(&self) -> &MemberHandle {
        &self.member
    }

    /// Where the status API listens (the bound port when the config asked for port 0).
    pub fn status_addr(&self) -> Option<SocketAddr> {
        self.status_addr
    }

    /// The worker's changes from now on.
    pub fn events(&self) -> broadcast::Receiver<WorkerEvent> {
        self.events.subscribe()
    }

    /// Stops every task (within the graceful stop timeout plus the abort timeout), sends
    /// LeaveGroup, and waits for the worker to end.
    pub async fn shutdown(self) -> Result<(), WorkerError> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Waits for the worker to end (after [`shutdown`](Self::shutdown), or by itself when the
    /// member is fenced or fails).
    pub async fn wait(self) -> Result<(), WorkerError> {
        let result = match self.task.await {
            Ok(result) => result,
            Err(error) => Err(WorkerError::Panicked(error.to_string())),
        };
        self.server_stop.cancel();
        result
    }
}

impl WorkerHandle {
    /// Runs until SIGTERM or ctrl-c: then stops every task, sends LeaveGroup and returns
    /// [`WorkerExit::Shutdown`]; a second signal cuts that short ([`WorkerExit::Interrupted`]).
    /// Returns early if the member ends by itself.
    pub async fn until_signal(self) -> Result<WorkerExit, WorkerError> {
        run_until_signal(self).await
    }
}

/// The member config for a worker config.
pub(crate) fn member_config(config: &WorkerConfig) -> MemberConfig {
    let mut member = MemberConfig::new(&config.bootstrap_servers.join(","), &config.group_id)
        .with_timeouts(config.session_timeout, config.heartbeat_interval);
    let membership = &mut member.membership;
    membership.rebalance_timeout = config.rebalance_timeout.max(config.session_timeout);
    membership.group_instance_id = config.group_instance_id.clone();
    membership.self_fence_margin = config.self_fence_margin;
    // Revoked tasks stop before this worker rejoins (the worker loop acknowledges).
    membership.await_revocation = true;
    // The broker enforces its own bounds (INVALID_SESSION_TIMEOUT names them).
    membership.min_session_timeout = membership.min_session_timeout.min(config.session_timeout);
    member.cluster.connection.client_id = config.client_id.clone();
    member
}

/// Binds the status API, joins the group and starts the worker loop.
pub(crate) async fn spawn(
    config: WorkerConfig,
    runtime: Runtime,
) -> Result<WorkerHandle, WorkerError> {
    let runtime = Arc::new(runtime);
    let shutdown = CancellationToken::new();
    let listener = match config.status_addr {
        Some(addr) => Some(
            crate::status::http::bind(addr)
                .await
                .map_err(WorkerError::StatusApi)?,
        ),
        None => None,
    };
    let status_addr = listener
        .as_ref()
        .map(|l| l.local_addr())
        .transpose()
        .map_err(WorkerError::StatusApi)?;

    let protocol = Arc::new(WorkerProtocol::new(
        runtime.clone(),
        config.assignors.clone(),
        config.lost_task_delay,
        config.effective_self_fence_margin(),
        config.abort_timeout,
    ));
    let (member, driver) = Member::new(member_config(&config), protocol.clone())?;
    let member_events = member.events();
    tokio::spawn(driver);

    // The status API serves until the worker has ended, shutdown included.
    let server_stop = CancellationToken::new();
    if let Some(listener) = listener {
        let router = runtime.status_router();
        let stop = server_stop.clone();
        tokio::spawn(async move {
            let stopped = async move { stop.cancelled().await };
            if let Err(error) = crate::status::http::serve(listener, router, stopped).await {
                tracing::error!(%error, "the status API stopped");
            }
        });
    }

    let (events, _) = broadcast::channel(64);
    let worker_loop = run::Loop {
        runtime: runtime.clone(),
        protocol,
        member: member.clone(),
        config,
        events: events.clone(),
    };
    let task = tokio::spawn(worker_loop.run(member_events, shutdown.clone()));
    Ok(WorkerHandle {
        runtime,
        member,
        status_addr,
        events,
        shutdown,
        server_stop,
        task,
    })
}

/// Runs a spawned worker until SIGTERM or ctrl-c (graceful), a second signal (cut short), or
/// the member's end.
async fn run_until_signal(handle: WorkerHandle) -> Result<WorkerExit, WorkerError> {
    let mut signals = Signals::new();
    let shutdown = handle.shutdown.clone();
    until_signals(handle.wait(), shutdown, &mut signals).await
}

/// Where shutdown signals come from: the OS ([`Signals`]) or, in tests, a channel.
trait SignalSource {
    /// Completes at the next signal.
    fn next(&mut self) -> impl Future<Output = ()> + Send + '_;
}

/// The two-signal rule, apart from the OS signals so it can be tested: the first signal starts
/// the graceful shutdown (`shutdown` is cancelled and the worker's own end is awaited), a second
/// one returns [`WorkerExit::Interrupted`] at once.
async fn until_signals<W>(
    wait: W,
    shutdown: CancellationToken,
    signals: &mut impl SignalSource,
) -> Result<WorkerExit, WorkerError>
where
    W: Future<Output = Result<(), WorkerError>>,
{
    let mut wait = std::pin::pin!(wait);
    tokio::select! {
        result = &mut wait => return result.map(|()| WorkerExit::Left),
        () = signals.next() => {}
    }
    tracing::info!(
        "signal received: stopping tasks, then leaving the group (again to exit at once)"
    );
    shutdown.cancel();
    tokio::select! {
        result = &mut wait => result.map(|()| WorkerExit::Shutdown),
        () = signals.next() => Ok(WorkerExit::Interrupted),
    }
}

/// SIGTERM and ctrl-c (SIGINT), as one stream.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        Signals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|error| tracing::warn!(%error, "cannot listen for SIGTERM"))
                .ok(),
        }
    }
}

impl SignalSource for Signals {
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            tokio::select! {
                _ = term.recv() => return,
                _ = tokio::signal::ctrl_c() => return,
            }
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
