//! The `active_standby` example (Kafka Monitor's HA mode), three instances against real Kafka
//! (or the embedded coordinator): one active instance runs the probe, never two at once (from
//! the probe's journal and from the printed roles); the active role moves within session
//! timeout + 2 heartbeat intervals after the active instance's SIGKILL, and within 1 s after
//! its SIGTERM; with `--fast-failover` at Kafka's default session (10 s) and heartbeat (3 s),
//! within 1 s after its SIGKILL too.
//!
//! Needs the example built (`cargo build -p kroupier-examples`). Prints `MEASURE name=ms`
//! lines.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::roles::{self, Line, Lines, settled};

const SESSION_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;
const PROBE_MS: u64 = 100;
/// The bound for a failover after a crash.
const KILL_BOUND_MS: u64 = SESSION_MS + 2 * HEARTBEAT_MS;
/// The bound for a failover after a graceful stop.
const TERM_BOUND_MS: u64 = 1_000;
/// The bound for a failover after a crash with fast failover: well under the session, so a
/// takeover that waited for Kafka's session fails it.
const FAST_KILL_BOUND_MS: u64 = 1_000;
/// Kafka's defaults (`session.timeout.ms` before 3.0, `heartbeat.interval.ms`): the fast
/// scenario runs at them, where only a proof can make a failover fast.
const DEFAULT_SESSION: (u64, u64) = (10_000, 3_000);

struct Instances {
    processes: Vec<Process>,
    lines: Lines,
}

impl Instances {
    fn start(
        bootstrap: &str,
        group: &str,
        ids: &[&str],
        journal_dir: &Path,
        session: (u64, u64),
        extra: &[&str],
    ) -> Self {
        let mut lines = Lines::new();
        let processes = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let args: Vec<String> = [
                    "--bootstrap",
                    bootstrap,
                    "--group",
                    group,
                    "--id",
                    id,
                    "--journal-dir",
                    journal_dir.to_str().expect("a UTF-8 temp dir"),
                    "--probe-interval-ms",
                    &PROBE_MS.to_string(),
                    "--session-timeout-ms",
                    &session.0.to_string(),
                    "--heartbeat-interval-ms",
                    &session.1.to_string(),
                ]
                .iter()
                .chain(extra)
                .map(|s| s.to_string())
                .collect();
                let mut process = Process::spawn("active_standby", &args);
                lines.read(&mut process, i, Some(id));
                process
            })
            .collect();
        Self { processes, lines }
    }
}

/// When `instance` became active at or after `since_ms`.
fn active_since(lines: &[Line], instance: usize, since_ms: u64) -> u64 {
    roles::led_at(lines, instance, since_ms).expect("the new active instance's line")
}

