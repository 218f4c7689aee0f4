//! Properties over random memberships, histories, eligibility, weights and capacities, for
//! every invariant in `check`.

use std::time::Duration;

use kroupier_assignor::{
    AssignmentInput, Assignor, Cooperative, CooperativeConfig, KindIndex, Kinds, MemberId,
    MemberInput, Plan, PreviousAssignment, PreviousOwner, RoundRobin, Sticky, TaskIndex, TaskSet,
    check,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// A random group: tasks, members with claims, departed previous owners.
#[derive(Clone, Debug)]
struct Group {
    tasks: TaskSet,
    members: Vec<MemberInput>,
    previous: PreviousAssignment,
    left_gracefully: Vec<MemberId>,
    /// Whether every weight is 1 and no member has a capacity.
    by_count: bool,
}

#[derive(Clone, Debug)]
struct MemberSpec {
    generation: i32,
    claims: Vec<u32>,
    kinds: Option<Vec<u16>>,
    capacity: Option<u64>,
    rack: Option<u8>,
}

fn member_spec(tasks: u32, kinds: u16, limited: bool) -> impl Strategy<Value = MemberSpec> {
    let claims = prop::collection::vec(0..tasks.max(1), 0..(tasks as usize).min(12) + 1);
    let kinds = prop::option::weighted(0.3, prop::collection::vec(0..kinds, 0..3));
    let capacity = if limited {
        prop::option::weighted(0.5, 0u64..15).boxed()
    } else {
        Just(None).boxed()
    };
    (0i32..3, claims, kinds, capacity, prop::option::of(0u8..3)).prop_map(
        move |(generation, claims, kinds, capacity, rack)| MemberSpec {
            generation,
            claims: if tasks == 0 { Vec::new() } else { claims },
            kinds,
            capacity,
            rack,
        },
    )
}

fn group() -> impl Strategy<Value = Group> {
    (0u32..40, 1u16..4, any::<bool>(), any::<bool>())
        .prop_flat_map(|(tasks, kinds, weighted, limited)| {
            let weights = prop::collection::vec(1u32..5, tasks as usize);
            let task_kinds = prop::collection::vec(0..kinds, tasks as usize);
            let members = prop::collection::vec(member_spec(tasks, kinds, limited), 0..7);
            let departed = prop::collection::vec(
                (prop::collection::vec(0..tasks.max(1), 0..8), any::<bool>()),
                0..3,
            );
            (
                Just((tasks, kinds, weighted)),
                weights,
                task_kinds,
                members,
                departed,
            )
        })
        .prop_map(
            |((n, kinds, weighted), weights, task_kinds, specs, departed)| {
                let mut tasks = TaskSet::new();
                for k in 0..kinds {
                    tasks.intern_kind(&format!("kind-{k}")).unwrap();
                }
                for t in 0..n as usize {
                    let w = if weighted { weights[t] } else { 1 };
                    tasks
                        .push(format!("task-{t}"), &format!("kind-{}", task_kinds[t]), w)
                        .unwrap();
                }
                let by_count = !tasks.is_weighted() && specs.iter().all(|s| s.capacity.is_none());
                let members: Vec<MemberInput> = specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let mut m = MemberInput::new(format!("m{i:02}")).with_owned(
                            s.generation,
                            s.claims.iter().map(|&t| TaskIndex(t)).collect(),
                        );
                        if let Some(kinds) = &s.kinds {
                            m = m.with_kinds(Kinds::Only(
                                kinds.iter().map(|&k| KindIndex(k)).collect(),
                            ));
                        }
                        m.capacity = s.capacity;
                        m.rack = s.rack.map(|r| format!("rack-{r}").into());
                        m
                    })
                    .collect();
                let mut previous = PreviousAssignment::default();
                let mut left_gracefully = Vec::new();
                for (i, (claims, graceful)) in departed.into_iter().enumerate() {
                    let id = MemberId::from(format!("gone-{i}"));
                    if graceful {
                        left_gracefully.push(id.clone());
                    }
                    previous.owners.push(PreviousOwner {
                        member_id: id,
                        tasks: if n == 0 {
                            Vec::new()
                        } else {
                            claims.into_iter().map(TaskIndex).collect()
                        },
                    });
                }
                Group {
                    tasks,
                    members,
                    previous,
                    left_gracefully,
                    by_count,
                }
            },
        )
}

