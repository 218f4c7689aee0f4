//! Table cases for the tricky histories: double claims, a member returning after its tasks were
//! given away, a new leader with no memory, a member that can run no kind, lost members and the
//! lost-task delay, graceful leaves, the revocation backoff, capacity, racks.

use std::time::Duration;

use kroupier_assignor::{
    AssignmentInput, Assignor, AssignorErrorKind, Cooperative, CooperativeConfig, CooperativeState,
    HoldReason, KindIndex, Kinds, MemberId, MemberInput, Plan, PreviousAssignment, PreviousOwner,
    RoundRobin, Sticky, TaskIndex, TaskSet, UnplacedReason, by_name, check,
};

fn idx(range: std::ops::Range<u32>) -> Vec<TaskIndex> {
    range.map(TaskIndex).collect()
}

fn ids(plan: &Plan, m: usize) -> Vec<u32> {
    plan.assignments[m].assigned.iter().map(|t| t.0).collect()
}

fn revoked(plan: &Plan, m: usize) -> Vec<u32> {
    plan.assignments[m].revoked.iter().map(|t| t.0).collect()
}

fn all_checks(input: &AssignmentInput<'_>, plan: &Plan) {
    check::coverage(input, plan).unwrap();
    check::cooperative(input, plan).unwrap();
}

/// Members that own what `plan` gave them, granted in `generation`.
fn owning(plan: &Plan, generation: i32) -> Vec<MemberInput> {
    plan.assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(generation, a.assigned.clone()))
        .collect()
}