/// The first probe of `id` at or after `since_ms`, waiting up to 2 s for it.
fn first_probe(dir: &Path, id: &str, since_ms: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let journals = journal::read_dir(dir).expect("the probe journal reads");
        let first = journals.get("probe").and_then(|beats| {
            beats
                .iter()
                .filter(|b| b.worker == id && b.unix_ms >= since_ms)
                .map(|b| b.unix_ms)
                .min()
        });
        if let Some(first) = first {
            return first;
        }
        assert!(
            Instant::now() < deadline,
            "{id} never probed after {since_ms}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_active_instance_and_failover_on_kill_and_on_term() {
    let Some(bootstrap) = kafka_bootstrap("one_active_instance_and_failover_on_kill_and_on_term")
    else {
        return;
    };
    scenario(&bootstrap, false);
}

#[test]
fn with_fast_failover_a_killed_active_instance_is_replaced_within_a_second() {
    let Some(bootstrap) =
        kafka_bootstrap("with_fast_failover_a_killed_active_instance_is_replaced_within_a_second")
    else {
        return;
    };
    scenario(&bootstrap, true);
}

/// Three instances: SIGKILL of the active one, then SIGTERM of the next, then of the last;
/// never two actives. With `fast`, the instances run with `--fast-failover`.
fn scenario(bootstrap: &str, fast: bool) {
    let group = format!(
        "kroupier-it-active-standby-{}-{}{}",
        std::process::id(),
        unix_ms(),
        if fast { "-fast" } else { "" }
    );
    let dir: PathBuf = std::env::temp_dir().join(&group);
    let _ = std::fs::remove_dir_all(&dir);
    let ids = ["a", "b", "c"];
    let extra: &[&str] = if fast { &["--fast-failover"] } else { &[] };
    let (kill_bound, name, session) = if fast {
        (FAST_KILL_BOUND_MS, "active_standby_fast", DEFAULT_SESSION)
    } else {
        (KILL_BOUND_MS, "active_standby", (SESSION_MS, HEARTBEAT_MS))
    };
    let mut s = Instances::start(bootstrap, &group, &ids, &dir, session, extra);
    let mut alive = vec![0, 1, 2];
    let mut ends = vec![u64::MAX; 3];

    let active = s
        .lines
        .wait_settled(Duration::from_secs(30), "three instances settle", &alive);
    // Let the active instance probe for a while.
    std::thread::sleep(Duration::from_secs(1));
    let _ = first_probe(&dir, ids[active], 0);

    // SIGKILL the active instance: a standby takes over within session + 2 heartbeats.
    let killed_at = unix_ms();
    s.processes[active].signal(Signal::Kill);
    let _ = s.processes[active].wait();
    // Its reign ends when it died, which is after `killed_at` (the signal takes a moment).
    ends[active] = unix_ms();
    alive.retain(|i| *i != active);
    let next = s.lines.wait_settled(
        Duration::from_millis(kill_bound + 10_000),
        "a standby takes over after SIGKILL",
        &alive,
    );
    let took_over = active_since(&s.lines.seen, next, killed_at) - killed_at;
    let probed = first_probe(&dir, ids[next], killed_at) - killed_at;
    println!("MEASURE {name}_kill_to_active={took_over}ms (bound {kill_bound}ms)");
    println!("MEASURE {name}_kill_to_probe={probed}ms");
    assert!(
        took_over <= kill_bound,
        "active after {took_over} ms, bound {kill_bound} ms"
    );
    std::thread::sleep(Duration::from_secs(1));

    // SIGTERM the active instance: it stops, leaves, and the last one takes over in < 1 s.
    let term_at = unix_ms();
    s.processes[next].signal(Signal::Term);
    assert_eq!(s.processes[next].wait(), Some(0), "exit 0 after SIGTERM");
    ends[next] = unix_ms();
    alive.retain(|i| *i != next);
    let last = alive[0];
    s.lines
        .wait_until(Duration::from_secs(10), "the handover after SIGTERM", |l| {
            l.iter()
                .any(|x| x.process == next && x.event == "lost" && x.ts_ms >= term_at)
                && settled(l, &[last]).is_some()
        });
    let handover = active_since(&s.lines.seen, last, term_at) - term_at;
    let probed = first_probe(&dir, ids[last], term_at) - term_at;
    println!("MEASURE {name}_term_to_active={handover}ms (bound {TERM_BOUND_MS}ms)");
    println!("MEASURE {name}_term_to_probe={probed}ms");
    assert!(
        handover < TERM_BOUND_MS,
        "active after {handover} ms, bound {TERM_BOUND_MS} ms"
    );
    std::thread::sleep(Duration::from_secs(1));
    s.processes[last].signal(Signal::Term);
    assert_eq!(s.processes[last].wait(), Some(0), "exit 0 after SIGTERM");
    ends[last] = unix_ms();
    s.lines.drain(Duration::from_millis(500));

    // Never two actives: from the probe's journal (every probe is checked against the
    // membership before it is written) and from the printed roles.
    let journals = journal::read_dir(&dir).expect("the probe journal reads");
    let beats = &journals["probe"];
    let tenures = journal::tenures(beats, 5 * PROBE_MS);
    println!("tenures: {tenures:#?}");
    let workers: std::collections::BTreeSet<&str> =
        tenures.iter().map(|t| t.worker.as_str()).collect();
    assert_eq!(
        workers.len(),
        3,
        "each instance was active once: {tenures:?}"
    );
    let overlapping = journal::overlaps(&tenures);
    assert!(
        overlapping.is_empty(),
        "two actives at once: {overlapping:?}"
    );
    let reigns = roles::reigns(&s.lines.seen, &ids, &ends);
    let two = journal::two_leaders(&reigns);
    assert!(two.is_empty(), "two actives at once: {two:?}");
    // Every probe lies within its instance's reign.
    for beat in beats {
        assert!(
            reigns.iter().any(|r| r.id == beat.worker
                && r.from_ms <= beat.unix_ms
                && beat.unix_ms <= r.until_ms),
            "a probe outside its instance's active time: {beat:?} reigns {reigns:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
