//! # The worker in its Kafka group
//!
//! [`WorkerBuilder::spawn`](crate::WorkerBuilder::spawn) joins the group with the kroupier
//! `WorkerProtocol` on `kroupier-coordinator`'s driver and runs the worker loop;
//! [`WorkerBuilder::run_until`](crate::WorkerBuilder::run_until) does the same and stops the
//! worker when the future it is given completes. The library handles no OS signal: the
//! application owns them (see [`shutdown`](crate::shutdown) for the two-signal rule).
//!
//! The worker loop has two halves, as the membership has: a sans-IO
//! `reconciler` decides, on virtual time in its tests, and a short tokio loop (`run/`) feeds it
//! the member's events (one ordered stream that drops nothing) and the end of the stops it
//! started, and carries out its actions.
//!
//! ```text
//!  member event / input      reconciler decides                        loop does (runtime)
//!  ──────────────────────    ───────────────────────────────────────   ──────────────────────────
//!  Revoked                   RevokeAll if the assignor is eager;       rebalance_started; revoke_all
//!                            ack once revoked tasks stopped            revocations_done → JoinGroup
//!  Assigned (decoded, with   what of it runs (catalogue, store         —
//!   what is known locally)   offset, held tasks), then
//!                            Apply while its generation is live (lost  apply(change), then await its
//!                            tasks after their hold; a static          revocations if asked
//!                            takeover after the old lease)
//!  revocations stopped       Rejoin (cooperative follow-up)            rejoin, if still current
//!  lease extended (status)   ExtendLease for the live membership       extend_lease(valid_until)
//!  Lost                      Lost { deadline }; drop every wait, hold  lost(deadline), forget the
//!                            and follow-up                             leader's memory
//!  any of the above          Advertise, when the metadata's claims,    hand the snapshot to the
//!                            holds or encoding change                  protocol (next JoinGroup)
//!  Fenced / Fatal            —                                         lost + shutdown, error
//!  shutdown future           —                                         stop all, hand over, LeaveGroup
//!  task store view moved     end a catch-up wait it completes; the     new effective catalogue; the
//!                            leader of the round: Rejoin if placement  owner stops deleted tasks and
//!                            moved (once per generation)               restarts changed ones
//! ```
//!
//! With a task store (`tasks.store.enabled`), the worker reads the store's topic to its end
//! before it joins, then follows it: the effective catalogue is the tasks defined in code plus
//! the stored ones (a stored task replaces a code task with the same id). Pause, resume, a new
//! config and a restart request are carried out by the task's owner alone, without a
//! rebalance, and no other task is touched; a task added or deleted makes the leader of the
//! current generation (the member that computed it) rebalance. Member metadata carries the
//! store offset each worker has read and assignments the offset the leader assigned from: a
//! worker assigned a task its view does not have yet starts it as soon as its view gets there.
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
//! config.member.cluster.bootstrap_servers = vec!["127.0.0.1:9092".into()];
//! let exit = WorkerBuilder::new(config)
//!     .register::<Copy>("copy")
//!     .task(TaskSpec::new("copy-0", "copy", serde_json::json!({"table": "orders"})))
//!     // Any future: a signal, a channel, a test's timer.
//!     .run_until(async { let _ = tokio::signal::ctrl_c().await; })
//!     .await?;
//! println!("worker ended: {exit:?}");
//! # Ok(()) }
//! ```

mod advertised;
mod check;
pub(crate) mod failover;
mod leader;
mod proof;
mod protocol;
mod reconciler;
mod run;
mod start;
mod takeover;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::driver::{Events, MemberHandle, RebalanceTimes, Subscribers};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) use protocol::WorkerProtocol;

/// This process's identity, which its status API's `/watch` names (see `proof.rs`).
pub(crate) fn own_process_id() -> &'static str {
    &proof::own().process
}

use crate::config::WorkerConfig;
pub(crate) use crate::error::{WorkerDetail, WorkerError};
use crate::runtime::Runtime;
use crate::status::{TaskStatus, WorkerStatus};

