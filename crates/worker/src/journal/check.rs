//! Reading journals back and checking them: tenures, overlaps, unowned time, exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::Beat;

/// Every task's beats by task id, in each file's order: what [`read_dir`] returns and the
/// checks take.
pub type Journals = BTreeMap<String, Vec<Beat>>;

/// A line that is not what the writer writes: the journal is corrupt (or not a journal), and
/// no check over it can be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: `{text}` is not {expected}")]
pub struct ParseError {
    /// The 1-based line number.
    pub line: usize,
    /// The line as read.
    pub text: String,
    /// What the line should have been.
    pub expected: &'static str,
}

/// Why [`read_dir`] could not read a directory of journals.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The directory or a file in it could not be read; check the path and its permissions.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The error reading it.
        source: std::io::Error,
    },
    /// A journal holds a malformed line that is not its cut last line.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The journal file.
        path: PathBuf,
        /// The line that did not parse.
        source: ParseError,
    },
}

/// The lines of `text` that the writer finished, numbered from 1: every complete line ends
/// with `'\n'`, so the piece after the last one is either empty or cut by a killed writer.
pub(super) fn complete_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    complete
        .split_terminator('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

/// Parses one journal file's text, in the file's order.
///
/// A final line without `'\n'` is ignored (a writer killed mid-write leaves one); an empty or
/// malformed line anywhere else is an error, since the writer never writes one.
///
/// # Errors
/// The first line that is not `<unix_ms> <worker-id> <generation>`.
pub fn parse(text: &str) -> Result<Vec<Beat>, ParseError> {
    complete_lines(text)
        .map(|(line, text)| {
            parse_line(text).ok_or_else(|| ParseError {
                line,
                text: text.to_owned(),
                expected: "`<unix_ms> <worker-id> <generation>`",
            })
        })
        .collect()
}

fn parse_line(line: &str) -> Option<Beat> {
    let mut fields = line.split(' ');
    let beat = Beat {
        unix_ms: fields.next()?.parse().ok()?,
        worker: fields.next().filter(|w| !w.is_empty())?.to_owned(),
        generation: fields.next()?.parse().ok()?,
    };
    fields.next().is_none().then_some(beat)
}

/// Reads every `<task-id>.log` in `dir` (other files are skipped), keyed by task id.
///
/// # Errors
/// A file that cannot be read, or that holds a malformed line ([`parse`]).
pub fn read_dir(dir: &Path) -> Result<Journals, ReadError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ReadError::Io { path, source }
    };
    let mut journals = Journals::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let (Some(task), Some("log")) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let beats = parse(&text).map_err(|source| ReadError::Parse {
            path: path.clone(),
            source,
        })?;
        journals.insert(task.to_owned(), beats);
    }
    Ok(journals)
}

/// A stretch of time in which one worker ran a task in one generation: its beats no more than
/// the allowed gap apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenure {
    /// The worker.
    pub worker: String,
    /// The generation it held the task in.
    pub generation: i32,
    /// Its first beat, Unix ms.
    pub first_ms: u64,
    /// Its last beat, Unix ms.
    pub last_ms: u64,
}

/// Splits a task's beats (in any order) into tenures: per worker and generation, maximal runs
/// of beats whose consecutive times are at most `max_gap_ms` apart; a longer silence means the
/// worker stopped the task. Sorted by start time.
pub fn tenures(beats: &[Beat], max_gap_ms: u64) -> Vec<Tenure> {
    let mut runs: BTreeMap<(&str, i32), Vec<u64>> = BTreeMap::new();
    for beat in beats {
        runs.entry((&beat.worker, beat.generation))
            .or_default()
            .push(beat.unix_ms);
    }
    let mut out = Vec::new();
    for ((worker, generation), mut times) in runs {
        times.sort_unstable();
        let tenure = |first_ms, last_ms| Tenure {
            worker: worker.to_owned(),
            generation,
            first_ms,
            last_ms,
        };
        let (mut first, mut last) = (times[0], times[0]);
        for &t in &times[1..] {
            if t - last > max_gap_ms {
                out.push(tenure(first, last));
                first = t;
            }
            last = t;
        }
        out.push(tenure(first, last));
    }
    out.sort_by(|a, b| {
        (a.first_ms, a.last_ms, &a.worker, a.generation).cmp(&(
            b.first_ms,
            b.last_ms,
            &b.worker,
            b.generation,
        ))
    });
    out
}

