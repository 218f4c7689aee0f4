//! Tasks as Rust structs, shared among N worker processes by a Kafka group.
//!
//! ```text
//! quickstart --bootstrap ADDR --group G --worker-id ID --tasks N [--status-addr ADDR]
//!            [--journal-dir DIR] [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--static]
//!            [--instance-id ID] [--rebalance-timeout-ms MS] [--command-config FILE]
//! ```
//!
//! Start it several times with the same `--group`: the tasks `task-0` .. `task-{N-1}` spread over
//! the workers and move when one dies, leaves, joins or restarts. With `--journal-dir`, each
//! running task appends `<unix_ms> <worker-id> <generation>` to `DIR/<task-id>.log` every 100 ms,
//! only after its lease check passes. Prints one JSON line per change on stdout (an assignment
//! with where its time went: `join_ms`, the leader's `assign_ms`, `sync_ms`, `apply_ms`); logs go to
//! stderr (`RUST_LOG`). `--command-config FILE` takes Kafka client properties (TLS, SASL, and
//! any key of `kroupier::WorkerConfig`, such as `kroupier.status.token`); the flags given
//! apply over them, and the defaults only to what neither sets. SIGTERM or ctrl-c: stop the tasks, leave the group, exit 0; a second
//! signal exits at once.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kroupier::assignor::{Assignor, by_name};
use kroupier::shutdown::{Outcome, two_signals};
use kroupier::worker::AssignedTimes;
use kroupier::worker::journal::unix_ms;
use kroupier::{WorkerBuilder, WorkerConfig, WorkerEvent};
use kroupier_examples::beat::{BEAT, Beat, BeatConfig, BeatEnv};
use kroupier_examples::files::{DIR, Dir, DirConfig, FILE, File, FileConfig};
use kroupier_examples::{SessionArgs, os_signals};

/// Run `beat` tasks in a Kafka group.
#[derive(Debug, Parser)]
#[command(name = "quickstart", display_name = "kroupier quickstart", version)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The group id the workers share.
    #[arg(long)]
    group: String,
    /// This worker's id (shown in status and journals).
    #[arg(long)]
    worker_id: String,
    /// How many tasks the group runs: `task-0` .. `task-{N-1}`, at most 1,000,000 (each is a
    /// catalogue entry every worker holds in memory).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    tasks: u32,
    /// Where the status API listens (`/status`, `/metrics`, `/healthz`, `/readyz`); port 0 picks
    /// one (default: the `--command-config` file's `kroupier.status.addr`, else 127.0.0.1:0).
    #[arg(long)]
    status_addr: Option<SocketAddr>,
    /// Write each task's beats to `DIR/<task-id>.log`.
    #[arg(long)]
    journal_dir: Option<PathBuf>,
    #[command(flatten)]
    session: SessionArgs,
    /// Static membership: `group.instance.id` = the worker id, so a restart moves nothing.
    #[arg(long = "static")]
    static_membership: bool,
    /// Static membership with this `group.instance.id` instead of the worker id (two processes
    /// with one instance id and different worker ids tell their journals apart).
    #[arg(long)]
    instance_id: Option<String>,
    /// Kafka's `rebalance.timeout.ms`: how long the group waits for every worker to rejoin.
    #[arg(long)]
    rebalance_timeout_ms: Option<u64>,
    /// Assignors offered to the group, most preferred first (`cooperative`, `sticky`,
    /// `round-robin`); offer the old and the new one to change assignors in a rolling restart.
    #[arg(long, value_delimiter = ',', default_value = "cooperative")]
    assignors: Vec<String>,
    /// Make this task panic on every run (to watch restarts with backoff, then FAILED).
    /// Give it to every worker: it is part of the catalogue.
    #[arg(long)]
    panic_task: Option<String>,
    /// Failed runs in a row before a task is FAILED.
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    /// Delay before the first restart of a failed task (doubles with each failure).
    #[arg(long, default_value_t = 1_000)]
    restart_backoff_ms: u64,
    /// How often each task beats, in milliseconds (thousands of tasks beating every 100 ms
    /// keep a small machine's cores busy; a longer beat measures the group, not the beats).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    beat_ms: u64,
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
    /// `ssl.truststore.location`, ...), as Kafka's own tools take them; the flags given apply
    /// over them.
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
}

/// Prints one JSON line on stdout, flushed at once.
fn print(line: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the worker.
    let _ = serde_json::to_writer(&mut out, line);
    let _ = writeln!(out);
    let _ = out.flush();
}

/// Where an assignment's time went, in milliseconds (absent: not measured, e.g. `assign_ms`
/// on a worker that did not lead the round).
fn times_json(times: &AssignedTimes) -> serde_json::Value {
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    serde_json::json!({
        "rebalance_ms": times.member.rebalance.map(ms), "join_ms": times.member.join.map(ms),
        "assign_ms": times.member.assign.map(ms), "sync_ms": times.member.sync.map(ms),
        "held_ms": ms(times.held), "apply_ms": ms(times.apply),
    })
}

