//! One replica of a key-value service with a single writer, in Schema Registry's shape.
//!
//! ```text
//! single_writer --bootstrap ADDR --group G --id ID --http ADDR --store PATH
//!               [--leader-eligible true|false] [--advertised-url URL]
//!               [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--command-config FILE]
//! ```
//!
//! Run N replicas with the same `--group` and `--store` (an SQLite file they share). The
//! replicas elect one writer through the Kafka group; `PUT /kv/{key}` on any replica lands
//! through the writer, `GET /kv/{key}` works on every replica, `GET /role` tells the role
//! (see `kroupier_examples::single_writer::http`).
//!
//! Prints JSON lines on stdout, flushed at once: first
//! `{"ts_ms":..,"id":..,"event":"listening","url":..}`, then one per role change as
//! `leader_election` prints them: `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost",
//! "generation":..}`. On SIGTERM or ctrl-c the replica stops writing (`lost`), leaves the
//! group and exits 0. Exit 2 on bad arguments. Logs go to stderr (`RUST_LOG`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kroupier::coordinator::driver::{Member, MemberConfig};
use kroupier::worker::journal::unix_ms;
use kroupier_examples::single_writer::http::{Replica, router};
use kroupier_examples::single_writer::protocol::{Role, SingleWriter};
use kroupier_examples::single_writer::store::{Store, StoreError};
use kroupier_examples::{command_config, terminated};
use tokio::sync::broadcast::error::RecvError;

/// One replica of a key-value service whose writes go through one elected writer.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The group id the replicas share.
    #[arg(long)]
    group: String,
    /// This replica's stable id (the lowest eligible id writes when nobody wrote before).
    #[arg(long)]
    id: String,
    /// Where the HTTP API listens, `host:port` (port 0: any free port).
    #[arg(long)]
    http: String,
    /// The SQLite file the replicas share.
    #[arg(long)]
    store: PathBuf,
    /// Whether this replica may be the writer.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_eligible: bool,
    /// The URL the other replicas reach this one at; `http://<bound address>` by default.
    #[arg(long)]
    advertised_url: Option<String>,
    /// Kafka's `session.timeout.ms`: how soon a dead writer is replaced.
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

fn print_line(id: &str, event: &str, extra: (&str, serde_json::Value)) {
    // The keys in the contract's order (serde_json's maps sort them).
    let line = format!(
        "{{\"ts_ms\":{},\"id\":{},\"event\":\"{event}\",\"{}\":{}}}",
        unix_ms(),
        serde_json::Value::from(id),
        extra.0,
        extra.1,
    );
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the replica.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn print_role(id: &str, role: &Role) {
    let (name, generation) = match role {
        Role::Leader { token } => ("leader", Some(token.generation_id)),
        Role::Follower { generation_id, .. } => ("follower", Some(*generation_id)),
        Role::Lost { generation_id } => ("lost", *generation_id),
    };
    print_line(id, name, ("generation", generation.into()));
}

fn fail(message: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("single_writer: {message}");
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
    let mut config = MemberConfig::new(&args.bootstrap, &args.group).with_timeouts(
        Duration::from_millis(args.session_timeout_ms),
        Duration::from_millis(args.heartbeat_interval_ms),
    );
    // The broker checks the session timeout against its own bounds, and its error names them.
    config.membership.min_session_timeout = Duration::ZERO;
    config.cluster.connection.client_id = format!("single_writer-{}", args.id);
    match command_config(args.command_config.as_deref()) {
        Ok(file) => config.cluster.security = file.member.cluster.security,
        Err(e) => return fail(e),
    }
    let store = match Store::open(&args.store) {
        Ok(store) => Arc::new(store),
        Err(e) => return fail(format!("--store {}: {e}", args.store.display())),
    };
    let listener = match tokio::net::TcpListener::bind(&args.http).await {
        Ok(listener) => listener,
        Err(e) => return fail(format!("--http {}: {e}", args.http)),
    };
    let url = match (&args.advertised_url, listener.local_addr()) {
        (Some(url), _) => url.clone(),
        (None, Ok(addr)) => format!("http://{addr}"),
        (None, Err(e)) => return fail(format!("--http {}: {e}", args.http)),
    };

    let protocol = Arc::new(SingleWriter::new(&args.id, &url, args.leader_eligible));
    let mut roles = protocol.changes();
    let (member, driver) = match Member::new(config, protocol.clone()) {
        Ok(pair) => pair,
        Err(e) => return fail(e),
    };
    let replica = Arc::new(Replica {
        id: args.id.clone(),
        protocol: protocol.clone(),
        member: member.clone(),
        store: store.clone(),
    });
    print_line(&args.id, "listening", ("url", url.clone().into()));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(replica)).await {
            eprintln!("single_writer: the HTTP server stopped: {e}");
        }
    });
    let mut driver = tokio::spawn(driver);
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            role = roles.recv() => match role {
                Ok(role) => {
                    print_role(&args.id, &role);
                    if let Role::Leader { token } = role {
                        // Raise the store's token at once: the previous writer's late
                        // writes are rejected from now on, even before this writer's first.
                        let store = store.clone();
                        let claimed = tokio::task::spawn_blocking(move || store.claim(token.generation_id)).await;
                        match claimed {
                            Ok(Ok(())) => {}
                            Ok(Err(e @ StoreError::Fenced { .. })) => eprintln!(
                                "single_writer: claiming the store: {e}; if the whole group was \
                                 restarted after Kafka deleted it, its generations start again: \
                                 give it a new --store file"
                            ),
                            Ok(Err(e)) => eprintln!("single_writer: claiming the store: {e}"),
                            Err(e) => eprintln!("single_writer: claiming the store: {e}"),
                        }
                    }
                }
                Err(RecvError::Lagged(n)) => eprintln!("single_writer: {n} role changes skipped"),
                Err(RecvError::Closed) => break,
            },
            () = &mut stop => {
                // Stop writing before LeaveGroup, so no two replicas ever write at once.
                protocol.resign();
                member.leave("the replica was stopped").await;
                while let Ok(role) = roles.try_recv() {
                    print_role(&args.id, &role);
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Ok(role) = roles.try_recv() {
                    print_role(&args.id, &role);
                }
                return match ended {
                    Ok(Ok(())) => std::process::ExitCode::SUCCESS,
                    Ok(Err(e)) => {
                        eprintln!("single_writer: {e}");
                        std::process::ExitCode::FAILURE
                    }
                    Err(e) => {
                        eprintln!("single_writer: the driver panicked: {e}");
                        std::process::ExitCode::FAILURE
                    }
                };
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
