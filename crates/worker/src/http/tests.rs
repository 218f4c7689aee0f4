//! The status API, in process, through `tower::ServiceExt::oneshot`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::lease::{FencingToken, Lease};
use crate::status::{GroupView, TaskState, TaskTable};
use crate::supervisor::{RestartPolicy, SupervisorConfig};
use crate::{Catalogue, Registry, Task, TaskContext, TaskError, TaskSpec};

async fn call(router: &Router, method: Method, path: &str) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn board() -> StatusBoard {
    let table = TaskTable::new();
    table.begin("task-1", Some("copy".into()), 3, 1);
    table.set_state("task-1", 1, TaskState::Running);
    StatusBoard::new("worker-a", "orders", 0xabc, table)
}

fn stable_view(generation: i32) -> GroupView {
    GroupView {
        member_id: Some("member-a".into()),
        generation: Some(generation),
        leader: Some("member-b".into()),
        leader_catalogue_fingerprint: Some(format!("{:016x}", 0xabc)),
        catalogue_mismatch: false,
    }
}

#[tokio::test(start_paused = true)]
async fn status_serves_the_last_stable_view_during_a_rebalance() {
    let board = board();
    board.rebalance_completed(stable_view(3));
    board.rebalance_started();
    let router = router(board, crate::runtime::SharedDesired::default(), None, None);
    let (status, body) = call(&router, Method::GET, "/status").await;
    assert_eq!(status, StatusCode::OK);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["rebalancing"], json!(true));
    assert_eq!(body["generation"], json!(3));
    assert_eq!(body["leader"], json!("member-b"));
    assert_eq!(body["member_id"], json!("member-a"));
    assert_eq!(body["worker_id"], json!("worker-a"));
    assert_eq!(body["catalogue_fingerprint"], json!("0000000000000abc"));
    let task = &body["tasks"][0];
    assert_eq!(task["task_id"], json!("task-1"));
    assert_eq!(task["state"], json!("RUNNING"));
    assert_eq!(task["owner"], json!("worker-a"));
    assert_eq!(task["restarts"], json!(0));
    assert_eq!(task["last_error"], Value::Null);
    assert!(task["since_ms"].as_u64().is_some());
}

