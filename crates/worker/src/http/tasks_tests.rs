//! `/tasks` in process, over a fake store.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::builder::WorkerBuilder;
use crate::config::WorkerConfig;
use crate::runtime::desired::Desired;
use crate::store::StoreView;
use crate::{Task, TaskContext, TaskError, TaskSpec};

#[derive(serde::Deserialize)]
struct Beat {
    #[allow(dead_code)]
    every_ms: u64,
}

impl Task for Beat {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

/// A store in memory: records applied to a view, one offset each; `down` makes every write
/// fail as an unreachable broker would.
#[derive(Default)]
struct FakeStore {
    view: Mutex<StoreView>,
    down: Mutex<bool>,
}

impl FakeStore {
    fn write(&self, id: &str, record: Option<TaskRecord>) -> WriteFuture {
        let result = if *self.down.lock().unwrap() {
            Err(WriteError::Unavailable("no broker answered".into()))
        } else {
            let mut view = self.view.lock().unwrap();
            let value = record.map(|r| r.encode(id));
            match value.transpose() {
                Err(e) if e.kind() == crate::store::StoreErrorKind::TooLarge => {
                    Err(WriteError::TooLarge("too large".into()))
                }
                Err(e) => Err(WriteError::Invalid(e.to_string())),
                Ok(value) => {
                    let offset = view.offset;
                    view.apply_parts(offset, id.as_bytes(), value.as_deref());
                    Ok(offset)
                }
            }
        };
        Box::pin(async move { result })
    }

    fn current(&self, id: &str) -> Option<TaskRecord> {
        let view = self.view.lock().unwrap();
        view.tasks.get(id).map(|t| t.record.clone())
    }

    fn change(&self, id: String, f: impl FnOnce(&mut TaskRecord)) -> WriteFuture {
        match self.current(&id) {
            Some(mut record) => {
                f(&mut record);
                self.write(&id, Some(record))
            }
            None => Box::pin(async move { Err(WriteError::NotFound(format!("no task {id:?}"))) }),
        }
    }
}

impl TaskWrites for FakeStore {
    fn topic(&self) -> String {
        "kroupier-tasks-g".into()
    }
    fn put(&self, id: String, record: TaskRecord) -> WriteFuture {
        self.write(&id, Some(record))
    }
    fn delete(&self, id: String) -> WriteFuture {
        if self.current(&id).is_none() {
            return Box::pin(async move { Err(WriteError::NotFound(format!("no task {id:?}"))) });
        }
        self.write(&id, None)
    }
    fn set_state(&self, id: String, state: DesiredState) -> WriteFuture {
        self.change(id, |r| r.state = state)
    }
    fn restart(&self, id: String) -> WriteFuture {
        self.change(id, |r| r.restart += 1)
    }
}

fn api() -> (Router, Arc<FakeStore>, Arc<crate::runtime::Runtime>) {
    let runtime = WorkerBuilder::new(WorkerConfig {
        worker_id: "w1".into(),
        ..WorkerConfig::new("g")
    })
    .register::<Beat>("beat")
    .task(TaskSpec::new("code-0", "beat", json!({"every_ms": 100})))
    .build_runtime()
    .unwrap();
    let runtime = Arc::new(runtime);
    let store = Arc::new(FakeStore::default());
    let router = crate::http::routes(&runtime, Some(store.clone() as Arc<dyn TaskWrites>));
    (router, store, runtime)
}

/// What the worker loop does with each new view.
fn follow(runtime: &crate::runtime::Runtime, store: &FakeStore) {
    let code =
        crate::Catalogue::from_specs([TaskSpec::new("code-0", "beat", json!({"every_ms": 100}))])
            .unwrap();
    let view = store.view.lock().unwrap().clone();
    runtime.set_desired(Desired::merge(&code, &view));
}

async fn call(router: &Router, method: Method, path: &str, body: &str) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

fn task<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed in {list}"))
}

