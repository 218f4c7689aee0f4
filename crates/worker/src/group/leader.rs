//! The leader's step of a kroupier group: decode every member's metadata, map it to the
//! assignor's input, run the assignor, encode each member's [`Assignment`].
//!
//! Pure and synchronous: the clock reading (`now`) and the memory of the previous round come in
//! as values, so the same input gives the same assignments on every leader.
//!
//! - The tasks are the leader's catalogue, pushed in id order with their kind and weight.
//! - A member may run a task only if its metadata lists the task's kind; tasks whose kind no
//!   member knows stay unplaced (and logged) instead of bouncing between workers.
//! - Claims are resolved per task by the generation each claimant was granted it in: the higher
//!   generation keeps it; a tie is a double claim, which the assignor revokes from both.
//! - Claims of tasks the leader's catalogue does not know are dropped: the claimant stops them.
//! - A member whose metadata does not decode gets an empty assignment (and an error log).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kroupier_assignor::{
    AssignmentInput, Assignor, CooperativeState, Kinds, MemberId, MemberInput, PreviousAssignment,
    PreviousOwner, TaskIndex, TaskSet, UnplacedReason,
};
use kroupier_coordinator::membership::{GroupMember, MemberAssignment};

use crate::catalogue::Catalogue;
use crate::protocol::{Assignment, MAX_UNPLACED_LISTED, MemberMetadata};

/// What the leader remembers of its last round, by task id (indices change with catalogues).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Memory {
    /// Who was given what, including lost tasks still waiting under their departed owner (the
    /// task set's shared ids: 100,000 copies each round were a visible part of it).
    pub(crate) previous: Vec<(MemberId, Vec<Arc<str>>)>,
    /// The cooperative assignor's cross-round state.
    pub(crate) state: CooperativeState,
    /// Each member's session timeout, as its metadata said: how long one that vanishes without
    /// a proof of death may still pass its lease checks.
    pub(crate) leases: BTreeMap<MemberId, Duration>,
    /// How to tell whether a member that vanished is gone (see `proof.rs`).
    pub(crate) contacts: BTreeMap<MemberId, Contact>,
    /// Tasks handed out with a hold, and until when (Unix time, this leader's clock): a task
    /// keeps what is left of its hold wherever a later round sends it.
    pub(crate) holds: BTreeMap<Arc<str>, Duration>,
    /// The member id of each static member (keyed by instance id): one that comes back under
    /// another member id replaced a process that may still run.
    pub(crate) static_members: BTreeMap<MemberId, String>,
}

impl Memory {
    /// Whether the member at `key` now, `member_id`, replaced the static member the leader
    /// remembers at that key.
    fn replaced(&self, key: &MemberId, member_id: &str) -> bool {
        self.static_members
            .get(key)
            .is_some_and(|remembered| remembered != member_id)
    }
}

/// How a member can be proved gone, from its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contact {
    /// Its member id (the memory's keys are instance ids for static members).
    pub(crate) member_id: String,
    /// Its status API address.
    pub(crate) status_addr: String,
    /// Its network identity.
    pub(crate) network_id: Option<String>,
}

/// One round's input besides the members.
pub(crate) struct Round<'a> {
    /// The leader's catalogue.
    pub(crate) catalogue: &'a Catalogue,
    /// The catalogue's tasks as the assignor takes them ([`task_set`]), built once per
    /// catalogue rather than once per round.
    pub(crate) tasks: std::sync::Arc<TaskSet>,
    /// The assignor the group selected.
    pub(crate) assignor: &'a dyn Assignor,
    /// The last round's memory, if this member led it.
    pub(crate) memory: Option<&'a Memory>,
    /// Now, on the epoch of the deadlines in the memory (Unix time).
    pub(crate) now: Duration,
    /// The leader's member id, written into every assignment.
    pub(crate) leader: String,
    /// The generation being assigned, as far as the leader knows it.
    pub(crate) generation: i32,
    /// Tasks whose previous owner vanished (`lost`) are held back by their new owner for that
    /// owner's session timeout plus this round trip; `None` = not held. See [`Suspects`].
    pub(crate) lost_hold: Option<LostHold>,
    /// Last round's owners whose process is surely gone: their tasks are not held back.
    pub(crate) gone: &'a BTreeSet<MemberId>,
    /// This leader's own session timeout, status address and network, written into every
    /// assignment so that whoever leads next can tell whether this leader is gone.
    pub(crate) contact: &'a LeaderContact,
    /// For a leader without memory: the leader of the round before, as this member's last
    /// assignment described it, if it is absent now.
    pub(crate) vanished_leader: Option<VanishedLeader>,
    /// The task store offset the leader's catalogue was read up to (`None` without a store),
    /// written into every assignment.
    pub(crate) store_offset: Option<i64>,
}

