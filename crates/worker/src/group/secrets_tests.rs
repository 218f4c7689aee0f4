//! Secret references end to end, on the embedded coordinator (and on the Kafka broker named by
//! `KROUPIER_KAFKA_BOOTSTRAP` when set): a task whose config holds `${env:...}` and
//! `${file:...}` starts with the values; the task store topic's raw bytes, the worker's
//! `/status` and `/tasks` bodies, and every log line of the run hold the references only; a
//! reference that does not resolve fails its task with a reason naming the reference.
//!
//! The worker runs in a child process (this test binary, run again for one test), because the
//! environment variable must be set for the worker and the lint forbids `unsafe`
//! `std::env::set_var`; the child logs at DEBUG to its stderr, which the parent reads whole.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_coordinator::log::{TopicLog, TopicSpec};
use serde_json::json;

use super::test_support::{config, kafka_or_embedded, request, state, unique, until};
use crate::store::{TaskRecord, TaskStore};
use crate::{Task, TaskContext, TaskError, TaskState, WorkerBuilder};

/// The environment variable the child reads its secret from.
const PASSWORD_VAR: &str = "KROUPIER_TEST_SECRET_PASSWORD";
/// The environment variable naming the properties file (a path, no secret).
const FILE_VAR: &str = "KROUPIER_TEST_SECRET_FILE";
/// Set in the child only: the child test runs, the parent's skips it.
const CHILD_VAR: &str = "KROUPIER_TEST_SECRETS_CHILD";

const PASSWORD: &str = "pw-Zq7!hunter2-env";
const TOKEN: &str = "tok-Xr9#file-secret";
const ROTATED: &str = "tok-Rotated#file-secret-2";

/// What each start of each task received, after resolution.
static RECEIVED: Mutex<BTreeMap<String, Vec<Received>>> = Mutex::new(BTreeMap::new());

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
struct Received {
    url: String,
    token: String,
    #[serde(default)]
    port: Option<u64>,
}

/// Records its config and runs until stopped.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(flatten)]
    received: Received,
}

impl Task for Probe {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        RECEIVED
            .lock()
            .unwrap()
            .entry(ctx.task_id().to_owned())
            .or_default()
            .push(self.received);
        ctx.cancelled().await;
        Ok(())
    }
}

#[test]
fn a_secret_reference_resolves_on_the_worker_and_shows_nowhere() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kroupier-secrets-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("db.properties");
    std::fs::write(
        &file,
        format!("# the database\nuser = app\ntoken = {TOKEN}\n"),
    )
    .unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "group::tests::secrets_tests::secrets_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "1")
        .env(PASSWORD_VAR, PASSWORD)
        .env(FILE_VAR, &file)
        .output()
        .expect("the child test runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "the child test did not run:\n{stdout}"
    );
    let everything = format!("{stdout}\n{stderr}");
    for secret in [PASSWORD, TOKEN, ROTATED] {
        assert!(
            !everything.contains(secret),
            "a secret value shows in the child's output (logs, bodies, topic bytes)"
        );
    }
    // The logs are there, and they name the references.
    assert!(stderr.contains("task config rejected"), "{stderr}");
    assert!(everything.contains("${env:KROUPIER_TEST_UNSET_VARIABLE}"));
    let lines = everything.lines().count();
    eprintln!("the child's output: {lines} lines, no secret value in any");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child: the scenario itself, with the worker's logs on stderr at DEBUG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_secret_reference_resolves_on_the_worker_and_shows_nowhere"]
async fn secrets_child() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(std::io::stderr)
        .try_init();
    let (bootstrap, _coordinator) = kafka_or_embedded().await;
    let group = format!("secrets-{}", unique());
    scenario(&bootstrap, &group).await;
}