async fn scrape(router: &Router, accept: Option<&str>) -> (StatusCode, String, String) {
    let mut request = Request::builder().method(Method::GET).uri("/metrics");
    if let Some(accept) = accept {
        request = request.header(header::ACCEPT, accept);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let content_type = response.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn metrics_count_tasks_rebalances_and_latency() {
    let board = board();
    board.rebalance_started();
    tokio::time::advance(Duration::from_secs(2)).await;
    board.rebalance_completed(stable_view(4));
    board.record_failover();
    let router = router(board, crate::runtime::SharedDesired::default(), None, None);
    let (status, content_type, body) = scrape(&router, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    for line in [
        "# TYPE kroupier_tasks gauge",
        "kroupier_tasks{state=\"RUNNING\"} 1",
        "kroupier_tasks{state=\"FAILED\"} 0",
        "kroupier_task_restarts 0",
        "# TYPE kroupier_rebalances counter",
        "kroupier_rebalances_total 1",
        "kroupier_rebalancing 0",
        "kroupier_generation 4",
        "kroupier_catalogue_mismatch 0",
        "# TYPE kroupier_rebalance_latency_seconds histogram",
        "kroupier_rebalance_latency_seconds_bucket{le=\"1.0\"} 0",
        "kroupier_rebalance_latency_seconds_bucket{le=\"2.5\"} 1",
        "kroupier_rebalance_latency_seconds_bucket{le=\"+Inf\"} 1",
        "kroupier_rebalance_latency_seconds_count 1",
        "kroupier_rebalance_latency_seconds_sum 2.0",
        "# EOF",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing `{line}` in\n{body}"
        );
    }
    let failover = body
        .lines()
        .find_map(|l| l.strip_prefix("kroupier_last_failover_timestamp_seconds "))
        .unwrap();
    assert!(failover.parse::<f64>().unwrap() > 1.0e9);
}

#[tokio::test(start_paused = true)]
async fn metrics_before_the_first_rebalance_and_during_one() {
    let board = board();
    let router = router(
        board.clone(),
        crate::runtime::SharedDesired::default(),
        None,
        None,
    );
    let (_, _, body) = scrape(&router, None).await;
    for line in [
        "kroupier_generation -1",
        "kroupier_rebalances_total 0",
        "kroupier_last_failover_timestamp_seconds 0.0",
        "kroupier_rebalance_latency_seconds_count 0",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing `{line}` in\n{body}"
        );
    }
    board.rebalance_started();
    let (_, _, body) = scrape(&router, None).await;
    assert!(
        body.lines().any(|l| l == "kroupier_rebalancing 1"),
        "{body}"
    );
}

#[tokio::test(start_paused = true)]
async fn metrics_are_labelled_openmetrics_whatever_the_scraper_asks() {
    let router = router(
        board(),
        crate::runtime::SharedDesired::default(),
        None,
        None,
    );
    // What Prometheus sends, then what a plain client sends, then nothing.
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                      version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    for accept in [Some(prometheus), Some("text/plain"), Some("*/*"), None] {
        let (status, content_type, body) = scrape(&router, accept).await;
        assert_eq!(status, StatusCode::OK);
        // The body is OpenMetrics (`# EOF`, `# UNIT`): so is its label.
        assert_eq!(
            content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8",
            "Accept: {accept:?}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_count_the_first_join_with_its_latency() {
    // The first join has no revocation before it: only its assignment's arrival says when it
    // started (the member's measure), and it counts like every later rebalance.
    let board = board();
    tokio::time::advance(Duration::from_secs(1)).await;
    board.rebalance_arrived(Some(Duration::from_millis(300)));
    tokio::time::advance(Duration::from_millis(200)).await;
    board.rebalance_completed(stable_view(1));
    // The same generation applied again (a held start) is not another rebalance.
    board.rebalance_completed(stable_view(1));
    let (_, _, body) = scrape(
        &router(
            board.clone(),
            crate::runtime::SharedDesired::default(),
            None,
            None,
        ),
        None,
    )
    .await;
    for line in [
        "kroupier_rebalances_total 1",
        "kroupier_rebalance_latency_seconds_count 1",
        "kroupier_rebalance_latency_seconds_sum 0.5",
        "kroupier_rebalance_latency_seconds_bucket{le=\"0.25\"} 0",
        "kroupier_rebalance_latency_seconds_bucket{le=\"0.5\"} 1",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing `{line}` in\n{body}"
        );
    }
    // A later rebalance, seen from its revocation.
    board.rebalance_started();
    tokio::time::advance(Duration::from_secs(2)).await;
    board.rebalance_arrived(Some(Duration::from_millis(100)));
    board.rebalance_completed(stable_view(2));
    let (_, _, body) = scrape(
        &router(board, crate::runtime::SharedDesired::default(), None, None),
        None,
    )
    .await;
    for line in [
        "kroupier_rebalances_total 2",
        "kroupier_rebalance_latency_seconds_count 2",
        "kroupier_rebalance_latency_seconds_sum 2.5",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing `{line}` in\n{body}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn health_and_readiness() {
    let board = board();
    let router = router(
        board.clone(),
        crate::runtime::SharedDesired::default(),
        None,
        None,
    );
    assert_eq!(
        call(&router, Method::GET, "/healthz").await.0,
        StatusCode::OK
    );
    let not_ready = |body: &str| -> String {
        let body: Value = serde_json::from_str(body).expect("a JSON error");
        assert_eq!(body["status"], 503, "{body}");
        body["error"].as_str().unwrap().to_owned()
    };
    let (status, body) = call(&router, Method::GET, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        not_ready(&body).contains("not joined its group yet"),
        "{body}"
    );
    // The member cannot reach Kafka: /readyz says why, in the member's words.
    board.set_unreachable(Some("no usable connection to Kafka for 3 s: refused"));
    let (status, body) = call(&router, Method::GET, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        not_ready(&body),
        "not ready: no usable connection to Kafka for 3 s: refused"
    );
    board.set_unreachable(None);
    board.rebalance_completed(stable_view(1));
    assert_eq!(
        call(&router, Method::GET, "/readyz").await.0,
        StatusCode::OK
    );
    // A rebalance does not make the worker unready.
    board.rebalance_started();
    assert_eq!(
        call(&router, Method::GET, "/readyz").await.0,
        StatusCode::OK
    );
    // Losing Kafka after the join does.
    board.set_unreachable(Some("no usable connection to Kafka for 3 s: reset"));
    assert_eq!(
        call(&router, Method::GET, "/readyz").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    board.set_unreachable(None);
    board.set_shutting_down();
    let (status, body) = call(&router, Method::GET, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(not_ready(&body).contains("shutting down"), "{body}");
    assert_eq!(
        call(&router, Method::GET, "/healthz").await.0,
        StatusCode::OK
    );
}

struct Broken;
impl Task for Broken {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        Err(TaskError::failed("broken"))
    }
}

/// A supervisor whose task `b` has FAILED, and how many times `b` was built.
pub(super) async fn failed_task() -> (Arc<Supervisor>, Arc<std::sync::atomic::AtomicU32>) {
    let builds = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = builds.clone();
    let mut registry = Registry::new();
    registry.register_with("broken", move |_: &serde_json::Value| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok::<_, String>(Broken)
    });
    let catalogue =
        Catalogue::from_specs([TaskSpec::new("b", "broken", serde_json::Value::Null)]).unwrap();
    let config = SupervisorConfig {
        restart: RestartPolicy {
            max_attempts: 1,
            ..RestartPolicy::default()
        },
        ..SupervisorConfig::default()
    };
    let supervisor = Arc::new(Supervisor::new(
        Arc::new(registry),
        Arc::new(catalogue),
        config,
    ));
    let token = FencingToken::new(1, "m");
    let valid_until = std::time::Instant::now() + Duration::from_secs(60);
    supervisor.set_member_lease(Lease {
        token: token.clone(),
        valid_until,
    });
    supervisor.start("b", token);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(supervisor.table().state("b"), Some(TaskState::Failed));
    (supervisor, builds)
}

#[tokio::test(start_paused = true)]
async fn restart_request_revives_a_failed_task() {
    let (supervisor, builds) = failed_task().await;
    let board = StatusBoard::new("w", "g", 0, supervisor.table().clone());
    let router = router(
        board,
        crate::runtime::SharedDesired::default(),
        Some(supervisor.clone()),
        None,
    );
    let (status, _) = call(&router, Method::POST, "/tasks/nope/restart").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(&router, Method::POST, "/tasks/b/restart").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    tokio::time::sleep(Duration::from_millis(1)).await;
    let record = supervisor.table().get("b").unwrap();
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.consecutive_failures, 1);
    assert!(record.last_error.unwrap().contains("broken"));
    assert_eq!(
        builds.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "ran again"
    );
}

#[tokio::test]
async fn serves_over_tcp_on_loopback_and_shuts_down() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        None,
        router(
            board(),
            crate::runtime::SharedDesired::default(),
            None,
            None,
        ),
        async {
            let _ = stopped.await;
        },
    ));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: kroupier\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.ends_with("ok\n"), "{response}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn bind_errors_name_the_address() {
    let taken = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = taken.local_addr().unwrap();
    let error = bind(addr).await.unwrap_err();
    assert!(error.to_string().contains(&addr.to_string()), "{error}");
}

