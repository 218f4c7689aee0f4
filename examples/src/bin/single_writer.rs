//! One replica of a key-value service with a single writer, in Schema Registry's shape.
//!
//! ```text
//! single_writer --bootstrap ADDR --group G --id ID --http ADDR --store PATH
//!               [--leader-eligible true|false] [--advertised-url URL]
//!               [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--command-config FILE]
//!               [--fast-failover [--fast-failover-listen ADDR] [--fast-failover-advertise IP]]
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
//!
//! With `--fast-failover`, a new writer is chosen within milliseconds of the writer's process
//! ending (SIGKILL, a crash), instead of after its session: the replicas follow the writer's
//! endpoint ([`kroupier::failover::Failover`]). A paused or partitioned writer still waits for
//! its session, and the store's token still refuses its late writes.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use kroupier::protocol::Member;
use kroupier_examples::member::{
    FastFailoverArgs, MemberArgs, driver_exit, print_line, print_role,
};
use kroupier_examples::single_writer::http::{Replica, router};
use kroupier_examples::single_writer::protocol::{Role, SingleWriter};
use kroupier_examples::single_writer::store::{Store, StoreError};
use kroupier_examples::terminated;
use tokio::sync::broadcast::error::RecvError;

/// One replica of a key-value service whose writes go through one elected writer.
#[derive(Debug, Parser)]
#[command(
    name = "single_writer",
    display_name = "kroupier single_writer",
    version
)]
struct Args {
    #[command(flatten)]
    member: MemberArgs,
    #[command(flatten)]
    fast: FastFailoverArgs,
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
}

fn print_role_change(id: &str, role: &Role) {
    print_role(
        id,
        match role {
            Role::Leader { token } => ("leader", Some(token.generation_id)),
            Role::Follower { generation_id, .. } => ("follower", Some(*generation_id)),
            Role::Lost { generation_id } => ("lost", *generation_id),
        },
    );
}

fn fail(message: impl std::fmt::Display) -> std::process::ExitCode {
    kroupier_examples::member::usage_error("single_writer", message)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kroupier_examples::init_logs();
    let args = Args::parse();
    let config = match args.member.member_config("single_writer") {
        Ok(config) => config,
        Err(e) => return fail(e),
    };
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

    let failover = match args.fast.bind() {
        Ok(failover) => failover,
        Err(e) => return fail(e),
    };
    let mut protocol = SingleWriter::new(&args.member.id, &url, args.leader_eligible);
    if let Some(failover) = &failover {
        protocol = protocol.with_failover(failover.clone());
    }
    let protocol = Arc::new(protocol);
    let mut roles = protocol.changes();
    let (member, driver) = match Member::new(config.clone(), protocol.clone()) {
        Ok(pair) => pair,
        Err(e) => return fail(e),
    };
    if let Err(e) = FastFailoverArgs::spawn(failover.as_ref(), &member, &config) {
        return fail(e);
    }
    let replica = Arc::new(Replica {
        id: args.member.id.clone(),
        protocol: protocol.clone(),
        member: member.clone(),
        store: store.clone(),
    });
    print_line(&args.member.id, "listening", ("url", url.clone().into()));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(replica)).await {
            eprintln!("single_writer: the HTTP server stopped: {e}");
        }
    });
    protocol.attach_events(member.events());
    let mut driver = tokio::spawn(protocol.clone().with_events(driver));
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            role = roles.recv() => match role {
                Ok(role) => {
                    print_role_change(&args.member.id, &role);
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
                    print_role_change(&args.member.id, &role);
                }
                return std::process::ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Ok(role) = roles.try_recv() {
                    print_role_change(&args.member.id, &role);
                }
                return driver_exit("single_writer", ended);
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