/// How to reach a leader, as its assignments say (see [`Round::contact`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LeaderContact {
    /// Its heartbeat interval (for members of earlier releases).
    pub(crate) heartbeat_interval: Option<Duration>,
    /// Its session timeout.
    pub(crate) session_timeout: Option<Duration>,
    /// Its status API address.
    pub(crate) status_addr: Option<String>,
    /// Its network identity (see `proof.rs`).
    pub(crate) network_id: Option<String>,
}

/// The previous round's leader, absent from this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VanishedLeader {
    /// Its process is provably gone (see `proof.rs`).
    pub(crate) gone: bool,
    /// Its session timeout, if its assignments said.
    pub(crate) session_timeout: Option<Duration>,
}

/// How the new owners of lost tasks hold them back.
///
/// A member removed from the group without a proof that its process ended — by a third
/// party's LeaveGroup, a rebalance timeout, or its session while it was paused — passes its
/// lease checks until `session timeout − fencing margin` after the *send* of its last
/// heartbeat that succeeded. That heartbeat went out before the removal, the removal before
/// this round, and this round before the new owner receives its assignment: so a hold of one
/// session timeout, counted from the receipt, outlasts that lease (assuming clocks that run at
/// the same rate; see `docs/reliability.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LostHold {
    /// Added to every hold: the assignment's way to the new owner.
    pub(crate) round_trip: Duration,
    /// The session timeout assumed for an owner whose metadata did not say (an earlier
    /// release): the leader's own, or a longer one a member advertises.
    pub(crate) session_timeout: Duration,
}

/// What a round produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// One assignment per member, in input order.
    pub(crate) assignments: Vec<MemberAssignment>,
    /// The memory for the next round.
    pub(crate) memory: Memory,
    /// Tasks held back this round (they get an owner in the follow-up round).
    pub(crate) held_back: usize,
    /// Tasks no member could run, with why.
    pub(crate) unplaced: Vec<(String, UnplacedReason)>,
    /// Members whose catalogue fingerprint differs from the leader's (worker id, fingerprint),
    /// among those that read the task store as far as the leader (a member at another offset
    /// differs for a moment, and that is not a mismatch).
    pub(crate) mismatched: Vec<(String, u64)>,
    /// The highest task store offset a member reported, when above the leader's own: the
    /// leader rebalances again once its own view has reached it.
    pub(crate) ahead: Option<i64>,
}

/// Why a round failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct RoundError(String);

/// A member as the round sees it: its assignor key, its member id and its metadata.
struct Decoded {
    key: MemberId,
    member_id: String,
    metadata: Option<MemberMetadata>,
}

/// The tasks of `catalogue` as the assignor takes them: pushed in id order with their kind and
/// weight.
pub(crate) fn task_set(catalogue: &Catalogue) -> Result<TaskSet, RoundError> {
    let mut tasks = TaskSet::new();
    for spec in catalogue.iter() {
        tasks
            .push(spec.id.as_str(), &spec.kind, spec.weight.max(1))
            .map_err(|e| RoundError(e.to_string()))?;
    }
    Ok(tasks)
}

