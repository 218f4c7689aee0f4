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

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use kroupier::coordinator::driver::MemberConfig;
use kroupier::coordinator::election::{ElectionEvent, Elector};
use kroupier::worker::journal::unix_ms;
use kroupier_examples::{command_config, terminated};
use tokio::sync::broadcast::error::RecvError;

/// Elect one leader among the processes sharing a Kafka group.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The group id the candidates share.
    #[arg(long)]
    group: String,
    /// This candidate's stable id (the lowest id leads when nobody led before).
    #[arg(long)]
    id: String,
    /// Kafka's `session.timeout.ms`: how soon a dead leader is replaced.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Kafka's `heartbeat.interval.ms`; about a third of the session timeout.
    #[arg(long, default_value_t = 3_000)]
    heartbeat_interval_ms: u64,
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
    /// `ssl.truststore.location`, ...), as Kafka's own tools take them. The connection's
    /// security comes from them; other keys are checked but not used.
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
}

fn print(id: &str, event: &ElectionEvent) {
    let (name, generation) = match event {
        ElectionEvent::Leader { token } => ("leader", Some(token.generation_id)),
        ElectionEvent::Follower { generation_id, .. } => ("follower", Some(*generation_id)),
        ElectionEvent::Lost { generation_id } => ("lost", *generation_id),
    };
    // The keys in the contract's order (serde_json's maps sort them).
    let line = format!(
        "{{\"ts_ms\":{},\"id\":{},\"event\":\"{name}\",\"generation\":{}}}",
        unix_ms(),
        serde_json::Value::from(id),
        generation.map_or_else(|| "null".to_owned(), |g| g.to_string()),
    );
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the election; the next line will fail the same way.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
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
    let session = Duration::from_millis(args.session_timeout_ms);
    let heartbeat = Duration::from_millis(args.heartbeat_interval_ms);
    let mut config =
        MemberConfig::new(&args.bootstrap, &args.group).with_timeouts(session, heartbeat);
    // No client-side guess of the broker's session bounds: the broker checks the session
    // timeout against its own group.min/max.session.timeout.ms, and its error names them.
    config.membership.min_session_timeout = Duration::ZERO;
    config.cluster.connection.client_id = format!("leader_election-{}", args.id);
    match command_config(args.command_config.as_deref()) {
        Ok(file) => config.cluster.security = file.member.cluster.security,
        Err(e) => {
            eprintln!("leader_election: {e}");
            return std::process::ExitCode::from(2);
        }
    }

    let (elector, driver) = match Elector::new(config, &args.id, true) {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("leader_election: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut events = elector.events();
    let mut driver = tokio::spawn(driver);
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => print(&args.id, &event),
                Err(RecvError::Lagged(n)) => eprintln!("leader_election: {n} role changes skipped"),
                Err(RecvError::Closed) => break,
            },
            () = &mut stop => {
                elector.leave().await;
                while let Ok(event) = events.try_recv() {
                    print(&args.id, &event);
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Ok(event) = events.try_recv() {
                    print(&args.id, &event);
                }
                return match ended {
                    Ok(Ok(())) => std::process::ExitCode::SUCCESS,
                    Ok(Err(e)) => {
                        eprintln!("leader_election: {e}");
                        std::process::ExitCode::FAILURE
                    }
                    Err(e) => {
                        eprintln!("leader_election: the driver panicked: {e}");
                        std::process::ExitCode::FAILURE
                    }
                };
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
