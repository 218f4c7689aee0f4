//! One instance of a service that runs in active/standby pairs (Kafka Monitor's HA mode): the
//! active instance runs a long job, the others stand by and take over when it fails.
//!
//! ```text
//! active_standby --bootstrap ADDR --group G --id ID [--journal-dir DIR] [--probe-interval-ms MS]
//!                [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--command-config FILE]
//! ```
//!
//! The job is a probe: every `--probe-interval-ms` (100 by default) the active instance
//! appends `<unix_ms> <id> <generation>` to `DIR/probe.log` (the task journal format of
//! `kroupier::worker::journal`), each time only after checking that it still leads, so the
//! journal shows who was active when. The instances elect the active one with kroupier's
//! `Elector` (sticky: an active instance stays active while it is in the group).
//!
//! Prints the JSON lines `leader_election` prints, one per role change, flushed at once:
//! `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}` (`leader`
//! while active). On SIGTERM or ctrl-c it stops the job (`lost`), leaves the group so a
//! standby takes over at once, and exits 0. Logs go to stderr (`RUST_LOG`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kroupier::coordinator::driver::MemberConfig;
use kroupier::coordinator::election::{ElectionEvent, Elector, ElectorHandle};
use kroupier::worker::journal::{Writer, unix_ms};
use kroupier_examples::{command_config, terminated};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

/// Run a job on one active instance among many, the others on standby.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The group id the instances share.
    #[arg(long)]
    group: String,
    /// This instance's stable id (the lowest id is active when none was before).
    #[arg(long)]
    id: String,
    /// Where the probe appends its journal (`DIR/probe.log`); no journal without it.
    #[arg(long, value_name = "DIR")]
    journal_dir: Option<PathBuf>,
    /// How often the active instance probes, in milliseconds.
    #[arg(long, default_value_t = 100)]
    probe_interval_ms: u64,
    /// Kafka's `session.timeout.ms`: how soon a dead active instance is replaced.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Kafka's `heartbeat.interval.ms`; about a third of the session timeout.
    #[arg(long, default_value_t = 3_000)]
    heartbeat_interval_ms: u64,
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, ...), as Kafka's own
    /// tools take them.
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
}

fn print(id: &str, event: &ElectionEvent) {
    let (name, generation) = match event {
        ElectionEvent::Leader { token } => ("leader", Some(token.generation_id)),
        ElectionEvent::Follower { generation_id, .. } => ("follower", Some(*generation_id)),
        ElectionEvent::Lost { generation_id } => ("lost", *generation_id),
    };
    let line = format!(
        "{{\"ts_ms\":{},\"id\":{},\"event\":\"{name}\",\"generation\":{}}}",
        unix_ms(),
        serde_json::Value::from(id),
        generation.map_or_else(|| "null".to_owned(), |g| g.to_string()),
    );
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The long job: probes every `every` while this instance leads generation `generation`.
/// Each journal line is written only after `is_leader()` held at that moment, so the probe
/// stops by itself at the self-fencing deadline even if nobody aborts it.
async fn probe(
    elector: Arc<ElectorHandle>,
    generation: i32,
    id: String,
    journal: Option<PathBuf>,
    every: Duration,
) {
    let mut writer = match journal.map(|dir| Writer::create(&dir, "probe", &id)) {
        Some(Ok(writer)) => Some(writer),
        Some(Err(e)) => {
            eprintln!("active_standby: cannot open the probe journal: {e}");
            None
        }
        None => None,
    };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticks.tick().await;
        if !elector.is_leader() {
            return;
        }
        if let Some(writer) = writer.as_mut()
            && let Err(e) = writer.beat(generation)
        {
            eprintln!("active_standby: the probe journal failed: {e}");
        }
    }
}

fn fail(message: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("active_standby: {message}");
    std::process::ExitCode::from(2)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let args = Args::parse();
    if args.probe_interval_ms == 0 {
        return fail("--probe-interval-ms must be at least 1");
    }
    let mut config = MemberConfig::new(&args.bootstrap, &args.group).with_timeouts(
        Duration::from_millis(args.session_timeout_ms),
        Duration::from_millis(args.heartbeat_interval_ms),
    );
    config.membership.min_session_timeout = Duration::ZERO;
    config.cluster.connection.client_id = format!("active_standby-{}", args.id);
    match command_config(args.command_config.as_deref()) {
        Ok(file) => config.cluster.security = file.member.cluster.security,
        Err(e) => return fail(e),
    }
    if let Some(dir) = &args.journal_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return fail(format!("--journal-dir {}: {e}", dir.display()));
    }
    let (elector, driver) = match Elector::new(config, &args.id, true) {
        Ok(pair) => pair,
        Err(e) => return fail(e),
    };
    let elector = Arc::new(elector);
    let mut events = elector.events();
    let mut driver = tokio::spawn(driver);
    let mut job: Option<JoinHandle<()>> = None;
    let stop = terminated();
    tokio::pin!(stop);
    let every = Duration::from_millis(args.probe_interval_ms);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => {
                    // Whatever the new role, the old job stops first (it checks `is_leader`
                    // before every probe anyway).
                    if let Some(job) = job.take() {
                        job.abort();
                    }
                    print(&args.id, &event);
                    if let ElectionEvent::Leader { token } = &event {
                        job = Some(tokio::spawn(probe(
                            elector.clone(),
                            token.generation_id,
                            args.id.clone(),
                            args.journal_dir.clone(),
                            every,
                        )));
                    }
                }
                Err(RecvError::Lagged(n)) => eprintln!("active_standby: {n} role changes skipped"),
                Err(RecvError::Closed) => break,
            },
            () = &mut stop => {
                // `leave` resigns before LeaveGroup: the probe sees `is_leader()` false and
                // stops before a standby can be elected.
                elector.leave().await;
                if let Some(job) = job.take() {
                    job.abort();
                }
                while let Ok(event) = events.try_recv() {
                    print(&args.id, &event);
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                if let Some(job) = job.take() {
                    job.abort();
                }
                while let Ok(event) = events.try_recv() {
                    print(&args.id, &event);
                }
                return match ended {
                    Ok(Ok(())) => std::process::ExitCode::SUCCESS,
                    Ok(Err(e)) => {
                        eprintln!("active_standby: {e}");
                        std::process::ExitCode::FAILURE
                    }
                    Err(e) => {
                        eprintln!("active_standby: the driver panicked: {e}");
                        std::process::ExitCode::FAILURE
                    }
                };
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