/// Runs one round over `members` (sorted by member id, as the coordinator hands them over).
pub(crate) fn assign(round: &Round<'_>, members: &[GroupMember]) -> Result<Outcome, RoundError> {
    let fail = |e: kroupier_assignor::AssignorError| RoundError(e.to_string());
    // Copied only if a member registers a kind no task of the catalogue has.
    let mut tasks = std::borrow::Cow::Borrowed(&*round.tasks);
    let own_fingerprint = round.catalogue.fingerprint();

    let mut decoded: Vec<Decoded> = members
        .iter()
        .map(|m| Decoded {
            key: MemberId::from(m.group_instance_id.as_deref().unwrap_or(&m.member_id)),
            member_id: m.member_id.clone(),
            metadata: match MemberMetadata::decode(&m.metadata) {
                Ok(metadata) => Some(metadata),
                Err(error) => {
                    tracing::error!(
                        member = %m.member_id, %error,
                        "member metadata does not decode; the member gets no tasks"
                    );
                    None
                }
            },
        })
        .collect();
    // The assignor wants members sorted by their stable key (instance id for static members).
    decoded.sort_by(|a, b| a.key.cmp(&b.key));
    decoded.dedup_by(|b, a| a.key == b.key);

    let mismatched: Vec<(String, u64)> = decoded
        .iter()
        .filter_map(|d| d.metadata.as_ref())
        .filter(|m| m.catalogue_fingerprint != own_fingerprint)
        .filter(|m| m.store_offset == round.store_offset)
        .map(|m| (m.worker_id.clone(), m.catalogue_fingerprint))
        .collect();
    let ahead = decoded
        .iter()
        .filter_map(|d| d.metadata.as_ref()?.store_offset)
        .max()
        .filter(|highest| round.store_offset.is_some_and(|own| *highest > own));

    let owned = resolve_claims(&tasks, &decoded);
    let takeovers = Takeovers::new(&decoded, &owned, tasks.len());
    let mut input_members = Vec::with_capacity(decoded.len());
    for (d, owned) in decoded.iter().zip(owned) {
        let mut member = MemberInput::new(d.key.clone());
        match &d.metadata {
            // A leaving member stopped everything and takes nothing new.
            None => member.kinds = Kinds::Only(Vec::new()),
            Some(metadata) if metadata.leaving => member.kinds = Kinds::Only(Vec::new()),
            Some(metadata) => {
                let mut kinds = Vec::with_capacity(metadata.kinds.len());
                for kind in &metadata.kinds {
                    let index = match tasks.kind_index(kind) {
                        Some(index) => index,
                        None => tasks.to_mut().intern_kind(kind).map_err(fail)?,
                    };
                    kinds.push(index);
                }
                member.kinds = Kinds::Only(kinds);
                member.capacity = metadata.capacity;
                member.rack = metadata.rack.as_deref().map(Into::into);
            }
        }
        // Claims are resolved already: one generation for all, so only ties stay double claims.
        input_members.push(member.with_owned(0, owned));
    }

    let previous = round.memory.map(|memory| PreviousAssignment {
        owners: memory
            .previous
            .iter()
            .map(|(member_id, ids)| PreviousOwner {
                member_id: member_id.clone(),
                tasks: {
                    let mut cursor = tasks.cursor();
                    ids.iter().filter_map(|id| cursor.index_of(id)).collect()
                },
            })
            .collect(),
    });
    let mut input = AssignmentInput::new(&tasks, &input_members).at(round.now);
    if let Some(previous) = &previous {
        input = input.with_previous(previous);
    }
    if let Some(memory) = round.memory {
        input = input.with_state(memory.state);
    }
    let plan = round.assignor.assign(&input).map_err(fail)?;

    let member_ids_by_key: BTreeMap<MemberId, &str> = members
        .iter()
        .map(|m| {
            let key = MemberId::from(m.group_instance_id.as_deref().unwrap_or(&m.member_id));
            (key, m.member_id.as_str())
        })
        .collect();
    let member_ids: BTreeMap<MemberId, String> = members
        .iter()
        .map(|m| {
            let key = MemberId::from(m.group_instance_id.as_deref().unwrap_or(&m.member_id));
            (key, m.member_id.clone())
        })
        .collect();
    let ids = |list: &[TaskIndex]| -> Vec<String> {
        list.iter()
            .filter_map(|t| tasks.id(*t))
            .map(str::to_owned)
            .collect()
    };
    let leases: BTreeMap<MemberId, Duration> = decoded
        .iter()
        .filter_map(|d| Some((d.key.clone(), d.metadata.as_ref()?.session_timeout?)))
        .collect();
    let contacts: BTreeMap<MemberId, Contact> = decoded
        .iter()
        .filter_map(|d| {
            let metadata = d.metadata.as_ref()?;
            let member_id = member_ids_by_key.get(&d.key)?;
            Some((
                d.key.clone(),
                Contact {
                    member_id: (*member_id).to_owned(),
                    status_addr: metadata.status_addr.clone()?,
                    network_id: metadata.network_id.clone(),
                },
            ))
        })
        .collect();
    let suspects = lost_tasks(round.memory, &decoded, round.gone, round.vanished_leader);
    let carried = Carried::new(&decoded, round.memory, round.now);
    let mut holds: BTreeMap<Arc<str>, Duration> = BTreeMap::new();
    let unplaced: Vec<(String, UnplacedReason)> = plan
        .unplaced
        .iter()
        .filter_map(|u| Some((tasks.id(u.task)?.to_owned(), u.reason)))
        .collect();
    let mut unplaced_listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (task, reason) in unplaced.iter().take(MAX_UNPLACED_LISTED) {
        unplaced_listed
            .entry(unplaced_reason_code(*reason).to_owned())
            .or_default()
            .insert(task.clone());
    }
    let mut by_key: BTreeMap<&MemberId, Assignment> = BTreeMap::new();
    for part in &plan.assignments {
        let mut assignment = Assignment::new(round.leader.clone(), round.generation);
        assignment.catalogue_fingerprint = own_fingerprint;
        assignment.rebalance_delay = plan.rebalance_delay;
        assignment.tasks = ids(&part.assigned).into_iter().collect();
        assignment.revoked = ids(&part.revoked).into_iter().collect();
        assignment.member_id = member_ids.get(&part.member_id).cloned();
        assignment.leader_heartbeat_interval = round.contact.heartbeat_interval;
        assignment.leader_session_timeout = round.contact.session_timeout;
        assignment.leader_status_addr = round.contact.status_addr.clone();
        assignment.leader_network_id = round.contact.network_id.clone();
        assignment.store_offset = round.store_offset;
        assignment.unplaced = unplaced_listed.clone();
        assignment.unplaced_count = unplaced.len() as u64;
        if let Some(hold) = round.lost_hold {
            let fallback = leases
                .values()
                .copied()
                .chain([hold.session_timeout])
                .chain(round.vanished_leader.and_then(|l| l.session_timeout))
                .max()
                .unwrap_or(hold.session_timeout);
            let mut longest = None;
            for task in &assignment.tasks {
                let lost = suspects
                    .lease_of(task, round.memory)
                    .map(|lease| lease.unwrap_or(fallback) + hold.round_trip);
                // A hold travels with its task, whoever had it last.
                let wait = lost.max(carried.left(task).map(|left| left + hold.round_trip));
                if let Some(wait) = wait {
                    assignment.lost.insert(task.clone());
                    longest = longest.max(Some(wait));
                    holds.insert(Arc::from(task.as_str()), round.now + wait);
                }
            }
            assignment.lost_hold = longest;
        }
        if let Some(takeovers) = &takeovers {
            let to = decoded
                .binary_search_by(|d| d.key.cmp(&part.member_id))
                .ok();
            let held: Vec<TaskIndex> = part
                .assigned
                .iter()
                .copied()
                .filter(|task| takeovers.holds(*task, to))
                .collect();
            if !held.is_empty() {
                assignment.lost.extend(ids(&held));
                let round_trip = round.lost_hold.map_or(Duration::ZERO, |h| h.round_trip);
                let wait = takeovers.hold + round_trip;
                assignment.lost_hold = assignment.lost_hold.max(Some(wait));
            }
        }
        by_key.insert(&part.member_id, assignment);
    }
    let assignments = members
        .iter()
        .map(|m| {
            let key = MemberId::from(m.group_instance_id.as_deref().unwrap_or(&m.member_id));
            // Compressed only for a member whose metadata says it reads the envelope.
            let compressed = crate::protocol::sender_reads_compressed(&m.metadata);
            let encode = |a: &Assignment| {
                if compressed {
                    a.encode_compressed()
                } else {
                    a.encode()
                }
            };
            let bytes = match by_key.get(&key) {
                Some(assignment) => encode(assignment),
                None => {
                    let mut empty = Assignment::new(round.leader.clone(), round.generation);
                    empty.catalogue_fingerprint = own_fingerprint;
                    empty.member_id = Some(m.member_id.clone());
                    empty.store_offset = round.store_offset;
                    encode(&empty)
                }
            };
            MemberAssignment::new(m.member_id.clone(), Bytes::from(bytes))
        })
        .collect();

    let memory = Memory {
        previous: plan
            .to_previous()
            .owners
            .iter()
            .map(|owner| {
                let shared = owner.tasks.iter().filter_map(|t| tasks.shared_id(*t));
                (owner.member_id.clone(), shared.cloned().collect())
            })
            .collect(),
        state: plan.state,
        leases,
        contacts,
        holds,
        static_members: members
            .iter()
            .filter_map(|m| {
                Some((
                    MemberId::from(m.group_instance_id.as_deref()?),
                    m.member_id.clone(),
                ))
            })
            .collect(),
    };
    Ok(Outcome {
        assignments,
        memory,
        held_back: plan.held_back.len(),
        unplaced,
        mismatched,
        ahead,
    })
}

