//! What the workers say of their tasks: each worker that holds a stored task is asked once for
//! its `GET /status`, at the address its member metadata advertises (as `kroupier console`
//! asks it), so that `kroupier tasks list` and `kroupier describe` show a task's actual state
//! (`RUNNING`, `FAILED`, `PAUSED`, ...) beside its desired one, as Kafka Connect's status does.
//!
//! A worker that advertises no status API (`status.listen` unset), serves it over TLS or with a
//! token, or does not answer within the timeout, reports nothing: its tasks show `UNKNOWN`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use kroupier_worker::http::client;
use serde::Deserialize;

/// How long each worker's status API may take to say how its tasks are (`tasks list`,
/// `describe`).
pub(crate) const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// One task as its worker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reported {
    /// The state, as the status API spells it (`RUNNING`, `FAILED`, `PAUSED`, ...).
    pub state: String,
    /// The last error, for a task that failed.
    pub error: Option<String>,
    /// The generation in which the worker was granted the task (its fencing token's).
    pub generation: Option<i32>,
}

/// What each worker that answered reports, by worker id, then by task id.
pub(crate) type Reports = HashMap<String, HashMap<String, Reported>>;

/// The part of a worker's `GET /status` read here.
#[derive(Debug, Deserialize)]
struct Status {
    tasks: Vec<TaskStatus>,
}

#[derive(Debug, Deserialize)]
struct TaskStatus {
    task_id: String,
    state: String,
    last_error: Option<String>,
    generation: Option<i32>,
}

/// Asks each of `workers` that has an address in `addrs` (worker id → `host:port`) for its
/// `/status`, all at once, each within `timeout`. A worker that cannot be asked is left out.
pub(crate) async fn ask(
    addrs: &BTreeMap<String, String>,
    workers: &BTreeSet<&str>,
    timeout: Duration,
) -> Reports {
    let asks = workers.iter().filter_map(|worker| {
        let addr = addrs.get(*worker)?;
        Some(async move {
            let answer = client::get(addr, "/status", timeout).await;
            let reports = match answer {
                Ok(answer) if answer.code == 200 => parse(&answer.body),
                _ => None,
            };
            reports.map(|reports| ((*worker).to_owned(), reports))
        })
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The tasks of a `/status` body; `None` when it is not one.
fn parse(body: &str) -> Option<HashMap<String, Reported>> {
    let status: Status = serde_json::from_str(body).ok()?;
    Some(
        status
            .tasks
            .into_iter()
            .map(|task| {
                let reported = Reported {
                    state: task.state,
                    error: task.last_error,
                    generation: task.generation,
                };
                (task.task_id, reported)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_tasks_state_and_error_from_a_status_body() {
        let body = r#"{"worker_id":"w1","group_id":"g","rebalancing":false,"tasks":[
            {"task_id":"a","kind":"beat","state":"RUNNING","generation":3,"restarts":0,
             "consecutive_failures":0,"last_error":null,"since_ms":1,"owner":"w1"},
            {"task_id":"b","kind":"beat","state":"FAILED","generation":3,"restarts":2,
             "consecutive_failures":3,"last_error":"invalid type: string","since_ms":1,
             "owner":"w1"}]}"#;
        let reports = parse(body).unwrap();
        assert_eq!(
            reports["a"],
            Reported {
                state: "RUNNING".into(),
                error: None,
                generation: Some(3),
            }
        );
        assert_eq!(reports["b"].state, "FAILED");
        assert_eq!(reports["b"].error.as_deref(), Some("invalid type: string"));
        assert_eq!(parse("not json"), None);
        assert_eq!(parse(r#"{"error":"unauthorized"}"#), None);
    }

    #[tokio::test]
    async fn a_worker_without_an_address_or_an_answer_reports_nothing() {
        // A port nothing listens on: refused at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = listener.local_addr().unwrap().to_string();
        drop(listener);
        let addrs = BTreeMap::from([("w1".to_owned(), closed)]);
        let workers = BTreeSet::from(["w1", "w2"]);
        let reports = ask(&addrs, &workers, Duration::from_secs(2)).await;
        assert!(reports.is_empty(), "{reports:?}");
    }
}
