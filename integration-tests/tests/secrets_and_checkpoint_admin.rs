//! Secret references and checkpoint administration through the `kroupier` CLI, with quickstart
//! workers, against the broker in `KROUPIER_KAFKA_BOOTSTRAP` (real Kafka, or the embedded
//! coordinator):
//!
//! - a task config's `${env:..}` and `${file:..:..}` references resolve on the worker (the task
//!   runs), while `tasks list --json`, `describe --json`, the worker's `/status` and `/tasks`,
//!   the console's page and API, and the worker's debug log show the reference and never the
//!   value; a missing variable, file key or
//!   a secret landing in a field of the wrong type fails the task with a reason that names the
//!   reference and holds no value;
//! - `tasks checkpoint set` is refused with exit 2 while the task runs; on a paused task it is
//!   written, and the resumed task counts on from the set value; `reset` makes it start over;
//!   on a paused task that moved, the value goes under its new owner's generation.
//!
//! Needs the `kroupier` and `quickstart` binaries built (`scripts/test` builds all targets).

use std::time::Duration;

use kroupier_integration_tests::cli::{self, kroupier, listed, ok};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::quickstart::{Group, TempDir, http_get, poll, unique};
use serde_json::Value;

/// The listed task `id`'s (state, error).
fn state_of(tasks: &[Value], id: &str) -> Option<(String, String)> {
    let task = tasks.iter().find(|t| t["id"] == id)?;
    Some((
        task["state"].as_str().unwrap_or_default().to_owned(),
        task["error"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// Waits until every task in `want` is in its state; the listing then.
fn wait_states(bootstrap: &str, group: &str, want: &[(&str, &str)]) -> Vec<Value> {
    poll(Duration::from_secs(30), || {
        let tasks = listed(bootstrap, group);
        want.iter()
            .all(|(id, state)| state_of(&tasks, id).is_some_and(|(s, _)| s == *state))
            .then_some(tasks)
    })
    .unwrap_or_else(|| {
        panic!(
            "tasks never reached {want:?}: {:?}",
            listed(bootstrap, group)
        )
    })
}

fn put(bootstrap: &str, group: &str, id: &str, config: &str) {
    ok(
        bootstrap,
        group,
        &["tasks", "put", id, "--kind", "beat", "--config", config],
    );
}

#[test]
fn secret_references_resolve_on_the_worker_and_show_nowhere() {
    let Some(bootstrap) =
        kafka_bootstrap("secret_references_resolve_on_the_worker_and_show_nowhere")
    else {
        return;
    };
    let dir = TempDir::new("secrets-cli");
    let secret = format!("s3cr3t-{}", unique("value"));
    let env_secret = format!("env-{secret}");
    let secrets = dir.0.join("db.properties");
    std::fs::write(&secrets, format!("# the database\ndb.password={secret}\n"))
        .expect("write the secrets file");
    let secrets = secrets.display().to_string();
    let logs = dir.0.join("logs");
    std::fs::create_dir_all(&logs).expect("the log directory");

    let mut group =
        Group::new(&bootstrap, "secrets-cli", 0, &dir.0.join("journal")).with_task_store(&dir.0);
    group.logs = Some(logs.clone());
    group.env = vec![
        ("KROUPIER_IT_SECRET".into(), env_secret.clone()),
        ("RUST_LOG".into(), "debug".into()),
    ];
    let name = group.group.clone();
    let file_ref = format!("${{file:{secrets}:db.password}}");
    let put_ref = |id: &str, field: &str, reference: &str| {
        let config = serde_json::json!({ "every_ms": 100, field: reference }).to_string();
        put(&bootstrap, &name, id, &config);
    };
    put_ref("from-file", "password", &file_ref);
    put_ref("from-env", "password", "${env:KROUPIER_IT_SECRET}");
    put_ref(
        "no-key",
        "password",
        &format!("${{file:{secrets}:db.user}}"),
    );
    put_ref("no-var", "password", "${env:KROUPIER_IT_NOT_SET}");
    // A secret in a field of another type: serde's message would quote it.
    put_ref("wrong-type", "panic", &file_ref);

    let mut worker = group.start("w1");
    let tasks = wait_states(
        &bootstrap,
        &name,
        &[
            ("from-file", "RUNNING"),
            ("from-env", "RUNNING"),
            ("no-key", "FAILED"),
            ("no-var", "FAILED"),
            ("wrong-type", "FAILED"),
        ],
    );
    let error = |id: &str| state_of(&tasks, id).expect("listed").1;
    assert!(
        error("no-key").contains(&format!("${{file:{secrets}:db.user}}")),
        "{}",
        error("no-key")
    );
    assert!(
        error("no-var").contains("${env:KROUPIER_IT_NOT_SET}"),
        "{}",
        error("no-var")
    );
    assert!(
        error("wrong-type").contains("invalid type"),
        "{}",
        error("wrong-type")
    );

    // Every surface shows the reference and no value.
    let list = ok(&bootstrap, &name, &["tasks", "list", "--json"]);
    assert!(list.contains("${env:KROUPIER_IT_SECRET}"), "{list}");
    let describe = ok(&bootstrap, &name, &["describe", "--json"]);
    let status = worker.get("/status");
    let status_tasks = worker.get("/tasks");
    let console = console_pages(&bootstrap, &name);
    worker.drain();
    let stdout = worker
        .seen
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    drop(worker);
    let log = std::fs::read_to_string(logs.join("w1.stderr")).expect("the worker's log");
    assert!(
        log.lines().count() > 10,
        "the debug log was captured:\n{log}"
    );
    for (surface, text) in [
        ("tasks list --json", &list),
        ("describe --json", &describe),
        ("/status", &status),
        ("/tasks", &status_tasks),
        ("the console", &console),
        ("the worker's stdout", &stdout),
        ("the worker's log", &log),
    ] {
        for value in [&secret, &env_secret] {
            assert!(
                !text.contains(value.as_str()),
                "{surface} shows a secret value:\n{text}"
            );
        }
    }
}

/// `kroupier console` for `group`: its page, its snapshot API and worker w1's status through
/// it, once the snapshot lists w1's tasks.
fn console_pages(bootstrap: &str, group: &str) -> String {
    let (_console, url) = cli::console(bootstrap, group);
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let get = |path: &str| {
        let stream = std::net::TcpStream::connect(&host).expect("connect to the console");
        http_get(stream, &host, path)
    };
    let snapshot = poll(Duration::from_secs(20), || {
        let body = get("/api/snapshot");
        body.contains("from-file").then_some(body)
    })
    .expect("the console's snapshot lists the worker's tasks");
    [get("/"), snapshot, get("/api/workers/w1/status")].join("\n")
}

/// `tasks checkpoint get --json`'s state (the beat count), if there is a checkpoint.
fn checkpoint(bootstrap: &str, group: &str, id: &str) -> Option<u64> {
    let output = kroupier(
        bootstrap,
        group,
        &["tasks", "checkpoint", "get", id, "--json"],
    );
    if output.status.code() != Some(0) {
        return None;
    }
    let json: Value = serde_json::from_slice(&output.stdout).ok()?;
    json["state"].as_u64()
}

/// A group of quickstart workers following the task store, with the task `counter` put: a
/// beat that saves its count at every beat and resumes from its newest checkpoint. The group
/// and its name.
fn counter_group(bootstrap: &str, name: &str, dir: &TempDir) -> (Group, String) {
    let group = Group::new(bootstrap, name, 0, &dir.0.join("journal")).with_task_store(&dir.0);
    let name = group.group.clone();
    put(
        bootstrap,
        &name,
        "counter",
        r#"{"every_ms":50,"checkpoint_every":1}"#,
    );
    (group, name)
}

#[test]
fn a_paused_tasks_checkpoint_is_set_and_reset_and_a_running_ones_is_refused() {
    let Some(bootstrap) =
        kafka_bootstrap("a_paused_tasks_checkpoint_is_set_and_reset_and_a_running_ones_is_refused")
    else {
        return;
    };
    let dir = TempDir::new("checkpoint-cli");
    let (group, name) = counter_group(&bootstrap, "checkpoint-cli", &dir);
    let _worker = group.start("w1");
    wait_states(&bootstrap, &name, &[("counter", "RUNNING")]);
    poll(Duration::from_secs(30), || {
        checkpoint(&bootstrap, &name, "counter").filter(|n| *n >= 3)
    })
    .expect("the running task saves checkpoints");

    // Running: refused, exit 2, and why.
    for args in [
        &["tasks", "checkpoint", "set", "counter", "--value", "100000"][..],
        &["tasks", "checkpoint", "reset", "counter"][..],
    ] {
        let output = kroupier(&bootstrap, &name, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("paused"), "{args:?}: {stderr}");
    }
    let before = checkpoint(&bootstrap, &name, "counter").expect("a checkpoint");
    assert!(before < 100_000, "the refused set wrote nothing: {before}");

    // Paused: set, resume, and the task counts on from the value set.
    ok(&bootstrap, &name, &["tasks", "pause", "counter"]);
    wait_states(&bootstrap, &name, &[("counter", "PAUSED")]);
    ok(
        &bootstrap,
        &name,
        &["tasks", "checkpoint", "set", "counter", "--value", "100000"],
    );
    assert_eq!(checkpoint(&bootstrap, &name, "counter"), Some(100_000));
    ok(&bootstrap, &name, &["tasks", "resume", "counter"]);
    let resumed = poll(Duration::from_secs(30), || {
        checkpoint(&bootstrap, &name, "counter").filter(|n| *n > 100_000)
    })
    .expect("the resumed task saves again");
    assert!(
        resumed < 101_000,
        "it went on from the set value: {resumed}"
    );

    // Paused again: reset, resume, and the task starts over.
    ok(&bootstrap, &name, &["tasks", "pause", "counter"]);
    wait_states(&bootstrap, &name, &[("counter", "PAUSED")]);
    ok(
        &bootstrap,
        &name,
        &["tasks", "checkpoint", "reset", "counter"],
    );
    assert_eq!(checkpoint(&bootstrap, &name, "counter"), None);
    ok(&bootstrap, &name, &["tasks", "resume", "counter"]);
    let restarted = poll(Duration::from_secs(30), || {
        checkpoint(&bootstrap, &name, "counter").filter(|n| *n >= 1)
    })
    .expect("the reset task saves again");
    assert!(restarted < 1_000, "it started over: {restarted}");
}

/// `tasks checkpoint get --json`'s generation (the key's), if there is a checkpoint.
fn checkpoint_generation(bootstrap: &str, group: &str, id: &str) -> Option<i64> {
    let output = kroupier(
        bootstrap,
        group,
        &["tasks", "checkpoint", "get", id, "--json"],
    );
    let json: Value = serde_json::from_slice(&output.stdout).ok()?;
    json["generation"].as_i64()
}

#[test]
fn a_set_on_a_paused_task_that_moved_goes_under_its_new_owners_generation() {
    let Some(bootstrap) =
        kafka_bootstrap("a_set_on_a_paused_task_that_moved_goes_under_its_new_owners_generation")
    else {
        return;
    };
    let dir = TempDir::new("checkpoint-moved");
    let (group, name) = counter_group(&bootstrap, "checkpoint-moved", &dir);
    let first = group.start("w1");
    wait_states(&bootstrap, &name, &[("counter", "RUNNING")]);
    let saved_in = poll(Duration::from_secs(30), || {
        checkpoint_generation(&bootstrap, &name, "counter")
    })
    .expect("the running task saves checkpoints");
    ok(&bootstrap, &name, &["tasks", "pause", "counter"]);
    wait_states(&bootstrap, &name, &[("counter", "PAUSED")]);

    // The paused task moves: w2 joins, w1 stops. Paused, it saves nothing on w2.
    let mut second = group.start("w2");
    first
        .process
        .signal(kroupier_integration_tests::process::Signal::Term);
    let granted = poll(Duration::from_secs(30), || {
        let status: Value = serde_json::from_str(&second.get("/status")).ok()?;
        status["tasks"]
            .as_array()?
            .iter()
            .find(|t| t["task_id"] == "counter" && t["state"] == "PAUSED")?["generation"]
            .as_i64()
    })
    .expect("w2 holds the paused task");
    second.drain();
    assert!(granted > saved_in, "{granted} > {saved_in}");
    assert_eq!(
        checkpoint_generation(&bootstrap, &name, "counter"),
        Some(saved_in),
        "w2 saved nothing while the task is paused"
    );

    // The operator's value goes under w2's generation, above any late save of w1's.
    ok(
        &bootstrap,
        &name,
        &["tasks", "checkpoint", "set", "counter", "--value", "5000"],
    );
    assert_eq!(
        checkpoint_generation(&bootstrap, &name, "counter"),
        Some(granted)
    );
    assert_eq!(checkpoint(&bootstrap, &name, "counter"), Some(5000));
}
