//! A generator: the `dir` task watches a directory and declares one `file` child per file in
//! it, so that a file appearing starts a task (on any worker of the group) and a file going
//! away stops its task, within a second. Kafka Connect's connector → `taskConfigs` model, as
//! kroupier's [`TaskContext::set_children`].
//!
//! ```text
//! kroupier tasks put --bootstrap B --group G inbox --kind dir --config '{"path":"/srv/inbox"}'
//! touch /srv/inbox/a.csv      # task `inbox.a.csv` starts on some worker
//! rm /srv/inbox/a.csv         # ... and stops
//! ```
//!
//! The directory is polled (every `poll_ms`, 200 by default), which works on every file
//! system, network ones included; it must be visible at the same path from the worker that runs
//! the generator (and, for what a `file` task does here, from the workers that run the
//! children).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use kroupier::worker::store::MAX_ID_BYTES;
use kroupier::{Kind, Task, TaskContext, TaskError, TaskSpec};
use serde::{Deserialize, Serialize};

/// The generator kind.
pub const DIR: Kind<DirConfig> = Kind::new("dir");
/// The kind of each file's task.
pub const FILE: Kind<FileConfig> = Kind::new("file");

/// A `dir` task's config.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DirConfig {
    /// The directory to watch.
    pub path: PathBuf,
    /// How often to look at it, in milliseconds (200 when missing).
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
}

fn default_poll_ms() -> u64 {
    200
}

/// A `file` task's config: the file it stands for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileConfig {
    /// The file's path.
    pub path: PathBuf,
}

/// Watches a directory and declares one `file` child per file.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Dir(pub DirConfig);

impl Task for Dir {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let every = Duration::from_millis(self.0.poll_ms.max(10));
        let mut last = None;
        loop {
            let files = list(&self.0.path, ctx.task_id())?;
            if last.as_ref() != Some(&files) {
                let children = files.iter().map(|(id, path)| {
                    TaskSpec::new(
                        id.as_str(),
                        FILE.name(),
                        serde_json::json!({ "path": path }),
                    )
                });
                let written = ctx
                    .set_children(children)
                    .await
                    .map_err(TaskError::failed)?;
                ctx.report_progress(format!("{} file(s), {written} change(s)", files.len()));
                last = Some(files);
            }
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}

/// The files of `dir` by child id (`<generator>.<file name>`, with what a task id cannot hold
/// replaced by `_`); a name too long for an id, or one that maps onto another's id, is left out.
fn list(dir: &PathBuf, generator: &str) -> std::io::Result<BTreeMap<String, PathBuf>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let name: String = entry
            .file_name()
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let id = format!("{generator}.{name}");
        if id.len() <= MAX_ID_BYTES {
            files.entry(id).or_insert_with(|| entry.path());
        }
    }
    Ok(files)
}

/// One file's task: reports the file's size every second while it runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct File(pub FileConfig);

impl Task for File {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        loop {
            ctx.check_lease()?;
            let size = std::fs::metadata(&self.0.path).map(|m| m.len());
            ctx.report_progress(match size {
                Ok(bytes) => format!("{bytes} bytes"),
                Err(e) => format!("{}: {e}", self.0.path.display()),
            });
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}
