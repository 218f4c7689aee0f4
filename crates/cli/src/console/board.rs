//! The console's model of a group: what the page shows, built from successive DescribeGroups
//! snapshots (diffed into moves by `kroupier watch`'s [`Tracker`]) and the workers' `/status`
//! answers. No IO and no clock reads: every input carries its `now`, so the diffing (moves,
//! unowned times, rebalances, failovers) is unit-tested here and the page only draws
//! [`Snapshot`]s.
//!
//! - A *rebalance* opens at the first snapshot that differs from the last stable one (another
//!   state, generation or member set, or a move) and closes at the next `Stable` snapshot with a
//!   new generation; it lists who joined and left (between the two stable snapshots, since Kafka
//!   shows no member metadata mid-rebalance) and what moved.
//! - A worker whose status API refuses connections is gone: its tasks count as unowned from
//!   then on (the tracker's `mark_lost`), before the coordinator notices.
//! - A *failover* opens at the console's first sign that a worker died (its status API refuses
//!   connections, or a stable snapshot without it) and closes when every task it held is owned
//!   by another worker in a stable snapshot; its time runs between the two.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::describe::GroupView;
use crate::watch::model::{self, Move, Tracker};

/// How many rebalances and failovers the page keeps.
const HISTORY: usize = 50;
/// How many moves one rebalance lists (the count covers them all).
const MOVES_SHOWN: usize = 500;

/// The outcome of asking a worker for `/status`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Probe {
    /// Its answer.
    Status(Value),
    /// Nothing listens there any more: the process is gone.
    Refused,
    /// Any other failure (timeout, HTTP error, TLS, a token needed).
    Failed(String),
}

/// A worker in one snapshot of the page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WorkerView {
    /// Its worker id (or client or member id when Kafka shows no metadata).
    pub name: String,
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// The host it connected from.
    pub host: String,
    /// Where its status API listens, if it has one.
    pub status_addr: Option<String>,
    /// Whether it leads the group.
    pub leader: bool,
    /// `ok`, `refused`, `none` (no status API) or the error of the last `/status` request.
    pub probe: String,
    /// Whether its `/status` says it is rebalancing.
    pub rebalancing: bool,
    /// Its tasks: those of its assignment, then any others its `/status` still lists.
    pub tasks: Vec<TaskCell>,
}

/// One task in a worker's column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TaskCell {
    /// The task id.
    pub id: String,
    /// Its state as the worker's `/status` says (`RUNNING`, `STOPPING`, `FAILED`...), or
    /// `ASSIGNED` when the worker has not said.
    pub state: String,
    /// Restarts after failures.
    pub restarts: u64,
    /// The last error, if any.
    pub last_error: Option<String>,
    /// Whether the assignment no longer gives it to this worker (still stopping there).
    pub leaving: bool,
    /// The generator that declared it, if a generator did (from a worker's `/tasks`).
    pub parent: Option<String>,
}

/// A task no worker owns now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Unplaced {
    /// The task id.
    pub id: String,
    /// How long it has had no owner.
    pub unowned_ms: u64,
    /// Why, as far as the console can tell.
    pub reason: String,
}

/// A move as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MoveView {
    /// The task.
    pub task: String,
    /// Its previous owner.
    pub from: String,
    /// Its new owner.
    pub to: String,
    /// How long it had no owner (as DescribeGroups showed it).
    pub unowned_ms: u64,
}

/// One rebalance on the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Rebalance {
    /// When the console first saw it (Unix ms).
    pub started_ms: u64,
    /// When the group was stable again (Unix ms); `None` while it runs.
    pub ended_ms: Option<u64>,
    /// The generation before it.
    pub from_generation: Option<i32>,
    /// The generation after it.
    pub generation: Option<i32>,
    /// Workers that joined.
    pub joined: Vec<String>,
    /// Workers that left.
    pub left: Vec<String>,
    /// Moves, up to a limit.
    pub moves: Vec<MoveView>,
    /// How many tasks moved.
    pub moved: usize,
}

