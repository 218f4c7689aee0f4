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

use std::net::{IpAddr, SocketAddr};

use clap::Parser;
use futures::FutureExt;
use kroupier::election::{ElectionEvent, Elector, FastFailover};
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
    /// Fail over in milliseconds when the leader's process ends (see the module docs).
    #[arg(long)]
    fast_failover: bool,
    /// The fast-failover endpoint's address (port 0: any free port).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:0",
        requires = "fast_failover"
    )]
    fast_failover_listen: SocketAddr,
    /// The address to advertise for the endpoint instead of the listening one (needed with
    /// `--fast-failover-listen 0.0.0.0:0` across hosts); one of this host's own addresses.
    #[arg(long, value_name = "IP", requires = "fast_failover")]
    fast_failover_advertise: Option<IpAddr>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kroupier_examples::init_logs();
    let Args {
        member: args,
        fast_failover,
        fast_failover_listen,
        fast_failover_advertise,
    } = Args::parse();
    let config = match args.member_config("leader_election") {
        Ok(config) => config,
        Err(e) => return usage_error("leader_election", e),
    };

    let built = if fast_failover {
        let mut settings = FastFailover::new().listen(fast_failover_listen);
        if let Some(ip) = fast_failover_advertise {
            settings = settings.advertise(ip);
        }
        Elector::with_fast_failover(config, &args.id, true, settings).map(|(e, d)| (e, d.boxed()))
    } else {
        Elector::new(config, &args.id, true).map(|(e, d)| (e, d.boxed()))
    };
    let (elector, driver) = match built {
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
                // Resigning turns the role to `lost` at once and (with fast failover) closes
                // the endpoint, after which a follower may lead within milliseconds, before
                // LeaveGroup has even been answered: print `lost` first, as the moment this
                // process stops acting.
                while let Ok(event) = events.try_recv() {
                    print_role(&args.id, election_role(&event));
                }
                let held = elector.role().borrow().clone();
                let lost = match held {
                    Some(ElectionEvent::Leader { token }) => Some(token.generation_id),
                    Some(ElectionEvent::Follower { generation_id, .. }) => Some(generation_id),
                    _ => None,
                };
                if let Some(generation) = lost {
                    print_role(&args.id, ("lost", Some(generation)));
                }
                elector.leave().await;
                // The `lost` of the resignation is printed already, unless a role came in
                // between (then everything is printed, in order).
                let rest: Vec<ElectionEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
                let changed = rest.iter().any(|e| !matches!(e, ElectionEvent::Lost { .. }));
                for event in rest.iter().filter(|_| changed || lost.is_none()) {
                    print_role(&args.id, election_role(event));
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