/// How an [`UnplacedReason`] travels in an assignment.
pub(crate) fn unplaced_reason_code(reason: UnplacedReason) -> &'static str {
    match reason {
        UnplacedReason::NoEligibleMember => "no_eligible_member",
        UnplacedReason::NoCapacity => "no_capacity",
        _ => "unplaced",
    }
}

/// The tasks whose previous owner may still run them although it is gone from the group:
/// Kafka removed it (session expiry, rebalance timeout, a third party's LeaveGroup) rather than
/// it leaving after stopping them. A member removed while it still runs — paused, cut off, or
/// busy until its next heartbeat — may pass its lease checks until its lease ends; whoever
/// gets its tasks next waits the hold first (see [`LostHold`]), unless its process is proved
/// gone ([`Round::gone`]).
enum Suspects<'a> {
    /// From the leader's memory: the tasks of last round's owners that are absent now, with
    /// their owner.
    Known(BTreeMap<&'a str, &'a MemberId>),
    /// A leader without memory cannot tell: every task nobody claims is suspect, once any
    /// member claims something (on a cold start nobody does, and nothing is held).
    Unclaimed(BTreeSet<&'a str>),
    /// Nothing is suspect.
    None,
}

impl Suspects<'_> {
    /// `None` if `task` is not suspect; otherwise the session timeout of its vanished owner
    /// if known (`Some(None)`: unknown).
    fn lease_of(&self, task: &str, memory: Option<&Memory>) -> Option<Option<Duration>> {
        match self {
            Suspects::Known(lost) => {
                let owner = lost.get(task)?;
                Some(memory.and_then(|m| m.leases.get(*owner).copied()))
            }
            Suspects::Unclaimed(claimed) => (!claimed.contains(task)).then_some(None),
            Suspects::None => None,
        }
    }
}