#[test]
fn same_generation_double_claim_is_revoked_from_both_then_placed() {
    let tasks = TaskSet::uniform(4, "k");
    let members = vec![
        MemberInput::new("a").with_owned(7, vec![TaskIndex(0), TaskIndex(1)]),
        MemberInput::new("b").with_owned(7, vec![TaskIndex(1), TaskIndex(2), TaskIndex(3)]),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    let plan = Cooperative::default().assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(plan.held_back.len(), 1);
    assert_eq!(plan.held_back[0].task, TaskIndex(1));
    assert_eq!(plan.held_back[0].reason, HoldReason::DoubleClaim);
    assert_eq!(revoked(&plan, 0), vec![1]);
    assert_eq!(revoked(&plan, 1), vec![1]);
    assert_eq!(plan.rebalance_delay, Some(Duration::ZERO));

    // Follow-up round: nobody claims task 1 any more, so it is placed.
    let next_members = owning(&plan, 8);
    let next = AssignmentInput::new(&tasks, &next_members).with_state(plan.state);
    let plan = Cooperative::default().assign(&next).unwrap();
    all_checks(&next, &plan);
    check::balance(&next, &plan).unwrap();
    assert!(plan.held_back.is_empty());
    assert_eq!(plan.assigned_count(), 4);

    // Eager sticky: the doubly claimed task is simply placed (both revoke everything anyway).
    let plan = Sticky.assign(&input).unwrap();
    check::coverage(&input, &plan).unwrap();
    check::minimal_moves(&input, &plan).unwrap();
    assert_eq!(plan.assigned_count(), 4);
}

#[test]
fn member_returning_after_its_tasks_were_given_away_revokes_them() {
    // "a" fell out in generation 3; its tasks went to "b" in generation 5; "a" comes back still
    // claiming them with its stale generation.
    let tasks = TaskSet::uniform(4, "k");
    let members = vec![
        MemberInput::new("a").with_owned(3, idx(0..2)),
        MemberInput::new("b").with_owned(5, idx(0..4)),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    // "b" (the higher generation) is the owner and keeps 0 and 1; "a" must stop its stale
    // copies of them; 2 and 3 move from "b" to "a".
    let plan = Sticky.assign(&input).unwrap();
    check::coverage(&input, &plan).unwrap();
    check::minimal_moves(&input, &plan).unwrap();
    assert_eq!((ids(&plan, 0), revoked(&plan, 0)), (vec![2, 3], vec![0, 1]));
    assert_eq!((ids(&plan, 1), revoked(&plan, 1)), (vec![0, 1], vec![2, 3]));

    // Cooperative: the same, but 2 and 3 reach "a" only in the follow-up round.
    let plan = Cooperative::default().assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!((ids(&plan, 0), revoked(&plan, 0)), (vec![], vec![0, 1]));
    assert_eq!((ids(&plan, 1), revoked(&plan, 1)), (vec![0, 1], vec![2, 3]));
    let next_members = owning(&plan, 6);
    let next = AssignmentInput::new(&tasks, &next_members).with_state(plan.state);
    let plan = Cooperative::default().assign(&next).unwrap();
    all_checks(&next, &plan);
    assert_eq!(ids(&plan, 0), vec![2, 3]);
}

#[test]
fn new_leader_without_previous_assignment_places_unclaimed_tasks_now() {
    let tasks = TaskSet::uniform(6, "k");
    // The old leader owned tasks 4 and 5 and is gone; the new leader remembers nothing.
    let members = vec![
        MemberInput::new("a").with_owned(2, idx(0..2)),
        MemberInput::new("b").with_owned(2, idx(2..4)),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    let config = CooperativeConfig {
        lost_task_delay: Duration::from_secs(300),
        ..CooperativeConfig::default()
    };
    let plan = Cooperative::new(config).unwrap().assign(&input).unwrap();
    all_checks(&input, &plan);
    check::balance(&input, &plan).unwrap();
    assert!(plan.held_back.is_empty());
    assert_eq!(ids(&plan, 0), vec![0, 1, 4]);
    assert_eq!(ids(&plan, 1), vec![2, 3, 5]);
    assert_eq!(plan.rebalance_delay, None);
}

#[test]
fn member_that_can_run_no_kind_gets_nothing_and_revokes_its_claims() {
    let tasks = TaskSet::uniform(4, "k");
    let members = vec![
        MemberInput::new("a"),
        MemberInput::new("b")
            .with_kinds(Kinds::Only(vec![]))
            .with_owned(1, idx(0..2)),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    let plan = Sticky.assign(&input).unwrap();
    check::coverage(&input, &plan).unwrap();
    assert_eq!(ids(&plan, 0), vec![0, 1, 2, 3]);
    assert_eq!(revoked(&plan, 1), vec![0, 1]);

    // Cooperative: "b" still runs 0 and 1, so they wait one round before "a" gets them.
    let plan = Cooperative::default().assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(ids(&plan, 0), vec![2, 3]);
    assert!(
        plan.held_back
            .iter()
            .all(|h| h.reason == HoldReason::Revoking)
    );
    assert_eq!(plan.held_back.len(), 2);
}

#[test]
fn lost_tasks_wait_the_delay_unless_the_owner_left_gracefully() {
    let tasks = TaskSet::uniform(6, "k");
    let previous = PreviousAssignment {
        owners: vec![
            PreviousOwner {
                member_id: "a".into(),
                tasks: idx(0..2),
            },
            PreviousOwner {
                member_id: "b".into(),
                tasks: idx(2..4),
            },
            PreviousOwner {
                member_id: "c".into(),
                tasks: idx(4..6),
            },
        ],
    };
    let members = vec![
        MemberInput::new("a").with_owned(4, idx(0..2)),
        MemberInput::new("b").with_owned(4, idx(2..4)),
    ];
    let assignor = Cooperative::new(CooperativeConfig {
        lost_task_delay: Duration::from_secs(10),
        ..CooperativeConfig::default()
    })
    .unwrap();
    let t0 = Duration::from_secs(1000);

    // "c" was lost: its tasks wait 10 s.
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .at(t0);
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(plan.held_back.len(), 2);
    assert!(
        plan.held_back
            .iter()
            .all(|h| h.reason == HoldReason::LostDelay)
    );
    assert_eq!(plan.rebalance_delay, Some(Duration::from_secs(10)));
    assert_eq!(
        plan.state.lost_deadline(),
        Some(t0 + Duration::from_secs(10))
    );
    assert_eq!(plan.lost[0].member_id, MemberId::from("c"));

    // 4 s later a replacement "d" joins, empty: still waiting, 6 s left.
    let previous = plan.to_previous();
    let mut members = owning(&plan, 5);
    members.push(MemberInput::new("d"));
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_state(plan.state)
        .at(t0 + Duration::from_secs(4));
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(plan.held_back.len(), 2);
    assert_eq!(
        plan.revoked_count(),
        0,
        "no balancing while lost tasks wait"
    );
    assert_eq!(plan.rebalance_delay, Some(Duration::from_secs(6)));

    // At the deadline the lost tasks go to the least loaded member: "d".
    let previous = plan.to_previous();
    let members = owning(&plan, 6);
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_state(plan.state)
        .at(t0 + Duration::from_secs(10));
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    check::balance(&input, &plan).unwrap();
    assert_eq!(ids(&plan, 2), vec![4, 5]);
    assert_eq!(plan.state.lost_deadline(), None);

    // Had "c" left gracefully, its tasks would have moved at once.
    let members = vec![
        MemberInput::new("a").with_owned(4, idx(0..2)),
        MemberInput::new("b").with_owned(4, idx(2..4)),
    ];
    let previous = PreviousAssignment {
        owners: vec![PreviousOwner {
            member_id: "c".into(),
            tasks: idx(4..6),
        }],
    };
    let left = [MemberId::from("c")];
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_left_gracefully(&left)
        .at(t0);
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    assert!(plan.held_back.is_empty());
    assert_eq!(plan.assigned_count(), 6);
    check::minimal_moves(&input, &plan).unwrap();
}

#[test]
fn consecutive_revoking_rounds_back_off() {
    let tasks = TaskSet::uniform(6, "k");
    let members = vec![
        MemberInput::new("a").with_owned(1, idx(0..6)),
        MemberInput::new("b"),
    ];
    let assignor = Cooperative::default();
    let now = Duration::from_secs(50);
    // The previous round revoked too: this one must pause instead of revoking again.
    let state = CooperativeState::from_parts(None, 1, None);
    let input = AssignmentInput::new(&tasks, &members)
        .with_state(state)
        .at(now);
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(plan.revoked_count(), 0);
    assert_eq!(plan.rebalance_delay, Some(Duration::from_millis(40)));
    assert_eq!(
        plan.state.backoff_deadline(),
        Some(now + Duration::from_millis(40))
    );

    // When the pause is over, it revokes, and counts a second revoking round.
    let input = AssignmentInput::new(&tasks, &members)
        .with_state(plan.state)
        .at(now + Duration::from_millis(40));
    let plan = assignor.assign(&input).unwrap();
    all_checks(&input, &plan);
    assert_eq!(revoked(&plan, 0), vec![3, 4, 5]);
    assert_eq!(plan.state.revoking_rounds(), 2);
    assert_eq!(plan.rebalance_delay, Some(Duration::ZERO));

    // A round without revocation resets the count.
    let members = owning(&plan, 2);
    let input = AssignmentInput::new(&tasks, &members).with_state(plan.state);
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(ids(&plan, 1), vec![3, 4, 5]);
    assert_eq!(plan.state, CooperativeState::default());
    assert_eq!(plan.rebalance_delay, None);

    // So does a pending pause once the group is balanced without it.
    let paused = CooperativeState::from_parts(None, 3, Some(now + Duration::from_secs(60)));
    let members = owning(&plan, 3);
    let input = AssignmentInput::new(&tasks, &members)
        .with_state(paused)
        .at(now);
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(plan.state, CooperativeState::default());
    assert_eq!(plan.rebalance_delay, None);
}

#[test]
fn capacity_and_eligibility_report_unplaced_tasks() {
    let mut tasks = TaskSet::new();
    tasks.push("big", "k", 5).unwrap();
    tasks.push("small-1", "k", 1).unwrap();
    tasks.push("small-2", "k", 1).unwrap();
    tasks.push("orphan", "nobody-runs-this", 1).unwrap();
    let k = tasks.kind_index("k").unwrap();
    let members = vec![
        MemberInput::new("a")
            .with_kinds(Kinds::Only(vec![k]))
            .with_capacity(2),
        MemberInput::new("b")
            .with_kinds(Kinds::Only(vec![k]))
            .with_capacity(1),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    for assignor in [
        by_name("round-robin").unwrap(),
        by_name("sticky").unwrap(),
        by_name("cooperative").unwrap(),
    ] {
        let plan = assignor.assign(&input).unwrap();
        check::coverage(&input, &plan).unwrap();
        let reasons: Vec<(u32, UnplacedReason)> =
            plan.unplaced.iter().map(|u| (u.task.0, u.reason)).collect();
        assert_eq!(
            reasons,
            vec![
                (0, UnplacedReason::NoCapacity),
                (3, UnplacedReason::NoEligibleMember)
            ],
            "{}",
            assignor.name()
        );
    }
}

#[test]
fn tasks_of_one_kind_spread_over_racks() {
    let tasks = TaskSet::uniform(2, "k");
    let members = vec![
        MemberInput::new("a").with_rack("east"),
        MemberInput::new("b").with_rack("east"),
        MemberInput::new("c").with_rack("west"),
        MemberInput::new("d").with_rack("west"),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    for assignor in [by_name("round-robin").unwrap(), by_name("sticky").unwrap()] {
        let plan = assignor.assign(&input).unwrap();
        assert_eq!(ids(&plan, 0), vec![0], "{}", assignor.name());
        assert_eq!(ids(&plan, 2), vec![1], "{}", assignor.name());
    }
}

#[test]
fn weights_balance_by_weight() {
    let mut tasks = TaskSet::new();
    for (i, w) in [4, 4, 2, 2, 1, 1, 1, 1].iter().enumerate() {
        tasks.push(format!("t{i}"), "k", *w).unwrap();
    }
    let members = vec![
        MemberInput::new("a"),
        MemberInput::new("b"),
        MemberInput::new("c"),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    let plan = Sticky.assign(&input).unwrap();
    check::coverage(&input, &plan).unwrap();
    check::balance(&input, &plan).unwrap();
    // Stable when fed back.
    let members = owning(&plan, 1);
    let input = AssignmentInput::new(&tasks, &members);
    let again = Sticky.assign(&input).unwrap();
    check::stable(&input, &again).unwrap();
    assert_eq!(check::moves(&input, &again).unwrap(), 0);
}

#[test]
fn validator_rejects_a_plan_that_reassigns_a_claimed_task() {
    let tasks = TaskSet::uniform(2, "k");
    let members = vec![
        MemberInput::new("a").with_owned(1, idx(0..2)),
        MemberInput::new("b"),
    ];
    let input = AssignmentInput::new(&tasks, &members);
    // The eager sticky plan moves task 1 from "a" to "b" in one round: not cooperative.
    let plan = Sticky.assign(&input).unwrap();
    assert!(matches!(
        check::cooperative(&input, &plan),
        Err(check::Violation::GivenWhileClaimed { task: 1, .. })
    ));
    let plan = Cooperative::default().assign(&input).unwrap();
    check::cooperative(&input, &plan).unwrap();
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let tasks = TaskSet::uniform(2, "k");
    let unsorted = vec![MemberInput::new("b"), MemberInput::new("a")];
    let duplicate = vec![MemberInput::new("a"), MemberInput::new("a")];
    let out_of_range = vec![MemberInput::new("a").with_owned(1, vec![TaskIndex(9)])];
    let bad_kind = vec![MemberInput::new("a").with_kinds(Kinds::Only(vec![KindIndex(3)]))];
    for members in [&unsorted, &duplicate, &out_of_range, &bad_kind] {
        let input = AssignmentInput::new(&tasks, members);
        for assignor in [
            Box::new(RoundRobin) as Box<dyn Assignor>,
            Box::new(Sticky),
            Box::new(Cooperative::default()),
        ] {
            assert!(assignor.assign(&input).is_err());
        }
    }
    assert!(matches!(
        by_name("range").map_err(|e| e.kind()),
        Err(AssignorErrorKind::UnknownAssignor)
    ));
}

#[test]
fn empty_groups_and_empty_task_sets() {
    let tasks = TaskSet::uniform(3, "k");
    let none: Vec<MemberInput> = Vec::new();
    let input = AssignmentInput::new(&tasks, &none);
    let plan = Sticky.assign(&input).unwrap();
    check::coverage(&input, &plan).unwrap();
    assert_eq!(plan.unplaced.len(), 3);

    let empty = TaskSet::new();
    let members = vec![MemberInput::new("a")];
    let input = AssignmentInput::new(&empty, &members);
    let plan = Cooperative::default().assign(&input).unwrap();
    assert_eq!(plan.assigned_count(), 0);
}
