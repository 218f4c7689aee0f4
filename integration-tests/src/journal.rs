//! Reading the task journals that `quickstart --journal-dir DIR` writes, and checking them.
//!
//! Each running task appends `<unix_ms> <worker-id> <generation>` to `DIR/<task-id>.log` every
//! 100 ms, only after its lease check passes. The journals are the witness of the product's
//! central promise: no task ever runs on two workers at once, and no task is lost.

use std::collections::BTreeMap;
use std::path::Path;

/// One line of a journal: a beat of a task on a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// Unix time of the beat, in milliseconds.
    pub unix_ms: u64,
    /// The worker that ran the task.
    pub worker: String,
    /// The group generation the worker held the task in.
    pub generation: i32,
}

/// A stretch of time in which one worker beat for a task without a gap longer than the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    /// The worker.
    pub worker: String,
    /// Time of the first beat of the stretch.
    pub first_ms: u64,
    /// Time of the last beat of the stretch.
    pub last_ms: u64,
}

/// Parses one journal file's text. Lines that do not parse are an error naming the line.
pub fn parse(text: &str) -> Result<Vec<Beat>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            let mut parts = line.split_whitespace();
            let beat = (|| {
                let unix_ms = parts.next()?.parse().ok()?;
                let worker = parts.next()?.to_string();
                let generation = parts.next()?.parse().ok()?;
                parts.next().is_none().then_some(Beat {
                    unix_ms,
                    worker,
                    generation,
                })
            })();
            beat.ok_or_else(|| {
                format!(
                    "line {}: {line:?} is not `<unix_ms> <worker> <generation>`",
                    n + 1
                )
            })
        })
        .collect()
}

/// Reads every `<task-id>.log` in `dir`, keyed by task id.
pub fn read_dir(dir: &Path) -> Result<BTreeMap<String, Vec<Beat>>, String> {
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let (Some(stem), Some("log")) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let beats = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        out.insert(stem.to_string(), beats);
    }
    Ok(out)
}

/// Splits a task's beats into tenures: per worker, maximal runs of beats whose consecutive gaps
/// are at most `max_gap_ms`. Sorted by start time.
pub fn tenures(beats: &[Beat], max_gap_ms: u64) -> Vec<Tenure> {
    let mut by_worker: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for b in beats {
        by_worker.entry(&b.worker).or_default().push(b.unix_ms);
    }
    let mut out = Vec::new();
    for (worker, mut times) in by_worker {
        times.sort_unstable();
        let mut first = times[0];
        let mut last = times[0];
        for &t in &times[1..] {
            if t - last > max_gap_ms {
                out.push(Tenure {
                    worker: worker.to_string(),
                    first_ms: first,
                    last_ms: last,
                });
                first = t;
            }
            last = t;
        }
        out.push(Tenure {
            worker: worker.to_string(),
            first_ms: first,
            last_ms: last,
        });
    }
    out.sort_by_key(|t| (t.first_ms, t.last_ms));
    out
}

/// The first pair of tenures of different workers that overlap in time, if any: the task ran on
/// two workers at once.
pub fn overlap(beats: &[Beat], max_gap_ms: u64) -> Option<(Tenure, Tenure)> {
    let ts = tenures(beats, max_gap_ms);
    for (i, a) in ts.iter().enumerate() {
        for b in &ts[i + 1..] {
            if a.worker != b.worker && a.first_ms <= b.last_ms && b.first_ms <= a.last_ms {
                return Some((a.clone(), b.clone()));
            }
        }
    }
    None
}

/// The longest gap between two consecutive beats (of any worker) at or after `from_ms`.
pub fn longest_gap(beats: &[Beat], from_ms: u64) -> u64 {
    let mut times: Vec<u64> = beats
        .iter()
        .map(|b| b.unix_ms)
        .filter(|&t| t >= from_ms)
        .collect();
    times.sort_unstable();
    times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
}

/// The worker of the latest beat, if any.
pub fn last_owner(beats: &[Beat]) -> Option<&str> {
    beats
        .iter()
        .max_by_key(|b| b.unix_ms)
        .map(|b| b.worker.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beats(spec: &[(u64, &str)]) -> Vec<Beat> {
        spec.iter()
            .map(|&(t, w)| Beat {
                unix_ms: t,
                worker: w.into(),
                generation: 1,
            })
            .collect()
    }

    #[test]
    fn parses_lines_and_rejects_garbage() {
        let b = parse("1000 w1 3\n1100 w1 3\n").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[1],
            Beat {
                unix_ms: 1100,
                worker: "w1".into(),
                generation: 3
            }
        );
        assert!(parse("1000 w1\n").unwrap_err().contains("line 1"));
        assert!(parse("1000 w1 3 extra\n").is_err());
        assert!(parse("x w1 3\n").is_err());
    }

    #[test]
    fn a_clean_handover_is_no_overlap() {
        let b = beats(&[(0, "a"), (100, "a"), (200, "a"), (900, "b"), (1000, "b")]);
        assert_eq!(overlap(&b, 500), None);
        assert_eq!(tenures(&b, 500).len(), 2);
        assert_eq!(longest_gap(&b, 0), 700);
        assert_eq!(last_owner(&b), Some("b"));
    }

    #[test]
    fn interleaved_beats_are_an_overlap() {
        let b = beats(&[(0, "a"), (100, "b"), (200, "a"), (300, "b")]);
        let (x, y) = overlap(&b, 500).expect("overlap");
        assert_ne!(x.worker, y.worker);
    }

    #[test]
    fn a_worker_returning_after_a_long_pause_is_a_new_tenure() {
        let b = beats(&[(0, "a"), (100, "a"), (1000, "b"), (1100, "b"), (5000, "a")]);
        assert_eq!(overlap(&b, 500), None);
        assert_eq!(tenures(&b, 500).len(), 3);
        // With a bound so loose that a's two stretches join, a's tenure spans b's.
        assert!(overlap(&b, 10_000).is_some());
    }
}
