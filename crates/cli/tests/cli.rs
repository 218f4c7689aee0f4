//! The `kroupier` binary end to end: `describe --json` against an in-process embedded
//! coordinator with two workers, `demo` with small settings, and the exit codes of bad
//! arguments (2) and of an unreachable broker (1).

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::Duration;

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig};
use serde_json::Value;

const KROUPIER: &str = env!("CARGO_BIN_EXE_kroupier");

fn kroupier(args: &[&str]) -> Output {
    Command::new(KROUPIER)
        .args(args)
        .output()
        .expect("run the kroupier binary")
}

/// A task that runs until it is revoked.
#[derive(Debug, serde::Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

async fn describe_json(bootstrap: String, group: &'static str) -> Value {
    let output = tokio::task::spawn_blocking(move || {
        kroupier(&[
            "describe",
            "--bootstrap",
            &bootstrap,
            "--group",
            group,
            "--json",
        ])
    })
    .await
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("describe --json prints one JSON object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_json_shows_two_workers_and_their_tasks_on_the_embedded_coordinator() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bootstrap = coordinator.bootstrap();
    let mut workers = Vec::new();
    for id in ["worker-a", "worker-b"] {
        let mut config = WorkerConfig::new("cli-describe");
        config.member.cluster.bootstrap_servers = vec![bootstrap.clone()];
        config.worker_id = id.into();
        config.member.cluster.connection.client_id = format!("client-{id}");
        config.member.membership.session_timeout = Duration::from_secs(3);
        config.member.membership.heartbeat_interval = Duration::from_millis(500);
        config.status.addr = None;
        let mut builder = WorkerBuilder::new(config).register::<Idle>("idle");
        for i in 0..4 {
            builder = builder.task(TaskSpec::new(
                format!("task-{i}"),
                "idle",
                serde_json::json!({}),
            ));
        }
        workers.push(builder.spawn().await.unwrap());
    }

    // Wait (bounded) until the group is stable with both members holding every task.
    let mut last = Value::Null;
    for _ in 0..80 {
        last = describe_json(bootstrap.clone(), "cli-describe").await;
        let tasks: usize = last["members"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| m["tasks"].as_array().map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0);
        if last["state"] == "Stable"
            && last["members"].as_array().map(Vec::len) == Some(2)
            && tasks == 4
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let object = last.as_object().expect("an object");
    let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "group",
            "state",
            "generation",
            "protocol_type",
            "protocol",
            "leader",
            "members"
        ]),
        "{last}"
    );
    assert_eq!(last["group"], "cli-describe");
    assert_eq!(last["state"], "Stable", "{last}");
    assert_eq!(last["protocol_type"], "kroupier");
    assert!(last["protocol"].is_string(), "{last}");
    assert!(
        last["generation"].as_i64().is_some_and(|g| g >= 1),
        "{last}"
    );
    let members = last["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{last}");
    let member_ids: Vec<&str> = members
        .iter()
        .map(|m| m["member_id"].as_str().unwrap())
        .collect();
    assert!(
        member_ids.contains(&last["leader"].as_str().unwrap()),
        "{last}"
    );
    let mut all_tasks = Vec::new();
    for member in members {
        let keys: BTreeSet<&str> = member
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            BTreeSet::from(["member_id", "instance_id", "client_id", "host", "tasks"])
        );
        assert_eq!(member["instance_id"], Value::Null);
        assert!(
            member["client_id"]
                .as_str()
                .unwrap()
                .starts_with("client-worker-")
        );
        all_tasks.extend(
            member["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned()),
        );
    }
    all_tasks.sort();
    assert_eq!(all_tasks, ["task-0", "task-1", "task-2", "task-3"]);

    // The human table shows the same group.
    let table = {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            kroupier(&[
                "describe",
                "--bootstrap",
                &bootstrap,
                "--group",
                "cli-describe",
            ])
        })
        .await
        .unwrap()
    };
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("state Stable") && text.contains("worker-a") && text.contains("worker-b"),
        "{text}"
    );

    // A group that does not exist is no answer: exit 1, the reason on stderr, nothing on
    // stdout, with or without --json.
    for json in [true, false] {
        let bootstrap = bootstrap.clone();
        let output = tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "describe",
                "--bootstrap",
                &bootstrap,
                "--group",
                "no-such-group",
            ];
            if json {
                args.push("--json");
            }
            kroupier(&args)
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("group `no-such-group` does not exist"),
            "{stderr}"
        );
        assert!(output.stdout.is_empty(), "json {json}: stdout printed");
    }

    for worker in workers {
        worker.shutdown().await.unwrap();
    }
    coordinator.shutdown().await;
}