impl Group {
    fn input(&self) -> AssignmentInput<'_> {
        AssignmentInput::new(&self.tasks, &self.members)
            .with_previous(&self.previous)
            .with_left_gracefully(&self.left_gracefully)
    }
}

/// Members that own what `plan` gave them, granted in `generation`, keeping their metadata.
fn owning(members: &[MemberInput], plan: &Plan, generation: i32) -> Vec<MemberInput> {
    members
        .iter()
        .zip(&plan.assignments)
        .map(|(m, a)| MemberInput {
            generation,
            owned: a.assigned.clone(),
            ..m.clone()
        })
        .collect()
}

fn eager(assignor: &dyn Assignor, g: &Group) -> Result<(), TestCaseError> {
    let input = g.input();
    let plan = assignor
        .assign(&input)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let fail = |v: check::Violation| TestCaseError::fail(format!("{}: {v}", assignor.name()));
    check::coverage(&input, &plan).map_err(fail)?;
    prop_assert!(plan.held_back.is_empty());
    if g.by_count || assignor.name() != "round-robin" {
        check::balance(&input, &plan).map_err(fail)?;
    }
    if assignor.name() == "sticky" {
        check::minimal_moves(&input, &plan).map_err(fail)?;
        check::stable(&input, &plan).map_err(fail)?;
    }
    // Feeding the plan back changes nothing.
    let members = owning(&g.members, &plan, 10);
    let next = AssignmentInput::new(&g.tasks, &members);
    let again = assignor
        .assign(&next)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    check::stable(&next, &again).map_err(fail)?;
    prop_assert_eq!(check::moves(&next, &again).map_err(fail)?, 0);
    // Deterministic, and blind to the order in which members list what they own.
    prop_assert_eq!(assignor.assign(&input).ok(), Some(plan.clone()));
    let reversed: Vec<MemberInput> = g
        .members
        .iter()
        .map(|m| MemberInput {
            owned: m.owned.iter().rev().copied().collect(),
            ..m.clone()
        })
        .collect();
    let input = AssignmentInput::new(&g.tasks, &reversed)
        .with_previous(&g.previous)
        .with_left_gracefully(&g.left_gracefully);
    prop_assert_eq!(assignor.assign(&input).ok(), Some(plan));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // 400 by default; set PROPTEST_CASES for a longer soak.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/properties.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn round_robin_covers_and_balances(g in group()) {
        eager(&RoundRobin, &g)?;
    }

    #[test]
    fn sticky_covers_balances_and_moves_the_least(g in group()) {
        eager(&Sticky, &g)?;
    }

    #[test]
    fn cooperative_never_reassigns_in_the_revoking_round_and_converges(
        g in group(),
        delay in prop::sample::select(vec![0u64, 10]),
    ) {
        let assignor = Cooperative::new(CooperativeConfig {
            lost_task_delay: Duration::from_secs(delay),
            ..CooperativeConfig::default()
        }).unwrap();
        let fail = |v: check::Violation| TestCaseError::fail(v.to_string());
        let mut members = g.members.clone();
        let mut previous = g.previous.clone();
        let mut state = Default::default();
        let mut now = Duration::from_secs(1_000);
        let mut first = true;
        for round in 0..10 {
            let input = AssignmentInput::new(&g.tasks, &members)
                .with_previous(&previous)
                .with_left_gracefully(if first { &g.left_gracefully } else { &[] })
                .with_state(state)
                .at(now);
            let plan = assignor.assign(&input).map_err(|e| TestCaseError::fail(e.to_string()))?;
            check::cooperative(&input, &plan).map_err(fail)?;
            check::coverage(&input, &plan).map_err(fail)?;
            if first && delay == 0 {
                // The revoking round moves exactly what the eager sticky plan moves.
                check::minimal_moves(&input, &plan).map_err(fail)?;
            }
            if plan.rebalance_delay.is_none() {
                prop_assert!(plan.held_back.is_empty());
                check::balance(&input, &plan).map_err(fail)?;
                check::stable(&input, &plan).map_err(fail)?;
                if g.by_count {
                    // Unit weights: done within a revoking round and its follow-up (plus one
                    // for double claims and lost tasks).
                    prop_assert!(round <= 3, "took {} rounds", round + 1);
                }
                return Ok(());
            }
            now += plan.rebalance_delay.unwrap_or_default();
            previous = plan.to_previous();
            members = owning(&members, &plan, 20 + round);
            state = plan.state;
            first = false;
        }
        prop_assert!(false, "no convergence in 10 rounds");
    }
}