/// How [`WorkerHandle::run_until`] ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerExit {
    /// The shutdown future completed: tasks stopped, LeaveGroup sent.
    Shutdown,
    /// The member left the group by itself.
    Left,
}

/// A change the worker made, for logs and UIs ([`WorkerHandle::events`]).
///
/// Every subscriber receives its own copy of each event: the task lists are shared (`Arc`), so
/// a copy costs a few reference counts however many tasks the worker holds.
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
        tasks: Arc<BTreeSet<String>>,
        /// Tasks started by this change, sorted.
        started: Arc<[String]>,
        /// Tasks stopped by this change, sorted.
        stopped: Arc<[String]>,
        /// Where the time behind this change went.
        times: AssignedTimes,
    },
    /// The membership was lost (self-fenced or reset): every task was stopped.
    Lost {
        /// The generation lost.
        generation: Option<i32>,
    },
    /// The worker stopped every task for good (shutdown, fenced, fatal).
    Stopped,
}

/// Where the time behind a [`WorkerEvent::Assigned`] went: the protocol's waits, the leader's
/// work and this worker's, so that "why did this take a second" has an answer (the failover
/// and scale measurements split each step with it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AssignedTimes {
    /// Up to the assignment's arrival, as the group member measured it: the whole rebalance
    /// (from this worker's rejoin, or its first JoinGroup), the JoinGroup's and SyncGroup's
    /// waits (Kafka's `join-time` and `sync-time`), and on the leader computing every member's
    /// assignment (decoding their metadata, the assignor, encoding).
    pub member: RebalanceTimes,
    /// From the assignment's arrival to this change: decoding it, then tasks held back (a
    /// static takeover's wait, a vanished owner's hold, the task store's catch-up).
    pub held: Duration,
    /// Making the change: stopping what it revokes (the signal, not the wait) and spawning
    /// what it adds.
    pub apply: Duration,
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
    events: Arc<Subscribers<WorkerEvent>>,
    shutdown: CancellationToken,
    server_stop: CancellationToken,
    /// The status API's task, awaited at the end so that its last words reach the peers.
    server: Option<JoinHandle<()>>,
    task: JoinHandle<Result<(), WorkerError>>,
}

impl WorkerHandle {
    /// The runtime (tasks, status board).
    #[cfg(test)]
    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// What `GET /status` would answer now: the group view and the tasks this worker holds.
    pub fn status(&self) -> WorkerStatus {
        self.runtime.board().snapshot()
    }

    /// The state of each task this worker holds or stopped last, as the status API shows them.
    pub fn tasks(&self) -> Vec<TaskStatus> {
        self.runtime.board().tasks().snapshot()
    }

    /// The tasks this worker holds now, with the generation each was granted in.
    pub fn owned(&self) -> BTreeMap<String, i32> {
        self.runtime.owned()
    }

    /// The group member (status, lease, metrics).
    pub fn member(&self) -> &MemberHandle {
        &self.member
    }

    /// Where the status API listens (the bound port when the config asked for port 0, as it
    /// does by default); `None` when it is disabled.
    pub fn status_addr(&self) -> Option<SocketAddr> {
        self.status_addr
    }

    /// The worker's changes from now on: every one, in order, none dropped.
    pub fn events(&self) -> Events<WorkerEvent> {
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
        match self.task.await {
            Ok(result) => {
                failover::end_links(&self.server_stop, self.server).await;
                result
            }
            // Its tasks may still run until their lease ends: the status API keeps serving
            // (and its port bound), so no peer takes this process for gone.
            Err(error) => Err(WorkerDetail::Panicked(error.to_string()).into()),
        }
    }
}