async fn call_with_token(router: &Router, path: &str, token: Option<&str>) -> StatusCode {
    let mut request = Request::builder().method(Method::POST).uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Body::empty()).unwrap();
    router.clone().oneshot(request).await.unwrap().status()
}

#[tokio::test(start_paused = true)]
async fn with_a_token_a_write_without_it_is_refused_and_with_it_accepted() {
    use crate::http::access::Access;
    use kroupier_coordinator::connection::Secret;

    let (supervisor, builds) = failed_task().await;
    let board = StatusBoard::new("w", "g", 0, supervisor.table().clone());
    let access = Access {
        token: Some(Secret::new("s3cret-token")),
        protect_reads: false,
    };
    let router = access.protect(router(
        board,
        crate::runtime::SharedDesired::default(),
        Some(supervisor.clone()),
        None,
    ));
    let path = "/tasks/b/restart";
    assert_eq!(
        call_with_token(&router, path, None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call_with_token(&router, path, Some("s3cret-tokeN")).await,
        StatusCode::UNAUTHORIZED
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        builds.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "not restarted"
    );
    assert_eq!(
        call_with_token(&router, path, Some("s3cret-token")).await,
        StatusCode::ACCEPTED
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        builds.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "restarted"
    );
    // Reads stay open unless protected.
    assert_eq!(
        call(&router, Method::GET, "/status").await.0,
        StatusCode::OK
    );

    let protected = Access {
        token: Some(Secret::new("s3cret-token")),
        protect_reads: true,
    }
    .protect(super::router(
        board_for(&supervisor),
        crate::runtime::SharedDesired::default(),
        None,
        None,
    ));
    assert_eq!(
        call(&protected, Method::GET, "/status").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&protected, Method::GET, "/metrics").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&protected, Method::GET, "/healthz").await.0,
        StatusCode::OK
    );
    let (status, body) = call(&protected, Method::GET, "/status").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!body.contains("s3cret"), "{body}");
}

fn board_for(supervisor: &Supervisor) -> StatusBoard {
    StatusBoard::new("w", "g", 0, supervisor.table().clone())
}
