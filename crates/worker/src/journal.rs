//! The task journal: the witness that no task ever runs on two workers at once.
//!
//! A running task appends one line per beat, `<unix_ms> <worker-id> <generation>\n`, to
//! `DIR/<task-id>.log`, each time only after its lease check passed. Every worker that ever ran
//! the task appends to the same file, so the file tells who ran the task when. Each line is a
//! single `write` to a file opened for appending: lines of two writers never interleave, and a
//! writer killed mid-write leaves at most a cut last line, which the reader ignores.
//!
//! One writer and one checker serve every scenario (the quickstart example, `kroupier worker`
//! and its demo, the integration tests):
//! - [`Writer`] appends the lines; [`unix_ms`] is the clock every journal line and event uses;
//! - [`parse`] and [`read_dir`] read them back: a final line without `'\n'` is ignored, any
//!   other malformed line is an error;
//! - [`tenures`] splits a task's beats into runs by one worker in one generation, [`overlaps`]
//!   finds two workers running a task at once, [`longest_unowned`] the longest time a task ran
//!   nowhere, [`exactly_once_since`] checks that every task runs on exactly one worker at the
//!   end;
//! - [`parse_events`], [`reigns`] and [`two_leaders`] do the same for the JSON lines the
//!   `leader_election` example prints: never two leaders at once.
//!
//! The module's example is a unit test, `the_module_example`.

mod check;
mod election;
mod writer;

use std::time::{SystemTime, UNIX_EPOCH};

pub use check::{
    Journals, NotRunningOnce, ParseError, ReadError, Tenure, exactly_once_since, longest_unowned,
    overlaps, parse, read_dir, tenures,
};
pub use election::{Reign, Role, RoleChange, parse_events, reigns, two_leaders};
pub use writer::Writer;

/// Now as Unix milliseconds (0 if the clock is before 1970): the one clock of journal lines,
/// election events and status timestamps, so that lines written by different processes compare.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One journal line: a beat of a task on a worker, written after its lease check passed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Beat {
    /// When the beat was written, Unix milliseconds ([`unix_ms`]).
    pub unix_ms: u64,
    /// The worker that ran the task (no whitespace: the line is space-separated).
    pub worker: String,
    /// The group generation in which the worker held the task.
    pub generation: i32,
}

impl Beat {
    /// The beat as one journal line, `'\n'` included: what [`Writer`] writes and [`parse`]
    /// reads, so that the format is spelled out once.
    pub fn render(&self) -> String {
        line(self.unix_ms, &self.worker, self.generation)
    }
}

/// The one place the line format is written.
fn line(unix_ms: u64, worker: &str, generation: i32) -> String {
    format!("{unix_ms} {worker} {generation}\n")
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod module_example {
    /// Two workers' journals of one task, read back and checked: kept as a test, since the
    /// module is public only with the `journal` feature.
    #[test]
    fn the_module_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::journal::{self, Writer};

        let dir = std::env::temp_dir().join(format!("kroupier-journal-doc-{}", std::process::id()));
        // w1 runs task-0 in generation 3, then w2 takes it over in generation 4.
        let mut w1 = Writer::create(&dir, "task-0", "w1")?;
        for ms in [1_000, 1_100, 1_200] {
            w1.beat_at(ms, 3)?;
        }
        let mut w2 = Writer::create(&dir, "task-0", "w2")?;
        for ms in [2_000, 2_100] {
            w2.beat_at(ms, 4)?;
        }

        let journals = journal::read_dir(&dir)?;
        let tenures = journal::tenures(&journals["task-0"], 300);
        assert_eq!(tenures.len(), 2);
        assert!(journal::overlaps(&tenures).is_empty());
        assert_eq!(journal::longest_unowned(&journals["task-0"], 0), 800);
        let owners = journal::exactly_once_since(&journals, ["task-0"], 2_000).unwrap();
        assert_eq!(owners["task-0"], "w2");
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
