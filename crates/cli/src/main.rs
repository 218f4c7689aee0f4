//! `kroupier`: the command line of kroupier (demo, coordinator, describe, watch, console, assign).
//!
//! Each subcommand lives in its own file and exposes an `Args` struct and a `run` function;
//! `main` only parses and dispatches. Exit codes (docs/operations.md, "Exit codes"): 0 done, 1
//! the cluster said no or the run failed, 2 bad input found before anything is sent (a
//! [`UsageError`](command_config::UsageError), or a flag clap refuses), with the reason on
//! stderr.

mod actual;
mod assign;
mod command_config;
mod console;
mod coordinator;
mod demo;
mod describe;
mod group_view;
mod logs;
mod placement;
mod signal;
mod table;
mod tasks;
mod tasks_checkpoint;
mod watch;
mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Share work among many processes with Apache Kafka's group membership protocol.
#[derive(Debug, Parser)]
#[command(name = "kroupier", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an assignor on a synthetic group and report time, moves and balance.
    Assign(assign::Args),
    /// Run the embedded coordinator (Kafka's group coordinator, in one process).
    Coordinator(coordinator::Args),
    /// Show a group's members, leader, generation and each member's tasks.
    Describe(describe::Args),
    /// Add, change, pause, resume, restart, delete and list a group's tasks in its task store.
    Tasks(tasks::Args),
    /// A live terminal view of a group's members and tasks, highlighting each move.
    Watch(watch::Args),
    /// A web page showing a group live: workers, tasks, rebalances and failovers.
    Console(console::Args),
    /// Start workers, kill one, and watch its tasks move (needs nothing but this binary).
    Demo(demo::Args),
    /// A small kroupier worker running `beat` tasks (used by the demo).
    #[command(hide = true)]
    Worker(worker::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Assign(args) => assign::run(&args),
        Command::Coordinator(args) => coordinator::run(&args),
        Command::Describe(args) => describe::run(&args),
        Command::Tasks(args) => tasks::run(&args),
        Command::Watch(args) => watch::run(&args),
        Command::Console(args) => console::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Worker(args) => worker::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kroupier: {error}");
            if error.is::<command_config::UsageError>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