fn lost_tasks<'a>(
    memory: Option<&'a Memory>,
    decoded: &'a [Decoded],
    gone: &BTreeSet<MemberId>,
    vanished_leader: Option<VanishedLeader>,
) -> Suspects<'a> {
    if let Some(memory) = memory {
        // A static member whose instance id came back under another member id replaced the
        // process the leader remembers, which may still run its tasks (removed by a third
        // party, or cut off): those tasks are as suspect as a vanished member's.
        let present: BTreeSet<&MemberId> = decoded
            .iter()
            .filter(|d| !memory.replaced(&d.key, &d.member_id))
            .map(|d| &d.key)
            .collect();
        return Suspects::Known(
            memory
                .previous
                .iter()
                .filter(|(owner, _)| !present.contains(owner) && !gone.contains(owner))
                .flat_map(|(owner, tasks)| tasks.iter().map(move |t| (&**t, owner)))
                .collect(),
        );
    }
    let claimed: BTreeSet<&str> = decoded
        .iter()
        .filter_map(|d| d.metadata.as_ref())
        .flat_map(|m| m.owned.keys().map(String::as_str))
        .collect();
    // The usual reason a leader has no memory is that the last one vanished. Once its process
    // is provably gone, the tasks nobody claims are taken for its own (a third party removing
    // another member in the very same round is not covered: docs/reliability.md).
    if claimed.is_empty() || vanished_leader.is_some_and(|l| l.gone) {
        Suspects::None
    } else {
        Suspects::Unclaimed(claimed)
    }
}

