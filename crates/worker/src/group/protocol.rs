//! [`WorkerProtocol`]: the kroupier [`GroupProtocol`] — what a worker offers at JoinGroup and
//! how the leader assigns — and what the worker loop does at once, from the member's events,
//! when a generation is assigned, revoked or lost.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kroupier_assignor::{Assignor, RebalanceProtocol, TaskSet, UnplacedReason};
use kroupier_coordinator::driver::MemberStatus;
use kroupier_coordinator::membership::{
    AssignContext, AssignError, Generation, GroupMember, GroupProtocol, MemberAssignment,
    ProtocolMetadata,
};
use tokio::sync::watch;
use tokio::time::Instant;

use super::advertised::Advertised;
use super::leader::{self, LeaderContact, LostHold, Memory, Round, VanishedLeader};
use super::proof::{self, Proofs};
use crate::catalogue::Catalogue;
use crate::protocol::{MemberMetadata, PROTOCOL_TYPE};
use crate::runtime::Runtime;

/// What the protocol remembers between the member's events.
#[derive(Debug, Default)]
struct State {
    /// The leader's memory of the round it last completed (committed on `on_assigned`).
    memory: Option<Memory>,
    /// The memory of the round computed but not yet confirmed by SyncGroup.
    pending: Option<Memory>,
    /// How the members hold back tasks whose previous owner vanished (see
    /// `leader::Round::lost_hold`); this worker's session timeout goes into its metadata.
    lost_hold: Option<LostHold>,
    /// This worker's heartbeat interval, advertised for leaders of earlier releases.
    heartbeat_interval: Option<Duration>,
    /// The worker stopped every task to shut down: its metadata says so (and claims no held
    /// start).
    leaving: bool,
    /// What the reconciler's decisions put in the metadata (claims, holds, encoding).
    advertised: Arc<Advertised>,
    /// The leader of the last assignment this member received, with how to reach it (see
    /// `leader::Round::vanished_leader`).
    previous_leader: Option<(String, LeaderContact)>,
    /// Where this worker's status API is reached, and whether its peers can prove this
    /// process's end there (see `proof.rs`: then its metadata carries its process and network
    /// identities).
    status_addr: Option<(String, bool)>,
    /// What the round computed but not yet confirmed was assigned from.
    pending_from: Option<AssignedFrom>,
    /// The tasks the last round this member led left unplaced (warned about once).
    unplaced: std::collections::BTreeSet<String>,
    /// The assignor's view of the last catalogue this member led a round with (building it
    /// costs tens of milliseconds at 100,000 tasks; rounds in a row share it).
    task_set: Option<(std::sync::Weak<Catalogue>, Arc<TaskSet>)>,
    /// What the last round this member led was assigned from: when the effective catalogue's
    /// placement moves away from it (a task added or deleted in the task store), this leader
    /// starts a rebalance.
    assigned_from: Option<AssignedFrom>,
}

/// The catalogue a leader's round was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AssignedFrom {
    /// The generation the round assigned.
    pub(crate) generation: i32,
    /// The placement fingerprint of the leader's catalogue then.
    pub(crate) placement: u64,
    /// The leader's task store offset then.
    pub(crate) store_offset: Option<i64>,
    /// The highest store offset a member was at, when above the leader's own.
    pub(crate) ahead: Option<i64>,
}

/// The kroupier group protocol of one worker.
///
/// - `protocols`: one entry per assignor (a value implementing [`Assignor`], built-in or the
///   application's own), in preference order, each carrying the
///   worker's [`MemberMetadata`](crate::protocol::MemberMetadata) (owned tasks with their
///   generation, kinds, catalogue fingerprint, capacity, rack).
/// - `assign` (leader): decodes every member's metadata, gives tasks only to members that list
///   their kind, resolves claims by generation, runs the selected assignor and encodes each
///   member's full target set and revocations; the cooperative cross-round state stays here
///   between the rounds this member leads.
///
/// The worker loop reads the member's events, and the reconciler decides; the loop tells this
/// protocol what its metadata must say:
/// - [`assigned`](Self::assigned): the leader's memory is confirmed (or forgotten if another
///   led), and whether the leader reads compressed envelopes.
/// - [`keep_claims`](Self::keep_claims): an eager revocation stopped every task; the next
///   JoinGroup still claims them.
/// - [`forget_generation`](Self::forget_generation): the generation is lost.
///
/// Assignments themselves are applied by the worker loop, which also knows the lease.
pub(crate) struct WorkerProtocol {
    runtime: Arc<Runtime>,
    /// The assignors offered, most preferred first; their names are the protocol names.
    assignors: Vec<Arc<dyn Assignor>>,
    /// What this worker's fast-failover links proved (see `proof.rs`).
    proofs: Arc<Proofs>,
    /// The member's status, as its driver publishes it before every request: whether the
    /// member still holds a generation when the driver reads the metadata for a JoinGroup.
    member: OnceLock<watch::Receiver<MemberStatus>>,
    state: Mutex<State>,
}