#[tokio::test]
async fn put_pause_resume_restart_and_delete_go_to_the_store() {
    let (router, store, runtime) = api();
    let (status, body) = call(
        &router,
        Method::PUT,
        "/tasks/s-1",
        r#"{"kind":"beat","config":{"every_ms":50},"weight":2}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"id": "s-1", "version": 0}));
    let record = store.current("s-1").unwrap();
    assert_eq!((record.weight, record.state), (2, DesiredState::Running));

    for (path, check) in [
        ("/tasks/s-1/pause", DesiredState::Paused),
        ("/tasks/s-1/resume", DesiredState::Running),
    ] {
        let (status, body) = call(&router, Method::POST, path, "").await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(store.current("s-1").unwrap().state, check);
    }
    // A stored task's restart counts in the store: its owner restarts it wherever it runs.
    let (status, _) = call(&router, Method::POST, "/tasks/s-1/restart", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(store.current("s-1").unwrap().restart, 1);

    // GET /tasks lists code and store tasks with their desired state and source.
    let (_, _) = call(&router, Method::POST, "/tasks/s-1/pause", "").await;
    follow(&runtime, &store);
    let (status, list) = call(&router, Method::GET, "/tasks", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["store_topic"], "kroupier-tasks-g");
    assert_eq!(list["store_offset"], 5);
    let s1 = task(&list, "s-1");
    assert_eq!(
        (&s1["desired"], &s1["source"], &s1["weight"], &s1["version"]),
        (&json!("paused"), &json!("store"), &json!(2), &json!(4))
    );
    let code = task(&list, "code-0");
    assert_eq!(
        (&code["source"], &code["desired"]),
        (&json!("code"), &json!("running"))
    );

    // GET /tasks/{id}: that one entry of GET /tasks.
    for id in ["s-1", "code-0"] {
        let (status, one) = call(&router, Method::GET, &format!("/tasks/{id}"), "").await;
        assert_eq!(status, StatusCode::OK, "{one}");
        assert_eq!(&one, task(&list, id));
    }

    let (status, _) = call(&router, Method::DELETE, "/tasks/s-1", "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(store.current("s-1").is_none());
    follow(&runtime, &store);
    let (status, gone) = call(&router, Method::GET, "/tasks/s-1", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");
    assert_eq!(gone["status"], 404);
    follow(&runtime, &store);
    let (_, list) = call(&router, Method::GET, "/tasks", "").await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_input_gets_a_clear_json_error_and_changes_nothing() {
    let (router, store, _runtime) = api();
    // Not JSON / not a task: 400 with serde's message.
    let (status, body) = call(&router, Method::PUT, "/tasks/s-1", "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("key must be a string"),
        "{body}"
    );
    assert_eq!(body["status"], 400);
    let (status, body) = call(&router, Method::PUT, "/tasks/s-1", r#"{"config":{}}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("missing field `kind`"),
        "{body}"
    );
    // No config: 400, as `kroupier tasks put` without `--config` is refused, rather than a
    // stored `null` that fails the task later.
    let (status, body) = call(&router, Method::PUT, "/tasks/s-1", r#"{"kind":"beat"}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("missing field `config`"), "{body}");
    assert!(
        error.contains(r#""config": {} for a kind without settings"#),
        "{body}"
    );
    assert!(store.current("s-1").is_none());
    // A config the kind cannot take, on a worker that registers the kind: 400 with serde's
    // message, nothing written.
    let (status, body) = call(
        &router,
        Method::PUT,
        "/tasks/s-1",
        r#"{"kind":"beat","config":{"every_ms":"often"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("invalid type"), "{body}");
    // Advice an HTTP caller can follow: there is no catalogue to fix, only this request.
    assert!(
        error.contains("send a `config` that kind `beat` accepts in the body of PUT /tasks/{id}"),
        "{body}"
    );
    assert!(!error.contains("catalogue"), "{body}");
    // A task id that breaks the id rule: 400 saying what an id may hold, before the body is
    // looked at (a `/` would loop in RESTARTING, a newline breaks every table).
    for path in ["/tasks/x%2Fy", "/tasks/%E2%9C%93%0A", "/tasks/a%20b"] {
        let (status, body) = call(
            &router,
            Method::PUT,
            path,
            r#"{"kind":"beat","config":{"every_ms":"often"}}"#,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("ASCII letters"),
            "{path}: {body}"
        );
    }
    // A kind this worker does not know is stored (another worker may run it).
    let (status, _) = call(
        &router,
        Method::PUT,
        "/tasks/x-1",
        r#"{"kind":"exotic","config":{}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(store.current("s-1").is_none());

    // Unknown tasks: 404.
    for (method, path) in [
        (Method::DELETE, "/tasks/nope"),
        (Method::POST, "/tasks/nope/pause"),
        (Method::POST, "/tasks/nope/resume"),
    ] {
        let (status, body) = call(&router, method, path, "").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(body["error"].is_string());
    }

    // Over the store's limit: 413.
    let big = format!(
        r#"{{"kind":"exotic","config":"{}"}}"#,
        "x".repeat(MAX_VALUE_BYTES)
    );
    let (status, body) = call(&router, Method::PUT, "/tasks/big", &big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["limit_bytes"], MAX_VALUE_BYTES, "{body}");
    let huge = format!(
        r#"{{"kind":"exotic","config":"{}"}}"#,
        "x".repeat(MAX_BODY_BYTES)
    );
    let (status, body) = call(&router, Method::PUT, "/tasks/big", &huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["status"], 413);
    assert_eq!(body["limit_bytes"], MAX_VALUE_BYTES, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {MAX_VALUE_BYTES} bytes")),
        "{body}"
    );

    // The store unreachable: 503.
    *store.down.lock().unwrap() = true;
    let (status, body) = call(
        &router,
        Method::PUT,
        "/tasks/s-2",
        r#"{"kind":"exotic","config":{}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body["error"].as_str().unwrap().contains("no broker"),
        "{body}"
    );
}

#[tokio::test]
async fn without_a_store_writes_say_how_to_enable_it_and_the_list_shows_code_tasks() {
    let runtime = WorkerBuilder::new(WorkerConfig::new("g"))
        .register::<Beat>("beat")
        .task(TaskSpec::new("code-0", "beat", json!({"every_ms": 100})))
        .build_runtime()
        .unwrap();
    let router = crate::http::routes(&runtime, None);
    let (status, body) = call(
        &router,
        Method::PUT,
        "/tasks/s-1",
        r#"{"kind":"beat","config":{}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("tasks.store.enabled"),
        "{body}"
    );
    let (status, list) = call(&router, Method::GET, "/tasks", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["store_topic"], Value::Null);
    assert_eq!(task(&list, "code-0")["state"], Value::Null);
}

#[tokio::test]
async fn unplaced_tasks_show_with_the_reason() {
    let (router, store, runtime) = api();
    let _ = call(
        &router,
        Method::PUT,
        "/tasks/x-1",
        r#"{"kind":"exotic","config":{}}"#,
    )
    .await;
    follow(&runtime, &store);
    runtime.board().set_unplaced(BTreeMap::from([(
        "x-1".to_owned(),
        "no worker of the group registers kind `exotic`; start a worker that does".to_owned(),
    )]));
    let (_, list) = call(&router, Method::GET, "/tasks", "").await;
    let x1 = task(&list, "x-1");
    assert_eq!(x1["state"], "UNPLACED");
    assert!(x1["reason"].as_str().unwrap().contains("exotic"), "{x1}");
}

#[tokio::test]
async fn writes_need_the_token_and_reads_do_not_unless_protected() {
    let (router, store, _runtime) = api();
    let access = crate::http::access::Access {
        token: Some(kroupier_coordinator::connection::Secret::new("s3cret")),
        protect_reads: false,
    };
    let router = access.protect(router);
    let (status, _) = call(
        &router,
        Method::PUT,
        "/tasks/s-1",
        r#"{"kind":"beat","config":{"every_ms":1}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(store.current("s-1").is_none(), "nothing written");
    for path in [
        "/tasks/s-1/pause",
        "/tasks/s-1/resume",
        "/tasks/s-1/restart",
    ] {
        let (status, _) = call(&router, Method::POST, path, "").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let (status, _) = call(&router, Method::DELETE, "/tasks/s-1", "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(&router, Method::GET, "/tasks", "").await;
    assert_eq!(status, StatusCode::OK);

    let request = Request::builder()
        .method(Method::PUT)
        .uri("/tasks/s-1")
        .header("authorization", "Bearer s3cret")
        .body(Body::from(r#"{"kind":"beat","config":{"every_ms":1}}"#))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(store.current("s-1").is_some());
}

#[tokio::test]
async fn get_one_task_says_when_its_store_record_is_not_a_task() {
    let (router, store, runtime) = api();
    {
        let mut view = store.view.lock().unwrap();
        let offset = view.offset;
        view.apply_parts(offset, b"broken-1", Some(b"{not a task record"));
    }
    follow(&runtime, &store);
    let (status, body) = call(&router, Method::GET, "/tasks/broken-1", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["status"], 404);
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("not a task") && error.contains("PUT /tasks/{id}"),
        "{body}"
    );
}
