//! `kroupier assign`: run one assignor on a synthetic group and measure one change.
//!
//! The group has `--tasks` tasks of one kind (weight 1) and `--workers` members. Scenarios:
//! `cold` (nobody owns anything), `stable` (members own a balanced assignment, nothing
//! changed), `join` (one member joins a balanced group), `leave` (the middle member leaves
//! gracefully). Only the assignor's rounds are timed, not building the input; they are run
//! `--runs` times (default 5) and the median is reported. The cooperative
//! assignor needs a follow-up round when it revokes (join): both rounds are timed and summed,
//! and moves and balance are measured after the last one.

use std::error::Error;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use kroupier_assignor::{
    AssignmentInput, Assignor, MemberId, MemberInput, Plan, PreviousAssignment, TaskSet, by_name,
    check,
};
use serde::Serialize;

/// Arguments of `kroupier assign`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The assignor: round-robin, sticky or cooperative.
    #[arg(long, value_parser = ["round-robin", "sticky", "cooperative"])]
    assignor: String,
    /// The number of tasks.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000_000))]
    tasks: u32,
    /// The number of workers (members) before the change.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    workers: u32,
    /// What changes in the measured round.
    #[arg(long, value_enum)]
    scenario: Scenario,
    /// Print one JSON object instead of a human line.
    #[arg(long)]
    json: bool,
    /// Repeat the measured round(s) this many times and report the median time.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
}

/// The membership change to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Scenario {
    /// No member owns anything yet.
    Cold,
    /// Members own a balanced assignment; nothing changed.
    Stable,
    /// One member joins.
    Join,
    /// The middle member leaves gracefully.
    Leave,
}

/// The JSON report (the contract in DESIGN.md).
#[derive(Debug, Serialize)]
struct Report {
    assignor: String,
    tasks: u32,
    workers: u32,
    scenario: Scenario,
    ms: f64,
    moves: usize,
    min_moves: usize,
    max_minus_min: usize,
}

/// Cooperative rounds to follow before giving up on convergence.
const MAX_ROUNDS: usize = 4;

/// Runs the command.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let report = measure(args)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} {} {} tasks × {} workers: {:.3} ms, {} moves (lower bound {}), max−min {}",
            report.assignor,
            format!("{:?}", report.scenario).to_lowercase(),
            report.tasks,
            report.workers,
            report.ms,
            report.moves,
            report.min_moves,
            report.max_minus_min
        );
    }
    Ok(())
}

/// Builds the group, runs the measured round(s) and reports.
fn measure(args: &Args) -> Result<Report, Box<dyn Error>> {
    let assignor = by_name(&args.assignor)?;
    let tasks = TaskSet::uniform(args.tasks, "task");
    let id = |i: u32| MemberId::from(format!("worker-{i:07}"));
    let fresh: Vec<MemberInput> = (0..args.workers).map(|i| MemberInput::new(id(i))).collect();

    let (members, previous, left) = if args.scenario == Scenario::Cold {
        (fresh, PreviousAssignment::default(), Vec::new())
    } else {
        let base = assignor.assign(&AssignmentInput::new(&tasks, &fresh))?;
        let mut members = owning(&base);
        let mut left = Vec::new();
        match args.scenario {
            Scenario::Join => members.push(MemberInput::new(id(args.workers))),
            Scenario::Leave => left.push(members.remove(members.len() / 2).id),
            Scenario::Cold | Scenario::Stable => {}
        }
        (members, base.to_previous(), left)
    };

    let first = AssignmentInput::new(&tasks, &members)
        .with_previous(&previous)
        .with_left_gracefully(&left);
    let min_moves = check::lower_bound_moves(&first)?.unwrap_or(0);
    let mut times = Vec::new();
    let mut plan = Plan::default();
    for _ in 0..args.runs {
        let (last, elapsed) = rounds(assignor.as_ref(), &first)?;
        times.push(elapsed);
        plan = last;
    }
    times.sort_unstable();
    let elapsed = times[times.len() / 2];
    let moves = check::moves(&first, &plan)?;
    let counts = plan.assignments.iter().map(|a| a.assigned.len());
    let max_minus_min = counts.clone().max().unwrap_or(0) - counts.min().unwrap_or(0);

    Ok(Report {
        assignor: args.assignor.clone(),
        tasks: args.tasks,
        workers: args.workers,
        scenario: args.scenario,
        ms: (elapsed.as_secs_f64() * 1e6).round() / 1e3,
        moves,
        min_moves,
        max_minus_min,
    })
}

/// Members that own what `plan` gave them (granted in generation 1).
fn owning(plan: &Plan) -> Vec<MemberInput> {
    plan.assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(1, a.assigned.clone()))
        .collect()
}

/// Runs the first round and, while the plan asks for an immediate follow-up (cooperative
/// revocations), the next ones with the same members. Returns the last plan and the summed
/// time of the assign calls.
fn rounds(
    assignor: &dyn Assignor,
    first: &AssignmentInput<'_>,
) -> Result<(Plan, Duration), Box<dyn Error>> {
    let started = Instant::now();
    let mut plan = assignor.assign(first)?;
    let mut elapsed = started.elapsed();
    for generation in 2..=MAX_ROUNDS as i32 {
        if plan.rebalance_delay != Some(Duration::ZERO) {
            break;
        }
        let members: Vec<MemberInput> = owning(&plan)
            .into_iter()
            .map(|m| MemberInput { generation, ..m })
            .collect();
        let previous = plan.to_previous();
        let input = AssignmentInput::new(first.tasks, &members)
            .with_previous(&previous)
            .with_state(plan.state);
        let started = Instant::now();
        let next = assignor.assign(&input)?;
        elapsed += started.elapsed();
        plan = next;
    }
    Ok((plan, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(line: &str) -> Result<Args, clap::Error> {
        Cli::try_parse_from(std::iter::once("assign").chain(line.split_whitespace()))
            .map(|c| c.args)
    }

    #[test]
    fn join_moves_the_lower_bound() {
        for assignor in ["sticky", "cooperative"] {
            let line =
                format!("--assignor {assignor} --tasks 1000 --workers 10 --scenario join --runs 1");
            let report = measure(&args(&line).unwrap()).unwrap();
            assert_eq!(report.moves, 1000 / 11, "{assignor}");
            assert_eq!(report.min_moves, 1000 / 11, "{assignor}");
            assert!(report.max_minus_min <= 1, "{assignor}");
        }
    }

    #[test]
    fn json_has_exactly_the_contract_keys() {
        let line = "--assignor round-robin --tasks 100 --workers 3 --scenario leave --json";
        let report = measure(&args(line).unwrap()).unwrap();
        let json = serde_json::to_value(&report).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = vec![
            "assignor",
            "tasks",
            "workers",
            "scenario",
            "ms",
            "moves",
            "min_moves",
            "max_minus_min",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(json["scenario"], "leave");
    }

    #[test]
    fn bad_arguments_are_clap_errors() {
        for line in [
            "--assignor range --tasks 10 --workers 2 --scenario cold",
            "--assignor sticky --tasks 10 --workers 0 --scenario cold",
            "--assignor sticky --tasks -1 --workers 2 --scenario cold",
            "--assignor sticky --tasks 10 --workers 2 --scenario rolling",
            "--assignor sticky --tasks 10 --workers 2",
        ] {
            let error = args(line).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{line}");
        }
    }
}
