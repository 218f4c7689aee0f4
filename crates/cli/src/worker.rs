//! `kroupier worker` (hidden): a small kroupier worker, so that `kroupier demo` needs nothing
//! but this binary. It runs `beat` tasks `task-0` .. `task-{N-1}`; with `--journal-dir`, each
//! running task appends `<unix_ms> <worker-id> <generation>\n` to `DIR/<task-id>.log` every
//! 100 ms, each time only after its lease check passes (the same journal as the quickstart
//! example's, the witness that no task runs on two workers at once).
//!
//! With `--command-config FILE` the worker starts from the file's Kafka client properties
//! (security, timeouts, ...); its flags apply over them.
//!
//! With `--exit-with-stdin` the worker exits at once when its standard input closes: the demo
//! holds the other end, so workers never outlive it, however it ends.

use std::convert::Infallible;
use std::error::Error;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kroupier_worker::journal::Writer;
use kroupier_worker::shutdown::{Outcome, two_signals};
use kroupier_worker::{Kind, Task, TaskContext, TaskError, WorkerBuilder, WorkerConfig};
use serde::{Deserialize, Serialize};

use crate::command_config::{CommandConfig, UsageError};

/// Arguments of `kroupier worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Kafka bootstrap servers (or a `kroupier coordinator`), `host:port[,host:port...]`.
    #[arg(long)]
    pub bootstrap: String,
    /// The group id the workers share.
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub group: String,
    /// This worker's id (shown by describe and in journals).
    #[arg(long)]
    pub worker_id: String,
    /// How many tasks the group runs: `task-0` .. `task-{N-1}`, at most 1,000,000.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub tasks: u32,
    /// Write each task's beats to `DIR/<task-id>.log`.
    #[arg(long)]
    pub journal_dir: Option<PathBuf>,
    /// Kafka's `session.timeout.ms`: how soon a dead worker's tasks move when its death cannot
    /// be proved (a host crash, a partition; any death with fast failover off). Default: the
    /// `--command-config` file's, else 3000.
    #[arg(long)]
    pub session_timeout_ms: Option<u64>,
    /// Kafka's `heartbeat.interval.ms`. Default: the `--command-config` file's, else 500.
    #[arg(long)]
    pub heartbeat_interval_ms: Option<u64>,
    /// Exit at once when standard input closes (the parent is gone).
    #[arg(long)]
    pub exit_with_stdin: bool,
    /// Turn fast failover off (`kroupier.failover.fast=false`): a dead worker's tasks move
    /// only after its session timeout.
    #[arg(long)]
    pub no_fast_failover: bool,
    /// Also run the tasks of the group's task store (`tasks.store.enabled=true`): tasks added
    /// and deleted at run time with `kroupier tasks`.
    #[arg(long)]
    pub task_store: bool,
    #[command(flatten)]
    pub config: CommandConfig,
}

/// The `beat` kind and its config type.
const BEAT: Kind<BeatConfig> = Kind::new("beat");

/// A `beat` task's config, from the catalogue.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BeatConfig {
    every_ms: u64,
}

/// A task that writes a journal line every `every_ms` while this worker holds it.
#[derive(Debug)]
struct Beat {
    config: BeatConfig,
    worker_id: Arc<str>,
    journal_dir: Option<PathBuf>,
}