/// A worker that died and how long its tasks took to run elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Failover {
    /// The worker.
    pub worker: String,
    /// How the console noticed.
    pub via: String,
    /// When (Unix ms).
    pub detected_ms: u64,
    /// The last snapshot that listed it (Unix ms): it died after that.
    pub last_seen_ms: u64,
    /// Its tasks when it died.
    pub tasks: usize,
    /// When all of them had another owner (Unix ms).
    pub done_ms: Option<u64>,
    /// `done_ms - detected_ms`.
    pub failover_ms: Option<u64>,
}

/// What the page draws: one JSON object, sent over Server-Sent Events on every change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Snapshot {
    /// The group id.
    pub group: String,
    /// Where the console reads it.
    pub bootstrap: String,
    /// Kafka's group state, `None` before the first answer.
    pub state: Option<String>,
    /// The newest generation.
    pub generation: Option<i32>,
    /// The assignor.
    pub protocol: Option<String>,
    /// The leader's name.
    pub leader: Option<String>,
    /// The last error describing the group, if the last attempt failed.
    pub error: Option<String>,
    /// The workers, by name.
    pub workers: Vec<WorkerView>,
    /// Tasks with no owner.
    pub unplaced: Vec<Unplaced>,
    /// Rebalances, newest first.
    pub timeline: Vec<Rebalance>,
    /// Failovers, newest first.
    pub failovers: Vec<Failover>,
    /// Tasks owned by a worker now.
    pub owned: usize,
}

/// A rebalance in progress.
#[derive(Debug, Clone)]
struct Open {
    entry: Rebalance,
    names: BTreeSet<String>,
}

/// A failover in progress.
#[derive(Debug, Clone)]
struct Pending {
    entry: Failover,
    tasks: BTreeSet<String>,
}

/// The console's model of one group.
#[derive(Debug)]
pub(crate) struct Board {
    group: String,
    bootstrap: String,
    /// An instant and the Unix ms it was, to date the tracker's instants.
    origin: (Instant, u64),
    tracker: Tracker,
    latest: Option<GroupView>,
    error: Option<String>,
    status_addrs: BTreeMap<String, String>,
    probes: BTreeMap<String, Probe>,
    last_owner: BTreeMap<String, String>,
    stable_generation: Option<i32>,
    stable_names: BTreeSet<String>,
    stable_tasks: BTreeMap<String, BTreeSet<String>>,
    last_seen: BTreeMap<String, Instant>,
    open: Option<Open>,
    timeline: VecDeque<Rebalance>,
    pending: Vec<Pending>,
    failovers: VecDeque<Failover>,
    /// Each generated task's generator, as the last `/tasks` answer said.
    parents: BTreeMap<String, String>,
}

impl Board {
    /// An empty board for `group` at `bootstrap`; `origin` is an instant and the Unix ms it was.
    pub(crate) fn new(group: &str, bootstrap: &str, origin: (Instant, u64)) -> Self {
        Board {
            group: group.to_owned(),
            bootstrap: bootstrap.to_owned(),
            origin,
            tracker: Tracker::new(),
            latest: None,
            error: None,
            status_addrs: BTreeMap::new(),
            probes: BTreeMap::new(),
            last_owner: BTreeMap::new(),
            stable_generation: None,
            stable_names: BTreeSet::new(),
            stable_tasks: BTreeMap::new(),
            last_seen: BTreeMap::new(),
            open: None,
            timeline: VecDeque::new(),
            pending: Vec::new(),
            failovers: VecDeque::new(),
            parents: BTreeMap::new(),
        }
    }

