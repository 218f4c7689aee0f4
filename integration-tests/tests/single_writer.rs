//! The `single_writer` example, four replicas against real Kafka (or the embedded
//! coordinator): writes through a follower land through the writer, reads work on every
//! replica, a new writer accepts writes within session timeout + 2 heartbeat intervals after
//! the writer's SIGKILL, and a writer paused past its session (SIGSTOP, then SIGCONT) refuses
//! writes after it resumes and lands none of its late writes.
//!
//! With `--fast-failover`, at Kafka's default session and heartbeat: SIGKILL of the writer →
//! a write lands through a new writer in milliseconds (`KROUPIER_FAILOVER_ROUNDS` kills,
//! default 3), and SIGSTOP of the writer → no new writer before its session ends.
//!
//! Needs the example built (`cargo build -p kroupier-examples`). Prints `MEASURE name=ms`
//! lines.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::roles::{Lines, assert_one_leader_per_generation};
use serde_json::Value;

const SESSION_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;
/// The bound for a new writer after the writer's death.
const BOUND_MS: u64 = SESSION_MS + 2 * HEARTBEAT_MS;

/// Kafka's defaults (`session.timeout.ms` before 3.0, `heartbeat.interval.ms`), for the
/// fast-failover test.
const DEFAULT_SESSION_MS: u64 = 10_000;
const DEFAULT_HEARTBEAT_MS: u64 = 3_000;
/// A write through a new writer after SIGKILL with fast failover, well under the session:
/// generous, so a busy machine passes.
const FAST_BOUND_MS: u64 = 2_000;

/// How the replicas are started.
struct Settings {
    session_ms: u64,
    heartbeat_ms: u64,
    fast_failover: bool,
}

/// The settings of the test without fast failover.
const SHORT_SESSION: Settings = Settings {
    session_ms: SESSION_MS,
    heartbeat_ms: HEARTBEAT_MS,
    fast_failover: false,
};

struct Replicas {
    ids: Vec<&'static str>,
    processes: Vec<Process>,
    urls: Vec<String>,
    lines: Lines,
    store: PathBuf,
}

