//! `kroupier tasks` against the broker in `KROUPIER_KAFKA_BOOTSTRAP` (real Kafka, or the
//! embedded coordinator): put, pause, resume, restart, delete and list a group's task store,
//! with `--json`, and the clear errors of bad input (nothing written).
//!
//! Needs the `kroupier` binary built (`cargo build -p kroupier-cli`).

use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::binary;
use kroupier_integration_tests::quickstart::{Group, TempDir, poll};
use serde_json::{Value, json};

fn unique(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-tasks-{name}-{}-{nanos}", std::process::id())
}

/// Runs `kroupier tasks ACTION ARGS... --bootstrap B --group G`.
fn tasks(bootstrap: &str, group: &str, action: &[&str]) -> Output {
    Command::new(binary("kroupier"))
        .arg("tasks")
        .args(action)
        .args(["--bootstrap", bootstrap, "--group", group])
        .output()
        .expect("run kroupier tasks")
}

/// Runs a command that must succeed with `--json`; its JSON.
fn json_of(bootstrap: &str, group: &str, action: &[&str]) -> Value {
    let mut args = action.to_vec();
    args.push("--json");
    let output = tasks(bootstrap, group, &args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "kroupier tasks {action:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// Runs a command that must fail with `code`; its stderr.
fn failure(bootstrap: &str, group: &str, action: &[&str], code: i32) -> String {
    let output = tasks(bootstrap, group, action);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(code),
        "kroupier tasks {action:?}: {stderr}"
    );
    stderr
}

fn listed(bootstrap: &str, group: &str) -> Vec<Value> {
    json_of(bootstrap, group, &["list"])["tasks"]
        .as_array()
        .expect("a task array")
        .clone()
}

#[test]
fn tasks_commands_write_the_store_and_refuse_bad_input() {
    let Some(bootstrap) = kafka_bootstrap("tasks_commands_write_the_store_and_refuse_bad_input")
    else {
        return;
    };
    let group = unique("store");
    // No store yet: listing says so and creates nothing.
    let stderr = failure(&bootstrap, &group, &["list"], 1);
    assert!(stderr.contains("no task store yet"), "{stderr}");

    let put = json_of(
        &bootstrap,
        &group,
        &[
            "put",
            "beat-1",
            "--kind",
            "beat",
            "--config",
            r#"{"every_ms":100}"#,
        ],
    );
    assert_eq!(put["task"], "beat-1");
    assert_eq!(put["action"], "put");
    let first_version = put["version"].as_i64().expect("a version");
    json_of(
        &bootstrap,
        &group,
        &[
            "put", "beat-2", "--kind", "beat", "--config", "{}", "--weight", "3",
        ],
    );
    let paused = json_of(&bootstrap, &group, &["pause", "beat-1"]);
    assert!(paused["version"].as_i64().unwrap() > first_version);
    json_of(&bootstrap, &group, &["restart", "beat-2"]);

    let tasks = listed(&bootstrap, &group);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert_eq!(tasks[0]["id"], "beat-1");
    assert_eq!(tasks[0]["desired"], "paused");
    // No worker runs: the actual state is Kafka Connect's UNASSIGNED.
    assert_eq!(tasks[0]["state"], "UNASSIGNED");
    assert_eq!(tasks[0]["config"], json!({"every_ms": 100}));
    assert_eq!(tasks[1]["weight"], 3);
    assert_eq!(tasks[1]["restart"], 1);
    assert_eq!(tasks[1]["desired"], "running");

    json_of(&bootstrap, &group, &["resume", "beat-1"]);
    json_of(&bootstrap, &group, &["delete", "beat-2"]);
    let tasks = listed(&bootstrap, &group);
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["desired"], "running");

    // Bad input: a clear error, nothing written.
    let before = json_of(&bootstrap, &group, &["list"])["offset"].clone();
    let stderr = failure(
        &bootstrap,
        &group,
        &["put", "x", "--kind", "beat", "--config", "{"],
        2,
    );
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    let stderr = failure(&bootstrap, &group, &["delete", "no-such-task"], 1);
    assert!(stderr.contains("no-such-task"), "{stderr}");
    let stderr = failure(&bootstrap, &group, &["pause", "no-such-task"], 1);
    assert!(stderr.contains("not in the task store"), "{stderr}");
    let dir = TempDir::new("cli-tasks");
    let big = dir.0.join("big.json");
    std::fs::write(&big, format!(r#"{{"blob":"{}"}}"#, "x".repeat(600 * 1024))).expect("write");
    let big = big.to_str().expect("a UTF-8 path");
    let stderr = failure(
        &bootstrap,
        &group,
        &["put", "big", "--kind", "beat", "--config-file", big],
        2,
    );
    assert!(stderr.contains("limit"), "{stderr}");
    assert_eq!(
        json_of(&bootstrap, &group, &["list"])["offset"],
        before,
        "nothing was written"
    );

    // A group id Kafka cannot name a topic after needs --topic.
    let stderr = failure(&bootstrap, "bad/group", &["list"], 2);
    assert!(stderr.contains("pass --topic"), "{stderr}");
}

#[test]
fn failed_and_read_only_commands_create_no_task_store() {
    let Some(bootstrap) = kafka_bootstrap("failed_and_read_only_commands_create_no_task_store")
    else {
        return;
    };
    let group = unique("typo");
    for action in ["pause", "resume", "restart", "delete"] {
        let stderr = failure(&bootstrap, &group, &[action, "x"], 1);
        assert!(
            stderr.contains("\"x\" is not in the task store") && stderr.contains("no task store"),
            "{action}: {stderr}"
        );
    }
    // A put the store would refuse fails before the store is opened.
    let dir = TempDir::new("cli-tasks-typo");
    let big = dir.0.join("big.json");
    std::fs::write(&big, format!(r#"{{"blob":"{}"}}"#, "x".repeat(600 * 1024))).expect("write");
    let big = big.to_str().expect("a UTF-8 path");
    failure(
        &bootstrap,
        &group,
        &["put", "big", "--kind", "beat", "--config-file", big],
        2,
    );
    failure(
        &bootstrap,
        &group,
        &["put", "", "--kind", "beat", "--config", "{}"],
        2,
    );
    failure(
        &bootstrap,
        &group,
        &["put", "x/y", "--kind", "beat", "--config", "{}"],
        2,
    );
    failure(&bootstrap, &group, &["put", "t-0", "--kind", "beat"], 2);
    // Listing twice: the first list created nothing for the second to find.
    for _ in 0..2 {
        let stderr = failure(&bootstrap, &group, &["list"], 1);
        assert!(stderr.contains("no task store yet"), "{stderr}");
    }
}

#[test]
fn list_and_describe_show_each_tasks_owner_or_why_it_has_none() {
    let Some(bootstrap) =
        kafka_bootstrap("list_and_describe_show_each_tasks_owner_or_why_it_has_none")
    else {
        return;
    };
    let dir = TempDir::new("cli-tasks-owners");
    let properties = dir.0.join("worker.properties");
    std::fs::write(&properties, "tasks.store.enabled=true\n").expect("write the properties");
    let mut group = Group::new(&bootstrap, "cli-tasks-owners", 0, &dir.0);
    group.extra = vec!["--command-config".into(), properties.display().to_string()];
    let name = group.group.clone();
    json_of(
        &bootstrap,
        &name,
        &[
            "put",
            "runs",
            "--kind",
            "beat",
            "--config",
            r#"{"every_ms":100}"#,
        ],
    );
    json_of(
        &bootstrap,
        &name,
        &[
            "put",
            "held",
            "--kind",
            "beat",
            "--config",
            r#"{"every_ms":100}"#,
            "--paused",
        ],
    );
    json_of(
        &bootstrap,
        &name,
        &["put", "orphan", "--kind", "no-such-kind", "--config", "{}"],
    );
    // A config the kind cannot read: the task fails on its owner.
    json_of(
        &bootstrap,
        &name,
        &[
            "put",
            "broken",
            "--kind",
            "beat",
            "--config",
            r#"{"every_ms":"often"}"#,
        ],
    );
    let _worker = group.start("w1");
    let tasks = poll(Duration::from_secs(30), || {
        let tasks = listed(&bootstrap, &name);
        let state = |id: &str| {
            tasks
                .iter()
                .find(|t| t["id"] == id)
                .map(|t| (t["owner"].clone(), t["state"].clone()))
        };
        (state("runs") == Some((json!("w1"), json!("RUNNING")))
            && state("held") == Some((json!("w1"), json!("PAUSED")))
            && state("broken") == Some((json!("w1"), json!("FAILED"))))
        .then_some(tasks)
    })
    .expect("the worker holds the beat tasks and reports their states");
    // The actual state is the worker's, the desired one the store's.
    let broken = tasks
        .iter()
        .find(|t| t["id"] == "broken")
        .expect("broken listed");
    assert_eq!(broken["desired"], "running", "{broken}");
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.contains("invalid type")),
        "{broken}"
    );
    let orphan = tasks
        .iter()
        .find(|t| t["id"] == "orphan")
        .expect("orphan listed");
    assert_eq!(orphan["owner"], Value::Null);
    assert_eq!(orphan["unplaced"], "no_eligible_member", "{orphan}");
    assert_eq!(orphan["state"], "UNASSIGNED", "{orphan}");

    let output = Command::new(binary("kroupier"))
        .args(["describe", "--bootstrap", &bootstrap, "--group", &name])
        .output()
        .expect("run kroupier describe");
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{table}");
    // TASK KIND PARENT STATE DESIRED VERSION OWNER UNPLACED, one word each.
    let row = |id: &str| {
        let words: Vec<&str> = table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|words| words.first() == Some(&id))
            .unwrap_or_else(|| panic!("describe lists {id}:\n{table}"));
        [words[2], words[3], words[4], words[6], words[7]].map(str::to_owned)
    };
    // No generator declared any of them: PARENT is `-`.
    assert_eq!(
        row("runs"),
        ["-", "RUNNING", "running", "w1", "-"],
        "{table}"
    );
    assert_eq!(row("held"), ["-", "PAUSED", "paused", "w1", "-"], "{table}");
    assert_eq!(
        row("broken"),
        ["-", "FAILED", "running", "w1", "-"],
        "{table}"
    );
    assert_eq!(
        row("orphan"),
        ["-", "UNASSIGNED", "running", "-", "no_eligible_member"],
        "{table}"
    );
}