    /// A worker's `GET /tasks` answer: which tasks a generator declared, and which one.
    /// Every worker follows the same task store, so one worker's answer serves the page.
    pub(crate) fn lineage(&mut self, tasks: &Value) {
        self.parents = tasks
            .get("tasks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|task| {
                let id = task.get("id")?.as_str()?;
                let parent = task.get("generated_by")?.as_str()?;
                Some((id.to_owned(), parent.to_owned()))
            })
            .collect();
    }

    fn unix_ms(&self, at: Instant) -> u64 {
        let (instant, ms) = self.origin;
        match at.checked_duration_since(instant) {
            Some(after) => ms + millis(after),
            None => ms.saturating_sub(millis(instant.duration_since(at))),
        }
    }

    /// The status API address of each worker (by name), from their member metadata.
    pub(crate) fn status_addrs(&self) -> &BTreeMap<String, String> {
        &self.status_addrs
    }

    /// Describing the group failed at `now`.
    pub(crate) fn failed(&mut self, error: String) {
        self.error = Some(error);
    }

    /// Takes the snapshot seen at `now`, with the status API address of each worker that has
    /// one.
    pub(crate) fn observe(
        &mut self,
        now: Instant,
        view: GroupView,
        status_addrs: BTreeMap<String, String>,
    ) {
        self.error = None;
        let owners = model::owners(&view);
        let moves = self.tracker.observe(now, &owners);
        for (task, names) in &owners {
            if let Some(owner) = names.iter().min() {
                self.last_owner.insert(task.clone(), owner.clone());
            }
        }
        let stable = view.state == "Stable" && view.generation.is_some();
        let names: BTreeSet<String> = view.members.iter().map(|m| m.name().to_owned()).collect();
        for name in &names {
            self.last_seen.insert(name.clone(), now);
        }
        let changed = view.state != "Stable"
            || view.generation != self.stable_generation
            || (stable && names != self.stable_names)
            || !moves.is_empty();
        if self.open.is_none() && changed && self.latest.is_some() {
            self.open = Some(Open {
                entry: Rebalance {
                    started_ms: self.unix_ms(now),
                    ended_ms: None,
                    from_generation: self.stable_generation,
                    generation: None,
                    joined: Vec::new(),
                    left: Vec::new(),
                    moves: Vec::new(),
                    moved: 0,
                },
                names: self.stable_names.clone(),
            });
        }
        if let Some(open) = &mut self.open {
            for m in &moves {
                open.entry.moved += 1;
                if open.entry.moves.len() < MOVES_SHOWN {
                    open.entry.moves.push(move_view(m));
                }
            }
        }
        if stable {
            let gone: Vec<String> = self.stable_names.difference(&names).cloned().collect();
            for name in gone {
                self.worker_gone(&name, "left the group", now);
            }
            self.stable_names = names.clone();
            self.stable_tasks = view
                .members
                .iter()
                .map(|m| {
                    (
                        m.name().to_owned(),
                        m.tasks.iter().flatten().cloned().collect(),
                    )
                })
                .collect();
            // A stable snapshot ends the open rebalance; one that changed nothing is dropped.
            if let Some(open) = self.open.take().filter(|o| {
                view.generation != o.entry.from_generation || o.entry.moved > 0 || names != o.names
            }) {
                let mut entry = open.entry;
                entry.ended_ms = Some(self.unix_ms(now));
                entry.generation = view.generation;
                entry.joined = names.difference(&open.names).cloned().collect();
                entry.left = open.names.difference(&names).cloned().collect();
                push_capped(&mut self.timeline, entry);
            }
            self.stable_generation = view.generation;
            self.close_failovers(now, &owners);
        }
        self.status_addrs = status_addrs;
        self.probes.retain(|name, _| names.contains(name));
        self.latest = Some(view);
    }

    /// Takes the answer of `worker`'s status API at `now`.
    pub(crate) fn probed(&mut self, now: Instant, worker: &str, probe: Probe) {
        if probe == Probe::Refused {
            // Its tasks are unowned from now on, whatever DescribeGroups shows until the
            // coordinator removes it (as `kroupier demo` does for the worker it kills).
            if !self.pending.iter().any(|p| p.entry.worker == worker) {
                self.tracker.mark_lost(worker, now);
            }
            self.worker_gone(worker, "its status API refused connections", now);
        } else if matches!(probe, Probe::Status(_)) {
            // Back (a new process with the same id): whatever failover it was in is over.
            self.pending.retain(|p| p.entry.worker != worker);
            self.tracker.mark_back(worker);
        }
        self.probes.insert(worker.to_owned(), probe);
    }

    fn worker_gone(&mut self, worker: &str, via: &str, now: Instant) {
        if self.pending.iter().any(|p| p.entry.worker == worker) {
            return;
        }
        let Some(tasks) = self.stable_tasks.get(worker).filter(|t| !t.is_empty()) else {
            return;
        };
        self.pending.push(Pending {
            entry: Failover {
                worker: worker.to_owned(),
                via: via.to_owned(),
                detected_ms: self.unix_ms(now),
                last_seen_ms: self.unix_ms(self.last_seen.get(worker).copied().unwrap_or(now)),
                tasks: tasks.len(),
                done_ms: None,
                failover_ms: None,
            },
            tasks: tasks.clone(),
        });
    }

    fn close_failovers(&mut self, now: Instant, owners: &model::Owners) {
        let done_ms = self.unix_ms(now);
        let (done, pending): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| {
                p.tasks.iter().all(|task| {
                    owners
                        .get(task)
                        .is_some_and(|names| names.iter().any(|n| *n != p.entry.worker))
                })
            });
        self.pending = pending;
        for p in done {
            let mut entry = p.entry;
            entry.done_ms = Some(done_ms);
            entry.failover_ms = Some(done_ms.saturating_sub(entry.detected_ms));
            push_capped(&mut self.failovers, entry);
        }
    }

    /// The last `/status` answer of `worker`, if it gave one.
    pub(crate) fn status_of(&self, worker: &str) -> Option<&Value> {
        match self.probes.get(worker) {
            Some(Probe::Status(status)) => Some(status),
            _ => None,
        }
    }

    /// What the page shows at `now`.
    pub(crate) fn snapshot(&self, now: Instant) -> Snapshot {
        let view = self.latest.as_ref();
        let leader = view.and_then(|v| {
            let id = v.leader.as_deref()?;
            v.members
                .iter()
                .find(|m| m.member_id == id)
                .map(|m| m.name().to_owned())
        });
        let workers = view
            .map(|v| {
                v.members
                    .iter()
                    .map(|m| {
                        let name = m.name();
                        self.worker_view(
                            name,
                            &m.member_id,
                            &m.host,
                            leader.as_deref() == Some(name),
                            m.tasks.as_deref().unwrap_or_default(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let names: BTreeSet<&str> = workers.iter().map(|w| w.name.as_str()).collect();
        let rebalancing = view.is_some_and(|v| v.state != "Stable");
        let mut unplaced: Vec<Unplaced> = self
            .tracker
            .unowned(now)
            .into_iter()
            .map(|(id, unowned)| {
                let reason = match self.last_owner.get(&id) {
                    _ if rebalancing => {
                        "the group is rebalancing (Kafka shows assignments once it is stable)"
                            .to_owned()
                    }
                    Some(owner) if !names.contains(owner.as_str()) => {
                        format!("its owner {owner} left; waiting for the next assignment")
                    }
                    Some(owner) if self.probes.get(owner) == Some(&Probe::Refused) => format!(
                        "its owner {owner} is gone (its status API refuses connections); the \
                         coordinator has not removed it yet"
                    ),
                    Some(owner) => format!("no longer assigned (last on {owner})"),
                    None => "not assigned".to_owned(),
                };
                Unplaced {
                    id,
                    unowned_ms: millis(unowned),
                    reason,
                }
            })
            .collect();
        // Tasks of the task store the leader could place nowhere (never owned, so the tracker
        // does not know them), with the leader's reason.
        if let Some(view) = view {
            for (code, tasks) in &view.unplaced {
                let reason = match code.as_str() {
                    "no_eligible_member" => {
                        "no worker registers its kind (the leader's reason: no_eligible_member)"
                            .to_owned()
                    }
                    "no_capacity" => {
                        "no worker has capacity left (the leader's reason: no_capacity)".to_owned()
                    }
                    other => format!("the leader placed it nowhere ({other})"),
                };
                for id in tasks {
                    if !unplaced.iter().any(|u| u.id == *id) {
                        unplaced.push(Unplaced {
                            id: id.clone(),
                            unowned_ms: 0,
                            reason: reason.clone(),
                        });
                    }
                }
            }
        }
        let mut timeline: Vec<Rebalance> = self.open.iter().map(|o| o.entry.clone()).collect();
        timeline.extend(self.timeline.iter().rev().cloned());
        let mut failovers: Vec<Failover> = self.pending.iter().map(|p| p.entry.clone()).collect();
        failovers.extend(self.failovers.iter().rev().cloned());
        Snapshot {
            group: self.group.clone(),
            bootstrap: self.bootstrap.clone(),
            state: view.map(|v| v.state.clone()),
            generation: view.and_then(|v| v.generation),
            protocol: view.and_then(|v| v.protocol.clone()),
            leader,
            error: self.error.clone(),
            owned: view.map_or(0, |v| model::owners(v).len()),
            workers,
            unplaced,
            timeline,
            failovers,
        }
    }

    fn worker_view(
        &self,
        name: &str,
        member_id: &str,
        host: &str,
        leader: bool,
        assigned: &[String],
    ) -> WorkerView {
        let status_addr = self.status_addrs.get(name).cloned();
        let status = self.status_of(name);
        let mut states: BTreeMap<String, TaskCell> = status
            .and_then(|s| s.get("tasks"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(task_cell)
            .map(|cell| (cell.id.clone(), cell))
            .collect();
        let mut tasks: Vec<TaskCell> = assigned
            .iter()
            .map(|id| {
                states.remove(id).unwrap_or_else(|| TaskCell {
                    id: id.clone(),
                    state: "ASSIGNED".to_owned(),
                    restarts: 0,
                    last_error: None,
                    leaving: false,
                    parent: None,
                })
            })
            .collect();
        tasks.extend(states.into_values().map(|mut cell| {
            cell.leaving = true;
            cell
        }));
        for cell in &mut tasks {
            cell.parent = self.parents.get(&cell.id).cloned();
        }
        let probe = match self.probes.get(name) {
            Some(Probe::Status(_)) => "ok".to_owned(),
            Some(Probe::Refused) => "refused".to_owned(),
            Some(Probe::Failed(e)) => e.clone(),
            None if status_addr.is_none() => "none".to_owned(),
            None => "not asked yet".to_owned(),
        };
        WorkerView {
            name: name.to_owned(),
            member_id: member_id.to_owned(),
            host: host.to_owned(),
            status_addr,
            leader,
            probe,
            rebalancing: status
                .and_then(|s| s.get("rebalancing"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            tasks,
        }
    }
}

/// A task of a `/status` answer.
fn task_cell(task: &Value) -> Option<TaskCell> {
    Some(TaskCell {
        id: task.get("task_id")?.as_str()?.to_owned(),
        state: task.get("state")?.as_str()?.to_owned(),
        restarts: task.get("restarts").and_then(Value::as_u64).unwrap_or(0),
        last_error: task
            .get("last_error")
            .and_then(Value::as_str)
            .map(str::to_owned),
        leaving: false,
        parent: None,
    })
}

fn move_view(m: &Move) -> MoveView {
    MoveView {
        task: m.task.clone(),
        from: m.from.clone(),
        to: m.to.clone(),
        unowned_ms: millis(m.unowned_for),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn push_capped<T>(list: &mut VecDeque<T>, item: T) {
    list.push_back(item);
    while list.len() > HISTORY {
        list.pop_front();
    }
}

#[cfg(test)]
mod tests;