impl Task for Beat {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let mut journal = match &self.journal_dir {
            Some(dir) => Some(Writer::create(dir, ctx.task_id(), &self.worker_id)?),
            None => None,
        };
        let mut ticks = tokio::time::interval(Duration::from_millis(self.config.every_ms.max(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let token = ctx.check_lease()?;
            if let Some(journal) = journal.as_mut() {
                journal.beat(token.generation_id)?;
            }
        }
    }
}

/// The worker's configuration: its defaults (a 3 s session, 500 ms heartbeats), then the
/// `--command-config` file's keys, then the flags given.
///
/// # Errors
/// A [`UsageError`] (exit code 2) for a file that cannot be read or a config that cannot work,
/// found before anything connects.
fn worker_config(args: &Args) -> Result<WorkerConfig, UsageError> {
    // The default assignor (cooperative) moves a dead worker's tasks at once; the abort
    // timeout is derived from the session, within the self-fencing margin.
    let mut defaults = WorkerConfig::default();
    defaults.member.membership.session_timeout = Duration::from_secs(3);
    defaults.member.membership.heartbeat_interval = Duration::from_millis(500);
    let mut config = args.config.worker_config(defaults)?;
    let member = &mut config.member;
    args.group.clone_into(&mut member.membership.group_id);
    member.cluster.bootstrap_servers = args.bootstrap.split(',').map(str::to_owned).collect();
    member.cluster.connection.client_id = format!("kroupier-{}", args.worker_id);
    if let Some(ms) = args.session_timeout_ms {
        member.membership.session_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = args.heartbeat_interval_ms {
        member.membership.heartbeat_interval = Duration::from_millis(ms);
    }
    config.worker_id = args.worker_id.clone();
    if args.no_fast_failover {
        config.status.fast_failover = false;
    }
    if args.task_store {
        config.tasks.store.enabled = true;
    }
    // The status API (on a free loopback port) is what fast failover watches.
    if !config.status.fast_failover {
        config.status.addr = None;
    }
    // A config that cannot work is bad input (exit 2), found before anything connects.
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(config)
}

/// Runs the worker until SIGTERM/ctrl-c (graceful: stop tasks, leave the group); a second
/// signal exits at once.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    crate::logs::init();
    if args.exit_with_stdin {
        std::thread::spawn(|| {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            // The parent is gone: die like a crashed worker; the group fails over.
            std::process::exit(3);
        });
    }
    if let Some(dir) = &args.journal_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the journal dir {}: {e}", dir.display()))?;
    }
    let config = worker_config(args)?;

    let worker_id: Arc<str> = args.worker_id.as_str().into();
    let journal_dir = args.journal_dir.clone();
    let mut builder = WorkerBuilder::new(config).register_with(
        BEAT,
        move |config: BeatConfig| -> Result<Beat, Infallible> {
            Ok(Beat {
                config,
                worker_id: worker_id.clone(),
                journal_dir: journal_dir.clone(),
            })
        },
    );
    for i in 0..args.tasks {
        builder = builder.typed_task(&BEAT, format!("task-{i}"), BeatConfig { every_ms: 100 });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let signals = crate::signal::signals()?;
        let worker = builder.spawn().await?;
        match two_signals(signals, |first| worker.run_until(first)).await {
            Outcome::Interrupted => Err("interrupted during the graceful shutdown".into()),
            Outcome::Finished(exit) => exit.map(drop).map_err(Into::into),
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        worker: Args,
    }

    /// The flags every worker needs, before `--tasks`.
    const WORKER: [&str; 7] = [
        "kroupier",
        "--bootstrap",
        "b:1",
        "--group",
        "g",
        "--worker-id",
        "w",
    ];

    fn parse(extra: &[&str]) -> Args {
        let tasks = ["--tasks", "1"];
        Cli::parse_from(WORKER.iter().chain(&tasks).chain(extra)).worker
    }

    #[test]
    fn more_tasks_than_a_worker_can_hold_are_bad_input() {
        let error =
            Cli::try_parse_from(WORKER.iter().chain(&["--tasks", "4294967296"])).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("1000000"), "{error}");
    }

    #[test]
    fn the_files_session_timeout_wins_over_the_default_and_a_given_flag_over_the_file() {
        let dir = std::env::temp_dir().join(format!("kroupier-cli-worker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session.properties");
        std::fs::write(
            &path,
            "session.timeout.ms=2000\nheartbeat.interval.ms=400\n",
        )
        .unwrap();
        let path = path.to_str().unwrap();

        let config = worker_config(&parse(&["--command-config", path])).unwrap();
        let membership = &config.member.membership;
        assert_eq!(membership.session_timeout, Duration::from_secs(2));
        assert_eq!(membership.heartbeat_interval, Duration::from_millis(400));

        let flag = ["--command-config", path, "--session-timeout-ms", "6000"];
        let config = worker_config(&parse(&flag)).unwrap();
        assert_eq!(
            config.member.membership.session_timeout,
            Duration::from_secs(6)
        );
        assert_eq!(
            config.member.membership.heartbeat_interval,
            Duration::from_millis(400)
        );

        let config = worker_config(&parse(&[])).unwrap();
        assert_eq!(
            config.member.membership.session_timeout,
            Duration::from_secs(3)
        );
        assert_eq!(
            config.member.membership.heartbeat_interval,
            Duration::from_millis(500)
        );
    }
}
