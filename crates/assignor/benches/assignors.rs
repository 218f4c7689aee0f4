//! Criterion benchmarks of the three assignors over
//! T ∈ {10k, 100k, 1M} tasks × W ∈ {10, 100, 1000, 2000} workers, four scenarios:
//!
//! * `cold`: nobody owns anything;
//! * `stable`: members own a balanced assignment and nothing changed;
//! * `join`: one member joins a balanced group;
//! * `leave`: the middle member leaves gracefully.
//!
//! Only `assign` is timed (not building the input, not dropping the plan). For `cooperative`
//! `join` this is the revoking round; the follow-up round is as cheap as `leave`.
//!
//! A `heterogeneous` group adds kinds, weights, eligibility and capacities (the weight path).
//!
//! Run a subset with a filter, e.g. `cargo bench -p kroupier-assignor -- cooperative/leave`.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use kroupier_assignor::{
    AssignmentInput, Assignor, KindIndex, Kinds, MemberId, MemberInput, PreviousAssignment, Sticky,
    TaskSet, by_name,
};

const TASKS: [u32; 3] = [10_000, 100_000, 1_000_000];
const WORKERS: [u32; 4] = [10, 100, 1000, 2000];
const ASSIGNORS: [&str; 3] = ["round-robin", "sticky", "cooperative"];
const SCENARIOS: [&str; 4] = ["cold", "stable", "join", "leave"];

/// One prepared round: members, what the leader remembers, who left gracefully.
struct Round {
    members: Vec<MemberInput>,
    previous: PreviousAssignment,
    left: Vec<MemberId>,
}

fn round(assignor: &dyn Assignor, tasks: &TaskSet, workers: u32, scenario: &str) -> Round {
    let id = |i: u32| MemberId::from(format!("worker-{i:07}"));
    let fresh: Vec<MemberInput> = (0..workers).map(|i| MemberInput::new(id(i))).collect();
    if scenario == "cold" {
        return Round {
            members: fresh,
            previous: PreviousAssignment::default(),
            left: Vec::new(),
        };
    }
    let base = assignor
        .assign(&AssignmentInput::new(tasks, &fresh))
        .expect("the cold round of a valid synthetic group succeeds");
    let mut members: Vec<MemberInput> = base
        .assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(1, a.assigned.clone()))
        .collect();
    let mut left = Vec::new();
    match scenario {
        "join" => members.push(MemberInput::new(id(workers))),
        "leave" => left.push(members.remove(members.len() / 2).id),
        _ => {}
    }
    Round {
        members,
        previous: base.to_previous(),
        left,
    }
}

fn grid(c: &mut Criterion) {
    for name in ASSIGNORS {
        let assignor = by_name(name).expect("built-in assignor");
        for scenario in SCENARIOS {
            let mut group = c.benchmark_group(format!("{name}/{scenario}"));
            group
                .sample_size(10)
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(1));
            for t in TASKS {
                let tasks = TaskSet::uniform(t, "task");
                for w in WORKERS {
                    let r = round(assignor.as_ref(), &tasks, w, scenario);
                    let input = AssignmentInput::new(&tasks, &r.members)
                        .with_previous(&r.previous)
                        .with_left_gracefully(&r.left);
                    group.bench_function(BenchmarkId::from_parameter(format!("{t}x{w}")), |b| {
                        b.iter_with_large_drop(|| assignor.assign(&input))
                    });
                }
            }
            group.finish();
        }
    }
}

/// A heterogeneous group (like Kafka's HETEROGENEOUS bucketing): 5 kinds, weights 1..=4,
/// each member runs 3 of the 5 kinds, every 4th member has a capacity.
fn heterogeneous(tasks: u32, workers: u32, leave: bool) -> (TaskSet, Vec<MemberInput>) {
    let mut set = TaskSet::new();
    for t in 0..tasks {
        let kind = format!("kind-{}", t % 5);
        // Ids are unique and weights non-zero by construction.
        let _ = set.push(format!("task-{t}"), &kind, 1 + (t / 5) % 4);
    }
    let total: u64 = (0..tasks).map(|t| u64::from(1 + (t / 5) % 4)).sum();
    let members: Vec<MemberInput> = (0..workers)
        .map(|i| {
            let kinds = (0..3).map(|j| KindIndex(((i + j) % 5) as u16)).collect();
            let member = MemberInput::new(format!("worker-{i:07}")).with_kinds(Kinds::Only(kinds));
            if i % 4 == 0 {
                member.with_capacity(total / u64::from(workers))
            } else {
                member
            }
        })
        .collect();
    let assignor = Sticky;
    let plan = assignor
        .assign(&AssignmentInput::new(&set, &members))
        .expect("a valid synthetic group");
    let mut members: Vec<MemberInput> = members
        .into_iter()
        .zip(plan.assignments)
        .map(|(m, a)| m.with_owned(1, a.assigned))
        .collect();
    if leave {
        members.remove(members.len() / 2);
    }
    (set, members)
}

fn weighted(c: &mut Criterion) {
    let mut group = c.benchmark_group("heterogeneous");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for (t, w) in [(100_000, 100), (250_000, 1000)] {
        for (scenario, leave) in [("stable", false), ("leave", true)] {
            let (tasks, members) = heterogeneous(t, w, leave);
            let input = AssignmentInput::new(&tasks, &members);
            for name in ["sticky", "cooperative"] {
                let assignor = by_name(name).expect("built-in assignor");
                let id = BenchmarkId::new(format!("{name}/{scenario}"), format!("{t}x{w}"));
                group.bench_function(id, |b| b.iter_with_large_drop(|| assignor.assign(&input)));
            }
        }
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    grid(&mut c);
    weighted(&mut c);
    c.final_summary();
}
