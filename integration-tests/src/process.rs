//! Worker processes for the integration tests: the example binaries (`quickstart`,
//! `leader_election`) started as real processes, signalled the way an operator or a crash would.
//!
//! The binaries must be built first (`scripts/test` builds `--all-targets`); they are found next
//! to the test executable's directory, in the cargo target dir of the current profile — or in
//! the directory named by `KROUPIER_BIN_DIR` when it is set, to run the same tests against
//! binaries built from another commit.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

/// The environment variable naming a directory to take the worker binaries from instead of
/// the running test's target directory.
pub const BIN_DIR_ENV: &str = "KROUPIER_BIN_DIR";

/// Path of a binary built by this workspace in the same profile as the running test, or in
/// `KROUPIER_BIN_DIR` when that is set.
pub fn binary(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV).filter(|d| !d.is_empty()) {
        let path = PathBuf::from(dir).join(name);
        assert!(
            path.exists(),
            "{} is not there ({BIN_DIR_ENV} is set)",
            path.display()
        );
        return path;
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test executable lives in target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built; run `cargo build --workspace --all-targets` (scripts/test does)",
        path.display()
    );
    path
}

/// A signal the tests send to a worker process.
#[derive(Debug, Clone, Copy)]
pub enum Signal {
    /// A crash: the process dies without leaving the group.
    Kill,
    /// A graceful stop: the process stops its tasks, leaves the group and exits.
    Term,
    /// A freeze (GC pause, VM stall): the process stops running but keeps its sockets.
    Stop,
    /// The end of a freeze.
    Cont,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Kill => "KILL",
            Signal::Term => "TERM",
            Signal::Stop => "STOP",
            Signal::Cont => "CONT",
        }
    }
}

/// A child process that is killed when dropped, so a failing test leaves nothing behind.
pub struct Process {
    child: Child,
    /// What the child prints on stdout, line by line (taken by [`Process::stdout_lines`]).
    stdout: Option<ChildStdout>,
}

impl Process {
    /// Starts the workspace binary `name` with `args`; stdout is piped, stderr inherited.
    pub fn spawn(name: &str, args: &[String]) -> Self {
        Self::spawn_logged(name, args, None, &[])
    }

    /// [`spawn`](Self::spawn), with stderr written to `stderr` when given (to scan the logs),
    /// and `env` set for the child (`RUST_LOG`, ...).
    pub fn spawn_logged(
        name: &str,
        args: &[String],
        stderr: Option<std::fs::File>,
        env: &[(String, String)],
    ) -> Self {
        Self::spawn_under(&[], name, args, stderr, env)
    }

    /// [`spawn_logged`](Self::spawn_logged) under `wrapper`, a command that ends by executing
    /// the binary with its arguments (`ip netns exec NS ...`, see [`crate::netns`]); empty, the
    /// binary starts directly. Every part of the wrapper must `exec`, so that the process id
    /// is the binary's and signals reach it.
    pub fn spawn_under(
        wrapper: &[String],
        name: &str,
        args: &[String],
        stderr: Option<std::fs::File>,
        env: &[(String, String)],
    ) -> Self {
        let binary = binary(name);
        let mut command = match wrapper.split_first() {
            Some((program, wrapper_args)) => {
                let mut command = Command::new(program);
                command.args(wrapper_args).arg(binary);
                command
            }
            None => Command::new(binary),
        };
        let mut child = command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr.map_or_else(Stdio::inherit, Stdio::from))
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let stdout = child.stdout.take();
        Self { child, stdout }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (through the `kill` command; the project has no `unsafe`).
    pub fn signal(&self, signal: Signal) {
        let status = Command::new("kill")
            .arg(format!("-{}", signal.name()))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(
            status.success(),
            "kill -{} {} failed",
            signal.name(),
            self.pid()
        );
    }

    /// Waits for the process to exit and returns its exit code (`None` when a signal ended it).
    pub fn wait(&mut self) -> Option<i32> {
        self.child.wait().expect("wait for child").code()
    }

    /// The exit code if the process has exited (`Some(None)` when a signal ended it), `None`
    /// while it runs.
    pub fn try_wait(&mut self) -> Option<Option<i32>> {
        self.child
            .try_wait()
            .expect("look at the child")
            .map(|status| status.code())
    }

    /// Hands the child's stdout lines to a thread that sends each one to the returned channel.
    pub fn stdout_lines(&mut self) -> std::sync::mpsc::Receiver<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = self.stdout.take().expect("stdout taken once");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
