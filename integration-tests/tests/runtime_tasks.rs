//! Tasks added, changed, paused and deleted at run time through the task store, on three
//! `quickstart` workers (`tasks.store.enabled=true`, no task in code), driven through one
//! worker's status API: a put runs on exactly one worker, pause stops it and resume runs it
//! again without a rebalance, a new config and a restart restart it, a delete stops it
//! everywhere, an unknown kind is reported unplaced with the reason, a config its kind refuses is
//! refused by the API (400) and FAILED with serde's message when written past it. Prints the
//! medians of put → running, pause → paused and delete → stopped over 10 rounds.
//!
//! Skipped (with a printed line) when no broker is configured or it does not serve Produce.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_integration_tests::quickstart::{Group, TempDir, Worker};
use kroupier_integration_tests::topics;
use kroupier_worker::store::{TaskRecord, TaskStore};
use serde_json::{Value, json};

/// One HTTP request to a worker's status API: the status code and the body as JSON (or as a
/// string when it is not JSON).
fn http(worker: &Worker, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(&worker.status_addr).expect("connect to the status API");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        worker.status_addr,
        body.len()
    )
    .expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned()));
    (code, body)
}

/// The task as a worker's `/status` lists it (the tasks it holds, stopping ones included).
fn held(worker: &Worker, id: &str) -> Option<Value> {
    let status: Value = serde_json::from_str(&worker.get("/status")).ok()?;
    status["tasks"]
        .as_array()?
        .iter()
        .find(|t| t["task_id"] == id)
        .cloned()
}

/// The workers that hold `id` in `state`.
fn in_state(workers: &[Worker], id: &str, state: &str) -> Vec<String> {
    workers
        .iter()
        .filter(|w| held(w, id).is_some_and(|t| t["state"] == state))
        .map(|w| w.id.clone())
        .collect()
}

