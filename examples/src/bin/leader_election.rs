//! Leader election among N processes over a Kafka group.
//!
//! ```text
//! leader_election --bootstrap ADDR --group G --id ID [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
//!                 [--command-config FILE]
//!                 [--fast-failover [--fast-failover-listen ADDR] [--fast-failover-advertise IP]]
//! ```
//!
//! Prints one JSON line per change of this process's role, flushed at once:
//! `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}` (`ts_ms` is Unix
//! milliseconds). A leader acts only while its fencing token is valid; it reports `lost` the
//! moment its session may be gone, before any other process can be elected. On SIGTERM or
//! ctrl-c it resigns (`lost`, printed before it leaves), leaves the group and exits 0. Logs go to stderr (`RUST_LOG`).
//!
//! With `--fast-failover` (off by default, as in the library) each process listens on a small
//! TCP endpoint (`--fast-failover-listen`, default `127.0.0.1:0`; across hosts listen on an
//! address the others reach, or on `0.0.0.0:0` with `--fast-failover-advertise` this host's
//! address) and the followers link to the leader's: when the leader's process ends, they prove
//! it, remove it from the group and elect another in milliseconds instead of a session
//! timeout. A paused or unreachable leader still waits for its session.

use clap::Parser;
use kroupier_examples::member::{
    FastFailoverArgs, MemberArgs, driver_exit, election_role, elector, print_role, resign,
    usage_error,
};
use kroupier_examples::terminated;

/// Elect one leader among the processes sharing a Kafka group.
#[derive(Debug, Parser)]
#[command(
    name = "leader_election",
    display_name = "kroupier leader_election",
    version
)]
struct Args {
    #[command(flatten)]
    member: MemberArgs,
    #[command(flatten)]
    fast: FastFailoverArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kroupier_examples::init_logs();
    let Args { member: args, fast } = Args::parse();
    let config = match args.member_config("leader_election") {
        Ok(config) => config,
        Err(e) => return usage_error("leader_election", e),
    };
    let (elector, driver) = match elector(config, &args.id, &fast) {
        Ok(pair) => pair,
        Err(e) => return usage_error("leader_election", e),
    };
    let mut events = elector.events();
    let mut driver = tokio::spawn(driver);
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => print_role(&args.id, election_role(&event)),
                None => break,
            },
            () = &mut stop => {
                resign(&args.id, &elector, &mut events).await;
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Some(event) = events.try_recv() {
                    print_role(&args.id, election_role(&event));
                }
                return driver_exit("leader_election", ended);
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
