//! Tests of the console's model: snapshots diffed into rebalances, moves, unowned times and
//! failovers, and tasks' states merged from `/status`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::group_view::MemberView;

const T0_MS: u64 = 1_000_000;

fn view(state: &str, generation: Option<i32>, members: &[(&str, &[&str])]) -> GroupView {
    GroupView {
        group: "g".into(),
        state: state.into(),
        generation,
        protocol_type: Some("kroupier".into()),
        protocol: Some("sticky".into()),
        leader: members.first().map(|(id, _)| format!("m-{id}")),
        members: members
            .iter()
            .map(|(id, tasks)| MemberView {
                member_id: format!("m-{id}"),
                instance_id: None,
                client_id: String::new(),
                host: "/127.0.0.1".into(),
                tasks: Some(tasks.iter().map(|t| t.to_string()).collect()),
                worker_id: Some(id.to_string()),
            })
            .collect(),
        unplaced: Default::default(),
    }
}

fn addrs(names: &[&str]) -> BTreeMap<String, String> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), format!("127.0.0.1:{}", 9000 + i)))
        .collect()
}

struct Clock(Instant);

impl Clock {
    fn at(&self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms)
    }
}

fn board() -> (Board, Clock) {
    let t0 = Instant::now();
    (Board::new("g", "localhost:9092", (t0, T0_MS)), Clock(t0))
}

#[test]
fn a_kill_shows_as_a_failover_a_rebalance_and_moves_with_unowned_times() {
    let (mut board, clock) = board();
    let before = view("Stable", Some(1), &[("a", &["t0", "t1"]), ("b", &["t2"])]);
    board.observe(clock.at(0), before, addrs(&["a", "b"]));
    assert!(
        board.snapshot(clock.at(0)).timeline.is_empty(),
        "first sight is no rebalance"
    );

    // a dies: its status API refuses at 100 ms; the group rebalances at 250 ms.
    board.probed(clock.at(100), "a", Probe::Refused);
    let snap = board.snapshot(clock.at(100));
    assert_eq!(snap.failovers.len(), 1);
    assert_eq!(snap.failovers[0].worker, "a");
    assert_eq!(snap.failovers[0].detected_ms, T0_MS + 100);
    assert_eq!(snap.failovers[0].failover_ms, None);

    board.observe(
        clock.at(250),
        view("PreparingRebalance", None, &[("b", &[])]),
        addrs(&["b"]),
    );
    let snap = board.snapshot(clock.at(400));
    assert_eq!(snap.unplaced.len(), 3, "no assignments shown mid-rebalance");
    assert_eq!(
        snap.unplaced[0].unowned_ms, 300,
        "t0 unowned since a's refused probe"
    );
    assert_eq!(
        snap.unplaced[2].unowned_ms, 150,
        "t2 since the rebalance hid it"
    );
    assert!(snap.unplaced[0].reason.contains("rebalancing"));
    assert_eq!(snap.timeline.len(), 1);
    assert_eq!(snap.timeline[0].ended_ms, None, "still open");

    let after = view("Stable", Some(2), &[("b", &["t0", "t1", "t2"])]);
    board.observe(clock.at(1_250), after, addrs(&["b"]));
    let snap = board.snapshot(clock.at(1_250));
    assert!(snap.unplaced.is_empty());
    let rebalance = &snap.timeline[0];
    assert_eq!(rebalance.started_ms, T0_MS + 250);
    assert_eq!(rebalance.ended_ms, Some(T0_MS + 1_250));
    assert_eq!(
        (rebalance.from_generation, rebalance.generation),
        (Some(1), Some(2))
    );
    assert_eq!(rebalance.left, vec!["a".to_string()]);
    assert!(rebalance.joined.is_empty());
    assert_eq!(rebalance.moved, 2, "t2 stayed on b");
    assert_eq!(
        rebalance.moves,
        vec![
            MoveView {
                task: "t0".into(),
                from: "a".into(),
                to: "b".into(),
                unowned_ms: 1_150
            },
            MoveView {
                task: "t1".into(),
                from: "a".into(),
                to: "b".into(),
                unowned_ms: 1_150
            },
        ]
    );
    let failover = &snap.failovers[0];
    assert_eq!(failover.tasks, 2);
    assert_eq!(failover.done_ms, Some(T0_MS + 1_250));
    assert_eq!(
        failover.failover_ms,
        Some(1_150),
        "from the refused probe to the tasks owned"
    );
    assert_eq!(snap.workers.len(), 1);
    assert_eq!(snap.workers[0].tasks.len(), 3);
}

