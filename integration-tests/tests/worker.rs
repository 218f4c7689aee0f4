//! The worker runtime through the `quickstart` example: real processes in a real Kafka group,
//! with the task journals as the witness that no task ever runs on two workers at once.
//!
//! Every test uses its own group and journal directory, so they run concurrently. Timeouts:
//! session 3 s, heartbeat 500 ms (the static-membership test: session 6 s, heartbeat 1 s, so a
//! restart fits in a session). Needs the example built (`scripts/test` builds all targets;
//! locally `cargo build -p kroupier-examples`). Prints `MEASURE name=ms` lines.

use std::collections::BTreeSet;
use std::time::Duration;

use kroupier_integration_tests::journal::{self, Beat, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::*;
use serde_json::Value;

#[test]
fn three_workers_run_every_task_once_and_a_fourth_gets_its_share_without_stopping_others() {
    let Some(bootstrap) = kafka_bootstrap("worker: three workers, then a fourth") else {
        return;
    };
    let dir = TempDir::new("join");
    let group = Group::new(&bootstrap, "worker-join", 12, &dir.0);
    let mut workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    let before = wait_balanced(&dir.0, 12, 3);
    assert!(counts(&before).values().all(|&n| n == 4), "{before:?}");

    let joined_ms = unix_ms();
    workers.push(group.start("w4"));
    let after = wait_balanced(&dir.0, 12, 4);
    let counts_after = counts(&after);
    assert!(
        counts_after.values().all(|&n| n == 3),
        "not balanced: {counts_after:?}"
    );
    println!(
        "MEASURE join_to_balanced_ms={}",
        unix_ms().saturating_sub(joined_ms)
    );
    // Let the unmoved tasks beat on for a while, then look at their journals.
    std::thread::sleep(Duration::from_millis(1_000));
    let all = journals(&dir.0);
    let unmoved: Vec<&String> = after
        .iter()
        .filter(|(task, worker)| before.get(*task) == Some(worker))
        .map(|(task, _)| task)
        .collect();
    assert_eq!(unmoved.len(), 9, "exactly the 3 tasks for w4 move");
    for task in &unmoved {
        let gap = journal::longest_unowned(&all[*task], joined_ms.saturating_sub(1_000));
        assert!(gap < 1_000, "{task} did not move but stopped for {gap} ms");
    }
    for worker in &mut workers {
        worker.drain();
        let since_join = |v: &&Value| v["ts_ms"].as_u64() >= Some(joined_ms);
        for line in worker
            .seen
            .iter()
            .filter(|v| v["event"] == "assigned")
            .filter(since_join)
        {
            let stopped = line["stopped"].as_array().expect("stopped");
            for task in &unmoved {
                assert!(
                    !stopped.iter().any(|t| t == task.as_str()),
                    "{} stopped {task}, which did not move: {:#?}",
                    worker.id,
                    worker.seen
                );
            }
        }
    }
    assert_no_overlap(&dir.0);
}

/// How many times each fault is applied in one test (each to the group as the last one left it).
const ROUNDS: usize = 2;

#[test]
fn a_killed_workers_tasks_run_elsewhere_within_session_plus_two_heartbeats() {
    let Some(bootstrap) = kafka_bootstrap("worker: SIGKILL") else {
        return;
    };
    let dir = TempDir::new("kill");
    let group = Group::new(&bootstrap, "worker-kill", 12, &dir.0);
    let mut workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    let mut since = 0;
    for round in 1..=ROUNDS {
        let owners = wait_balanced_since(&dir.0, 12, 3, since);
        // A follower or the leader: whichever joined second among the living.
        let victim = workers.remove(1);
        let moved = tasks_of(&owners, &victim.id);
        let killed_ms = unix_ms();
        victim.process.signal(Signal::Kill);
        let bound = SESSION_MS + 2 * HEARTBEAT_MS + SLACK_MS;
        let latency = moved_after(&dir.0, &moved, &victim.id, killed_ms, bound);
        println!(
            "MEASURE kill_round{round}_to_running_elsewhere_ms={latency} (session {SESSION_MS} ms, \
             heartbeat {HEARTBEAT_MS} ms)"
        );
        assert!(
            latency <= bound,
            "round {round}: took {latency} ms, bound {bound} ms"
        );
        wait_balanced_since(&dir.0, 12, 2, killed_ms);
        assert_no_overlap(&dir.0);
        workers.push(group.start(&format!("w{}", 3 + round)));
        since = unix_ms();
    }
    wait_balanced_since(&dir.0, 12, 3, since);
    assert_no_overlap(&dir.0);
}

#[test]
fn a_terminated_workers_tasks_run_elsewhere_within_two_seconds() {
    let Some(bootstrap) = kafka_bootstrap("worker: SIGTERM") else {
        return;
    };
    let dir = TempDir::new("term");
    let group = Group::new(&bootstrap, "worker-term", 12, &dir.0);
    let mut workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    let mut since = 0;
    for round in 1..=ROUNDS {
        let owners = wait_balanced_since(&dir.0, 12, 3, since);
        let mut leaving = workers.remove(2);
        let moved = tasks_of(&owners, &leaving.id);
        let termed_ms = unix_ms();
        leaving.process.signal(Signal::Term);
        let latency = moved_after(&dir.0, &moved, &leaving.id, termed_ms, 2_000);
        println!("MEASURE leave_round{round}_to_running_elsewhere_ms={latency}");
        assert!(
            latency <= 2_000,
            "round {round}: took {latency} ms, bound 2000 ms"
        );
        assert_eq!(leaving.process.wait(), Some(0), "exit code after SIGTERM");
        wait_balanced_since(&dir.0, 12, 2, termed_ms);
        assert_no_overlap(&dir.0);
        workers.push(group.start(&format!("w{}", 3 + round)));
        since = unix_ms();
    }
    wait_balanced_since(&dir.0, 12, 3, since);
    assert_no_overlap(&dir.0);
}

#[test]
fn a_rolling_restart_of_static_workers_moves_nothing() {
    let Some(bootstrap) = kafka_bootstrap("worker: static rolling restart") else {
        return;
    };
    let dir = TempDir::new("static");
    let mut group = Group::new(&bootstrap, "worker-static", 12, &dir.0);
    group.session_ms = 6_000;
    group.heartbeat_ms = 1_000;
    group.extra.push("--static".into());
    let ids = ["w1", "w2", "w3"];
    let mut workers: Vec<Worker> = ids.iter().map(|id| group.start(id)).collect();
    let before = wait_balanced(&dir.0, 12, 3);
    let generations = BTreeSet::from([settled_generation(&dir.0)]);
    assert_eq!(wait_balanced(&dir.0, 12, 3), before);

    for (i, id) in ids.iter().enumerate() {
        let stopped_ms = unix_ms();
        workers[i].process.signal(Signal::Term);
        assert_eq!(workers[i].process.wait(), Some(0), "{id} exit code");
        let restarted_ms = unix_ms();
        workers[i] = group.start(id);
        let assigned = workers[i]
            .wait_line(Duration::from_secs(10), |v| v["event"] == "assigned")
            .unwrap_or_else(|| panic!("{id} got no assignment after its restart"));
        assert_eq!(
            BTreeSet::from([assigned["generation"].as_i64().expect("generation") as i32]),
            generations,
            "{id} came back in another generation"
        );
        // Back on its own tasks, in the same generation: nothing moved, no rebalance.
        let owners = wait_balanced_since(&dir.0, 12, 3, restarted_ms);
        assert_eq!(owners, before, "a task moved when {id} restarted");
        // Down for about one process restart: the handover note spares the takeover's wait.
        let all = journals(&dir.0);
        let down = tasks_of(&before, id)
            .iter()
            .map(|task| journal::longest_unowned(&all[task], stopped_ms.saturating_sub(200)))
            .max()
            .unwrap_or(0);
        println!("MEASURE static_restart_{id}_tasks_down={down}");
        assert!(
            down < group.session_ms,
            "{id}'s tasks were down {down} ms: the restart waited out a session"
        );
        assert_eq!(
            recent_generations(&dir.0),
            generations,
            "a rebalance happened"
        );
    }
    assert_no_overlap(&dir.0);
}

#[test]
fn a_frozen_worker_fences_itself_and_rejoins_without_overlap() {
    let Some(bootstrap) = kafka_bootstrap("worker: SIGSTOP") else {
        return;
    };
    let dir = TempDir::new("stop");
    let group = Group::new(&bootstrap, "worker-stop", 12, &dir.0);
    let mut workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    let mut since = 0;
    for (round, frozen) in (1..=ROUNDS).zip(0..) {
        let owners = wait_balanced_since(&dir.0, 12, 3, since);
        let held = tasks_of(&owners, &workers[frozen].id);
        let generation = settled_generation(&dir.0);

        let stopped_ms = unix_ms();
        workers[frozen].process.signal(Signal::Stop);
        // Beats stamped before the signal arrived are fine; none may come after it.
        let frozen_ms = unix_ms();
        std::thread::sleep(Duration::from_millis(2 * SESSION_MS));
        // Meanwhile the others took its tasks over.
        moved_after(&dir.0, &held, &workers[frozen].id, stopped_ms, 0);
        workers[frozen].process.signal(Signal::Cont);

        let lost = workers[frozen]
            .wait_line(Duration::from_secs(5), |v| {
                v["event"] == "lost" && v["generation"].as_i64() >= Some(i64::from(generation))
            })
            .unwrap_or_else(|| {
                panic!("round {round}: the frozen worker reports that it lost its membership")
            });
        // The generation it held, or one it was joining when it froze.
        let lost_generation = lost["generation"].as_i64().expect("lost generation") as i32;
        workers[frozen]
            .wait_line(Duration::from_secs(15), |v| {
                v["event"] == "assigned"
                    && v["generation"].as_i64() > Some(i64::from(lost_generation))
            })
            .unwrap_or_else(|| panic!("round {round}: the frozen worker rejoins"));
        since = unix_ms();
        wait_balanced_since(&dir.0, 12, 3, since);
        // Nothing written by the frozen worker in its old generation after the freeze.
        for (task, beats) in journals(&dir.0) {
            let late: Vec<&Beat> = beats
                .iter()
                .filter(|b| {
                    b.worker == workers[frozen].id
                        && b.generation <= lost_generation
                        && b.unix_ms > frozen_ms
                })
                .collect();
            assert!(
                late.is_empty(),
                "round {round}: {task}: beats after the freeze: {late:?}"
            );
        }
        assert_no_overlap(&dir.0);
    }
}

#[test]
fn a_panicking_task_restarts_with_backoff_then_is_failed_in_status() {
    let Some(bootstrap) = kafka_bootstrap("worker: panicking task") else {
        return;
    };
    let dir = TempDir::new("panic");
    let mut group = Group::new(&bootstrap, "worker-panic", 3, &dir.0);
    group.extra = [
        "--panic-task",
        "task-1",
        "--max-attempts",
        "3",
        "--restart-backoff-ms",
        "100",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let worker = group.start("w1");
    let task = poll(Duration::from_secs(20), || {
        let status: Value = serde_json::from_str(&worker.get("/status")).ok()?;
        let task = status["tasks"]
            .as_array()?
            .iter()
            .find(|t| t["task_id"] == "task-1")?
            .clone();
        (task["state"] == "FAILED").then_some(task)
    })
    .expect("task-1 becomes FAILED");
    assert_eq!(task["restarts"], 2, "{task}");
    let error = task["last_error"].as_str().expect("last error");
    assert!(error.contains("panicked"), "{error}");
    let status: Value = serde_json::from_str(&worker.get("/status")).expect("status JSON");
    for other in ["task-0", "task-2"] {
        let state = status["tasks"]
            .as_array()
            .and_then(|tasks| tasks.iter().find(|t| t["task_id"] == other))
            .map(|t| t["state"].clone());
        assert_eq!(state, Some(Value::from("RUNNING")), "{other}");
    }
    let metrics = worker.get("/metrics");
    assert!(
        metrics.contains("kroupier_tasks{state=\"FAILED\"} 1"),
        "{metrics}"
    );
}
