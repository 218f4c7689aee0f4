//! The demo's worker processes: this very binary, run as `kroupier worker`. Each is killed
//! when dropped, and each exits by itself when the demo's end of its stdin closes, so no
//! worker outlives the demo, however it ends.

use std::fs::File;
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// How to start the workers.
#[derive(Debug, Clone)]
pub(super) struct Launch<'a> {
    /// Bootstrap servers.
    pub bootstrap: &'a str,
    /// The group id.
    pub group: &'a str,
    /// The number of tasks in the catalogue.
    pub tasks: usize,
    /// Where the journals (and each worker's stderr) go.
    pub dir: &'a Path,
    /// The session timeout.
    pub session_timeout: Duration,
    /// The heartbeat interval.
    pub heartbeat_interval: Duration,
    /// Kafka client properties for the workers (`--command-config`).
    pub command_config: Option<&'a Path>,
    /// Whether the workers fail over fast (see `kroupier worker --no-fast-failover`).
    pub fast_failover: bool,
    /// Whether the workers also run the group's task store (`kroupier worker --task-store`).
    pub task_store: bool,
}

/// One worker process.
#[derive(Debug)]
pub(super) struct Worker {
    /// Its worker id (`worker-0`, ...).
    pub id: String,
    /// Its process id.
    pub pid: Option<u32>,
    killed: bool,
    child: Child,
}

/// The worker processes of one demo.
#[derive(Debug, Default)]
pub(super) struct Workers {
    workers: Vec<Worker>,
}

impl Workers {
    /// Starts `count` workers `worker-0` .. `worker-{count-1}`.
    ///
    /// # Errors
    /// When this binary cannot be found or a process cannot be started.
    pub(super) fn spawn(count: usize, launch: &Launch<'_>) -> io::Result<Self> {
        let exe = std::env::current_exe()?;
        let journals = launch.dir.join("journals");
        let mut workers = Self::default();
        for i in 0..count {
            let id = format!("worker-{i}");
            let stderr = File::create(launch.dir.join(format!("{id}.stderr")))?;
            let mut command = Command::new(&exe);
            command.arg("worker");
            if let Some(path) = launch.command_config {
                command.arg("--command-config").arg(path);
            }
            if !launch.fast_failover {
                command.arg("--no-fast-failover");
            }
            if launch.task_store {
                command.arg("--task-store");
            }
            let child = command
                .args(["--bootstrap", launch.bootstrap])
                .args(["--group", launch.group])
                .args(["--worker-id", &id])
                .args(["--tasks", &launch.tasks.to_string()])
                .arg("--journal-dir")
                .arg(&journals)
                .args([
                    "--session-timeout-ms",
                    &launch.session_timeout.as_millis().to_string(),
                ])
                .args([
                    "--heartbeat-interval-ms",
                    &launch.heartbeat_interval.as_millis().to_string(),
                ])
                .arg("--exit-with-stdin")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(stderr)
                .kill_on_drop(true)
                .spawn()?;
            workers.workers.push(Worker {
                id,
                pid: child.id(),
                killed: false,
                child,
            });
        }
        Ok(workers)
    }

    /// SIGKILLs worker `id` and waits for it to be gone; returns its process id.
    ///
    /// # Errors
    /// When there is no such worker or it cannot be killed.
    pub(super) async fn kill(&mut self, id: &str) -> io::Result<Option<u32>> {
        let worker = self
            .workers
            .iter_mut()
            .find(|w| w.id == id)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no {id}")))?;
        worker.killed = true;
        worker.child.kill().await?;
        Ok(worker.pid)
    }

    /// A worker that exited although nobody killed it, with how it ended.
    pub(super) fn exited(&mut self) -> Option<String> {
        self.workers
            .iter_mut()
            .filter(|w| !w.killed)
            .find_map(|w| match w.child.try_wait() {
                Ok(Some(status)) => Some(format!("{} exited by itself ({status})", w.id)),
                _ => None,
            })
    }
}
