//! What the in-process end-to-end tests of `group` share (`group::tests` and the modules it
//! declares beside this one): the worker config they start from, the broker they run on, waiting
//! until a condition holds, a task's state on a worker, and plain HTTP/1.1 against a worker's
//! status API.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kroupier_embedded::{CoordinatorHandle, EmbeddedCoordinator};
use serde_json::Value;

use crate::{TaskState, WorkerConfig, WorkerHandle};

/// The config of worker `id` in `group` on `bootstrap`: a 3 s session, a heartbeat every 500 ms,
/// running tasks aborted 200 ms after they were asked to stop, and no status API.
pub(super) fn config(bootstrap: &str, group: &str, id: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(group);
    config.member.cluster.bootstrap_servers = vec![bootstrap.to_owned()];
    config.worker_id = id.to_owned();
    id.clone_into(&mut config.member.cluster.connection.client_id);
    config.member.membership.session_timeout = Duration::from_secs(3);
    config.member.membership.heartbeat_interval = Duration::from_millis(500);
    config.tasks.abort_timeout = Some(Duration::from_millis(200));
    config.status.addr = None;
    config
}

/// An embedded coordinator on a free local port.
pub(super) async fn embedded() -> CoordinatorHandle {
    EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .expect("the embedded coordinator starts")
}

/// The Kafka broker named by `KROUPIER_KAFKA_BOOTSTRAP`, for the test named `test` that runs only
/// there. Without one: `None`, after a printed `SKIP` line, unless `CI=true` says a broker is
/// required (then the test fails).
pub(super) fn kafka_or_skip(test: &str) -> Option<String> {
    let Some(bootstrap) = kafka() else {
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "CI=true but KROUPIER_KAFKA_BOOTSTRAP is not set"
        );
        eprintln!("SKIP {test}: KROUPIER_KAFKA_BOOTSTRAP is not set");
        return None;
    };
    Some(bootstrap)
}

/// The Kafka broker named by `KROUPIER_KAFKA_BOOTSTRAP` if it is set, else a fresh embedded
/// coordinator: its bootstrap, and the coordinator to keep alive for as long as the test runs.
pub(super) async fn kafka_or_embedded() -> (String, Option<CoordinatorHandle>) {
    match kafka() {
        Some(bootstrap) => (bootstrap, None),
        None => {
            let coordinator = embedded().await;
            (coordinator.bootstrap(), Some(coordinator))
        }
    }
}

/// `KROUPIER_KAFKA_BOOTSTRAP`, trimmed, unless it is unset or blank.
fn kafka() -> Option<String> {
    std::env::var("KROUPIER_KAFKA_BOOTSTRAP")
        .ok()
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
}

/// A number no earlier run used (nanoseconds since the epoch): it makes the names of groups on a
/// broker that outlives the test new.
pub(super) fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Waits until `done` holds, asking every `every`; fails the test, naming `what`, once `within`
/// has passed. Returns how long it took.
pub(super) async fn until_within(
    what: &str,
    within: Duration,
    every: Duration,
    mut done: impl FnMut() -> bool,
) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "timed out waiting until {what}");
        tokio::time::sleep(every).await;
    }
    started.elapsed()
}

/// Waits (up to 30 s, asking every 20 ms) until `done` holds; returns how long it took.
pub(super) async fn until(what: &str, done: impl FnMut() -> bool) -> Duration {
    let (within, every) = (Duration::from_secs(30), Duration::from_millis(20));
    until_within(what, within, every, done).await
}

/// The state of task `id` on `worker`, if the worker has it.
pub(super) fn state(worker: &WorkerHandle, id: &str) -> Option<TaskState> {
    worker
        .tasks()
        .into_iter()
        .find(|t| t.task_id == id)
        .map(|t| t.state)
}

/// One HTTP/1.1 request to the status API at `addr`, with `body` (if any) as JSON: the whole
/// answer, head and body.
pub(super) fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> String {
    let body = body.unwrap_or("");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the status API");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// [`request`]'s status code and JSON body (`null` if the body is not JSON).
pub(super) fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let answer = request(addr, method, path, body);
    let code = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    (code, json)
}
