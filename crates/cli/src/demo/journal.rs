//! The demo's witness: each task's journal (`<unix_ms> <worker-id> <generation>` per beat,
//! written only after the task's lease check passed), checked for what a failover must show.
//! Pure: the caller reads the files ([`read_dir`]); the format and the generic checks are
//! `kroupier_worker::journal`'s.

use std::collections::{BTreeMap, BTreeSet};

pub(super) use kroupier_worker::journal::{Beat, Journals, read_dir};
use kroupier_worker::journal::{NotRunningOnce, exactly_once_since, overlaps, tenures};

/// The kill the journals are checked against, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kill<'a> {
    /// The killed worker's id.
    pub worker: &'a str,
    /// Just before SIGKILL was sent: the failover is timed from here.
    pub signal_ms: u64,
    /// After the process was reaped: it cannot have written anything later.
    pub reaped_ms: u64,
}

/// What the journals say about the failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failover {
    /// Each of the killed worker's tasks: its new owner and how long after the signal (ms) the
    /// new owner's first beat came.
    pub resumed: BTreeMap<String, (String, u64)>,
}

impl Failover {
    /// The slowest task's time to run again (ms).
    pub(super) fn time_ms(&self) -> u64 {
        self.resumed.values().map(|(_, ms)| *ms).max().unwrap_or(0)
    }
}

/// Checks the journals after a worker was killed:
/// - no task ran on two workers at once (tenures split at gaps over `max_gap_ms`);
/// - the killed worker wrote nothing after it was reaped;
/// - each of its tasks (`moved`) ran again after the signal on exactly one other worker;
/// - every task of `final_owners` beat since `recent_ms` (the group settled) on its final
///   owner only.
///
/// # Errors
/// Every violation found, one sentence each.
pub(super) fn check(
    journals: &Journals,
    kill: Kill<'_>,
    moved: &BTreeSet<String>,
    final_owners: &BTreeMap<String, String>,
    recent_ms: u64,
    max_gap_ms: u64,
) -> Result<Failover, Vec<String>> {
    let Kill {
        worker: killed,
        signal_ms,
        reaped_ms,
    } = kill;
    let mut problems = Vec::new();
    let mut failover = Failover {
        resumed: BTreeMap::new(),
    };
    for (task, beats) in journals {
        if let Some((a, b)) = overlaps(&tenures(beats, max_gap_ms)).into_iter().next() {
            problems.push(format!(
                "{task} ran on {} ({}..{}) and {} ({}..{}) at once",
                a.worker, a.first_ms, a.last_ms, b.worker, b.first_ms, b.last_ms
            ));
        }
        if let Some(late) = beats
            .iter()
            .find(|b| b.worker == killed && b.unix_ms > reaped_ms)
        {
            problems.push(format!(
                "{task} beat on the killed {killed} at {} after it was reaped at {reaped_ms}",
                late.unix_ms
            ));
        }
    }
    for task in moved {
        let after: Vec<&Beat> = journals
            .get(task)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|b| b.unix_ms > signal_ms && b.worker != killed)
            .collect();
        let owners: BTreeSet<&str> = after.iter().map(|b| b.worker.as_str()).collect();
        match (owners.len(), after.iter().min_by_key(|b| b.unix_ms)) {
            (1, Some(first)) => {
                failover.resumed.insert(
                    task.clone(),
                    (first.worker.clone(), first.unix_ms - signal_ms),
                );
            }
            (0, _) => problems.push(format!("{task} did not run again after the kill")),
            _ => problems.push(format!(
                "{task} ran on {} workers after the kill ({owners:?}), not exactly one",
                owners.len()
            )),
        }
    }
    for (task, owner) in final_owners {
        // The workers that beat for the task since `recent_ms`.
        let recent: BTreeSet<String> = match exactly_once_since(journals, [task], recent_ms) {
            Ok(mut owners) => owners.remove(task).into_iter().collect(),
            Err(problems) => problems
                .into_iter()
                .flat_map(|problem| match problem {
                    NotRunningOnce::OnSeveral { workers, .. } => workers,
                    _ => BTreeSet::new(),
                })
                .collect(),
        };
        if recent.len() != 1 || !recent.contains(owner) {
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
