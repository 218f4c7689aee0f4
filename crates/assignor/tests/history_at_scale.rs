//! A long history on a mid-sized group (20 000 tasks of 3 kinds, 40–60 members with racks and
//! kind subsets), driven round by round through the cooperative assignor, with every checker
//! after every round: joins, a graceful leave, a lost member, a zombie with stale claims.

use std::time::Duration;

use kroupier_assignor::{
    AssignmentInput, Assignor, Cooperative, CooperativeConfig, KindIndex, Kinds, MemberId,
    MemberInput, Plan, PreviousAssignment, TaskSet, check,
};

const TASKS: u32 = 20_000;

fn tasks() -> TaskSet {
    let mut tasks = TaskSet::new();
    for t in 0..TASKS {
        tasks
            .push(format!("task-{t:05}"), &format!("kind-{}", t % 3), 1)
            .unwrap();
    }
    tasks
}

fn member(i: u32) -> MemberInput {
    let kinds = if i % 5 == 0 {
        Kinds::Only(vec![KindIndex(0), KindIndex(1)])
    } else {
        Kinds::All
    };
    MemberInput::new(format!("worker-{i:03}"))
        .with_kinds(kinds)
        .with_rack(&format!("rack-{}", i % 3))
}

/// The leader's view between rounds.
struct Group {
    tasks: TaskSet,
    members: Vec<MemberInput>,
    previous: PreviousAssignment,
    plan: Plan,
    generation: i32,
    now: Duration,
    assignor: Cooperative,
}

impl Group {
    /// One round with `members` and `left`; checks every invariant; returns the plan's moves.
    fn round(&mut self, left: &[MemberId]) -> usize {
        let input = AssignmentInput::new(&self.tasks, &self.members)
            .with_previous(&self.previous)
            .with_left_gracefully(left)
            .with_state(self.plan.state)
            .at(self.now);
        let plan = self.assignor.assign(&input).unwrap();
        check::coverage(&input, &plan).unwrap();
        check::cooperative(&input, &plan).unwrap();
        if plan.rebalance_delay.is_none() {
            check::balance(&input, &plan).unwrap();
            check::stable(&input, &plan).unwrap();
        }
        let moves = check::moves(&input, &plan).unwrap();
        self.generation += 1;
        self.previous = plan.to_previous();
        self.members = self
            .members
            .iter()
            .zip(&plan.assignments)
            .map(|(m, a)| MemberInput {
                generation: self.generation,
                owned: a.assigned.clone(),
                ..m.clone()
            })
            .collect();
        self.now += plan.rebalance_delay.unwrap_or(Duration::from_secs(1));
        self.plan = plan;
        moves
    }

    /// Rounds until nothing is held back and no follow-up is asked; returns the total moves.
    fn settle(&mut self, left: &[MemberId]) -> usize {
        let mut moves = self.round(left);
        for _ in 0..4 {
            if self.plan.rebalance_delay.is_none() {
                return moves;
            }
            moves += self.round(&[]);
        }
        panic!("no convergence in 5 rounds");
    }

    fn add(&mut self, m: MemberInput) {
        let at = self.members.partition_point(|x| x.id < m.id);
        self.members.insert(at, m);
    }
}

#[test]
fn cooperative_history_keeps_every_invariant() {
    let mut g = Group {
        tasks: tasks(),
        members: (0..50).map(member).collect(),
        previous: PreviousAssignment::default(),
        plan: Plan::default(),
        generation: 0,
        now: Duration::from_secs(1_000),
        assignor: Cooperative::new(CooperativeConfig {
            lost_task_delay: Duration::from_secs(30),
            ..CooperativeConfig::default()
        })
        .unwrap(),
    };
    assert_eq!(g.settle(&[]), 0, "cold");
    assert_eq!(g.settle(&[]), 0, "stable");

    // Ten members join: only what they must take moves.
    for i in 50..60 {
        g.add(member(i));
    }
    let moves = g.settle(&[]);
    let taken: usize = g.plan.assignments[50..]
        .iter()
        .map(|a| a.assigned.len())
        .sum();
    assert_eq!(moves, taken, "join moves exactly what the new members take");

    // One leaves gracefully: its tasks move at once, nothing else does.
    let leaving = g.members.remove(7);
    let owned = leaving.owned.len();
    assert_eq!(g.settle(&[leaving.id]), owned);

    // One is lost: its tasks wait 30 s, then move; nothing else moves.
    let lost = g.members.remove(20);
    let owned = lost.owned.len();
    assert_eq!(g.round(&[]), 0);
    assert_eq!(g.plan.held_back.len(), owned);
    assert_eq!(g.plan.rebalance_delay, Some(Duration::from_secs(30)));
    assert_eq!(g.settle(&[]), owned);

    // A zombie comes back with its stale claims from an old generation: it revokes them all,
    // the owners keep theirs, and it then gets its share like any new member.
    let mut zombie = lost;
    zombie.generation = 1;
    g.add(zombie.clone());
    g.settle(&[]);
    let z = g.members.iter().position(|m| m.id == zombie.id).unwrap();
    assert!(!g.plan.assignments[z].assigned.is_empty());
}