impl Replicas {
    /// Starts one replica per `(id, eligible)` and waits for each one's URL.
    fn start(
        bootstrap: &str,
        group: &str,
        replicas: &[(&'static str, bool)],
        settings: &Settings,
    ) -> Self {
        let store = std::env::temp_dir().join(format!("{group}.sqlite"));
        let _ = std::fs::remove_file(&store);
        let mut lines = Lines::new();
        let processes = replicas
            .iter()
            .enumerate()
            .map(|(i, (id, eligible))| {
                let mut args: Vec<String> = [
                    "--bootstrap",
                    bootstrap,
                    "--group",
                    group,
                    "--id",
                    id,
                    "--http",
                    "127.0.0.1:0",
                    "--store",
                    store.to_str().expect("a UTF-8 temp dir"),
                    "--leader-eligible",
                    if *eligible { "true" } else { "false" },
                    "--session-timeout-ms",
                    &settings.session_ms.to_string(),
                    "--heartbeat-interval-ms",
                    &settings.heartbeat_ms.to_string(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                if settings.fast_failover {
                    args.push("--fast-failover".into());
                }
                let mut process = Process::spawn("single_writer", &args);
                lines.read(&mut process, i, Some(id));
                process
            })
            .collect();
        let mut r = Self {
            ids: replicas.iter().map(|(id, _)| *id).collect(),
            processes,
            urls: Vec::new(),
            lines,
            store,
        };
        let n = replicas.len();
        r.lines
            .wait_until(Duration::from_secs(20), "every replica listens", |l| {
                (0..n).all(|i| l.iter().any(|x| x.process == i && x.event == "listening"))
            });
        r.urls = (0..n)
            .map(|i| {
                r.lines
                    .seen
                    .iter()
                    .find(|x| x.process == i && x.event == "listening")
                    .and_then(|x| x.url.clone())
                    .expect("a listening line with a URL")
            })
            .collect();
        r
    }

    /// Waits until every replica is in one generation with one writer; returns the writer.
    fn settle(&mut self, within: Duration) -> usize {
        let all: Vec<usize> = (0..self.ids.len()).collect();
        self.lines
            .wait_settled(within, "every replica settles", &all)
    }

    /// SIGKILLs replica `i` and reaps it; returns when the signal went out.
    fn kill(&mut self, i: usize) -> u64 {
        let killed_at = unix_ms();
        self.processes[i].signal(Signal::Kill);
        let _ = self.processes[i].wait();
        killed_at
    }
}

/// A plain HTTP/1.1 request; `None` if the replica does not answer within `timeout`.
fn http(
    url: &str,
    method: &str,
    path: &str,
    body: &str,
    timeout: Duration,
) -> Option<(u16, Value)> {
    let authority = url.trim_start_matches("http://");
    let addr = authority.parse().expect("a socket address URL");
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

fn put(url: &str, key: &str, value: &str) -> Option<(u16, Value)> {
    http(
        url,
        "PUT",
        &format!("/kv/{key}"),
        value,
        Duration::from_secs(10),
    )
}

fn get(url: &str, key: &str) -> (u16, Value) {
    http(
        url,
        "GET",
        &format!("/kv/{key}"),
        "",
        Duration::from_secs(10),
    )
    .unwrap_or_else(|| panic!("GET {url}/kv/{key}: no answer"))
}

/// Every replica in `alive` reads `key` as `value`, written by `writer`.
fn everyone_reads(r: &Replicas, alive: &[usize], key: &str, value: &str, writer: &str) {
    for &i in alive {
        let (status, entry) = get(&r.urls[i], key);
        assert_eq!(status, 200, "{} reads {key}: {entry}", r.ids[i]);
        assert_eq!(entry["value"], value, "{} reads {key}: {entry}", r.ids[i]);
        assert_eq!(entry["writer"], writer, "{} reads {key}: {entry}", r.ids[i]);
    }
}

/// Writes `key` through each replica in `alive` in turn until one write lands; returns when.
fn first_landed_write(r: &Replicas, alive: &[usize], key: &str, within: Duration) -> (u64, Value) {
    let deadline = Instant::now() + within;
    loop {
        for &i in alive {
            if let Some((200, reply)) = http(
                &r.urls[i],
                "PUT",
                &format!("/kv/{key}"),
                "v",
                Duration::from_millis(300),
            ) {
                return (unix_ms(), reply);
            }
        }
        assert!(
            Instant::now() < deadline,
            "no write of {key} landed within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn one_writer_forwarding_failover_and_a_paused_writer_fenced() {
    let Some(bootstrap) =
        kafka_bootstrap("one_writer_forwarding_failover_and_a_paused_writer_fenced")
    else {
        return;
    };
    let group = format!(
        "kroupier-it-single-writer-{}-{}",
        std::process::id(),
        unix_ms()
    );
    // `d` may not write (Schema Registry's leader.eligibility=false).
    let mut r = Replicas::start(
        &bootstrap,
        &group,
        &[("a", true), ("b", true), ("c", true), ("d", false)],
        &SHORT_SESSION,
    );
    let n = 4;
    let mut alive: Vec<usize> = (0..n).collect();
    let writer = r.settle(Duration::from_secs(30));
    assert_ne!(writer, 3, "the ineligible replica never writes");

    // A write through every follower lands through the writer; every replica reads it.
    for &i in alive.iter().filter(|i| **i != writer) {
        let key = format!("via-{}", r.ids[i]);
        let (status, reply) = put(&r.urls[i], &key, "1").expect("the follower answers");
        assert_eq!(status, 200, "write through {}: {reply}", r.ids[i]);
        assert_eq!(
            reply["writer"], r.ids[writer],
            "the writer applied it: {reply}"
        );
        everyone_reads(&r, &alive, &key, "1", r.ids[writer]);
    }
    let (status, _) = get(&r.urls[0], "never-written");
    assert_eq!(status, 404, "an absent key is 404");

    // SIGKILL the writer: a new one accepts writes within session + 2 heartbeats.
    let killed_at = r.kill(writer);
    alive.retain(|i| *i != writer);
    let (landed_at, reply) = first_landed_write(
        &r,
        &alive,
        "after-kill",
        Duration::from_millis(BOUND_MS + 10_000),
    );
    let latency = landed_at - killed_at;
    println!("MEASURE single_writer_kill_to_write={latency}ms (bound {BOUND_MS}ms)");
    assert!(
        latency <= BOUND_MS,
        "a write landed {latency} ms after the kill, bound {BOUND_MS} ms"
    );
    let second = r
        .lines
        .wait_settled(Duration::from_secs(10), "the survivors settle", &alive);
    assert_ne!(second, 3, "the ineligible replica never writes");
    assert_eq!(
        reply["writer"], r.ids[second],
        "the new writer applied it: {reply}"
    );
    let second_generation = reply["generation"].as_i64().expect("generation");
    everyone_reads(&r, &alive, "after-kill", "v", r.ids[second]);

    // SIGSTOP the new writer past its session: the others choose another writer.
    let (status, _) = put(&r.urls[second], "before-pause", "1").expect("answer");
    assert_eq!(status, 200);
    r.processes[second].signal(Signal::Stop);
    let stopped_at = unix_ms();
    let others: Vec<usize> = alive.iter().copied().filter(|i| *i != second).collect();
    let (_, reply) = first_landed_write(
        &r,
        &others,
        "during-pause",
        Duration::from_millis(BOUND_MS + 10_000),
    );
    let third_id = reply["writer"].as_str().expect("writer").to_owned();
    assert_ne!(third_id, r.ids[second], "the paused replica cannot write");
    let third_generation = reply["generation"].as_i64().expect("generation");
    assert!(third_generation > second_generation, "{reply}");
    // A write sent to the paused replica waits in its socket until it resumes.
    let paused_url = r.urls[second].clone();
    let late = std::thread::spawn(move || put(&paused_url, "late", "from-the-paused-writer"));
    std::thread::sleep(Duration::from_millis(300));
    r.processes[second].signal(Signal::Cont);
    let resumed_at = unix_ms();
    println!("the writer was paused {} ms", resumed_at - stopped_at);
    let late = late.join().expect("the late write's thread");
    // And one right after it resumed.
    let right_after = put(&r.urls[second], "late-2", "from-the-paused-writer");
    for (key, reply) in [("late", &late), ("late-2", &right_after)] {
        println!("{key}: {reply:?}");
        if let Some((status, body)) = reply {
            assert!(
                *status != 200 || body["writer"] != r.ids[second],
                "the resumed writer applied {key} itself: {body}"
            );
        }
        // Nothing the old writer wrote with its old token is in the store.
        let (status, entry) = get(&r.urls[others[0]], key);
        assert!(
            status == 404
                || (entry["writer"] == third_id.as_str()
                    && entry["generation"].as_i64() >= Some(third_generation)),
            "{key} landed from the paused writer: {entry}"
        );
    }
    let (status, entry) = get(&r.urls[others[0]], "before-pause");
    assert_eq!(
        (status, entry["writer"].as_str()),
        (200, Some(r.ids[second]))
    );

    // The resumed replica reports the loss, rejoins as a follower, and forwards again.
    r.lines.wait_until(
        Duration::from_secs(15),
        "the resumed replica follows",
        |l| {
            l.iter()
                .any(|x| x.process == second && x.event == "lost" && x.ts_ms >= stopped_at)
                && l.iter()
                    .any(|x| x.process == second && x.event == "follower" && x.ts_ms >= stopped_at)
        },
    );
    let (_, reply) = first_landed_write(&r, &[second], "after-resume", Duration::from_secs(10));
    assert_eq!(
        reply["writer"],
        third_id.as_str(),
        "forwarded to the current writer: {reply}"
    );
    everyone_reads(&r, &alive, "after-resume", "v", &third_id);

    for &i in &alive {
        r.processes[i].signal(Signal::Term);
        assert_eq!(
            r.processes[i].wait(),
            Some(0),
            "{} exits 0 after SIGTERM",
            r.ids[i]
        );
    }
    r.lines.drain(Duration::ZERO);
    assert!(
        r.lines
            .seen
            .iter()
            .all(|l| l.process != 3 || l.event != "leader"),
        "the ineligible replica never led"
    );
    assert_one_leader_per_generation(&r.lines.seen);
    let _ = std::fs::remove_file(&r.store);
}

#[test]
fn with_fast_failover_a_killed_writer_is_replaced_in_milliseconds_a_paused_one_is_not() {
    let Some(bootstrap) = kafka_bootstrap(
        "with_fast_failover_a_killed_writer_is_replaced_in_milliseconds_a_paused_one_is_not",
    ) else {
        return;
    };
    let rounds: usize = std::env::var("KROUPIER_FAILOVER_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let settings = Settings {
        session_ms: DEFAULT_SESSION_MS,
        heartbeat_ms: DEFAULT_HEARTBEAT_MS,
        fast_failover: true,
    };
    let mut latencies = Vec::new();
    for round in 0..rounds {
        let group = format!(
            "kroupier-it-single-writer-fast-{}-{}-{round}",
            std::process::id(),
            unix_ms()
        );
        let mut r = Replicas::start(
            &bootstrap,
            &group,
            &[("a", true), ("b", true), ("c", true)],
            &settings,
        );
        let n = 3;
        let mut alive: Vec<usize> = (0..n).collect();
        let writer = r.settle(Duration::from_secs(40));
        let (status, _) = put(&r.urls[writer], "before", "1").expect("the writer answers");
        assert_eq!(status, 200);
        // Every follower has linked to the writer's endpoint by now (a link is one round trip
        // after the assignment); give a loaded machine a moment more.
        std::thread::sleep(Duration::from_millis(300));

        let killed_at = r.kill(writer);
        alive.retain(|i| *i != writer);
        let (landed_at, reply) = first_landed_write(
            &r,
            &alive,
            "after-kill",
            Duration::from_millis(DEFAULT_SESSION_MS + 2 * DEFAULT_HEARTBEAT_MS + 10_000),
        );
        let latency = landed_at - killed_at;
        println!("MEASURE single_writer_fast_kill_to_write_round{round}={latency}ms");
        latencies.push(latency);
        let new_writer = reply["writer"].as_str().expect("writer").to_owned();
        assert_ne!(
            new_writer, r.ids[writer],
            "the killed writer wrote: {reply}"
        );
        everyone_reads(&r, &alive, "after-kill", "v", &new_writer);

        if round + 1 == rounds {
            // The last round also pauses the new writer: its process lives and its sockets
            // stay open, so nothing is proven and the others wait for its session.
            let second =
                r.lines
                    .wait_settled(Duration::from_secs(10), "the survivors settle", &alive);
            std::thread::sleep(Duration::from_millis(300));
            r.processes[second].signal(Signal::Stop);
            let stopped_at = unix_ms();
            let others: Vec<usize> = alive.iter().copied().filter(|i| *i != second).collect();
            let (landed_at, reply) = first_landed_write(
                &r,
                &others,
                "during-pause",
                Duration::from_millis(DEFAULT_SESSION_MS + 2 * DEFAULT_HEARTBEAT_MS + 10_000),
            );
            let waited = landed_at - stopped_at;
            println!(
                "MEASURE single_writer_fast_stop_to_write={waited}ms (session \
                 {DEFAULT_SESSION_MS} ms)"
            );
            assert_ne!(reply["writer"], r.ids[second], "the paused writer wrote");
            // Kafka expires a session at most one heartbeat interval early.
            assert!(
                waited + DEFAULT_HEARTBEAT_MS >= DEFAULT_SESSION_MS,
                "a paused writer was replaced after {waited} ms, before its session"
            );
            r.processes[second].signal(Signal::Cont);
            // A write sent to the resumed writer at once never lands as its own: its token
            // is stale, and the store refuses it (or it forwards to the new writer).
            let right_after = put(&r.urls[second], "late-fast", "from-the-paused-writer");
            println!("late-fast: {right_after:?}");
            if let Some((status, body)) = &right_after {
                assert!(
                    *status != 200 || body["writer"] != r.ids[second],
                    "the resumed writer applied a write itself: {body}"
                );
            }
            let (status, entry) = get(&r.urls[others[0]], "late-fast");
            assert!(
                status == 404 || entry["writer"] != r.ids[second],
                "a write landed from the paused writer: {entry}"
            );
            r.lines.wait_until(
                Duration::from_secs(15),
                "the resumed writer reports lost",
                |l| {
                    l.iter()
                        .any(|x| x.process == second && x.event == "lost" && x.ts_ms >= stopped_at)
                },
            );
        }
        for &i in &alive {
            r.processes[i].signal(Signal::Term);
            assert_eq!(r.processes[i].wait(), Some(0), "exit 0 after SIGTERM");
        }
        r.lines.drain(Duration::ZERO);
        assert_one_leader_per_generation(&r.lines.seen);
        let _ = std::fs::remove_file(&r.store);
    }
    let mut sorted = latencies.clone();
    sorted.sort_unstable();
    println!(
        "MEASURE single_writer_fast_kill_to_write_median={}ms over {rounds} kills: {latencies:?}",
        sorted[sorted.len() / 2]
    );
    for (round, latency) in latencies.iter().enumerate() {
        assert!(
            *latency < FAST_BOUND_MS,
            "round {round}: a write landed {latency} ms after the writer's SIGKILL, bound \
             {FAST_BOUND_MS} ms (the session is {DEFAULT_SESSION_MS} ms); all: {latencies:?}"
        );
    }
}
