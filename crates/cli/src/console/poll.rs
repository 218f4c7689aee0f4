//! Keeping the [`Board`] current: DescribeGroups every [`POLL`](crate::watch::POLL) (as
//! `kroupier watch` does), each worker's `/status` every [`PROBE`], and a new snapshot for
//! the page after each.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kroupier_coordinator::observer::Observer;
use kroupier_worker::http::client::{self, Failure};
use kroupier_worker::journal::unix_ms;
use tokio::sync::watch;

use super::board::{Board, Probe};
use crate::describe::{self, status_addrs};

/// How often each worker's status API is asked for `/status`.
pub(crate) const PROBE: Duration = Duration::from_millis(500);
/// How long a worker's status API may take to answer.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The board and the latest snapshot as JSON, shared by the pollers and the web server.
#[derive(Clone)]
pub(crate) struct Shared {
    /// The model.
    pub board: Arc<Mutex<Board>>,
    /// The latest snapshot, as the page receives it.
    pub snapshot: watch::Sender<Arc<String>>,
}

impl Shared {
    /// A board for `group` at `bootstrap`, starting now.
    pub(crate) fn new(group: &str, bootstrap: &str) -> Self {
        let board = Board::new(group, bootstrap, (Instant::now(), unix_ms()));
        let first = serde_json::to_string(&board.snapshot(Instant::now())).unwrap_or_default();
        Shared {
            board: Arc::new(Mutex::new(board)),
            snapshot: watch::Sender::new(Arc::new(first)),
        }
    }

    /// Runs `f` on the board (a panic elsewhere does not make it unusable).
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Board) -> T) -> T {
        let mut board = self.board.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut board)
    }

    /// Sends the page a new snapshot if it differs from the last one.
    fn publish(&self) {
        let json = self.with(|b| serde_json::to_string(&b.snapshot(Instant::now())));
        if let Ok(json) = json {
            self.snapshot.send_if_modified(|last| {
                let changed = **last != json;
                if changed {
                    *last = Arc::new(json);
                }
                changed
            });
        }
    }
}

/// Describes `group` forever, feeding the board.
pub(crate) async fn describe_loop(
    observer: Observer,
    bootstrap: String,
    group: String,
    shared: Shared,
) {
    let timeout = Duration::from_secs(2);
    let mut ticks = tokio::time::interval(crate::watch::POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match tokio::time::timeout(timeout, observer.describe_group(&group)).await {
            Ok(Ok(description)) => {
                let addrs = status_addrs(&description);
                let view = describe::build_view(description);
                shared.with(|b| b.observe(Instant::now(), view, addrs));
            }
            Ok(Err(e)) => shared.with(|b| {
                b.failed(format!(
                    "cannot describe group `{group}` at {bootstrap}: {e}"
                ))
            }),
            Err(_) => shared.with(|b| {
                b.failed(format!(
                    "no answer from {bootstrap} within {} ms",
                    timeout.as_millis()
                ))
            }),
        }
        shared.publish();
    }
}

/// Asks every worker with a status API for `/status` forever, feeding the board.
pub(crate) async fn probe_loop(shared: Shared) {
    let mut ticks = tokio::time::interval(PROBE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let addrs = shared.with(|b| b.status_addrs().clone());
        let probes = addrs.into_iter().map(|(worker, addr)| async move {
            let probe = match client::get(&addr, "/status", PROBE_TIMEOUT).await {
                Ok(answer) if answer.code == 200 => match serde_json::from_str(&answer.body) {
                    Ok(status) => Probe::Status(status),
                    Err(e) => Probe::Failed(format!("/status is not JSON: {e}")),
                },
                Ok(answer) => Probe::Failed(format!(
                    "/status answered {}: {}",
                    answer.code,
                    answer.body.trim()
                )),
                Err(Failure::Refused) => Probe::Refused,
                Err(Failure::Other(e)) => Probe::Failed(e),
            };
            (worker, probe)
        });
        let mut answered = None;
        for (worker, probe) in futures::future::join_all(probes).await {
            if answered.is_none() && matches!(probe, Probe::Status(_)) {
                answered = addrs_of(&shared, &worker);
            }
            shared.with(|b| b.probed(Instant::now(), &worker, probe));
        }
        // Which tasks generators declared: from one worker that answered (all follow the
        // same task store; a worker without one lists no generated tasks).
        if let Some(addr) = answered
            && let Ok(answer) = client::get(&addr, "/tasks", PROBE_TIMEOUT).await
            && answer.code == 200
            && let Ok(tasks) = serde_json::from_str::<serde_json::Value>(&answer.body)
        {
            shared.with(|b| b.lineage(&tasks));
        }
        shared.publish();
    }
}

/// The status API address of `worker`, as the board knows it.
fn addrs_of(shared: &Shared, worker: &str) -> Option<String> {
    shared.with(|b| b.status_addrs().get(worker).cloned())
}
