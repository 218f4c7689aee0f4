//! `quickstart`'s bounds: a `--tasks` beyond what it can hold is bad input, refused at once
//! with exit code 2 and a message naming the flag, before anything is built or connects. Also
//! what it says of itself (`--version`, `--help`), and the failover times its "Try it" in
//! docs/worker.md quotes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn too_many_tasks_exit_2_at_once() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args([
            "--bootstrap",
            "127.0.0.1:1",
            "--group",
            "g",
            "--worker-id",
            "w",
        ])
        .args(["--tasks", "4294967296"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quickstart");
    let started = Instant::now();
    while child.try_wait().expect("poll quickstart").is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("quickstart --tasks 4294967296 still ran after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("read quickstart's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tasks"), "{stderr}");
    assert!(stderr.contains("1000000"), "{stderr}");
}

/// `--version` names the program, not the crate it is built from; `--help` opens with what the
/// program does.
#[test]
fn version_and_help_name_kroupier_quickstart() {
    let run = |flag: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_quickstart"))
            .arg(flag)
            .output()
            .expect("run quickstart");
        assert_eq!(output.status.code(), Some(0), "quickstart {flag}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert_eq!(
        run("--version"),
        format!("kroupier quickstart {}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = run("--help");
    assert!(
        help.starts_with("Run `beat` tasks in a Kafka group"),
        "{help}"
    );
}

/// docs/worker.md's "Try it" quotes the failover times docs/reliability.md measured (its table
/// *Fast failover, Kafka's default session*, Kafka column): a new measurement there fails this
/// until it is quoted.
#[test]
fn try_it_quotes_the_measured_failover_times() {
    let reliability = include_str!("../../docs/reliability.md");
    let worker = include_str!("../../docs/worker.md");
    let try_it = worker
        .split("## Try it")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/worker.md has a Try it section");
    let table = reliability
        .split("### Fast failover, Kafka's default session")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("docs/reliability.md has a Fast failover section");
    for scenario in ["| SIGKILL a follower |", "| SIGTERM a worker |"] {
        let row = table
            .lines()
            .find(|line| line.starts_with(scenario))
            .unwrap_or_else(|| panic!("docs/reliability.md's table lacks {scenario}"));
        // | scenario | what | Kafka | embedded |
        let kafka = row.split('|').nth(3).expect("a Kafka column").trim();
        assert!(
            try_it.contains(&format!("{kafka} ms")),
            "docs/worker.md's Try it should quote `{kafka} ms` for {scenario}:\n{try_it}"
        );
    }
    assert!(!try_it.contains("3.4 s later"), "{try_it}");
}