impl WorkerProtocol {
    /// The protocol for `runtime`, offering `assignors` (most preferred first, unique names).
    pub(crate) fn new(runtime: Arc<Runtime>, assignors: Vec<Arc<dyn Assignor>>) -> Self {
        WorkerProtocol {
            runtime,
            assignors,
            proofs: Arc::default(),
            member: OnceLock::new(),
            state: Mutex::new(State::default()),
        }
    }

    /// Reads the member's `status` from now on: a JoinGroup after a loss, which the driver
    /// sends before the worker loop has taken the loss in, then claims nothing.
    pub(crate) fn follow_member(&self, status: watch::Receiver<MemberStatus>) {
        let _ = self.member.set(status);
    }

    /// Whether the member holds a generation (a lease), as its driver last published; `true`
    /// before [`follow_member`](Self::follow_member).
    fn holds_generation(&self) -> bool {
        self.member
            .get()
            .is_none_or(|status| status.borrow().lease.is_some())
    }

    /// The runtime this protocol drives.
    #[cfg(test)]
    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The assignor's view of `catalogue`: the last one if it was built from this very
    /// catalogue, else built now (and kept for the next round).
    fn task_set(&self, catalogue: &Arc<Catalogue>) -> Result<Arc<TaskSet>, leader::RoundError> {
        let cached = self.state().task_set.clone();
        if let Some((built_from, tasks)) = cached
            && std::sync::Weak::ptr_eq(&built_from, &Arc::downgrade(catalogue))
        {
            return Ok(tasks);
        }
        let tasks = Arc::new(leader::task_set(catalogue)?);
        self.state().task_set = Some((Arc::downgrade(catalogue), tasks.clone()));
        Ok(tasks)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Advertises where this worker's status API is reached, `host:port`; `provable`: its
    /// peers can prove this process's end there (see `proof.rs`).
    pub(crate) fn set_status_addr(&self, addr: String, provable: bool) {
        self.state().status_addr = Some((addr, provable));
    }

    /// What this worker's links prove, shared with fast failover.
    pub(crate) fn proofs(&self) -> Arc<Proofs> {
        self.proofs.clone()
    }

    /// Sets the heartbeat interval advertised for leaders of earlier releases.
    pub(crate) fn set_heartbeat_interval(&self, interval: Duration) {
        self.state().heartbeat_interval = Some(interval);
    }

    /// The worker stopped every task to shut down: its next metadata says `leaving`, and
    /// claims no held start.
    pub(crate) fn set_leaving(&self) {
        self.state().leaving = true;
    }

    /// Sets how long, in the assignments this member computes as leader, the new owners of
    /// lost tasks wait before starting them.
    pub(crate) fn set_lost_hold(&self, hold: LostHold) {
        self.state().lost_hold = Some(hold);
    }

    /// What the reconciler's decisions put in the next metadata (its `Advertise` action).
    pub(crate) fn advertise(&self, advertised: Arc<Advertised>) {
        self.state().advertised = advertised;
    }

    /// Remembers the leader of the assignment the worker loop just decoded, with how to reach
    /// it, for the round this member may lead next without memory (see
    /// `leader::Round::vanished_leader`).
    pub(crate) fn note_leader(&self, leader_id: &str, assignment: &crate::protocol::Assignment) {
        let contact = LeaderContact {
            heartbeat_interval: assignment.leader_heartbeat_interval,
            session_timeout: assignment.leader_session_timeout,
            status_addr: assignment.leader_status_addr.clone(),
            network_id: assignment.leader_network_id.clone(),
        };
        self.state().previous_leader = Some((leader_id.to_owned(), contact));
    }

    /// What the last round this member led (and that SyncGroup confirmed) was assigned from.
    pub(crate) fn assigned_from(&self) -> Option<AssignedFrom> {
        self.state().assigned_from
    }

    /// The member's assignment for `generation` arrived ([`MemberEvent::Assigned`]): what
    /// this member led is confirmed (or forgotten if another led), for the next round it
    /// leads.
    ///
    /// [`MemberEvent::Assigned`]: kroupier_coordinator::membership::MemberEvent::Assigned
    pub(crate) fn assigned(&self, generation: &Generation) {
        let mut state = self.state();
        if generation.is_leader() {
            if let Some(pending) = state.pending.take() {
                state.memory = Some(pending);
            }
            state.assigned_from = state
                .pending_from
                .take()
                .filter(|from| from.generation == generation.generation_id);
        } else {
            // Another member led: this one's memory is stale from now on.
            state.memory = None;
            state.pending = None;
            state.pending_from = None;
            state.assigned_from = None;
        }
    }

    /// The generation is lost (the reconciler's `Lost`): this member forgets what it led
    /// and claimed. Until the loop carries the loss out, [`protocols`](GroupProtocol::protocols)
    /// already claims nothing: it reads the member's status, which the driver updates before
    /// it sends the JoinGroup that follows a loss.
    pub(crate) fn forget_generation(&self) {
        let mut state = self.state();
        state.memory = None;
        state.pending = None;
        state.pending_from = None;
        state.assigned_from = None;
    }

    /// Whether the assignor `name` is eager (revokes everything when a rebalance starts).
    pub(crate) fn is_eager(&self, name: &str) -> bool {
        self.assignor(name)
            .is_some_and(|a| a.protocol() == RebalanceProtocol::Eager)
    }

    /// The configured assignor whose protocol name is `name`.
    fn assignor(&self, name: &str) -> Option<&dyn Assignor> {
        self.assignors
            .iter()
            .find(|a| a.name() == name)
            .map(|a| a.as_ref())
    }
}

impl fmt::Debug for WorkerProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.assignors.iter().map(|a| a.name()).collect();
        f.debug_struct("WorkerProtocol")
            .field("runtime", &self.runtime)
            .field("assignors", &names)
            .finish_non_exhaustive()
    }
}

