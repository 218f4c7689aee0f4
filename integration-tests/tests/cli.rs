//! `kroupier describe --json` against the broker in `KROUPIER_KAFKA_BOOTSTRAP` (real Kafka, or
//! the embedded coordinator in `scripts/test`'s conformance phase): two kroupier workers (the
//! `kroupier` binary's own worker) and their tasks, a group of another protocol type described
//! without task decoding, and a group that does not exist.
//!
//! Needs the `kroupier` binary built (`scripts/test` builds all targets; locally
//! `cargo build -p kroupier-cli`).

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kroupier_coordinator::driver::{Member, MemberConfig};
use kroupier_coordinator::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberState,
    ProtocolMetadata,
};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::process::{Process, binary};
use serde_json::Value;

fn unique(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-cli-{name}-{}-{nanos}", std::process::id())
}

fn describe(bootstrap: &str, group: &str) -> Value {
    describe_once(bootstrap, group).unwrap_or_else(|stderr| panic!("kroupier describe: {stderr}"))
}

/// `kroupier describe --json` once: the JSON object, or (exit 1: the group does not exist yet,
/// before its first member's JoinGroup) the reason on stderr. Any other exit fails the test.
fn describe_once(bootstrap: &str, group: &str) -> Result<Value, String> {
    let output = Command::new(binary("kroupier"))
        .args([
            "describe",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--json",
        ])
        .output()
        .expect("run kroupier describe");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    match output.status.code() {
        Some(0) => Ok(serde_json::from_slice(&output.stdout).expect("one JSON object")),
        Some(1) if stderr.contains("does not exist") => Err(stderr),
        code => panic!("kroupier describe exited {code:?}: {stderr}"),
    }
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect()
}

const GROUP_KEYS: [&str; 7] = [
    "group",
    "state",
    "generation",
    "protocol_type",
    "protocol",
    "leader",
    "members",
];
const MEMBER_KEYS: [&str; 5] = ["member_id", "instance_id", "client_id", "host", "tasks"];