impl WorkerHandle {
    /// Runs until `shutdown` completes: then stops every task (within the graceful stop timeout
    /// plus the abort timeout), sends LeaveGroup and returns [`WorkerExit::Shutdown`]. Returns
    /// earlier if the member ends by itself: [`WorkerExit::Left`], or the error that ended it,
    /// after stopping every task.
    ///
    /// `shutdown` is any future: a signal the application listens for, a channel, a timer.
    /// See [`shutdown::two_signals`](crate::shutdown::two_signals) for the usual policy of a
    /// service binary.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<WorkerExit, WorkerError> {
        let stop = self.shutdown.clone();
        let mut wait = std::pin::pin!(self.wait());
        tokio::select! {
            result = &mut wait => return result.map(|()| WorkerExit::Left),
            () = shutdown => {}
        }
        tracing::info!("shutdown requested: stopping tasks, then leaving the group");
        stop.cancel();
        wait.await.map(|()| WorkerExit::Shutdown)
    }
}

/// Opens the task store (creating its topic on first use), reads it to its end, installs the
/// effective catalogue, and starts following it.
async fn open_store(
    config: &WorkerConfig,
    runtime: &Runtime,
) -> Result<(crate::store::TaskStore, run::StoreLink), WorkerError> {
    let failed =
        |e: &dyn std::fmt::Display| WorkerError::from(WorkerDetail::TaskStore(e.to_string()));
    let topic = match &config.tasks.store.topic {
        Some(topic) => topic.clone(),
        None => {
            crate::store::tasks_topic(&config.member.membership.group_id).map_err(|e| failed(&e))?
        }
    };
    let open = |create: bool| {
        let topic = topic.clone();
        async move {
            let cluster =
                kroupier_coordinator::connection::Cluster::new(config.member.cluster.clone())
                    .map_err(|e| failed(&e))?;
            crate::store::TaskStore::open(Arc::new(cluster), topic, create)
                .await
                .map_err(|e| failed(&e))
        }
    };
    // The tail long-polls its broker connection; writes (the status API's) get connections of
    // their own, so that they never queue behind a poll.
    let tailed = open(true).await?;
    let store = open(false).await?;
    let started = tokio::time::Instant::now();
    let view = tailed.read_all().await.map_err(|e| failed(&e))?;
    let code = runtime.supervisor().catalogue();
    let desired = crate::runtime::desired::Desired::merge(&code, &view);
    tracing::info!(
        topic = store.topic(),
        offset = view.offset,
        stored = view.tasks.len(),
        invalid = view.invalid.len(),
        tasks = desired.catalogue.len(),
        read_ms = started.elapsed().as_millis() as u64,
        "task store read"
    );
    runtime.set_desired(desired);
    // Tasks' checkpoints: a second compacted topic, read to its end before any task starts.
    let checkpoint_topic = match &config.tasks.store.checkpoint_topic {
        Some(topic) => topic.clone(),
        None => crate::store::checkpoints_topic(&config.member.membership.group_id)
            .map_err(|e| failed(&e))?,
    };
    let cluster = kroupier_coordinator::connection::Cluster::new(config.member.cluster.clone())
        .map_err(|e| failed(&e))?;
    let transactional_prefix = match &config.tasks.store.transactional_id_prefix {
        Some(prefix) => prefix.clone(),
        None => format!("kroupier-{}-", config.member.membership.group_id),
    };
    let checkpoints = crate::checkpoint::Checkpoints::open_with_prefix(
        Arc::new(cluster),
        checkpoint_topic,
        transactional_prefix,
    )
    .await
    .map_err(|e| failed(&e))?;
    runtime.supervisor().set_checkpoints(Arc::new(checkpoints));
    let tail = tailed.tail(view);
    runtime
        .supervisor()
        .set_store(crate::generator::StoreAccess {
            store: store.clone(),
            views: tail.receiver.clone(),
            code: Arc::clone(&code),
        });
    let link = run::StoreLink {
        code: (*code).clone(),
        views: tail.receiver.clone(),
        _tail: Box::new(tail),
    };
    Ok((store, link))
}

pub(crate) use start::spawn;