impl GroupProtocol for WorkerProtocol {
    fn protocol_type(&self) -> &str {
        PROTOCOL_TYPE
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        let mut metadata = self.runtime.metadata();
        // A loss the worker loop has not taken in yet (the driver rejoins at once): what the
        // runtime still holds is being stopped, and is claimed no more, as after `lost`.
        let holds_generation = self.holds_generation();
        if !holds_generation {
            metadata.owned.clear();
        }
        let state = self.state();
        let advertised = state.advertised.clone();
        if holds_generation && let Some(previous) = &advertised.eager_previous {
            for (task, generation) in previous.iter() {
                metadata.owned.entry(task.clone()).or_insert(*generation);
            }
        }
        let held = advertised.held_claims.iter();
        for (task, generation) in held.filter(|_| holds_generation && !state.leaving) {
            metadata.owned.entry(task.clone()).or_insert(*generation);
        }
        metadata.leaving = state.leaving;
        metadata.takeover_hold = advertised.takeover.and_then(|t| t.left(Instant::now()));
        metadata.heartbeat_interval = state.heartbeat_interval;
        metadata.session_timeout = state.lost_hold.map(|h| h.session_timeout);
        if let Some((addr, provable)) = &state.status_addr {
            metadata.status_addr = Some(addr.clone());
            if *provable {
                metadata.process_id = Some(proof::own().process.clone());
                metadata.network_id = proof::own().network.clone();
            }
        }
        let now = Instant::now();
        let holding_lost = advertised.holding_lost.as_ref();
        if let Some((held, until)) = holding_lost.filter(|(_, until)| *until > now) {
            metadata.held = held.clone();
            metadata.hold_left = Some(*until - now);
        }
        let compressed = advertised.leader_reads_compressed && holds_generation;
        drop(state);
        // Compressed only for a leader known to read it; a member new to the group (or one
        // that lost its membership) writes plain metadata, which every build reads.
        let bytes = Bytes::from(if compressed {
            metadata.encode_compressed()
        } else {
            metadata.encode()
        });
        self.assignors
            .iter()
            .map(|assignor| ProtocolMetadata::new(assignor.name(), bytes.clone()))
            .collect()
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        let protocol_name = context.protocol_name.as_str();
        let Some(assignor) = self.assignor(protocol_name) else {
            return Err(AssignError::UnknownProtocol(protocol_name.to_owned()));
        };
        let (memory, lost_hold, contact, previous_leader) = {
            let state = self.state();
            let provable = state.status_addr.as_ref().is_some_and(|(_, p)| *p);
            let contact = LeaderContact {
                heartbeat_interval: state.heartbeat_interval,
                session_timeout: state.lost_hold.map(|h| h.session_timeout),
                status_addr: state.status_addr.as_ref().map(|(addr, _)| addr.clone()),
                network_id: proof::own().network.clone().filter(|_| provable),
            };
            let previous_leader = state.previous_leader.clone();
            (
                state.memory.clone(),
                state.lost_hold,
                contact,
                previous_leader,
            )
        };
        let proved = |member_id: &str| self.proofs.is_gone(member_id);
        let gone = memory
            .as_ref()
            .map(|m| leader::gone_owners(m, members, proved, proof::nearby_is_gone))
            .unwrap_or_default();
        // Without memory, the last leader is likely the member that vanished: can its tasks go
        // at once (its process is gone), or how long may it take to learn it was removed?
        let vanished_leader = previous_leader
            .filter(|_| memory.is_none())
            .filter(|(leader_id, _)| members.iter().all(|m| &m.member_id != leader_id))
            .map(|(leader_id, contact)| VanishedLeader {
                // Proved by this worker's link to it, or probed from its own network: never
                // from a host name, never from this worker's network for another's address.
                gone: self.proofs.is_gone(&leader_id)
                    || contact.status_addr.as_deref().is_some_and(|addr| {
                        proof::nearby_is_gone(addr, contact.network_id.as_deref())
                    }),
                session_timeout: contact.session_timeout,
            });
        // The catalogue and the store offset it was read at, taken together.
        let desired = self.runtime.desired();
        let catalogue = desired.catalogue.clone();
        let tasks = self
            .task_set(&catalogue)
            .map_err(|e| AssignError::Failed(e.to_string()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let round = Round {
            catalogue: &catalogue,
            tasks,
            assignor,
            memory: memory.as_ref(),
            now,
            leader: context.leader_member_id.clone(),
            generation: context.generation_id,
            lost_hold,
            gone: &gone,
            contact: &contact,
            vanished_leader,
            store_offset: desired.offset,
        };
        let outcome =
            leader::assign(&round, members).map_err(|e| AssignError::Failed(e.to_string()))?;
        for (worker, fingerprint) in &outcome.mismatched {
            tracing::warn!(
                worker = %worker,
                fingerprint = format_args!("{fingerprint:016x}"),
                leader = format_args!("{:016x}", catalogue.fingerprint()),
                "worker's catalogue differs from the leader's; it gets only tasks of kinds it \
                 registers (finish the rolling upgrade)"
            );
        }
        // Warned once per task while it stays unplaced (every round would repeat it).
        let unplaced: std::collections::BTreeSet<String> = outcome
            .unplaced
            .iter()
            .map(|(task, _)| task.clone())
            .collect();
        {
            let state = self.state();
            let fresh: Vec<&(String, UnplacedReason)> = outcome
                .unplaced
                .iter()
                .filter(|(task, _)| !state.unplaced.contains(task))
                .collect();
            // Decoded only when there is something to say: the metadata lists what each
            // member owns.
            let leaving = if fresh.is_empty() {
                0
            } else {
                members_leaving(members)
            };
            match unplaced_warning(fresh.len(), leaving, members.len()) {
                UnplacedWarning::Quiet => {}
                UnplacedWarning::EachTask => {
                    for (task, reason) in fresh {
                        tracing::warn!(task = %task, ?reason, "task not assigned to any worker");
                    }
                }
                UnplacedWarning::Count => {
                    let (task, reason) = fresh[0];
                    tracing::warn!(
                        count = fresh.len(),
                        first = %task,
                        ?reason,
                        leaving,
                        "tasks not assigned to any worker (the status API's /tasks lists them); \
                         start a worker that can run them"
                    );
                }
            }
        }
        if let Some(ahead) = outcome.ahead {
            tracing::info!(
                own = ?desired.offset,
                ahead,
                "a member has read further in the task store than this leader; assigning what \
                 this leader knows, and rebalancing again if its view brings a placement change"
            );
        }
        tracing::info!(
            protocol = protocol_name,
            members = members.len(),
            held_back = outcome.held_back,
            unplaced = outcome.unplaced.len(),
            store_offset = ?desired.offset,
            "leader computed the assignment"
        );
        let mut state = self.state();
        state.unplaced = unplaced;
        state.pending = Some(outcome.memory);
        state.pending_from = Some(AssignedFrom {
            generation: context.generation_id,
            placement: catalogue.placement_fingerprint(),
            store_offset: desired.offset,
            ahead: outcome.ahead,
        });
        Ok(outcome.assignments)
    }
}

/// At most this many newly unplaced tasks are warned about one line each; more are one line
/// with their count, so that a round leaving 50,000 tasks unplaced logs one line, not 50,000.
const UNPLACED_LINES: usize = 3;

/// How the leader warns about the tasks a round left unplaced that no earlier round warned about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnplacedWarning {
    /// Nothing to say: none are new, or every member is leaving (the group is shutting down).
    Quiet,
    /// One line per task: a few, and no member leaving.
    EachTask,
    /// One line with their count: many, or some members are leaving.
    Count,
}

/// The warning for `fresh` newly unplaced tasks in a round of `members` members, `leaving` of
/// which said they are leaving.
fn unplaced_warning(fresh: usize, leaving: usize, members: usize) -> UnplacedWarning {
    if fresh == 0 || leaving >= members {
        UnplacedWarning::Quiet
    } else if leaving > 0 || fresh > UNPLACED_LINES {
        UnplacedWarning::Count
    } else {
        UnplacedWarning::EachTask
    }
}

/// How many of `members` said in their metadata that they are leaving (metadata that does not
/// decode counts as staying: the leader's assignment reports it).
fn members_leaving(members: &[GroupMember]) -> usize {
    members
        .iter()
        .filter(|m| MemberMetadata::decode(&m.metadata).is_ok_and(|metadata| metadata.leaving))
        .count()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::group::reconciler::{Action, Reconciler, Settings, Takeover};
    use crate::protocol::Assignment;
    use crate::runtime::AssignmentChange;
    use crate::{
        FencingToken, Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig,
    };

    #[derive(serde::Deserialize)]
    struct Idle {}

    impl Task for Idle {
        async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
            ctx.cancelled().await;
            Ok(())
        }
    }