#[test]
fn describe_json_shows_kroupier_workers_and_their_tasks() {
    let Some(bootstrap) = kafka_bootstrap("describe_json_shows_kroupier_workers_and_their_tasks")
    else {
        return;
    };
    let group = unique("describe");
    let _workers: Vec<Process> = ["worker-a", "worker-b"]
        .iter()
        .map(|id| {
            Process::spawn(
                "kroupier",
                &[
                    "worker",
                    "--bootstrap",
                    &bootstrap,
                    "--group",
                    &group,
                    "--worker-id",
                    id,
                    "--tasks",
                    "6",
                ]
                .map(str::to_owned),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let view = loop {
        // The workers may not have joined yet: then the group does not exist.
        let view = match describe_once(&bootstrap, &group) {
            Ok(view) => view,
            Err(not_yet) => {
                assert!(
                    Instant::now() < deadline,
                    "the group never appeared: {not_yet}"
                );
                std::thread::sleep(Duration::from_millis(250));
                continue;
            }
        };
        let tasks: usize = view["members"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| m["tasks"].as_array().map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0);
        if view["state"] == "Stable"
            && view["members"].as_array().map(Vec::len) == Some(2)
            && tasks == 6
        {
            break view;
        }
        assert!(Instant::now() < deadline, "the group never settled: {view}");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(keys(&view), BTreeSet::from(GROUP_KEYS), "{view}");
    assert_eq!(view["group"], group.as_str());
    assert_eq!(view["protocol_type"], "kroupier");
    assert!(view["protocol"].is_string(), "{view}");
    assert!(
        view["generation"].as_i64().is_some_and(|g| g >= 1),
        "{view}"
    );
    let members = view["members"].as_array().unwrap();
    let ids: Vec<&str> = members
        .iter()
        .map(|m| m["member_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&view["leader"].as_str().unwrap()), "{view}");
    let mut tasks = Vec::new();
    for member in members {
        assert_eq!(keys(member), BTreeSet::from(MEMBER_KEYS), "{view}");
        assert!(
            member["client_id"]
                .as_str()
                .unwrap()
                .starts_with("kroupier-worker-")
        );
        assert!(!member["host"].as_str().unwrap().is_empty());
        tasks.extend(
            member["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned()),
        );
    }
    tasks.sort();
    let mut expected: Vec<String> = (0..6).map(|i| format!("task-{i}")).collect();
    expected.sort();
    assert_eq!(tasks, expected, "every task on exactly one member: {view}");
}

/// A protocol that is not kroupier's: its bytes must not be decoded as tasks.
struct Other;

impl GroupProtocol for Other {
    fn protocol_type(&self) -> &str {
        "kroupier-it-other"
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        vec![ProtocolMetadata::new(
            "plain",
            b"not kroupier metadata".to_vec(),
        )]
    }

    fn assign(
        &self,
        _context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        Ok(members
            .iter()
            .map(|m| MemberAssignment::new(m.member_id.clone(), Bytes::from_static(b"\xff\xff")))
            .collect())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_json_leaves_other_protocol_types_undecoded_and_refuses_missing_groups() {
    let Some(bootstrap) = kafka_bootstrap(
        "describe_json_leaves_other_protocol_types_undecoded_and_refuses_missing_groups",
    ) else {
        return;
    };
    let group = unique("other");
    let mut config = MemberConfig::new(&bootstrap, group.as_str())
        .with_timeouts(Duration::from_secs(3), Duration::from_millis(500));
    config.membership.min_session_timeout = Duration::from_secs(1);
    let (handle, driver) = Member::new(config, Arc::new(Other)).expect("valid member");
    let driver = tokio::spawn(driver);
    let deadline = Instant::now() + Duration::from_secs(60);
    while handle.current().state != MemberState::Stable {
        assert!(Instant::now() < deadline, "the member never became stable");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let view = {
        let (bootstrap, group) = (bootstrap.clone(), group.clone());
        tokio::task::spawn_blocking(move || describe(&bootstrap, &group))
            .await
            .unwrap()
    };
    assert_eq!(keys(&view), BTreeSet::from(GROUP_KEYS), "{view}");
    assert_eq!(view["protocol_type"], "kroupier-it-other", "{view}");
    assert_eq!(view["generation"], Value::Null, "{view}");
    assert_eq!(view["leader"], Value::Null, "{view}");
    let members = view["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{view}");
    assert_eq!(members[0]["tasks"], Value::Null, "not decoded: {view}");
    handle.leave("test done").await;
    driver.abort();

    // A group that does not exist: exit 1, why on stderr, nothing on stdout.
    let missing = {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            Command::new(binary("kroupier"))
                .args(["describe", "--bootstrap", &bootstrap, "--json", "--group"])
                .arg(unique("missing"))
                .output()
                .expect("run kroupier describe")
        })
        .await
        .unwrap()
    };
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(missing.stdout.is_empty(), "{stderr}");
}

#[test]
fn demo_fails_over_on_this_broker() {
    let Some(bootstrap) = kafka_bootstrap("demo_fails_over_on_this_broker") else {
        return;
    };
    let group = unique("demo");
    let output = Command::new(binary("kroupier"))
        .args([
            "demo",
            "--bootstrap",
            &bootstrap,
            "--group",
            &group,
            "--workers",
            "3",
            "--tasks",
            "6",
            "--kill-after",
            "1",
            "--session-timeout-ms",
            "2000",
            "--heartbeat-interval-ms",
            "300",
            "--timeout",
            "90",
        ])
        .output()
        .expect("run kroupier demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let failover = stdout
        .lines()
        .find_map(|l| l.strip_prefix("failover time: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no failover time in ms in {stdout}"));
    println!("MEASURE cli_demo_failover_ms={failover}");
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}
