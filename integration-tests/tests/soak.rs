//! A soak, for measurement only (ignored by default): 10 `quickstart` workers share 1,000 tasks
//! for 10 minutes while random faults hit them one after another — SIGKILL then a restart,
//! SIGTERM then a restart, a freeze (SIGSTOP) for up to 8 s, and link faults through each
//! worker's own [`FaultProxy`] (a cut, a blackhole, a cut from the coordinator only, heartbeat
//! answers held back). At the end: the faults applied, overlaps in the journals (must be none),
//! the longest time any task went unowned, and each worker's RSS over time.
//!
//! ```sh
//! cargo build --release -p kroupier-examples
//! KROUPIER_KAFKA_BOOTSTRAP=127.0.0.1:9092 cargo test --release -p kroupier-integration-tests \
//!     --test soak -- --ignored --nocapture 2>/dev/null
//! ```
//!
//! `KROUPIER_SOAK_SECS` (default 600), `KROUPIER_SOAK_TASKS` (1000) and
//! `KROUPIER_SOAK_WORKERS` (10) change its size.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use kroupier_integration_tests::fault::{FaultProxy, Scope};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::Signal;
use kroupier_integration_tests::quickstart::*;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (xorshift64*), seeded from the clock and printed, so a run
/// can be replayed with `KROUPIER_SOAK_SEED`.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

/// The resident set size of process `pid`, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

struct Soak {
    group: Group,
    proxies: Vec<FaultProxy>,
    workers: Vec<Worker>,
    rss: BTreeMap<String, Vec<u64>>,
    faults: BTreeMap<&'static str, u32>,
}

impl Soak {
    fn start_worker(&self, i: usize) -> Worker {
        let mut group = self.group.clone();
        group.bootstrap = self.proxies[i].bootstrap();
        group.start(&format!("w{i}"))
    }

    fn sample_rss(&mut self) {
        for w in &self.workers {
            if let Some(kib) = rss_kib(w.process.pid()) {
                self.rss.entry(w.id.clone()).or_default().push(kib);
            }
        }
    }

    fn fault(&mut self, random: &mut Random) {
        let i = random.below(self.workers.len() as u64) as usize;
        let hold = random.millis(1_000, 8_000);
        let name = match random.below(7) {
            0 => {
                self.workers[i].process.signal(Signal::Kill);
                self.workers[i].process.wait();
                std::thread::sleep(random.millis(500, 4_000));
                self.workers[i] = self.start_worker(i);
                "kill"
            }
            1 => {
                self.workers[i].process.signal(Signal::Term);
                self.workers[i].process.wait();
                self.workers[i] = self.start_worker(i);
                "terminate"
            }
            2 => {
                self.workers[i].process.signal(Signal::Stop);
                std::thread::sleep(hold);
                self.workers[i].process.signal(Signal::Cont);
                "pause"
            }
            3 => {
                self.proxies[i].cut(Scope::All);
                std::thread::sleep(hold);
                self.proxies[i].heal();
                "cut"
            }
            4 => {
                self.proxies[i].blackhole(Scope::All);
                std::thread::sleep(hold);
                self.proxies[i].heal();
                "blackhole"
            }
            5 => {
                self.proxies[i].cut(Scope::Coordinator);
                std::thread::sleep(hold);
                self.proxies[i].heal();
                "coordinator cut"
            }
            _ => {
                self.proxies[i].delay_responses(ApiKey::Heartbeat, random.millis(500, 2_500));
                std::thread::sleep(hold);
                self.proxies[i].heal();
                "heartbeats delayed"
            }
        };
        *self.faults.entry(name).or_default() += 1;
        println!(
            "{} fault {name} on w{i} for {} ms",
            unix_ms(),
            hold.as_millis()
        );
    }
}

#[test]
#[ignore = "a 10-minute soak for measurement; run with --ignored"]
fn soak_random_faults_never_overlap() {
    let Some(bootstrap) = kafka_bootstrap("soak") else {
        return;
    };
    let secs = env_or("KROUPIER_SOAK_SECS", 600);
    let tasks = env_or("KROUPIER_SOAK_TASKS", 1_000) as usize;
    let count = env_or("KROUPIER_SOAK_WORKERS", 10) as usize;
    let seed = env_or("KROUPIER_SOAK_SEED", unix_ms() | 1);
    println!("soak: {count} workers, {tasks} tasks, {secs} s, seed {seed}");
    let mut random = Random(seed);
    let dir = TempDir::new("soak");
    let group = Group::new(&bootstrap, "soak", tasks, &dir.0);
    let proxies: Vec<FaultProxy> = (0..count)
        .map(|_| FaultProxy::start(&bootstrap).expect("proxy"))
        .collect();
    let mut soak = Soak {
        group,
        proxies,
        workers: Vec::new(),
        rss: BTreeMap::new(),
        faults: BTreeMap::new(),
    };
    soak.workers = (0..count).map(|i| soak.start_worker(i)).collect();
    wait_balanced(&dir.0, tasks, count);
    let started_ms = unix_ms();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut next_sample = Instant::now();
    while Instant::now() < deadline {
        if Instant::now() >= next_sample {
            soak.sample_rss();
            next_sample += Duration::from_secs(30);
        }
        std::thread::sleep(random.millis(2_000, 8_000));
        soak.fault(&mut random);
    }
    for proxy in &soak.proxies {
        proxy.heal();
    }
    let healed_ms = unix_ms();
    // A blackhole's swallowed request waits out its 30 s timeout before the worker rejoins.
    let owners = poll(Duration::from_secs(120), || {
        let owners = wait_balanced_since_within(&dir.0, tasks, count, healed_ms)?;
        Some(owners)
    });
    soak.sample_rss();

    let all = journals(&dir.0);
    let mut overlaps = 0;
    for (task, beats) in &all {
        let found = journal::overlaps(&journal::tenures(beats, 300));
        if let Some((a, b)) = found.first() {
            println!("OVERLAP {task}: {a:?} / {b:?}");
        }
        overlaps += found.len();
    }
    let (longest_task, longest) = all
        .iter()
        .map(|(task, beats)| (task.clone(), journal::longest_unowned(beats, started_ms)))
        .max_by_key(|(_, gap)| *gap)
        .unwrap_or_default();
    println!("SOAK faults {:?}", soak.faults);
    println!("SOAK overlaps {overlaps}");
    println!("SOAK longest_unowned_ms {longest} ({longest_task})");
    println!(
        "SOAK every task running exactly once at the end: {}",
        owners.is_some()
    );
    for (worker, samples) in &soak.rss {
        println!("SOAK rss_kib {worker} {samples:?}");
    }
    assert_eq!(overlaps, 0, "a task ran on two workers at once");
    assert!(
        owners.is_some(),
        "not every task ran exactly once at the end"
    );
}

/// Like `wait_balanced_since` but returns `None` instead of panicking while the group settles.
fn wait_balanced_since_within(
    dir: &std::path::Path,
    tasks: usize,
    workers: usize,
    since_ms: u64,
) -> Option<BTreeMap<String, String>> {
    let owners = running(dir, tasks, since_ms)?;
    let counts = counts(&owners);
    let (min, max) = (counts.values().min()?, counts.values().max()?);
    (counts.len() == workers && max - min <= 1).then_some(owners)
}
