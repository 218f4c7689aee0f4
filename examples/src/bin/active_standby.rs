//! One instance of a service that runs in active/standby pairs (Kafka Monitor's HA mode): the
//! active instance runs a long job, the others stand by and take over when it fails.
//!
//! ```text
//! active_standby --bootstrap ADDR --group G --id ID [--journal-dir DIR] [--probe-interval-ms MS]
//!                [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--command-config FILE]
//!                [--fast-failover [--fast-failover-listen ADDR] [--fast-failover-advertise IP]]
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
//! while active). On SIGTERM or ctrl-c it stops the job (`lost`, printed before it leaves),
//! leaves the group so a standby takes over at once, and exits 0. Logs go to stderr
//! (`RUST_LOG`). With `--fast-failover` (as `leader_election` takes it) a standby takes over
//! within milliseconds of the active process's end, not after its session.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kroupier::election::{ElectionEvent, ElectorHandle};
use kroupier::worker::journal::Writer;
use kroupier_examples::member::{
    FastFailoverArgs, MemberArgs, driver_exit, election_role, elector, print_role, resign,
};
use kroupier_examples::terminated;
use tokio::task::JoinHandle;

/// Run a job on one active instance among many, the others on standby.
#[derive(Debug, Parser)]
#[command(
    name = "active_standby",
    display_name = "kroupier active_standby",
    version
)]
struct Args {
    #[command(flatten)]
    member: MemberArgs,
    #[command(flatten)]
    fast: FastFailoverArgs,
    /// Where the probe appends its journal (`DIR/probe.log`); no journal without it.
    #[arg(long, value_name = "DIR")]
    journal_dir: Option<PathBuf>,
    /// How often the active instance probes, in milliseconds.
    #[arg(long, default_value_t = 100)]
    probe_interval_ms: u64,
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
    kroupier_examples::member::usage_error("active_standby", message)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kroupier_examples::init_logs();
    let args = Args::parse();
    if args.probe_interval_ms == 0 {
        return fail("--probe-interval-ms must be at least 1");
    }
    let config = match args.member.member_config("active_standby") {
        Ok(config) => config,
        Err(e) => return fail(e),
    };
    if let Some(dir) = &args.journal_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return fail(format!("--journal-dir {}: {e}", dir.display()));
    }
    let (elector, driver) = match elector(config, &args.member.id, &args.fast) {
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
                Some(event) => {
                    // Whatever the new role, the old job stops first (it checks `is_leader`
                    // before every probe anyway).
                    if let Some(job) = job.take() {
                        job.abort();
                    }
                    print_role(&args.member.id, election_role(&event));
                    if let ElectionEvent::Leader { token } = &event {
                        job = Some(tokio::spawn(probe(
                            elector.clone(),
                            token.generation_id,
                            args.member.id.clone(),
                            args.journal_dir.clone(),
                            every,
                        )));
                    }
                }
                None => break,
            },
            () = &mut stop => {
                // `leave` resigns before LeaveGroup: the probe sees `is_leader()` false and
                // stops before a standby can be elected.
                resign(&args.member.id, &elector, &mut events).await;
                if let Some(job) = job.take() {
                    job.abort();
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                if let Some(job) = job.take() {
                    job.abort();
                }
                while let Some(event) = events.try_recv() {
                    print_role(&args.member.id, election_role(&event));
                }
                return driver_exit("active_standby", ended);
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
