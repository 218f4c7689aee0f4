//! Fast failover end to end, with Kafka's default session timeout (10 s) and heartbeat
//! interval (3 s): `quickstart` workers watch each other's status APIs, remove a peer whose
//! process provably ended, and tell each other to rejoin at once.
//!
//! - **SIGKILL a worker**: its tasks run elsewhere in well under a heartbeat interval.
//! - **SIGKILL the leader**: the same.
//! - **SIGKILL a static worker**: the same; the LeaveGroup names its `group.instance.id`.
//! - **SIGTERM a static worker**: it keeps its place (Kafka's static membership): nothing moves
//!   while it restarts.
//! - **SIGKILL two workers at once**: the same, for both.
//! - **SIGTERM a worker**: its tasks run elsewhere at once (its peers rejoin on its hint).
//! - **A worker joins**: it holds its share without waiting for the members' heartbeats.
//! - **SIGSTOP a worker past its session**: nothing proves it dead, so nobody removes it early;
//!   its tasks move only once its session expires, and after SIGCONT no task ran twice.
//!
//! More faults — three neighbours of a ring killed together, a worker cut off from Kafka, 100
//! workers with churn — are in `failover_faults.rs`.
//!
//! Every test checks the task journals for overlaps. Runs against Kafka or the embedded
//! coordinator through `KROUPIER_KAFKA_BOOTSTRAP`; needs the example built (`cargo build -p
//! kroupier-examples`). Prints `MEASURE name=ms` lines.

use std::time::Duration;

use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::{
    Group, TempDir, Worker, assert_no_overlap, journals, leader_index, moved_after, poll,
    settled_generation, slowest_move, tasks_of, wait_balanced, wait_balanced_since,
};

const TASKS: usize = 12;
/// Kafka's default session timeout.
const SESSION_MS: u64 = 10_000;
/// Kafka's default heartbeat interval.
const HEARTBEAT_MS: u64 = 3_000;
/// How soon a crashed worker's tasks must run elsewhere: one heartbeat interval, a third of
/// the session timeout that bounds it without fast failover (measured: a few hundred ms).
const FAST_BOUND_MS: u64 = 3_000;

/// `count` workers `w1` .. of a fresh group with Kafka's default timeouts, balanced and
/// settled (every peer watches the others from the last assignment on).
fn start_group(bootstrap: &str, name: &str, count: usize) -> (TempDir, Group, Vec<Worker>) {
    start_group_with(bootstrap, name, count, &[])
}

/// [`start_group`] with more quickstart flags.
fn start_group_with(
    bootstrap: &str,
    name: &str,
    count: usize,
    extra: &[&str],
) -> (TempDir, Group, Vec<Worker>) {
    let dir = TempDir::new(name);
    let mut group = Group::new(bootstrap, name, TASKS, &dir.0);
    group.session_ms = SESSION_MS;
    group.heartbeat_ms = HEARTBEAT_MS;
    group.extra = extra.iter().map(|s| (*s).to_owned()).collect();
    let workers = (1..=count).map(|n| group.start(&format!("w{n}"))).collect();
    wait_balanced(&dir.0, TASKS, count);
    settled_generation(&dir.0);
    // The peers' links open right after the last assignment (after a DescribeGroups): give a
    // loaded machine time for that. A static peer that ends before it is linked keeps its place.
    std::thread::sleep(Duration::from_millis(1_500));
    (dir, group, workers)
}

/// Kills the workers at `victims` with `signal`, and returns how long until all their tasks
/// ran elsewhere, in ms.
fn failover(dir: &TempDir, workers: &mut Vec<Worker>, victims: &[usize], signal: Signal) -> u64 {
    let owners = wait_balanced(&dir.0, TASKS, workers.len());
    let chosen: Vec<(String, Vec<String>)> = victims
        .iter()
        .map(|i| (workers[*i].id.clone(), tasks_of(&owners, &workers[*i].id)))
        .collect();
    let at = unix_ms();
    for i in victims {
        workers[*i].process.signal(signal);
    }
    let moved = slowest_move(&dir.0, &chosen, at, FAST_BOUND_MS);
    let gone: Vec<String> = chosen.into_iter().map(|(id, _)| id).collect();
    workers.retain(|w| !gone.contains(&w.id));
    wait_balanced_since(&dir.0, TASKS, workers.len(), at);
    assert_no_overlap(&dir.0);
    moved
}

#[test]
fn a_killed_worker_s_tasks_run_elsewhere_well_within_a_heartbeat() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGKILL") else {
        return;
    };
    let (dir, _group, mut workers) = start_group(&bootstrap, "ff-kill", 3);
    let leader = leader_index(&mut workers);
    let victim = (leader + 1) % workers.len();
    let moved = failover(&dir, &mut workers, &[victim], Signal::Kill);
    println!("MEASURE fast_sigkill_running_elsewhere_ms={moved}");
    assert!(moved < FAST_BOUND_MS, "moved after {moved} ms");
}

#[test]
fn a_killed_leader_s_tasks_run_elsewhere_well_within_a_heartbeat() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGKILL the leader") else {
        return;
    };
    let (dir, _group, mut workers) = start_group(&bootstrap, "ff-leader", 3);
    let leader = leader_index(&mut workers);
    let moved = failover(&dir, &mut workers, &[leader], Signal::Kill);
    println!("MEASURE fast_sigkill_leader_running_elsewhere_ms={moved}");
    assert!(moved < FAST_BOUND_MS, "moved after {moved} ms");
}

