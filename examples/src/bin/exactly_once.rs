//! Exactly-once output: `numbers` tasks write numbered records to a Kafka topic, each
//! transaction with the task's position as its checkpoint.
//!
//! ```text
//! exactly_once --bootstrap ADDR --group G --worker-id ID --tasks N --topic T
//!              [--per-commit N] [--every-ms MS] [--until N] [--status-addr ADDR]
//!              [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--command-config FILE]
//! ```
//!
//! Start it several times with the same `--group`: the tasks `numbers-0` .. `numbers-{N-1}`
//! spread over the workers and move when one dies, pauses or leaves. Each writes
//! `numbers-<i> <n>` for n = 0, 1, 2, ... to `--topic`; a read-committed reader
//! (`kafka-console-consumer.sh --isolation-level read_committed`) sees every number of every
//! task exactly once and in order, through kills, pauses and moves. Needs Apache Kafka: the
//! embedded coordinator serves no transactions, and the task then fails saying so. Prints one
//! JSON line per assignment on stdout; SIGTERM or ctrl-c stops the tasks and leaves.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kroupier::shutdown::{Outcome, two_signals};
use kroupier::worker::journal::unix_ms;
use kroupier::{WorkerBuilder, WorkerConfig, WorkerEvent};
use kroupier_examples::numbers::{NUMBERS, Numbers, NumbersConfig};
use kroupier_examples::{SessionArgs, os_signals};

/// Run `numbers` tasks, exactly once, in a Kafka group.
#[derive(Debug, Parser)]
#[command(name = "exactly_once", display_name = "kroupier exactly_once", version)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The group id the workers share.
    #[arg(long)]
    group: String,
    /// This worker's id.
    #[arg(long)]
    worker_id: String,
    /// How many tasks: `numbers-0` .. `numbers-{N-1}`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    tasks: u32,
    /// The topic the numbers go to.
    #[arg(long)]
    topic: String,
    /// Numbers per transaction.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    per_commit: u64,
    /// How often each task commits, in milliseconds.
    #[arg(long, default_value_t = 100)]
    every_ms: u64,
    /// Each task stops writing after this many numbers (default: never).
    #[arg(long)]
    until: Option<u64>,
    /// Where the status API listens (default 127.0.0.1:0).
    #[arg(long)]
    status_addr: Option<SocketAddr>,
    #[command(flatten)]
    session: SessionArgs,
    /// Kafka client properties (TLS, SASL, and any key of `kroupier::WorkerConfig`, such as
    /// `tasks.transactional.id.prefix`); the flags given apply over them.
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
}

fn print(line: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main]
async fn main() -> ExitCode {
    kroupier_examples::init_logs();
    let args = Args::parse();
    let mut config: WorkerConfig = match args.session.worker_config(args.command_config.as_deref())
    {
        Ok(config) => config,
        Err(e) => {
            eprintln!("exactly_once: {e}");
            return ExitCode::from(2);
        }
    };
    args.group
        .clone_into(&mut config.member.membership.group_id);
    config.member.cluster.bootstrap_servers =
        args.bootstrap.split(',').map(str::to_owned).collect();
    config.member.cluster.connection.client_id = format!("exactly-once-{}", args.worker_id);
    config.worker_id = args.worker_id.clone();
    if let Some(addr) = args.status_addr {
        config.status.addr = Some(addr);
    }
    // The checkpoints live in the task store's checkpoint topic.
    config.tasks.store.enabled = true;

    let mut builder = WorkerBuilder::new(config).register_with(
        NUMBERS,
        |config: NumbersConfig| -> Result<Numbers, Infallible> { Ok(Numbers(config)) },
    );
    for i in 0..args.tasks {
        builder = builder.typed_task(
            &NUMBERS,
            format!("numbers-{i}"),
            NumbersConfig {
                topic: args.topic.clone(),
                per_commit: args.per_commit,
                every_ms: args.every_ms,
                until: args.until,
            },
        );
    }
    let worker = match builder.spawn().await {
        Ok(worker) => worker,
        Err(e) => {
            eprintln!("exactly_once: {e}");
            return ExitCode::from(2);
        }
    };
    print(&serde_json::json!({
        "ts_ms": unix_ms(), "worker": args.worker_id, "event": "started",
        "pid": std::process::id(),
    }));
    let mut events = worker.events();
    let worker_id = args.worker_id.clone();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let WorkerEvent::Assigned {
                generation, tasks, ..
            } = &event
            {
                print(&serde_json::json!({
                    "ts_ms": unix_ms(), "worker": worker_id, "event": "assigned",
                    "generation": generation, "tasks": &**tasks,
                }));
            }
        }
    });
    let outcome = two_signals(os_signals(), |first| worker.run_until(first)).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), printer).await;
    match outcome {
        Outcome::Interrupted => ExitCode::from(130),
        Outcome::Finished(Ok(_)) => ExitCode::SUCCESS,
        Outcome::Finished(Err(e)) => {
            eprintln!("exactly_once: {e}");
            ExitCode::FAILURE
        }
    }
}