/// The members waiting out a static takeover (their metadata's `takeover_hold`: each may have
/// replaced a live process with its `group.instance.id`, which may still run the tasks it
/// held). Which tasks those are, a leader cannot always tell: it may have no memory, a
/// cooperative move takes two rounds (the task is revoked, then unclaimed), and the new
/// process claims only what it was handed. So, while any member waits, every task that
/// changes owner without a live claim waits as long in whoever gets it: one that nobody
/// claims, and one that a waiting member claims and another member gets.
struct Takeovers {
    /// The longest wait any member advertises.
    hold: Duration,
    /// Per task, the member (index into the sorted members) whose claim it keeps; a waiting
    /// member wins a tie. `NOBODY` if nobody claims it.
    claimed_by: Vec<u32>,
    /// Per member, whether it waits out a takeover.
    waiting: Vec<bool>,
}

impl Takeovers {
    const NOBODY: u32 = u32::MAX;

    /// `None` when no member waits out a takeover (the usual case: nothing to compute).
    fn new(decoded: &[Decoded], owned: &[Vec<TaskIndex>], task_count: usize) -> Option<Self> {
        let waiting: Vec<bool> = decoded
            .iter()
            .map(|d| {
                d.metadata
                    .as_ref()
                    .and_then(|m| m.takeover_hold)
                    .is_some_and(|h| !h.is_zero())
            })
            .collect();
        let hold = decoded
            .iter()
            .filter_map(|d| d.metadata.as_ref()?.takeover_hold)
            .max()
            .filter(|h| !h.is_zero())?;
        let mut claimed_by = vec![Self::NOBODY; task_count];
        for (m, tasks) in owned.iter().enumerate() {
            for task in tasks {
                let slot = &mut claimed_by[task.get()];
                if *slot == Self::NOBODY || waiting[m] {
                    *slot = m as u32;
                }
            }
        }
        Some(Takeovers {
            hold,
            claimed_by,
            waiting,
        })
    }

    /// Whether `task`, given to the member at index `to` (`None`: not among the members),
    /// waits out the takeover.
    fn holds(&self, task: TaskIndex, to: Option<usize>) -> bool {
        match self.claimed_by.get(task.get()).copied() {
            None | Some(Self::NOBODY) => true,
            Some(m) => Some(m as usize) != to && self.waiting[m as usize],
        }
    }
}

/// Last round's owners, absent from `members`, whose process is surely gone (see `proof.rs`):
/// `proved` says so for a member id (this worker's link reached its process, and its address
/// refuses), or `nearby` for a status address and network (this worker shares that network,
/// and the address refuses). Blocks for a short connection attempt per vanished owner; the
/// leader's assign runs off the heartbeat path.
pub(crate) fn gone_owners(
    memory: &Memory,
    members: &[GroupMember],
    proved: impl Fn(&str) -> bool,
    nearby: impl Fn(&str, Option<&str>) -> bool,
) -> BTreeSet<MemberId> {
    let present: BTreeSet<MemberId> = members
        .iter()
        .map(|m| {
            let key = MemberId::from(m.group_instance_id.as_deref().unwrap_or(&m.member_id));
            (key, &m.member_id)
        })
        .filter(|(key, member_id)| !memory.replaced(key, member_id))
        .map(|(key, _)| key)
        .collect();
    memory
        .previous
        .iter()
        .map(|(owner, _)| owner)
        .filter(|owner| !present.contains(*owner))
        .filter(|owner| {
            memory.contacts.get(*owner).is_some_and(|contact| {
                proved(&contact.member_id)
                    || nearby(&contact.status_addr, contact.network_id.as_deref())
            })
        })
        .cloned()
        .collect()
}