    fn protocol(assignors: &[&str]) -> WorkerProtocol {
        protocol_with(assignors, 3)
    }

    /// A protocol whose catalogue holds `tasks` idle tasks `t-0..`.
    fn protocol_with(assignors: &[&str], tasks: usize) -> WorkerProtocol {
        let mut builder = WorkerBuilder::new(WorkerConfig {
            worker_id: "w1".into(),
            ..WorkerConfig::new("g")
        })
        .register::<Idle>("idle");
        for i in 0..tasks {
            builder = builder.task(TaskSpec::new(
                format!("t-{i}"),
                "idle",
                serde_json::json!({}),
            ));
        }
        WorkerProtocol::new(
            Arc::new(builder.build_runtime().unwrap()),
            assignors
                .iter()
                .map(|name| Arc::from(kroupier_assignor::by_name(name).unwrap()))
                .collect(),
        )
    }

    fn generation(id: i32, protocol: &str) -> Generation {
        Generation {
            generation_id: id,
            member_id: "m1".into(),
            protocol_name: protocol.into(),
            leader_id: "m1".into(),
        }
    }

    fn owned(p: &WorkerProtocol) -> Vec<(String, i32)> {
        let offered = p.protocols();
        MemberMetadata::decode(&offered[0].metadata)
            .unwrap()
            .owned
            .into_iter()
            .collect()
    }