/// `kroupier demo` with two workers, four tasks and a 1.5 s session on its embedded
/// coordinator, plus `extra` flags; asserts it exits 0 and returns its stdout.
fn small_demo(extra: &[&str]) -> String {
    let mut args = vec![
        "demo",
        "--workers",
        "2",
        "--tasks",
        "4",
        "--kill-after",
        "1",
        "--session-timeout-ms",
        "1500",
        "--heartbeat-interval-ms",
        "300",
        "--timeout",
        "60",
    ];
    args.extend_from_slice(extra);
    let output = kroupier(&args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn demo_kills_a_worker_and_its_tasks_run_again_exactly_once() {
    let stdout = small_demo(&[]);
    assert!(stdout.contains("SIGKILL worker-"), "{stdout}");
    // In milliseconds, from the signal: tens of them with fast failover would read "0.00 s".
    let failover = stdout
        .lines()
        .find_map(|l| l.strip_prefix("failover time: "))
        .unwrap_or_else(|| panic!("no failover time in {stdout}"));
    let (ms, unit) = failover.split_once(' ').unwrap_or_default();
    assert!(
        ms.parse::<u64>().is_ok() && unit.starts_with("ms "),
        "{stdout}"
    );
    assert!(stdout.contains("running again"), "{stdout}");
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}

#[test]
fn demo_passes_with_fast_failover_off_and_then_waits_for_the_session() {
    let stdout = small_demo(&["--no-fast-failover"]);
    let failover = stdout
        .lines()
        .find_map(|l| l.strip_prefix("failover time: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no failover time in ms in {stdout}"));
    // Nothing proves the death without fast failover: the session (1.5 s) has to expire.
    assert!(failover >= 1000, "failover after {failover} ms: {stdout}");
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["describe", "--group", "g"][..],
        &["describe", "--bootstrap", "127.0.0.1:9092"][..],
        &["demo", "--workers", "1"][..],
        &["demo", "--tasks", "lots"][..],
        &["watch"][..],
        &["no-such-command"][..],
        &["describe", "--bootstrap", "127.0.0.1:9092", "--group", ""][..],
        &["watch", "--bootstrap", "127.0.0.1:9092", "--group", ""][..],
        &["console", "--bootstrap", "127.0.0.1:9092", "--group", ""][..],
        &[
            "tasks",
            "list",
            "--bootstrap",
            "127.0.0.1:9092",
            "--group",
            "",
        ][..],
        &["demo", "--group", ""][..],
    ] {
        let output = kroupier(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            !output.stderr.is_empty(),
            "{args:?}: clap explains the error"
        );
    }
}

#[test]
fn an_unreachable_broker_exits_1_with_a_clear_message() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bootstrap = format!("127.0.0.1:{port}");
    let output = kroupier(&[
        "describe",
        "--bootstrap",
        &bootstrap,
        "--group",
        "g",
        "--json",
        "--timeout-ms",
        "3000",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot reach {bootstrap}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn coordinator_prints_its_bootstrap_serves_describe_and_stops_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut child = Command::new(KROUPIER)
        .args(["coordinator", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start kroupier coordinator");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let bootstrap = first
        .trim()
        .strip_prefix("bootstrap=")
        .unwrap_or_else(|| panic!("first line `{first}` is not bootstrap=HOST:PORT"))
        .to_owned();
    let output = kroupier(&[
        "describe",
        "--bootstrap",
        &bootstrap,
        "--group",
        "nobody",
        "--json",
    ]);
    // SIGTERM first, so that a failed assertion leaves no coordinator behind.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        output.status.code(),
        Some(1),
        "nobody is a group that does not exist"
    );
}

#[test]
fn the_help_line_names_every_command() {
    let output = kroupier(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    let about = help.lines().next().expect("an about line");
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .collect();
    assert!(commands.contains(&"tasks"), "{help}");
    for command in commands {
        assert!(
            about.contains(command),
            "`kroupier --help` lists `{command}`, its about line does not: {about}"
        );
    }
}

#[test]
fn the_version_names_kroupier() {
    let output = kroupier(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("kroupier {}\n", env!("CARGO_PKG_VERSION"))
    );
}