/// Holds that travel with their tasks: what is left of a hold a member advertises on the tasks
/// it holds back ([`MemberMetadata::held`]), and of the holds this leader handed out in its
/// last round. A task keeps the longer wherever it goes: its new owner may be the first, a
/// later round may move it on before the hold ends (a join, a leave, an eager assignor), and
/// the leader may change meanwhile.
struct Carried<'a> {
    /// From members' metadata: each holder's held tasks and what is left of their hold.
    advertised: Vec<(&'a BTreeSet<String>, Duration)>,
    /// From this leader's memory: until when (Unix time) each task is held.
    remembered: Option<&'a BTreeMap<Arc<str>, Duration>>,
    now: Duration,
}

impl<'a> Carried<'a> {
    fn new(decoded: &'a [Decoded], memory: Option<&'a Memory>, now: Duration) -> Self {
        let advertised = decoded
            .iter()
            .filter_map(|d| {
                let metadata = d.metadata.as_ref()?;
                let left = metadata.hold_left.filter(|left| !left.is_zero())?;
                (!metadata.held.is_empty()).then_some((&metadata.held, left))
            })
            .collect();
        Carried {
            advertised,
            remembered: memory.map(|m| &m.holds).filter(|holds| !holds.is_empty()),
            now,
        }
    }

    /// What is left of `task`'s hold, if it is held.
    fn left(&self, task: &str) -> Option<Duration> {
        let advertised = self
            .advertised
            .iter()
            .filter(|(held, _)| held.contains(task))
            .map(|(_, left)| *left)
            .max();
        let remembered = self
            .remembered
            .and_then(|holds| holds.get(task))
            .and_then(|until| until.checked_sub(self.now))
            .filter(|left| !left.is_zero());
        advertised.max(remembered)
    }
}

/// Per member (in `decoded` order), the tasks whose claim it keeps: for each task the claims
/// of the highest generation win; several winners remain a double claim.
fn resolve_claims(tasks: &TaskSet, decoded: &[Decoded]) -> Vec<Vec<TaskIndex>> {
    // Per task: the best generation claimed and its first claimant; a tie with another
    // claimant is a double claim, whose other claimants wait in `ties` (rare). Dense arrays,
    // not a map: this runs over every claim of every member each round.
    const NONE: u32 = u32::MAX;
    let mut best: Vec<(i32, u32)> = vec![(i32::MIN, NONE); tasks.len()];
    let mut ties: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut unknown = 0usize;
    for (m, d) in decoded.iter().enumerate() {
        let Some(metadata) = &d.metadata else {
            continue;
        };
        // Claims come sorted: found by searching forward, not by hashing each id.
        let mut cursor = tasks.cursor();
        for (id, &generation) in &metadata.owned {
            let Some(task) = cursor.index_of(id) else {
                unknown += 1;
                continue;
            };
            let (claimed, first) = &mut best[task.get()];
            if *first == NONE || generation > *claimed {
                (*claimed, *first) = (generation, m as u32);
                ties.remove(&task.get());
            } else if generation == *claimed {
                ties.entry(task.get()).or_default().push(m);
            }
        }
    }
    if unknown > 0 {
        tracing::warn!(
            claims = unknown,
            "members claim tasks the leader's catalogue does not have; they will stop them \
             (give every worker the same catalogue)"
        );
    }
    let mut owned = vec![Vec::new(); decoded.len()];
    for (task, &(_, first)) in best.iter().enumerate() {
        if first == NONE {
            continue;
        }
        let index = TaskIndex(task as u32);
        owned[first as usize].push(index);
        for &m in ties.get(&task).into_iter().flatten() {
            owned[m].push(index);
        }
    }
    owned
}

#[cfg(test)]
mod tests;