    fn ids(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn offers_every_assignor_in_order_with_the_same_metadata() {
        let p = protocol(&["cooperative", "sticky"]);
        assert_eq!(p.protocol_type(), "kroupier");
        let offered = p.protocols();
        let names: Vec<&str> = offered.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["cooperative", "sticky"]);
        assert_eq!(offered[0].metadata, offered[1].metadata);
        let metadata = MemberMetadata::decode(&offered[0].metadata).unwrap();
        assert_eq!(metadata.worker_id, "w1");
        assert_eq!(metadata.kinds, ids(&["idle"]));
        assert_eq!(
            metadata.catalogue_fingerprint,
            p.runtime().supervisor().catalogue().fingerprint()
        );
        assert!(matches!(
            p.assign(&AssignContext::new(1, "m1", "round-robin"), &[]),
            Err(AssignError::UnknownProtocol(_))
        ));
    }

    /// Counts the WARN events about unplaced tasks ("not assigned") emitted on this thread
    /// while it is the default subscriber.
    #[derive(Default)]
    struct Warnings(std::sync::atomic::AtomicUsize);

    /// Whether an event's message says a task is not assigned.
    #[derive(Default)]
    struct NotAssigned(bool);

    impl tracing::field::Visit for NotAssigned {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
            if field.name() == "message" {
                self.0 |= format!("{value:?}").contains("not assigned");
            }
        }
    }

    impl tracing::Subscriber for Warnings {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut message = NotAssigned::default();
            event.record(&mut message);
            if *event.metadata().level() == tracing::Level::WARN && message.0 {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// The WARN lines about unplaced tasks of one `assign` by `leader` over `members`.
    fn warnings_of_assign(leader: &WorkerProtocol, members: &[GroupMember]) -> usize {
        let warnings = Arc::new(Warnings::default());
        let context = AssignContext::new(3, members[0].member_id.as_str(), "cooperative");
        tracing::subscriber::with_default(warnings.clone(), || {
            leader.assign(&context, members).unwrap();
        });
        warnings.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn member(id: &str, p: &WorkerProtocol) -> GroupMember {
        GroupMember {
            member_id: id.into(),
            group_instance_id: None,
            metadata: p.protocols()[0].metadata.clone(),
        }
    }

    #[test]
    fn the_last_worker_leaving_warns_about_no_task() {
        let p = protocol_with(&["cooperative"], 50);
        p.set_leaving();
        assert_eq!(warnings_of_assign(&p, &[member("m1", &p)]), 0);
    }

    #[test]
    fn a_worker_leaving_warns_once_with_a_count_not_per_task() {
        // The staying member registers no kind the catalogue uses: nothing can run the tasks.
        let leaving = protocol_with(&["cooperative"], 50);
        leaving.set_leaving();
        let staying = WorkerProtocol::new(
            Arc::new(
                WorkerBuilder::new(WorkerConfig {
                    worker_id: "w2".into(),
                    ..WorkerConfig::new("g")
                })
                .register::<Idle>("other")
                .build_runtime()
                .unwrap(),
            ),
            vec![Arc::from(
                kroupier_assignor::by_name("cooperative").unwrap(),
            )],
        );
        let members = [member("m1", &leaving), member("m2", &staying)];
        assert_eq!(warnings_of_assign(&leaving, &members), 1);
    }

    #[test]
    fn unplaced_tasks_are_warned_one_by_one_only_when_few_and_nobody_leaves() {
        use UnplacedWarning::{Count, EachTask, Quiet};
        assert_eq!(unplaced_warning(0, 0, 2), Quiet);
        assert_eq!(unplaced_warning(50_000, 1, 1), Quiet);
        assert_eq!(unplaced_warning(50_000, 2, 2), Quiet);
        assert_eq!(unplaced_warning(2, 1, 2), Count);
        assert_eq!(unplaced_warning(UNPLACED_LINES + 1, 0, 2), Count);
        assert_eq!(unplaced_warning(UNPLACED_LINES, 0, 2), EachTask);
    }

    #[test]
    fn assignments_carry_the_generation_and_leader_of_the_round() {
        // A fresh protocol that saw no generation leads generation 7: the assignment records
        // the JoinGroup's generation and this member's id, not a guess from earlier events.
        let p = protocol(&["cooperative"]);
        let other = protocol(&["cooperative"]);
        let members = [
            GroupMember {
                member_id: "m-lead".into(),
                group_instance_id: None,
                metadata: p.protocols()[0].metadata.clone(),
            },
            GroupMember {
                member_id: "m-other".into(),
                group_instance_id: None,
                metadata: other.protocols()[0].metadata.clone(),
            },
        ];
        let context = AssignContext::new(7, "m-lead", "cooperative");
        let assignments = p.assign(&context, &members).unwrap();
        assert_eq!(assignments.len(), 2);
        for a in &assignments {
            let decoded = Assignment::decode(&a.assignment).unwrap();
            assert_eq!((decoded.generation, decoded.leader.as_str()), (7, "m-lead"));
        }
    }

    #[tokio::test]
    async fn metadata_claims_what_the_runtime_holds_with_the_generation_granted() {
        let p = protocol(&["cooperative"]);
        let runtime = p.runtime().clone();
        let change = |generation: i32, run: &[&str], revoke: &[&str]| AssignmentChange {
            token: FencingToken::new(generation, "m1"),
            leader: "m1".into(),
            valid_until: Instant::now() + Duration::from_secs(30),
            run: ids(run),
            revoke: ids(revoke),
            leader_catalogue_fingerprint: None,
        };
        let mut assignment = Assignment::new("m1", 5);
        assignment.tasks = ids(&["t-0", "t-1"]);
        take_assignment(
            &p,
            &generation(5, "cooperative"),
            &Bytes::from(assignment.encode()),
        );
        // The join gate sends the next JoinGroup only after the loop applied the assignment:
        // the metadata is the runtime's, read right before it.
        let _ = runtime.apply(&change(5, &["t-0", "t-1"], &[])).await;
        assert_eq!(owned(&p), [("t-0".into(), 5), ("t-1".into(), 5)]);

        // Kept tasks keep the generation they were granted in; revoked ones, once stopped,
        // are claimed no more.
        let mut next = Assignment::new("m1", 6);
        next.tasks = ids(&["t-0", "t-2"]);
        next.revoked = ids(&["t-1"]);
        take_assignment(
            &p,
            &generation(6, "cooperative"),
            &Bytes::from(next.encode()),
        );
        let _ = runtime.apply(&change(6, &["t-0", "t-2"], &["t-1"])).await;
        assert_eq!(owned(&p), [("t-0".into(), 5), ("t-2".into(), 6)]);

        // Lost: every task stops at once and the metadata claims nothing. (That the loop
        // applies nothing of that generation any more is the reconciler's decision, tested
        // there.)
        carry_out(&p, |r| r.handle_lost(Instant::now(), None));
        assert!(runtime.owned().is_empty());
        assert!(owned(&p).is_empty());
    }

    /// What the worker loop does with the reconciler's decisions on an input `feed` gives it:
    /// the stops and claims of `RevokeAll` and `Lost`, and what the metadata advertises.
    fn carry_out(p: &WorkerProtocol, feed: impl FnOnce(&mut Reconciler)) {
        let mut r = Reconciler::new(Settings {
            stop_bound: Duration::from_secs(2),
            session_timeout: Duration::from_secs(10),
            takeover: Takeover::Clean,
            self_fence_margin: Duration::from_secs(3),
            abort_timeout: Duration::from_secs(1),
            rebalance_timeout: Duration::from_secs(30),
        });
        feed(&mut r);
        let runtime = p.runtime();
        while let Some(action) = r.poll_action() {
            match action {
                Action::RevokeAll => {
                    let held = runtime.owned();
                    drop(runtime.revoke_all());
                    r.handle_revoked_all(held);
                }
                Action::Advertise(advertised) => p.advertise(advertised),
                Action::Lost { deadline } => {
                    p.forget_generation();
                    drop(runtime.lost(deadline));
                }
                _ => {}
            }
        }
    }

    /// What the worker loop does when the assignment `bytes` of `generation` arrives: the
    /// protocol confirms the leader's memory, and the reconciler's decisions are carried out
    /// (the test applies the runtime change itself).
    fn take_assignment(p: &WorkerProtocol, generation: &Generation, bytes: &[u8]) {
        p.assigned(generation);
        let assigned = crate::group::reconciler::Assigned {
            token: generation.token(),
            leader: generation.leader_id.clone(),
            eager: false,
            assignment: None,
            local: Default::default(),
            valid_until: Instant::now() + Duration::from_secs(30),
            rejected: false,
            reads_compressed: crate::protocol::sender_reads_compressed(bytes),
        };
        carry_out(p, |r| r.handle_assigned(Instant::now(), assigned));
    }

    /// A compressed envelope starts with the version -1.
    fn is_envelope(bytes: &[u8]) -> bool {
        bytes.starts_with(&(-1i16).to_be_bytes())
    }

    /// `message` (plain, version 3) as a sender of version 2 would have written it: version 3
    /// has version 2's fields.
    fn as_version_2(message: &[u8]) -> Bytes {
        assert!(!is_envelope(message));
        let mut bytes = message.to_vec();
        bytes[..2].copy_from_slice(&2i16.to_be_bytes());
        Bytes::from(bytes)
    }

    #[tokio::test]
    async fn messages_travel_compressed_only_to_readers_that_said_so() {
        let p = protocol_with(&["cooperative"], 2_000);
        let runtime = p.runtime().clone();
        // New to the group, a member writes plain metadata, which every leader reads.
        let fresh = p.protocols()[0].metadata.clone();
        assert!(!is_envelope(&fresh));
        let members = [
            GroupMember {
                member_id: "m1".into(),
                group_instance_id: None,
                metadata: fresh.clone(),
            },
            GroupMember {
                member_id: "m-old".into(),
                group_instance_id: None,
                metadata: as_version_2(&fresh),
            },
        ];
        let assignments = p
            .assign(&AssignContext::new(1, "m1", "cooperative"), &members)
            .unwrap();
        // The member that wrote version 3 gets its (large) assignment compressed; the one that
        // wrote version 2 gets it plain.
        assert!(is_envelope(&assignments[0].assignment));
        assert!(!is_envelope(&assignments[1].assignment));
        let mine = Assignment::decode(&assignments[0].assignment).unwrap();
        let theirs = Assignment::decode(&assignments[1].assignment).unwrap();
        assert_eq!(mine.tasks.len() + theirs.tasks.len(), 2_000);
        assert!(mine.tasks.is_disjoint(&theirs.tasks));

        // Assigned by a leader that reads envelopes, the member's metadata may travel
        // compressed, and says what it owns.
        take_assignment(
            &p,
            &generation(1, "cooperative"),
            &assignments[0].assignment,
        );
        let _ = runtime
            .apply(&AssignmentChange {
                token: FencingToken::new(1, "m1"),
                leader: "m1".into(),
                valid_until: Instant::now() + Duration::from_secs(30),
                run: mine.tasks.clone(),
                revoke: BTreeSet::new(),
                leader_catalogue_fingerprint: None,
            })
            .await;
        let metadata = p.protocols()[0].metadata.clone();
        assert!(is_envelope(&metadata));
        let claimed: BTreeSet<String> = MemberMetadata::decode(&metadata)
            .unwrap()
            .owned
            .into_keys()
            .collect();
        assert_eq!(claimed, mine.tasks);

        // A leader of an older build (its assignment is version 2) gets plain metadata.
        let mut older = mine.clone();
        older.generation = 2;
        take_assignment(
            &p,
            &generation(2, "cooperative"),
            &as_version_2(&older.encode()),
        );
        assert!(!is_envelope(&p.protocols()[0].metadata));
        // ... and compressed again once the leader reads envelopes.
        take_assignment(
            &p,
            &generation(3, "cooperative"),
            &assignments[0].assignment,
        );
        assert!(is_envelope(&p.protocols()[0].metadata));
    }

    #[tokio::test]
    async fn eager_revocation_stops_every_task_but_keeps_the_claims_for_sticky() {
        let p = protocol(&["sticky"]);
        let runtime = p.runtime().clone();
        let _ = runtime
            .apply(&AssignmentChange {
                token: FencingToken::new(3, "m1"),
                leader: "m1".into(),
                valid_until: Instant::now() + Duration::from_secs(30),
                run: ids(&["t-0", "t-1"]),
                revoke: BTreeSet::new(),
                leader_catalogue_fingerprint: None,
            })
            .await;
        runtime.rebalance_started();
        carry_out(&p, |r| r.handle_revoked(3, p.is_eager("sticky")));
        assert!(runtime.owned().is_empty(), "eager: everything stops");
        assert!(runtime.board().is_rebalancing());
        assert_eq!(owned(&p), [("t-0".into(), 3), ("t-1".into(), 3)]);

        // A cooperative group keeps its tasks through a rebalance.
        let p = protocol(&["cooperative"]);
        let runtime = p.runtime().clone();
        let _ = runtime
            .apply(&AssignmentChange {
                token: FencingToken::new(3, "m1"),
                leader: "m1".into(),
                valid_until: Instant::now() + Duration::from_secs(30),
                run: ids(&["t-0"]),
                revoke: BTreeSet::new(),
                leader_catalogue_fingerprint: None,
            })
            .await;
        carry_out(&p, |r| r.handle_revoked(3, p.is_eager("cooperative")));
        assert_eq!(runtime.owned().len(), 1);
    }

    /// The old leader's tasks as the next leader (`m-new`, without memory) hands them out,
    /// when the old leader advertised `status_addr` from the network `network`: the holds of
    /// the assignments that carry lost tasks.
    fn after_the_leader_vanished(status_addr: &str, network: Option<String>) -> Vec<Duration> {
        let p = protocol_with(&["cooperative"], 4);
        p.set_lost_hold(LostHold {
            round_trip: Duration::from_millis(250),
            session_timeout: Duration::from_secs(10),
        });
        let mut from_old = Assignment::new("m-old", 3);
        from_old.leader_status_addr = Some(status_addr.to_owned());
        from_old.leader_network_id = network;
        from_old.leader_session_timeout = Some(Duration::from_secs(30));
        p.note_leader("m-old", &from_old);
        // This member claims t-2 and t-3; the old leader ran t-0 and t-1.
        let mut metadata = MemberMetadata::new("w1");
        metadata.kinds = ids(&["idle"]);
        metadata.catalogue_fingerprint = p.runtime().supervisor().catalogue().fingerprint();
        metadata.owned = [("t-2".to_owned(), 3)].into();
        let other = GroupMember {
            member_id: "m-other".into(),
            group_instance_id: None,
            metadata: Bytes::from(metadata.encode()),
        };
        let own = GroupMember {
            member_id: "m-new".into(),
            group_instance_id: None,
            metadata: p.protocols()[0].metadata.clone(),
        };
        let assignments = p
            .assign(
                &AssignContext::new(4, "m-new", "cooperative"),
                &[own, other],
            )
            .unwrap();
        assignments
            .iter()
            .map(|a| Assignment::decode(&a.assignment).unwrap())
            .filter(|a| !a.lost.is_empty())
            .filter_map(|a| a.lost_hold)
            .collect()
    }

    #[test]
    fn the_next_leader_probes_the_old_leader_s_loopback_only_from_its_network() {
        // The old leader's status API was on its own loopback, on another host: the same port
        // here refuses, which proves nothing about it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let held_for_its_session = |holds: Vec<Duration>| {
            !holds.is_empty() && holds.iter().all(|h| *h == Duration::from_millis(30_250))
        };
        let elsewhere = Some("another-boot/4026531840".to_owned());
        assert!(
            held_for_its_session(after_the_leader_vanished(&addr, elsewhere)),
            "held for the old leader's session"
        );
        assert!(
            held_for_its_session(after_the_leader_vanished(&addr, None)),
            "an old leader of unknown network is held too"
        );
        // In this very network namespace the refusal is a proof: nothing is held.
        let here = proof::own().network.clone();
        assert!(after_the_leader_vanished(&addr, here).is_empty());
    }
}