/// An `assigned` line, written straight from the event: its task lists may hold tens of
/// thousands of ids, which a `serde_json::Value` would copy one by one.
#[derive(serde::Serialize)]
struct AssignedLine<'a> {
    ts_ms: u64,
    worker: &'a str,
    event: &'static str,
    generation: i32,
    leader: bool,
    tasks: &'a BTreeSet<String>,
    started: &'a [String],
    stopped: &'a [String],
    times: serde_json::Value,
}

fn print_event(worker: &str, event: &WorkerEvent) {
    match event {
        WorkerEvent::Assigned {
            generation,
            leader,
            tasks,
            started,
            stopped,
            times,
            ..
        } => print(&AssignedLine {
            ts_ms: unix_ms(),
            worker,
            event: "assigned",
            generation: *generation,
            leader: *leader,
            tasks,
            started,
            stopped,
            times: times_json(times),
        }),
        WorkerEvent::Lost { generation } => print(&serde_json::json!({
            "ts_ms": unix_ms(), "worker": worker, "event": "lost", "generation": generation,
        })),
        WorkerEvent::Stopped => print(&serde_json::json!({
            "ts_ms": unix_ms(), "worker": worker, "event": "stopped",
        })),
        _ => {}
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    kroupier_examples::init_logs();
    let args = Args::parse();

    // The worker: where Kafka is, which group, how fast to fail over. What depends on the
    // session (self-fencing margin, abort timeout) is derived from it.
    let mut config: WorkerConfig = match args.session.worker_config(args.command_config.as_deref())
    {
        Ok(config) => config,
        Err(e) => {
            eprintln!("quickstart: {e}");
            return ExitCode::from(2);
        }
    };
    let member = &mut config.member;
    args.group.clone_into(&mut member.membership.group_id);
    member.cluster.bootstrap_servers = args.bootstrap.split(',').map(str::to_owned).collect();
    member.cluster.connection.client_id = format!("quickstart-{}", args.worker_id);
    member.membership.group_instance_id = args
        .instance_id
        .clone()
        .or_else(|| args.static_membership.then(|| args.worker_id.clone()));
    if let Some(ms) = args.rebalance_timeout_ms {
        member.membership.rebalance_timeout = Duration::from_millis(ms);
    }
    config.worker_id = args.worker_id.clone();
    if let Some(addr) = args.status_addr {
        config.status.addr = Some(addr);
    }
    config.tasks.restart.max_attempts = args.max_attempts;
    config.tasks.restart.initial_backoff = Duration::from_millis(args.restart_backoff_ms);

    // Assignors are values; the built-in ones can be looked up by name. The default
    // cooperative assignor moves a dead worker's tasks at once (Connect waits 5 minutes).
    let assignors: Result<Vec<Arc<dyn Assignor>>, _> = args
        .assignors
        .iter()
        .map(|name| by_name(name).map(Arc::from))
        .collect();
    let assignors = match assignors {
        Ok(assignors) => assignors,
        Err(e) => {
            eprintln!("quickstart: {e}");
            return ExitCode::from(2);
        }
    };

    if let Some(dir) = &args.journal_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("quickstart: cannot create {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    let env = BeatEnv {
        worker_id: args.worker_id.as_str().into(),
        journal_dir: args.journal_dir.clone(),
    };

    // The task kind: each task's typed config, plus the worker's environment.
    let mut builder = WorkerBuilder::new(config)
        .assignors(assignors)
        .register_with(
            BEAT,
            move |config: BeatConfig| -> Result<Beat, Infallible> {
                Ok(Beat {
                    config,
                    env: env.clone(),
                })
            },
        )
        // A generator kind and its children's (src/files.rs): put a `dir` task in the task
        // store, and each file of its directory runs as a `file` task.
        .register_with(DIR, |config: DirConfig| -> Result<Dir, Infallible> {
            Ok(Dir(config))
        })
        .register_with(FILE, |config: FileConfig| -> Result<File, Infallible> {
            Ok(File(config))
        });
    // The catalogue: the same on every worker of the group; configs are checked by the compiler.
    for i in 0..args.tasks {
        let id = format!("task-{i}");
        let panic = args.panic_task.as_deref() == Some(id.as_str());
        builder = builder.typed_task(
            &BEAT,
            id,
            BeatConfig {
                every_ms: args.beat_ms,
                panic,
                checkpoint_every: 0,
            },
        );
    }

    let worker = match builder.spawn().await {
        Ok(worker) => worker,
        Err(e) => {
            eprintln!("quickstart: {e}");
            return ExitCode::from(2);
        }
    };
    print(&serde_json::json!({
        "ts_ms": unix_ms(), "worker": args.worker_id, "event": "started",
        "status_addr": worker.status_addr().map(|a| a.to_string()),
        "pid": std::process::id(),
    }));
    let mut events = worker.events();
    let worker_id = args.worker_id.clone();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            print_event(&worker_id, &event);
        }
    });

    // SIGTERM or ctrl-c: stop the tasks and leave; a second signal exits at once.
    let outcome = two_signals(os_signals(), |first| worker.run_until(first)).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), printer).await;
    match outcome {
        Outcome::Interrupted => ExitCode::from(130),
        Outcome::Finished(Ok(_)) => ExitCode::SUCCESS,
        Outcome::Finished(Err(e)) => {
            eprintln!("quickstart: {e}");
            ExitCode::FAILURE
        }
    }
}