#[test]
fn a_worker_that_leaves_without_a_probe_is_noticed_by_the_stable_snapshot() {
    let (mut board, clock) = board();
    board.observe(
        clock.at(0),
        view("Stable", Some(3), &[("a", &["t0"]), ("b", &["t1"])]),
        addrs(&[]),
    );
    // The rebalance happened between two polls: straight to the next generation.
    board.observe(
        clock.at(250),
        view("Stable", Some(4), &[("b", &["t0", "t1"])]),
        addrs(&[]),
    );
    let snap = board.snapshot(clock.at(250));
    assert_eq!(snap.timeline.len(), 1);
    assert_eq!(
        snap.timeline[0].moves[0].unowned_ms, 0,
        "handed over between two polls"
    );
    assert_eq!(snap.failovers.len(), 1);
    assert_eq!(snap.failovers[0].via, "left the group");
    assert_eq!(snap.failovers[0].failover_ms, Some(0));
    assert_eq!(
        snap.failovers[0].last_seen_ms, T0_MS,
        "it died within the 250 ms between two polls"
    );
}

#[test]
fn a_joining_worker_is_listed_and_a_quiet_group_makes_no_rebalance() {
    let (mut board, clock) = board();
    let one = view("Stable", Some(1), &[("a", &["t0", "t1"])]);
    board.observe(clock.at(0), one.clone(), addrs(&[]));
    board.observe(clock.at(250), one, addrs(&[]));
    assert!(board.snapshot(clock.at(250)).timeline.is_empty());
    board.observe(
        clock.at(500),
        view("Stable", Some(2), &[("a", &["t0"]), ("c", &["t1"])]),
        addrs(&[]),
    );
    let snap = board.snapshot(clock.at(500));
    assert_eq!(snap.timeline.len(), 1);
    assert_eq!(snap.timeline[0].joined, vec!["c".to_string()]);
    assert_eq!(snap.timeline[0].moved, 1);
    assert!(snap.failovers.is_empty(), "nobody left");
}

#[test]
fn a_rebalance_that_changes_nothing_is_dropped() {
    let (mut board, clock) = board();
    let one = view("Stable", Some(1), &[("a", &["t0"])]);
    board.observe(clock.at(0), one.clone(), addrs(&[]));
    board.observe(
        clock.at(250),
        view("CompletingRebalance", Some(1), &[("a", &[])]),
        addrs(&[]),
    );
    board.observe(clock.at(500), one, addrs(&[]));
    assert!(board.snapshot(clock.at(500)).timeline.is_empty());
}

#[test]
fn task_states_come_from_status_and_leaving_tasks_stay_visible() {
    let (mut board, clock) = board();
    board.observe(
        clock.at(0),
        view("Stable", Some(1), &[("a", &["t0", "t1"])]),
        addrs(&["a"]),
    );
    let status = json!({
        "worker_id": "a", "rebalancing": false,
        "tasks": [
            {"task_id": "t0", "state": "RUNNING", "restarts": 0, "owner": "a"},
            {"task_id": "t1", "state": "FAILED", "restarts": 3, "last_error": "boom", "owner": "a"},
            {"task_id": "t9", "state": "STOPPING", "restarts": 0, "owner": "a"}
        ]
    });
    board.probed(clock.at(10), "a", Probe::Status(status.clone()));
    let snap = board.snapshot(clock.at(10));
    let worker = &snap.workers[0];
    assert!(worker.leader);
    assert_eq!(worker.probe, "ok");
    assert_eq!(worker.status_addr.as_deref(), Some("127.0.0.1:9000"));
    let cells: Vec<(&str, &str, bool)> = worker
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.state.as_str(), t.leaving))
        .collect();
    assert_eq!(
        cells,
        vec![
            ("t0", "RUNNING", false),
            ("t1", "FAILED", false),
            ("t9", "STOPPING", true)
        ]
    );
    assert_eq!(worker.tasks[1].last_error.as_deref(), Some("boom"));
    assert_eq!(worker.tasks[1].restarts, 3);
    assert_eq!(board.status_of("a"), Some(&status));
    board.probed(clock.at(20), "a", Probe::Failed("401 Unauthorized".into()));
    let snap = board.snapshot(clock.at(20));
    assert_eq!(
        snap.workers[0].tasks[0].state, "ASSIGNED",
        "state unknown without /status"
    );
    assert_eq!(snap.workers[0].probe, "401 Unauthorized");
}

#[test]
fn generated_tasks_name_their_generator_from_a_workers_task_list() {
    let (mut board, clock) = board();
    board.observe(
        clock.at(0),
        view(
            "Stable",
            Some(1),
            &[("a", &["inbox", "inbox.a"]), ("b", &["inbox.b", "solo"])],
        ),
        addrs(&["a", "b"]),
    );
    board.lineage(&json!({
        "worker_id": "a",
        "tasks": [
            {"id": "inbox", "generated_by": null},
            {"id": "inbox.a", "generated_by": "inbox"},
            {"id": "inbox.b", "generated_by": "inbox"},
            {"id": "solo"}
        ]
    }));
    let snap = board.snapshot(clock.at(10));
    let parents: Vec<(&str, Option<&str>)> = snap
        .workers
        .iter()
        .flat_map(|w| w.tasks.iter())
        .map(|t| (t.id.as_str(), t.parent.as_deref()))
        .collect();
    assert_eq!(
        parents,
        vec![
            ("inbox", None),
            ("inbox.a", Some("inbox")),
            ("inbox.b", Some("inbox")),
            ("solo", None)
        ]
    );
    // The next answer replaces the last: a child no longer declared has no parent shown.
    board.lineage(&json!({"tasks": [{"id": "inbox.a", "generated_by": "inbox"}]}));
    let snap = board.snapshot(clock.at(20));
    assert_eq!(snap.workers[1].tasks[0].parent, None);
}

