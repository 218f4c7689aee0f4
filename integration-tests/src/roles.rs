//! The role lines of kroupier's election-shaped examples (`leader_election`, `active_standby`,
//! `single_writer`), read from their running processes, and the checks the tests make over
//! them: one settled leader, never two leaders at once, no generation led twice.
//!
//! Each example prints one JSON object a line on stdout:
//! `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}` per role change
//! (`single_writer` first prints `{"ts_ms":..,"id":..,"event":"listening","url":..}`).

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::journal::{self, Reign, Role, RoleChange};
use crate::process::Process;

/// One line a process printed.
#[derive(Debug, Clone)]
pub struct Line {
    /// The index of the process that printed it, as given to [`Lines::read`].
    pub process: usize,
    /// When, Unix ms.
    pub ts_ms: u64,
    /// The id the process printed.
    pub id: String,
    /// `leader`, `follower`, `lost` (a role line), or another event such as `listening`.
    pub event: String,
    /// The generation a role holds in (`None` when a candidate lost before any).
    pub generation: Option<i64>,
    /// The address of a `listening` line.
    pub url: Option<String>,
}

impl Line {
    /// Its role, when it is a role line.
    pub fn role(&self) -> Option<Role> {
        Role::from_name(&self.event)
    }
}

/// What a reader thread sends.
enum Read {
    Line(Line),
    /// A line the examples do not print: the test fails with it.
    Bad(String),
    /// The process's stdout ended.
    End,
}

/// The lines of the processes started so far, as they come.
pub struct Lines {
    tx: Sender<Read>,
    rx: Receiver<Read>,
    readers: usize,
    ended: usize,
    /// Every line read so far, in the order they came.
    pub seen: Vec<Line>,
}

impl Default for Lines {
    fn default() -> Self {
        let (tx, rx) = channel();
        Self {
            tx,
            rx,
            readers: 0,
            ended: 0,
            seen: Vec::new(),
        }
    }
}

impl Lines {
    /// No lines yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the stdout of `process`, the process with index `index`, on a thread of its own.
    /// With `id`, every line must carry it: each process prints its own id.
    pub fn read(&mut self, process: &mut Process, index: usize, id: Option<&str>) {
        let out = process.stdout_lines();
        let tx = self.tx.clone();
        let id = id.map(str::to_owned);
        self.readers += 1;
        std::thread::spawn(move || {
            for raw in out {
                let read = match parse(&raw, index) {
                    Ok(line) if id.as_ref().is_some_and(|id| *id != line.id) => Read::Bad(format!(
                        "each process prints its own id: process {index} ({id:?}) printed {raw}"
                    )),
                    Ok(line) => Read::Line(line),
                    Err(e) => Read::Bad(e),
                };
                let bad = matches!(read, Read::Bad(_));
                if tx.send(read).is_err() || bad {
                    return;
                }
            }
            let _ = tx.send(Read::End);
        });
    }

    /// Reads lines until `done` holds for the lines seen so far; panics after `within`, or
    /// when every process has ended first.
    pub fn wait_until(&mut self, within: Duration, what: &str, done: impl Fn(&[Line]) -> bool) {
        let deadline = Instant::now() + within;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            // `self` holds a sender: the channel never disconnects.
            let Ok(read) = self.rx.recv_timeout(left) else {
                panic!("{what}: not within {within:?}; lines: {:#?}", self.seen)
            };
            self.take(read, what);
            if self.ended == self.readers {
                panic!("{what}: every process ended; lines: {:#?}", self.seen)
            }
        }
    }

    /// Reads lines until the processes `alive` have [`settled`], as
    /// [`wait_until`](Self::wait_until) does; returns their leader.
    pub fn wait_settled(&mut self, within: Duration, what: &str, alive: &[usize]) -> usize {
        self.wait_until(within, what, |l| settled(l, alive).is_some());
        settled(&self.seen, alive).expect("settled")
    }

    /// Reads the lines that arrive within `window` (those printed already, with
    /// `Duration::ZERO`), or until every process has ended.
    pub fn drain(&mut self, window: Duration) {
        let deadline = Instant::now() + window;
        while self.ended < self.readers {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(read) = self.rx.recv_timeout(left) else {
                return;
            };
            self.take(read, "the last lines");
        }
    }

    fn take(&mut self, read: Read, what: &str) {
        match read {
            Read::Line(line) => {
                println!("{line:?}");
                self.seen.push(line);
            }
            Read::Bad(e) => panic!("{what}: {e}; lines: {:#?}", self.seen),
            Read::End => self.ended += 1,
        }
    }
}