async fn scenario(bootstrap: &str, group: &str) {
    let file = std::env::var(FILE_VAR).expect("the parent names the file");
    let mut config = config(bootstrap, group, "w1");
    config.tasks.store.enabled = true;
    config.status.addr = Some("127.0.0.1:0".parse().unwrap());
    let worker = WorkerBuilder::new(config)
        .register::<Probe>("probe")
        .spawn()
        .await
        .expect("the worker starts");
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(bootstrap)).unwrap());
    let topic = crate::store::tasks_topic(group).unwrap();
    let store = TaskStore::open(cluster.clone(), topic.clone(), true)
        .await
        .expect("the task store");

    let url = format!("postgres://app:${{env:{PASSWORD_VAR}}}@db/orders");
    let token = format!("${{file:{file}:token}}");
    store
        .put(
            "db",
            TaskRecord::new("probe", json!({"url": url, "token": token})),
        )
        .await
        .unwrap();
    until("db runs", || {
        state(&worker, "db") == Some(TaskState::Running)
    })
    .await;
    let first = received("db").pop().expect("db recorded its config");
    assert_eq!(first.url, format!("postgres://app:{PASSWORD}@db/orders"));
    assert_eq!(first.token, TOKEN);

    // Resolved again at a restart: the rotated file's value, with nothing stored anew.
    std::fs::write(&file, format!("token = {ROTATED}\n")).unwrap();
    store.restart("db").await.unwrap();
    until("db restarted with the rotated token", || {
        received("db").last().is_some_and(|r| r.token == ROTATED)
    })
    .await;

    // References that do not resolve, and a secret in a field its kind refuses.
    let missing_var = "${env:KROUPIER_TEST_UNSET_VARIABLE}";
    let missing_file = "${file:/nonexistent/kroupier-secrets.properties:token}";
    let missing_key = format!("${{file:{file}:password}}");
    let typed = format!("${{env:{PASSWORD_VAR}}}");
    let broken = [
        (
            "no-var",
            json!({"url": missing_var, "token": "t"}),
            missing_var.to_owned(),
        ),
        (
            "no-file",
            json!({"url": "u", "token": missing_file}),
            missing_file.to_owned(),
        ),
        (
            "no-key",
            json!({"url": "u", "token": missing_key}),
            missing_key.clone(),
        ),
        (
            "typed",
            json!({"url": "u", "token": "t", "port": typed}),
            typed.clone(),
        ),
    ];
    for (id, config, _) in &broken {
        store
            .put(id, TaskRecord::new("probe", config.clone()))
            .await
            .unwrap();
    }
    for (id, _, reference) in &broken {
        until(&format!("{id} fails"), || {
            state(&worker, id) == Some(TaskState::Failed)
        })
        .await;
        let reason = worker
            .tasks()
            .into_iter()
            .find(|t| t.task_id == *id)
            .and_then(|t| t.last_error)
            .unwrap_or_default();
        assert!(reason.contains(reference.as_str()), "{id}: {reason}");
        println!("FAILED reason of {id}: {reason}");
    }

    // Every place that shows a config: the references, never the values.
    let addr = worker.status_addr().expect("the status API serves");
    for path in ["/status", "/tasks", "/tasks/db", "/tasks/typed"] {
        let body = request(addr, "GET", path, None);
        assert!(body.contains("HTTP/1.1 200"), "{path}: {body}");
        println!("GET {path}: {body}");
    }
    let tasks = request(addr, "GET", "/tasks", None);
    assert!(
        tasks.contains(&format!("${{env:{PASSWORD_VAR}}}")),
        "{tasks}"
    );
    let log = TopicLog::open(
        cluster,
        TopicSpec {
            name: topic,
            replication_factor: None,
        },
        false,
    )
    .await
    .unwrap();
    let end = log.end_offset().await.unwrap();
    let mut from = 0;
    let mut raw = Vec::new();
    while from < end {
        let batch = log.read(from, Duration::from_millis(200)).await.unwrap();
        for record in &batch.records {
            raw.extend_from_slice(&record.key);
            raw.extend_from_slice(record.value.as_deref().unwrap_or_default());
            raw.push(b'\n');
        }
        from = from.max(batch.next_offset);
    }
    println!(
        "the task store topic, raw: {}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!raw.is_empty());
    for secret in [PASSWORD, TOKEN, ROTATED] {
        assert!(
            !raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "a secret in the topic"
        );
    }
    worker.shutdown().await.expect("clean shutdown");
}

fn received(id: &str) -> Vec<Received> {
    RECEIVED
        .lock()
        .unwrap()
        .get(id)
        .cloned()
        .unwrap_or_default()
}