/// Every pair of tenures of different workers whose time ranges intersect (ends included):
/// the task ran on two workers at once, which kroupier exists to prevent. Empty when the
/// journal is clean.
pub fn overlaps(tenures: &[Tenure]) -> Vec<(Tenure, Tenure)> {
    let mut out = Vec::new();
    for (i, a) in tenures.iter().enumerate() {
        for b in &tenures[i + 1..] {
            if a.worker != b.worker && a.first_ms <= b.last_ms && b.first_ms <= a.last_ms {
                out.push((a.clone(), b.clone()));
            }
        }
    }
    out
}

/// The longest time, in ms, between two consecutive beats of a task (of any worker) at or
/// after `from_ms`: how long the task ran nowhere, at worst, after an instant such as a join.
/// 0 with fewer than two such beats.
pub fn longest_unowned(beats: &[Beat], from_ms: u64) -> u64 {
    let mut times: Vec<u64> = beats
        .iter()
        .map(|b| b.unix_ms)
        .filter(|&t| t >= from_ms)
        .collect();
    times.sort_unstable();
    times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
}

/// Why a task is not running exactly once at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotRunningOnce {
    /// No worker beat for the task since the instant: it is lost (or the check came too soon).
    Stopped {
        /// The task.
        task: String,
        /// Its last beat before the instant, if it ever ran.
        last_ms: Option<u64>,
    },
    /// Several workers beat for the task since the instant: it runs twice, or the group had not
    /// settled at the instant.
    OnSeveral {
        /// The task.
        task: String,
        /// The workers that beat for it.
        workers: BTreeSet<String>,
    },
}

impl fmt::Display for NotRunningOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRunningOnce::Stopped {
                task,
                last_ms: Some(last),
            } => write!(f, "{task} is not running: its last beat was at {last}"),
            NotRunningOnce::Stopped {
                task,
                last_ms: None,
            } => write!(f, "{task} never ran"),
            NotRunningOnce::OnSeveral { task, workers } => {
                write!(f, "{task} runs on {} workers: {workers:?}", workers.len())
            }
        }
    }
}

/// Checks that each `expected` task runs exactly once at the end: it beat at or after
/// `since_ms` (choose an instant the group had settled by, or "now minus a few beats"), and
/// every such beat comes from one worker. Returns each task's owner.
///
/// # Errors
/// Every expected task that is not running, or runs on several workers.
pub fn exactly_once_since<I>(
    journals: &Journals,
    expected: I,
    since_ms: u64,
) -> Result<BTreeMap<String, String>, Vec<NotRunningOnce>>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut owners = BTreeMap::new();
    let mut problems = Vec::new();
    for task in expected {
        let task = task.as_ref();
        let beats = journals.get(task).map_or(&[][..], Vec::as_slice);
        let workers: BTreeSet<&str> = beats
            .iter()
            .filter(|b| b.unix_ms >= since_ms)
            .map(|b| b.worker.as_str())
            .collect();
        let mut only = workers.iter();
        match (only.next(), only.next()) {
            (Some(owner), None) => {
                owners.insert(task.to_owned(), (*owner).to_owned());
            }
            (None, _) => problems.push(NotRunningOnce::Stopped {
                task: task.to_owned(),
                last_ms: beats.iter().map(|b| b.unix_ms).max(),
            }),
            (Some(_), Some(_)) => problems.push(NotRunningOnce::OnSeveral {
                task: task.to_owned(),
                workers: workers.into_iter().map(str::to_owned).collect(),
            }),
        }
    }
    if problems.is_empty() {
        Ok(owners)
    } else {
        Err(problems)
    }
}
