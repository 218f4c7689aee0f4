//! The assignor grid as JSON lines, for `scripts/bench` (kroupier's assignors beside Kafka's).
//!
//! ```text
//! cargo bench -p kroupier-assignor --bench grid -- [--assignors cooperative,sticky,round-robin]
//!     [--tasks 10000,100000,1000000] [--workers 10,100,1000,2000]
//!     [--scenarios cold,stable,join,leave] [--runs 7]
//! ```
//!
//! Each cell is measured the way `kroupier assign --json` measures one, and printed in the same
//! shape: `{"assignor","tasks","workers","scenario","ms","moves","min_moves","max_minus_min"}`
//! (plus `"runs"`). The group has T tasks of one kind (weight 1) and W members
//! `worker-0000000..`; `stable`, `join` and `leave` start from the assignor's own cold plan as
//! what members own; `join` adds one member, `leave` removes the middle one gracefully. Only the
//! assign calls are timed; when a plan asks for an immediate follow-up (cooperative
//! revocations), the follow-up rounds run too and the times are summed; moves and balance are
//! measured after the last round. The median of `--runs` runs is reported.

use std::error::Error;
use std::time::{Duration, Instant};

use kroupier_assignor::{
    AssignmentInput, Assignor, MemberId, MemberInput, Plan, PreviousAssignment, TaskSet, by_name,
    check,
};

/// Cooperative rounds to follow before giving up on convergence (as `kroupier assign`).
const MAX_ROUNDS: i32 = 4;

/// Command-line settings.
struct Settings {
    assignors: Vec<String>,
    tasks: Vec<u32>,
    workers: Vec<u32>,
    scenarios: Vec<String>,
    runs: usize,
}

fn list(flag: &str, value: &str) -> Result<Vec<u32>, String> {
    value
        .split(',')
        .map(|v| match v.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("{flag}: not a list of positive numbers: {value}")),
        })
        .collect()
}

fn settings() -> Result<Settings, String> {
    let mut s = Settings {
        assignors: ["cooperative", "sticky", "round-robin"]
            .map(String::from)
            .to_vec(),
        tasks: vec![10_000, 100_000, 1_000_000],
        workers: vec![10, 100, 1000, 2000],
        scenarios: ["cold", "stable", "join", "leave"]
            .map(String::from)
            .to_vec(),
        runs: 7,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        // `cargo bench` passes `--bench` to every bench target.
        if flag == "--bench" {
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let names = || value.split(',').map(String::from).collect::<Vec<_>>();
        match flag.as_str() {
            "--assignors" => s.assignors = names(),
            "--tasks" => s.tasks = list(&flag, &value)?,
            "--workers" => s.workers = list(&flag, &value)?,
            "--scenarios" => s.scenarios = names(),
            "--runs" => s.runs = list(&flag, &value)?[0] as usize,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    for scenario in &s.scenarios {
        if !["cold", "stable", "join", "leave"].contains(&scenario.as_str()) {
            return Err(format!(
                "unknown scenario {scenario} (cold, stable, join, leave)"
            ));
        }
    }
    for name in &s.assignors {
        by_name(name).map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// Members that own what `plan` gave them, granted in `generation`.
fn owning(plan: &Plan, generation: i32) -> Vec<MemberInput> {
    plan.assignments
        .iter()
        .map(|a| MemberInput::new(a.member_id.clone()).with_owned(generation, a.assigned.clone()))
        .collect()
}

/// The first round and its follow-ups while the plan asks for one at once; the last plan and
/// the summed time of the assign calls.
fn rounds(
    assignor: &dyn Assignor,
    first: &AssignmentInput<'_>,
) -> Result<(Plan, Duration), Box<dyn Error>> {
    let started = Instant::now();
    let mut plan = assignor.assign(first)?;
    let mut elapsed = started.elapsed();
    for generation in 2..=MAX_ROUNDS {
        if plan.rebalance_delay != Some(Duration::ZERO) {
            break;
        }
        let members = owning(&plan, generation);
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

/// Measures one cell and returns its JSON line.
fn cell(
    name: &str,
    tasks: &TaskSet,
    workers: u32,
    scenario: &str,
    runs: usize,
) -> Result<String, Box<dyn Error>> {
    let assignor = by_name(name)?;
    let id = |i: u32| MemberId::from(format!("worker-{i:07}"));
    let fresh: Vec<MemberInput> = (0..workers).map(|i| MemberInput::new(id(i))).collect();
    let (members, previous, left) = if scenario == "cold" {
        (fresh, PreviousAssignment::default(), Vec::new())
    } else {
        let base = assignor.assign(&AssignmentInput::new(tasks, &fresh))?;
        let mut members = owning(&base, 1);
        let mut left = Vec::new();
        match scenario {
            "join" => members.push(MemberInput::new(id(workers))),
            "leave" => left.push(members.remove(members.len() / 2).id),
            _ => {}
        }
        (members, base.to_previous(), left)
    };
    let first = AssignmentInput::new(tasks, &members)
        .with_previous(&previous)
        .with_left_gracefully(&left);
    let min_moves = check::lower_bound_moves(&first)?.unwrap_or(0);
    let mut times = Vec::with_capacity(runs);
    let mut plan = Plan::default();
    for _ in 0..runs {
        let (last, elapsed) = rounds(assignor.as_ref(), &first)?;
        times.push(elapsed);
        plan = last;
    }
    times.sort_unstable();
    let ms = (times[times.len() / 2].as_secs_f64() * 1e6).round() / 1e3;
    let moves = check::moves(&first, &plan)?;
    let counts = plan.assignments.iter().map(|a| a.assigned.len());
    let max_minus_min = counts.clone().max().unwrap_or(0) - counts.min().unwrap_or(0);
    Ok(format!(
        "{{\"assignor\":\"{name}\",\"tasks\":{},\"workers\":{workers},\"scenario\":\"{scenario}\",\
         \"ms\":{ms},\"moves\":{moves},\"min_moves\":{min_moves},\"max_minus_min\":{max_minus_min},\
         \"runs\":{runs}}}",
        tasks.len()
    ))
}

fn main() -> Result<(), Box<dyn Error>> {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "grid: {e}\nusage: grid [--assignors LIST] [--tasks LIST] [--workers LIST] \
                 [--scenarios LIST] [--runs N]"
            );
            std::process::exit(2);
        }
    };
    for &t in &s.tasks {
        let tasks = TaskSet::uniform(t, "task");
        for &w in &s.workers {
            for scenario in &s.scenarios {
                for name in &s.assignors {
                    println!("{}", cell(name, &tasks, w, scenario, s.runs)?);
                }
            }
        }
    }
    Ok(())
}
