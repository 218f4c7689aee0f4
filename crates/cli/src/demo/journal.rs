//! The demo's witness: each task's journal (`<unix_ms> <worker-id> <generation>` per beat,
//! written only after the task's lease check passed), and the checks over it. Pure: the
//! caller reads the files.

use std::collections::{BTreeMap, BTreeSet};

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// When it was written (Unix ms).
    pub ms: u64,
    /// The worker that wrote it.
    pub worker: String,
    /// The generation the worker held the task in.
    pub generation: i32,
}

/// Parses a journal; a cut last line (the writer was killed mid-write) is ignored.
///
/// # Errors
/// A line that is not `<unix_ms> <worker-id> <generation>`.
pub fn parse(text: &str) -> Result<Vec<Beat>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut beats = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        if line.is_empty() || last {
            // Every complete line ends with '\n': the piece after the last one is cut or empty.
            continue;
        }
        let mut fields = line.split(' ');
        let beat = (|| {
            Some(Beat {
                ms: fields.next()?.parse().ok()?,
                worker: fields.next()?.to_owned(),
                generation: fields.next()?.parse().ok()?,
            })
        })();
        match beat {
            Some(beat) if fields.next().is_none() => beats.push(beat),
            _ => {
                return Err(format!(
                    "line {}: `{line}` is not `<unix_ms> <worker> <generation>`",
                    i + 1
                ));
            }
        }
    }
    beats.sort_by_key(|b| b.ms);
    Ok(beats)
}

/// A stretch of time one worker ran a task: beats no further apart than the gap allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    /// The worker.
    pub worker: String,
    /// Its first beat (Unix ms).
    pub first: u64,
    /// Its last beat (Unix ms).
    pub last: u64,
}

/// Each worker's tenures of one task (beats sorted by time), split where beats are more than
/// `max_gap_ms` apart.
pub fn tenures(beats: &[Beat], max_gap_ms: u64) -> Vec<Tenure> {
    let mut open: BTreeMap<&str, Tenure> = BTreeMap::new();
    let mut done = Vec::new();
    for beat in beats {
        match open.get_mut(beat.worker.as_str()) {
            Some(t) if beat.ms <= t.last + max_gap_ms => t.last = beat.ms,
            _ => {
                let fresh = Tenure {
                    worker: beat.worker.clone(),
                    first: beat.ms,
                    last: beat.ms,
                };
                if let Some(closed) = open.insert(&beat.worker, fresh) {
                    done.push(closed);
                }
            }
        }
    }
    done.extend(open.into_values());
    done.sort_by_key(|t| t.first);
    done
}

/// Two tenures of different workers that overlap in time, if any.
pub fn overlap(tenures: &[Tenure]) -> Option<(Tenure, Tenure)> {
    for (i, a) in tenures.iter().enumerate() {
        for b in &tenures[i + 1..] {
            if a.worker != b.worker && a.first < b.last && b.first < a.last {
                return Some((a.clone(), b.clone()));
            }
        }
    }
    None
}

/// What the journals say about the failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    /// Each of the killed worker's tasks: its new owner and how long after the kill (ms) the
    /// new owner's first beat came.
    pub resumed: BTreeMap<String, (String, u64)>,
}

impl Failover {
    /// The slowest task's time to run again (ms).
    pub fn time_ms(&self) -> u64 {
        self.resumed.values().map(|(_, ms)| *ms).max().unwrap_or(0)
    }
}

/// Checks the journals after a worker was killed:
/// - no task ran on two workers at once (tenures split at gaps over `max_gap_ms`);
/// - the killed worker wrote nothing after `killed_ms`;
/// - each of its tasks (`moved`) ran again after the kill on exactly one other worker;
/// - every task of `final_owners` beat since `recent_ms` (the group settled) on its final
///   owner only.
///
/// # Errors
/// Every violation found, one sentence each.
pub fn check(
    journals: &BTreeMap<String, Vec<Beat>>,
    killed: &str,
    killed_ms: u64,
    moved: &BTreeSet<String>,
    final_owners: &BTreeMap<String, String>,
    recent_ms: u64,
    max_gap_ms: u64,
) -> Result<Failover, Vec<String>> {
    let mut problems = Vec::new();
    let mut failover = Failover {
        resumed: BTreeMap::new(),
    };
    let empty = Vec::new();
    for (task, beats) in journals {
        if let Some((a, b)) = overlap(&tenures(beats, max_gap_ms)) {
            problems.push(format!(
                "{task} ran on {} ({}..{}) and {} ({}..{}) at once",
                a.worker, a.first, a.last, b.worker, b.first, b.last
            ));
        }
        if let Some(late) = beats
            .iter()
            .find(|b| b.worker == killed && b.ms > killed_ms)
        {
            problems.push(format!(
                "{task} beat on the killed {killed} at {} after the kill at {killed_ms}",
                late.ms
            ));
        }
    }
    for task in moved {
        let after: Vec<&Beat> = journals
            .get(task)
            .unwrap_or(&empty)
            .iter()
            .filter(|b| b.ms > killed_ms && b.worker != killed)
            .collect();
        let owners: BTreeSet<&str> = after.iter().map(|b| b.worker.as_str()).collect();
        match (owners.len(), after.first()) {
            (1, Some(first)) => {
                failover
                    .resumed
                    .insert(task.clone(), (first.worker.clone(), first.ms - killed_ms));
            }
            (0, _) => problems.push(format!("{task} did not run again after the kill")),
            _ => problems.push(format!(
                "{task} ran on {} workers after the kill ({owners:?}), not exactly one",
                owners.len()
            )),
        }
    }
    for (task, owner) in final_owners {
        let recent: BTreeSet<&str> = journals
            .get(task)
            .unwrap_or(&empty)
            .iter()
            .filter(|b| b.ms >= recent_ms)
            .map(|b| b.worker.as_str())
            .collect();
        if recent.len() != 1 || !recent.contains(owner.as_str()) {
            problems.push(format!(
                "{task} should be running on {owner} only at the end, but its journal shows {recent:?}"
            ));
        }
    }
    if problems.is_empty() {
        Ok(failover)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests;