fn parse(raw: &str, process: usize) -> Result<Line, String> {
    let v: Value =
        serde_json::from_str(raw).map_err(|e| format!("not a JSON line ({e}): {raw}"))?;
    let text = |key: &str| {
        v[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no {key} in {raw}"))
    };
    Ok(Line {
        process,
        ts_ms: v["ts_ms"]
            .as_u64()
            .ok_or_else(|| format!("no ts_ms in {raw}"))?,
        id: text("id")?,
        event: text("event")?,
        generation: v["generation"].as_i64(),
        url: v["url"].as_str().map(str::to_owned),
    })
}

/// The one leader among the processes `alive`, when the latest role lines of all of them are
/// in one generation, none `lost`.
pub fn settled(lines: &[Line], alive: &[usize]) -> Option<usize> {
    let latest = alive
        .iter()
        .map(|p| {
            lines
                .iter()
                .rev()
                .find(|l| l.process == *p && l.role().is_some())
        })
        .collect::<Option<Vec<&Line>>>()?;
    let generation = latest.first()?.generation?;
    if latest
        .iter()
        .any(|l| l.generation != Some(generation) || l.role() == Some(Role::Lost))
    {
        return None;
    }
    let mut leaders = latest.iter().filter(|l| l.role() == Some(Role::Leader));
    match (leaders.next(), leaders.next()) {
        (Some(leader), None) => Some(leader.process),
        _ => None,
    }
}

/// When `process` printed its first `leader` line at or after `since_ms`.
pub fn led_at(lines: &[Line], process: usize, since_ms: u64) -> Option<u64> {
    lines
        .iter()
        .find(|l| l.process == process && l.role() == Some(Role::Leader) && l.ts_ms >= since_ms)
        .map(|l| l.ts_ms)
}

/// The role lines as the journal checker's election events.
pub fn events(lines: &[Line]) -> Vec<RoleChange> {
    lines
        .iter()
        .filter_map(|l| {
            Some(RoleChange {
                ts_ms: l.ts_ms,
                id: l.id.clone(),
                event: l.role()?,
                generation: l
                    .generation
                    .map(|g| i32::try_from(g).expect("generation fits an i32")),
            })
        })
        .collect()
}

/// The reigns of the leaders among `lines`; `ids[p]` is the id of process `p`, `ends[p]` when
/// it ended (`u64::MAX` while it runs).
pub fn reigns(lines: &[Line], ids: &[impl AsRef<str>], ends: &[u64]) -> Vec<Reign> {
    let ends: BTreeMap<String, u64> = ids
        .iter()
        .map(|id| id.as_ref().to_owned())
        .zip(ends.iter().copied())
        .collect();
    journal::reigns(&events(lines), &ends)
}

/// Never two leaders at once (the journal check over [`reigns`]), and no generation led by two
/// processes.
#[track_caller]
pub fn assert_one_leader_at_a_time(lines: &[Line], ids: &[impl AsRef<str>], ends: &[u64]) {
    let overlapping = journal::two_leaders(&reigns(lines, ids, ends));
    assert!(
        overlapping.is_empty(),
        "overlapping leaders {overlapping:?}"
    );
    assert_one_leader_per_generation(lines);
}

/// No generation led by two processes.
#[track_caller]
pub fn assert_one_leader_per_generation(lines: &[Line]) {
    let mut led: Vec<(i64, usize)> = lines
        .iter()
        .filter(|l| l.role() == Some(Role::Leader))
        .filter_map(|l| l.generation.map(|g| (g, l.process)))
        .collect();
    led.sort_unstable();
    led.dedup();
    for w in led.windows(2) {
        assert!(
            w[0].0 != w[1].0,
            "generation {} led by two processes",
            w[0].0
        );
    }
}