#[test]
fn a_worker_back_under_the_same_id_ends_its_failover() {
    let (mut board, clock) = board();
    board.observe(
        clock.at(0),
        view("Stable", Some(1), &[("a", &["t0"])]),
        addrs(&["a"]),
    );
    board.probed(clock.at(100), "a", Probe::Refused);
    assert_eq!(board.snapshot(clock.at(100)).failovers.len(), 1);
    board.probed(clock.at(200), "a", Probe::Status(json!({"tasks": []})));
    assert!(board.snapshot(clock.at(200)).failovers.is_empty());
}

#[test]
fn tasks_the_leader_could_place_nowhere_are_unplaced_with_its_reason() {
    let (mut board, clock) = board();
    let mut group = view("Stable", Some(1), &[("a", &["t0"])]);
    group.unplaced = BTreeMap::from([(
        "no_eligible_member".to_owned(),
        std::collections::BTreeSet::from(["orphan".to_owned()]),
    )]);
    board.observe(clock.at(0), group, addrs(&[]));
    let snap = board.snapshot(clock.at(10));
    assert_eq!(snap.unplaced.len(), 1);
    assert_eq!(snap.unplaced[0].id, "orphan");
    assert!(
        snap.unplaced[0]
            .reason
            .contains("no worker registers its kind"),
        "{}",
        snap.unplaced[0].reason
    );
    assert_eq!(snap.owned, 1);
}

#[test]
fn unplaced_tasks_name_the_owner_that_left() {
    let (mut board, clock) = board();
    board.observe(
        clock.at(0),
        view("Stable", Some(1), &[("a", &["t0"]), ("b", &["t1"])]),
        addrs(&[]),
    );
    board.observe(
        clock.at(250),
        view("Stable", Some(2), &[("b", &["t1"])]),
        addrs(&[]),
    );
    let snap = board.snapshot(clock.at(300));
    assert_eq!(snap.unplaced.len(), 1);
    assert_eq!(snap.unplaced[0].id, "t0");
    assert!(
        snap.unplaced[0].reason.contains("a left"),
        "{}",
        snap.unplaced[0].reason
    );
    assert_eq!(snap.owned, 1);
}

#[test]
fn history_is_capped() {
    let (mut board, clock) = board();
    for g in 0..(HISTORY as i32 + 10) {
        let members: [(&str, &[&str]); 2] = if g % 2 == 0 {
            [("a", &["t0"]), ("b", &[])]
        } else {
            [("a", &[]), ("b", &["t0"])]
        };
        board.observe(
            clock.at(g as u64 * 250),
            view("Stable", Some(g), &members),
            addrs(&[]),
        );
    }
    let snap = board.snapshot(clock.at(100_000));
    assert_eq!(snap.timeline.len(), HISTORY);
    assert_eq!(
        snap.timeline[0].generation,
        Some(HISTORY as i32 + 9),
        "newest first"
    );
}

#[test]
fn a_dead_worker_still_listed_holds_nothing_from_its_refused_probe_on() {
    let (mut board, clock) = board();
    let both = view("Stable", Some(1), &[("a", &["t0"]), ("b", &["t1"])]);
    board.observe(clock.at(0), both.clone(), addrs(&["a", "b"]));
    board.probed(clock.at(100), "a", Probe::Refused);
    // Without fast failover the coordinator lists a until its session expires.
    board.observe(clock.at(2_000), both, addrs(&["a", "b"]));
    let snap = board.snapshot(clock.at(2_000));
    assert_eq!(snap.unplaced.len(), 1);
    assert_eq!(snap.unplaced[0].unowned_ms, 1_900);
    assert!(
        snap.unplaced[0].reason.contains("a is gone"),
        "{}",
        snap.unplaced[0].reason
    );
    assert_eq!(snap.workers[0].probe, "refused");
    board.observe(
        clock.at(3_100),
        view("Stable", Some(2), &[("b", &["t0", "t1"])]),
        addrs(&["b"]),
    );
    let snap = board.snapshot(clock.at(3_100));
    assert_eq!(snap.timeline[0].moves[0].unowned_ms, 3_000);
    assert_eq!(snap.failovers[0].failover_ms, Some(3_000));
}
