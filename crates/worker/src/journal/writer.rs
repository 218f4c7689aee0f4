//! Appending beats to `DIR/<task-id>.log`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{line, unix_ms};

/// Appends one task's beats on one worker to `DIR/<task-id>.log`.
///
/// A task opens its writer when it starts and calls [`Writer::beat`] after each lease check
/// that passed. Each line is one `write` to a file opened for appending, so lines of several
/// workers sharing the file never interleave, and a crash cuts at most the last line.
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
    worker: String,
}

impl Writer {
    /// Opens (creating `dir` and the file if needed) the journal of `task_id`, for beats of
    /// `worker_id`.
    ///
    /// # Errors
    /// `InvalidInput` when `worker_id` is empty or holds whitespace (it would break the
    /// space-separated line), or when `task_id` is empty or not a plain file name; otherwise
    /// the error creating `dir` or opening the file.
    pub fn create(dir: impl AsRef<Path>, task_id: &str, worker_id: &str) -> io::Result<Self> {
        if worker_id.is_empty() || worker_id.contains(char::is_whitespace) {
            return Err(invalid(format!(
                "worker id {worker_id:?} cannot be written in a journal line: it must be \
                 non-empty and without whitespace"
            )));
        }
        if task_id.is_empty()
            || task_id == "."
            || task_id == ".."
            || task_id.contains(['/', '\\', '\0'])
        {
            return Err(invalid(format!(
                "task id {task_id:?} cannot name a journal file: use a plain file name"
            )));
        }
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{task_id}.log"));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Writer {
            file,
            path,
            worker: worker_id.to_owned(),
        })
    }

    /// Appends a beat in `generation`, now ([`unix_ms`]). Call it only after the lease check
    /// passed: the journal must never show a beat the worker was not sure to own.
    ///
    /// # Errors
    /// The write failed, or wrote only part of the line (then the journal holds a cut line
    /// that the checker reports; the task should fail rather than write on).
    pub fn beat(&mut self, generation: i32) -> io::Result<()> {
        self.beat_at(unix_ms(), generation)
    }

    /// Appends a beat in `generation` at `unix_ms`: [`Writer::beat`] with the time given, for
    /// tests and tools that replay a journal.
    ///
    /// # Errors
    /// As [`Writer::beat`].
    pub fn beat_at(&mut self, unix_ms: u64, generation: i32) -> io::Result<()> {
        let line = line(unix_ms, &self.worker, generation);
        // One write, never a retry of the rest: a second write could land after another
        // writer's line and leave a malformed line in the middle of the file.
        let written = self.file.write(line.as_bytes())?;
        if written == line.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "{}: wrote {written} of {} bytes of a journal line",
                    self.path.display(),
                    line.len()
                ),
            ))
        }
    }

    /// The file this writer appends to, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}
