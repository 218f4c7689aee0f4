//! `kroupier`: the command line of kroupier (demo, coordinator, describe, watch, assign).
//!
//! Each subcommand lives in its own file and exposes an `Args` struct and a `run` function;
//! `main` only parses and dispatches.

mod assign;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Assign(args) => assign::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kroupier: {error}");
            ExitCode::FAILURE
        }
    }
}