#[test]
fn a_killed_static_worker_is_removed_by_its_instance_id_at_once() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGKILL a static worker") else {
        return;
    };
    // LeaveGroup naming a static member carries its group.instance.id: without fast failover
    // Kafka would keep its place (and its tasks) for the whole session.
    let (dir, _group, mut workers) = start_group_with(&bootstrap, "ff-static", 3, &["--static"]);
    let moved = failover(&dir, &mut workers, &[2], Signal::Kill);
    println!("MEASURE fast_sigkill_static_running_elsewhere_ms={moved}");
    assert!(moved < FAST_BOUND_MS, "moved after {moved} ms");
}

#[test]
fn a_static_worker_that_stops_in_order_keeps_its_place() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGTERM a static worker") else {
        return;
    };
    // Kafka keeps a static member's place through a restart; its peers see its process end,
    // but its links said it stopped in order, so nobody removes it.
    let (dir, group, mut workers) =
        start_group_with(&bootstrap, "ff-static-term", 3, &["--static"]);
    let owners = wait_balanced(&dir.0, TASKS, 3);
    let mut victim = workers.remove(2);
    let held = tasks_of(&owners, &victim.id);
    let at = unix_ms();
    victim.process.signal(Signal::Term);
    let _ = victim.process.wait();
    std::thread::sleep(Duration::from_millis(2_000));
    let all = journals(&dir.0);
    let moved: Vec<&String> = held
        .iter()
        .filter(|task| {
            all[*task]
                .iter()
                .any(|b| b.worker != victim.id && b.unix_ms > at)
        })
        .collect();
    assert!(
        moved.is_empty(),
        "a static worker's tasks moved while it restarted: {moved:?}"
    );
    // It comes back and takes them again.
    workers.push(group.start(&victim.id));
    wait_balanced_since(&dir.0, TASKS, 3, unix_ms());
    assert_no_overlap(&dir.0);
}

#[test]
fn two_workers_killed_at_once_are_both_replaced_well_within_a_heartbeat() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGKILL two") else {
        return;
    };
    let (dir, _group, mut workers) = start_group(&bootstrap, "ff-two", 4);
    let moved = failover(&dir, &mut workers, &[1, 2], Signal::Kill);
    println!("MEASURE fast_sigkill_two_running_elsewhere_ms={moved}");
    assert!(moved < FAST_BOUND_MS, "moved after {moved} ms");
}

#[test]
fn a_terminated_worker_s_tasks_run_elsewhere_at_once_and_a_joiner_gets_its_share() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGTERM and join") else {
        return;
    };
    let (dir, group, mut workers) = start_group(&bootstrap, "ff-term", 3);
    let moved = failover(&dir, &mut workers, &[1], Signal::Term);
    println!("MEASURE fast_sigterm_running_elsewhere_ms={moved}");
    assert!(moved < FAST_BOUND_MS, "moved after {moved} ms");

    // A new worker gets its share without the members waiting for their heartbeats (two
    // cooperative rounds: 6 s and more without the hints).
    settled_generation(&dir.0);
    std::thread::sleep(Duration::from_millis(500));
    let at = unix_ms();
    workers.push(group.start("w4"));
    let started = unix_ms() - at;
    let balanced = poll(Duration::from_secs(10), || {
        let all = journals(&dir.0);
        let runs = all
            .values()
            .filter(|beats| beats.iter().any(|b| b.worker == "w4" && b.unix_ms > at))
            .count();
        (runs >= TASKS / 3).then(unix_ms)
    })
    .expect("the joiner gets its share")
        - at;
    println!("MEASURE fast_join_share_ms={balanced} fast_join_process_started_ms={started}");
    assert!(
        balanced < FAST_BOUND_MS + started,
        "the joiner's share after {balanced} ms"
    );
    wait_balanced_since(&dir.0, TASKS, 3, at);
    assert_no_overlap(&dir.0);
}

#[test]
fn a_paused_worker_is_never_removed_before_its_session() {
    let Some(bootstrap) = kafka_bootstrap("fast failover: SIGSTOP") else {
        return;
    };
    let (dir, _group, workers) = start_group(&bootstrap, "ff-pause", 3);
    let owners = wait_balanced(&dir.0, TASKS, 3);
    let victim = &workers[1];
    let held = tasks_of(&owners, &victim.id);
    let at = unix_ms();
    victim.process.signal(Signal::Stop);
    // Its last heartbeat was at most one interval before the pause: no task of it may run
    // elsewhere before its session could have expired.
    let moved = moved_after(&dir.0, &held, &victim.id, at, SESSION_MS + 5_000);
    victim.process.signal(Signal::Cont);
    println!("MEASURE fast_sigstop_running_elsewhere_ms={moved}");
    assert!(
        moved >= SESSION_MS - HEARTBEAT_MS,
        "a paused worker's tasks moved after {moved} ms, before its session expired"
    );
    // It wakes up fenced, rejoins, and the group balances again without any overlap.
    wait_balanced_since(&dir.0, TASKS, 3, unix_ms());
    assert_no_overlap(&dir.0);
    drop(workers);
}
