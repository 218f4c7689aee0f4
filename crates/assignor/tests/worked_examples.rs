//! The worked examples of `docs/assignors.md`, checked: six tasks `t0..t5`, members `a` and
//! `b`; then `c` joins; then `b` is lost.

use std::time::Duration;

use kroupier_assignor::{
    AssignmentInput, Assignor, Cooperative, CooperativeConfig, HoldReason, MemberInput, Plan,
    RoundRobin, Sticky, TaskSet, check,
};

fn tasks() -> TaskSet {
    let mut tasks = TaskSet::new();
    for i in 0..6 {
        tasks.push(format!("t{i}"), "sink", 1).unwrap();
    }
    tasks
}

/// `(assigned, revoked)` per member, as task ids.
fn show(tasks: &TaskSet, plan: &Plan) -> Vec<(String, Vec<String>, Vec<String>)> {
    let name = |t: &kroupier_assignor::TaskIndex| tasks.id(*t).unwrap().to_string();
    plan.assignments
        .iter()
        .map(|a| {
            (
                a.member_id.to_string(),
                a.assigned.iter().map(name).collect(),
                a.revoked.iter().map(name).collect(),
            )
        })
        .collect()
}

fn row(member: &str, assigned: &[&str], revoked: &[&str]) -> (String, Vec<String>, Vec<String>) {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    (member.to_string(), own(assigned), own(revoked))
}

/// Round 1 with `a`, `b`, then round 2 where `c` joins and `a`, `b` report what they own.
fn join(assignor: &dyn Assignor) -> (TaskSet, Vec<MemberInput>, Plan) {
    let tasks = tasks();
    let first = vec![MemberInput::new("a"), MemberInput::new("b")];
    let plan = assignor
        .assign(&AssignmentInput::new(&tasks, &first))
        .unwrap();
    let mut members: Vec<MemberInput> = plan
        .assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(1, a.assigned.clone()))
        .collect();
    members.push(MemberInput::new("c"));
    (tasks, members, plan)
}

#[test]
fn round_robin_join() {
    let (tasks, members, first) = join(&RoundRobin);
    assert_eq!(
        show(&tasks, &first),
        vec![
            row("a", &["t0", "t2", "t4"], &[]),
            row("b", &["t1", "t3", "t5"], &[])
        ]
    );
    let input = AssignmentInput::new(&tasks, &members);
    let plan = RoundRobin.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![
            row("a", &["t0", "t3"], &["t2", "t4"]),
            row("b", &["t1", "t4"], &["t3", "t5"]),
            row("c", &["t2", "t5"], &[]),
        ]
    );
    assert_eq!(check::moves(&input, &plan).unwrap(), 4);
    assert_eq!(check::lower_bound_moves(&input).unwrap(), Some(2));
}

#[test]
fn sticky_join() {
    let (tasks, members, first) = join(&Sticky);
    assert_eq!(
        show(&tasks, &first),
        vec![
            row("a", &["t0", "t1", "t2"], &[]),
            row("b", &["t3", "t4", "t5"], &[])
        ]
    );
    let input = AssignmentInput::new(&tasks, &members);
    let plan = Sticky.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![
            row("a", &["t0", "t1"], &["t2"]),
            row("b", &["t3", "t4"], &["t5"]),
            row("c", &["t2", "t5"], &[]),
        ]
    );
    assert_eq!(check::moves(&input, &plan).unwrap(), 2);
}

#[test]
fn cooperative_join_then_lost_member() {
    let assignor = Cooperative::new(CooperativeConfig {
        lost_task_delay: Duration::from_secs(10),
        ..CooperativeConfig::default()
    })
    .unwrap();
    let (tasks, members, first) = join(&assignor);
    // Round 2: c joins. t2 and t5 are revoked and held back; nobody gets them yet.
    let previous = first.to_previous();
    let input = AssignmentInput::new(&tasks, &members).with_previous(&previous);
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![
            row("a", &["t0", "t1"], &["t2"]),
            row("b", &["t3", "t4"], &["t5"]),
            row("c", &[], &[]),
        ]
    );
    assert_eq!(plan.held_back.len(), 2);
    assert_eq!(plan.rebalance_delay, Some(Duration::ZERO));

    // Round 3 (the follow-up): a and b stopped t2 and t5; c gets them.
    let previous = plan.to_previous();
    let members: Vec<MemberInput> = plan
        .assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(2, a.assigned.clone()))
        .collect();
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_state(plan.state);
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![
            row("a", &["t0", "t1"], &[]),
            row("b", &["t3", "t4"], &[]),
            row("c", &["t2", "t5"], &[]),
        ]
    );
    assert_eq!(plan.rebalance_delay, None);

    // Round 4 at t = 100 s: b is lost (no LeaveGroup). t3 and t4 wait 10 s for it.
    let previous = plan.to_previous();
    let members = vec![
        MemberInput::new("a").with_owned(3, plan.assignments[0].assigned.clone()),
        MemberInput::new("c").with_owned(3, plan.assignments[2].assigned.clone()),
    ];
    let now = Duration::from_secs(100);
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_state(plan.state)
        .at(now);
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![row("a", &["t0", "t1"], &[]), row("c", &["t2", "t5"], &[])]
    );
    assert!(
        plan.held_back
            .iter()
            .all(|h| h.reason == HoldReason::LostDelay)
    );
    assert_eq!(plan.rebalance_delay, Some(Duration::from_secs(10)));

    // Round 5 at t = 110 s: b did not come back; its tasks move now.
    let previous = plan.to_previous();
    let members = vec![
        MemberInput::new("a").with_owned(4, plan.assignments[0].assigned.clone()),
        MemberInput::new("c").with_owned(4, plan.assignments[1].assigned.clone()),
    ];
    let input = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_state(plan.state)
        .at(now + Duration::from_secs(10));
    let plan = assignor.assign(&input).unwrap();
    assert_eq!(
        show(&tasks, &plan),
        vec![
            row("a", &["t0", "t1", "t3"], &[]),
            row("c", &["t2", "t4", "t5"], &[])
        ]
    );
    assert_eq!(check::moves(&input, &plan).unwrap(), 2);
}
