//! The task that owns the [`GroupCoordinator`]: connections send it requests, it drives the
//! timers (session expiry, join and sync deadlines) from `poll_timeout`, and routes the answers
//! of parked JoinGroup/SyncGroup requests back to their connections.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::group::{
    GroupCoordinator, GroupDescription, GroupListing, Heartbeat, JoinGroup, JoinGroupResult,
    LeaveGroup, LeaveGroupResult, Output, ReplyId, SyncGroup, SyncGroupResult,
};

/// How many requests may queue for the group task before connections wait.
const QUEUE: usize = 1024;

enum Command {
    Join(JoinGroup, oneshot::Sender<JoinGroupResult>),
    Sync(SyncGroup, oneshot::Sender<SyncGroupResult>),
    Heartbeat(Heartbeat, oneshot::Sender<Option<ResponseError>>),
    Leave(LeaveGroup, oneshot::Sender<LeaveGroupResult>),
    Describe(Vec<String>, oneshot::Sender<Vec<(bool, GroupDescription)>>),
    List(oneshot::Sender<Vec<GroupListing>>),
}

/// The group task is gone (the coordinator shut down).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the embedded coordinator's group task has stopped; the coordinator is shutting down")]
pub(crate) struct GroupsGone;

/// A cheap, cloneable way to talk to the group task.
#[derive(Debug, Clone)]
pub(crate) struct Groups {
    tx: mpsc::Sender<Command>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Command")
    }
}

impl Groups {
    /// Starts the group task; it ends when `shutdown` is cancelled or every `Groups` is dropped.
    pub(crate) fn spawn(coordinator: GroupCoordinator, shutdown: CancellationToken) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(coordinator, rx, shutdown));
        Self { tx }
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, GroupsGone> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(make(reply)).await.map_err(|_| GroupsGone)?;
        answer.await.map_err(|_| GroupsGone)
    }

    /// JoinGroup; resolves when the group answers (possibly after the rebalance).
    pub(crate) async fn join(&self, req: JoinGroup) -> Result<JoinGroupResult, GroupsGone> {
        self.ask(|r| Command::Join(req, r)).await
    }

    /// SyncGroup; resolves when the group answers (possibly after the leader syncs).
    pub(crate) async fn sync(&self, req: SyncGroup) -> Result<SyncGroupResult, GroupsGone> {
        self.ask(|r| Command::Sync(req, r)).await
    }

    /// Heartbeat.
    pub(crate) async fn heartbeat(
        &self,
        req: Heartbeat,
    ) -> Result<Option<ResponseError>, GroupsGone> {
        self.ask(|r| Command::Heartbeat(req, r)).await
    }

    /// LeaveGroup.
    pub(crate) async fn leave(&self, req: LeaveGroup) -> Result<LeaveGroupResult, GroupsGone> {
        self.ask(|r| Command::Leave(req, r)).await
    }

    /// DescribeGroups: each group with whether it exists.
    pub(crate) async fn describe(
        &self,
        group_ids: Vec<String>,
    ) -> Result<Vec<(bool, GroupDescription)>, GroupsGone> {
        self.ask(|r| Command::Describe(group_ids, r)).await
    }

    /// ListGroups.
    pub(crate) async fn list(&self) -> Result<Vec<GroupListing>, GroupsGone> {
        self.ask(Command::List).await
    }
}

#[derive(Default)]
struct Parked {
    joins: HashMap<ReplyId, oneshot::Sender<JoinGroupResult>>,
    syncs: HashMap<ReplyId, oneshot::Sender<SyncGroupResult>>,
    next: u64,
}

impl Parked {
    fn id(&mut self) -> ReplyId {
        self.next += 1;
        ReplyId(self.next)
    }
}

fn now() -> std::time::Instant {
    Instant::now().into_std()
}

async fn run(
    mut c: GroupCoordinator,
    mut rx: mpsc::Receiver<Command>,
    shutdown: CancellationToken,
) {
    let mut parked = Parked::default();
    loop {
        let deadline = c.poll_timeout().map(Instant::from_std);
        tokio::select! {
            () = shutdown.cancelled() => break,
            cmd = rx.recv() => match cmd {
                None => break,
                Some(cmd) => handle(&mut c, &mut parked, cmd),
            },
            () = sleep_until(deadline) => c.handle_timeout(now()),
        }
        while let Some(out) = c.poll_output() {
            match out {
                Output::JoinGroup { reply, result } => {
                    if let Some(tx) = parked.joins.remove(&reply) {
                        // The connection may be gone; its member will expire on its own.
                        let _ = tx.send(result);
                    }
                }
                Output::SyncGroup { reply, result } => {
                    if let Some(tx) = parked.syncs.remove(&reply) {
                        let _ = tx.send(result);
                    }
                }
            }
        }
    }
    tracing::debug!("group task stopped");
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn handle(c: &mut GroupCoordinator, parked: &mut Parked, cmd: Command) {
    match cmd {
        Command::Join(req, tx) => {
            let id = parked.id();
            parked.joins.insert(id, tx);
            c.handle_join(now(), id, req);
        }
        Command::Sync(req, tx) => {
            let id = parked.id();
            parked.syncs.insert(id, tx);
            c.handle_sync(now(), id, req);
        }
        Command::Heartbeat(req, tx) => {
            let _ = tx.send(c.handle_heartbeat(now(), &req));
        }
        Command::Leave(req, tx) => {
            let _ = tx.send(c.handle_leave(now(), req));
        }
        Command::Describe(ids, tx) => {
            let groups = ids
                .iter()
                .map(|id| (c.contains(id), c.describe(id)))
                .collect();
            let _ = tx.send(groups);
        }
        Command::List(tx) => {
            let _ = tx.send(c.list());
        }
    }
}