/// Polls every 10 ms until `done` returns true; the time it took. Panics after 15 s.
fn until(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "timed out waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

fn generation(worker: &Worker) -> Option<i64> {
    let status: Value = serde_json::from_str(&worker.get("/status")).ok()?;
    status["generation"].as_i64()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_follow_the_store_without_restarts_of_the_others() {
    let test = "tasks_follow_the_store_without_restarts_of_the_others";
    let Some((bootstrap, _)) = topics::log_broker(test).await else {
        return;
    };
    let dir = TempDir::new("runtime-tasks");
    let properties = dir.0.join("worker.properties");
    std::fs::write(&properties, "tasks.store.enabled=true\n").expect("write the properties");
    let mut group = Group::new(&bootstrap, "runtime-tasks", 0, &dir.0);
    group.extra = vec!["--command-config".into(), properties.display().to_string()];
    let workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    until("the three workers share a generation", || {
        let generations: Vec<Option<i64>> = workers.iter().map(generation).collect();
        generations[0].is_some() && generations.iter().all(|g| *g == generations[0])
    });
    let api = &workers[0];

    // A put runs on exactly one worker; a task that stays is never touched by the others'
    // changes.
    let (code, body) = http(
        api,
        "PUT",
        "/tasks/keep",
        r#"{"kind":"beat","config":{"every_ms":100}}"#,
    );
    assert_eq!(code, 200, "{body}");
    until("keep runs", || {
        in_state(&workers, "keep", "RUNNING").len() == 1
    });
    let keep_since = |workers: &[Worker]| {
        workers
            .iter()
            .find_map(|w| held(w, "keep"))
            .map(|t| t["since_ms"].clone())
    };
    let keep_before = keep_since(&workers);

    let (code, body) = http(
        api,
        "PUT",
        "/tasks/s-0",
        r#"{"kind":"beat","config":{"every_ms":100}}"#,
    );
    assert_eq!(code, 200, "{body}");
    until("s-0 runs on one worker", || {
        in_state(&workers, "s-0", "RUNNING").len() == 1
    });
    let owner = in_state(&workers, "s-0", "RUNNING").remove(0);
    let settled: Vec<Option<i64>> = workers.iter().map(generation).collect();

    // Pause stops it (it stays assigned), resume runs it again: no rebalance.
    let (code, body) = http(api, "POST", "/tasks/s-0/pause", "");
    assert_eq!(code, 200, "{body}");
    let took = until("s-0 paused", || {
        in_state(&workers, "s-0", "PAUSED") == [owner.clone()]
    });
    assert!(took < Duration::from_secs(1), "pause took {took:?}");
    assert!(in_state(&workers, "s-0", "RUNNING").is_empty());
    let (code, _) = http(api, "POST", "/tasks/s-0/resume", "");
    assert_eq!(code, 200);
    until("s-0 resumed", || {
        in_state(&workers, "s-0", "RUNNING") == [owner.clone()]
    });

    // A new config restarts it with that config; a restart restarts it.
    let since = |workers: &[Worker]| {
        held(&workers[0], "s-0").or_else(|| workers.iter().find_map(|w| held(w, "s-0")))
    };
    let before = since(&workers).map(|t| t["since_ms"].clone());
    let (code, _) = http(
        api,
        "PUT",
        "/tasks/s-0",
        r#"{"kind":"beat","config":{"every_ms":50}}"#,
    );
    assert_eq!(code, 200);
    until("s-0 restarted with its new config", || {
        let task = since(&workers);
        task.as_ref().is_some_and(|t| t["state"] == "RUNNING")
            && task.map(|t| t["since_ms"].clone()) != before
    });
    let (_, list) = http(api, "GET", "/tasks", "");
    let listed = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "s-0")
        .cloned()
        .unwrap();
    assert_eq!(listed["config"], json!({"every_ms": 50}));
    let before = since(&workers).map(|t| t["since_ms"].clone());
    std::thread::sleep(Duration::from_millis(5));
    let (code, _) = http(api, "POST", "/tasks/s-0/restart", "");
    assert_eq!(code, 200);
    until("s-0 restarted", || {
        let task = since(&workers);
        task.as_ref().is_some_and(|t| t["state"] == "RUNNING")
            && task.map(|t| t["since_ms"].clone()) != before
    });
    assert_eq!(in_state(&workers, "s-0", "RUNNING"), [owner.as_str()]);
    let now: Vec<Option<i64>> = workers.iter().map(generation).collect();
    assert_eq!(
        now, settled,
        "pause, resume, config and restart moved nothing"
    );
    assert_eq!(
        keep_since(&workers),
        keep_before,
        "an unchanged task was not touched"
    );

    // A kind no worker registers: stored, unplaced, with the reason.
    let (code, _) = http(api, "PUT", "/tasks/x-0", r#"{"kind":"exotic","config":{}}"#);
    assert_eq!(code, 200);
    until("x-0 reported unplaced", || {
        let (_, list) = http(api, "GET", "/tasks", "");
        list["tasks"].as_array().is_some_and(|tasks| {
            tasks.iter().any(|t| {
                t["id"] == "x-0"
                    && t["state"] == "UNPLACED"
                    && t["reason"].as_str().is_some_and(|r| r.contains("exotic"))
            })
        })
    });

    // A config its kind refuses: the API refuses it (400, serde's message)...
    let (code, body) = http(
        api,
        "PUT",
        "/tasks/bad",
        r#"{"kind":"beat","config":{"every_ms":"often"}}"#,
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("invalid type"),
        "{body}"
    );
    // ... and written past it (another client), the task is FAILED with serde's message.
    let topic = list["store_topic"]
        .as_str()
        .expect("the store's topic")
        .to_owned();
    let cluster = Arc::new(Cluster::new(ClusterConfig::new(&bootstrap)).unwrap());
    let store = TaskStore::open(cluster, topic, false)
        .await
        .expect("the store");
    store
        .put("bad", TaskRecord::new("beat", json!({"every_ms": "often"})))
        .await
        .expect("put past the API");
    until("bad is FAILED", || {
        in_state(&workers, "bad", "FAILED").len() == 1
    });
    let failed = workers.iter().find_map(|w| held(w, "bad")).unwrap();
    let error = failed["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("invalid type"), "{failed}");

    // Bad requests: 404 for an unknown task, 400 for a body that is not a task.
    let (code, body) = http(api, "DELETE", "/tasks/nope", "");
    assert_eq!(code, 404, "{body}");
    let (code, body) = http(api, "PUT", "/tasks/s-9", "{");
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].is_string());

    // A delete stops it everywhere.
    let (code, _) = http(api, "DELETE", "/tasks/s-0", "");
    assert_eq!(code, 200);
    until("s-0 stopped everywhere", || {
        workers.iter().all(|w| held(w, "s-0").is_none())
    });

    // Ten rounds: put → running on exactly one worker, pause → PAUSED on its owner, delete →
    // stopped everywhere.
    let mut puts = Vec::new();
    let mut deletes = Vec::new();
    let mut delete_answers = Vec::new();
    let mut pauses = Vec::new();
    for round in 0..10 {
        let id = format!("m-{round}");
        let started = Instant::now();
        let (code, _) = http(
            api,
            "PUT",
            &format!("/tasks/{id}"),
            r#"{"kind":"beat","config":{"every_ms":100}}"#,
        );
        assert_eq!(code, 200);
        until("a put runs", || {
            in_state(&workers, &id, "RUNNING").len() == 1
        });
        puts.push(started.elapsed());
        let started = Instant::now();
        let (code, _) = http(api, "POST", &format!("/tasks/{id}/pause"), "");
        assert_eq!(code, 200);
        until("a pause stops", || {
            in_state(&workers, &id, "PAUSED").len() == 1
                && in_state(&workers, &id, "RUNNING").is_empty()
        });
        pauses.push(started.elapsed());
        let started = Instant::now();
        let (code, _) = http(api, "DELETE", &format!("/tasks/{id}"), "");
        delete_answers.push(started.elapsed());
        assert_eq!(code, 200);
        until("a delete stops", || {
            workers.iter().all(|w| held(w, &id).is_none())
        });
        deletes.push(started.elapsed());
    }
    let (put, delete) = (median(puts.clone()), median(deletes.clone()));
    let pause = median(pauses.clone());
    println!(
        "runtime_tasks on {bootstrap}: put -> running median {put:?} (all {puts:?}); \
         pause -> paused median {pause:?} (all {pauses:?}); \
         delete -> stopped everywhere median {delete:?} (all {deletes:?}); the DELETE's \
         answer came after a median {:?}",
        median(delete_answers)
    );
    assert!(
        pause < Duration::from_secs(1),
        "pause -> paused median {pause:?}"
    );
    assert!(
        put < Duration::from_secs(1),
        "put -> running median {put:?}"
    );
    assert!(
        delete < Duration::from_secs(1),
        "delete -> stopped median {delete:?}"
    );
    assert_eq!(in_state(&workers, "keep", "RUNNING").len(), 1);
    drop(workers);
}
