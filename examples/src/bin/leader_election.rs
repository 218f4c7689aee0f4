//! Leader election among N processes over a Kafka group.
//!
//! ```text
//! leader_election --bootstrap ADDR --group G --id ID [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
//!                 [--command-config FILE]
//! ```
//!
//! Prints one JSON line per change of this process's role, flushed at once:
//! `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}` (`ts_ms` is Unix
//! milliseconds). A leader acts only while its fencing token is valid; it reports `lost` the
//! moment its session may be gone, before any other process can be elected. On SIGTERM or
//! ctrl-c it resigns (`lost`), leaves the group and exits 0. Logs go to stderr (`RUST_LOG`).

use clap::Parser;
use kroupier::election::Elector;
use kroupier_examples::member::{MemberArgs, driver_exit, election_role, print_role, usage_error};
use kroupier_examples::terminated;
use tokio::sync::broadcast::error::RecvError;

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
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kroupier_examples::init_logs();
    let Args { member: args } = Args::parse();
    let config = match args.member_config("leader_election") {
        Ok(config) => config,
        Err(e) => return usage_error("leader_election", e),
    };

    let (elector, driver) = match Elector::new(config, &args.id, true) {
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
                Ok(event) => print_role(&args.id, election_role(&event)),
                Err(RecvError::Lagged(n)) => eprintln!("leader_election: {n} role changes skipped"),
                Err(RecvError::Closed) => break,
            },
            () = &mut stop => {
                elector.leave().await;
                while let Ok(event) = events.try_recv() {
                    print_role(&args.id, election_role(&event));
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Ok(event) = events.try_recv() {
                    print_role(&args.id, election_role(&event));
                }
                return driver_exit("leader_election", ended);
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
