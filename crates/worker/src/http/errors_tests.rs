//! Every error answer of the status API, route by route, in the one shape:
//! `{"error": "...", "status": N}` as JSON, saying what to do.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::error::ROUTES;
use super::*;
use crate::group::failover::FastFailover;
use crate::http::access::Access;
use crate::status::TaskTable;

/// The API as served: the routes, fast failover's, the access rule (with `token`), one shape.
fn api(token: Option<&str>, supervisor: Option<Arc<Supervisor>>) -> Router {
    let table = supervisor
        .as_ref()
        .map_or_else(TaskTable::new, |s| s.table().clone());
    let board = StatusBoard::new("w1", "g", 0, table);
    let routes = router(
        board,
        crate::runtime::SharedDesired::default(),
        supervisor,
        None,
    )
    .merge(crate::http::failover::router(
        Arc::new(FastFailover::off()),
        crate::group::own_process_id(),
        CancellationToken::new(),
    ));
    let access = Access {
        token: token.map(kroupier_coordinator::connection::Secret::new),
        protect_reads: false,
    };
    finish(access.protect(routes))
}

async fn send(router: &Router, method: Method, path: &str, body: &str) -> Response {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::from(body.to_owned()))
        .unwrap();
    router.clone().oneshot(request).await.unwrap()
}

/// Asserts `response` is an error in the one shape with `status`; returns its body.
async fn shape(response: Response, status: StatusCode) -> (Value, axum::http::HeaderMap) {
    assert_eq!(response.status(), status);
    let headers = response.headers().clone();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(content_type, "application/json", "{status}: {text}");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(body["status"], status.as_u16(), "{body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(!error.is_empty(), "{body}");
    (body, headers)
}

#[tokio::test]
async fn an_unknown_route_answers_404_listing_the_routes() {
    let api = api(None, None);
    for path in ["/", "/nope", "/tasks/a/b/c", "/status/extra"] {
        let (body, _) = shape(
            send(&api, Method::GET, path, "").await,
            StatusCode::NOT_FOUND,
        )
        .await;
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains(path) && error.contains("docs/operations.md"),
            "{error}"
        );
        assert_eq!(body["routes"], json!(ROUTES));
    }
}

#[tokio::test]
async fn a_method_a_route_does_not_take_answers_405_naming_the_allowed_ones() {
    let api = api(None, None);
    for (method, path, allowed) in [
        (Method::POST, "/status", "GET"),
        (Method::DELETE, "/metrics", "GET"),
        (Method::PUT, "/healthz", "GET"),
        (Method::POST, "/readyz", "GET"),
        (Method::POST, "/tasks", "GET"),
        (Method::POST, "/tasks/t", "PUT"),
        (Method::GET, "/tasks/t/pause", "POST"),
        (Method::GET, "/tasks/t/resume", "POST"),
        (Method::GET, "/tasks/t/restart", "POST"),
        (Method::POST, "/watch", "GET"),
        (Method::GET, "/rebalance", "POST"),
    ] {
        let response = send(&api, method.clone(), path, "").await;
        let (body, headers) = shape(response, StatusCode::METHOD_NOT_ALLOWED).await;
        let listed: Vec<&str> = body["allowed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(listed.contains(&allowed), "{method} {path}: {body}");
        assert!(body["error"].as_str().unwrap().contains(allowed), "{body}");
        // The header says it too, as HTTP wants.
        let allow = headers.get(header::ALLOW).unwrap().to_str().unwrap();
        assert!(allow.contains(allowed), "{allow}");
    }
}

#[tokio::test]
async fn readyz_before_the_join_is_503_with_the_reason() {
    let (body, _) = shape(
        send(&api(None, None), Method::GET, "/readyz", "").await,
        StatusCode::SERVICE_UNAVAILABLE,
    )
    .await;
    assert!(
        body["error"].as_str().unwrap().starts_with("not ready: "),
        "{body}"
    );
}

#[tokio::test]
async fn a_write_without_the_token_is_401_in_the_shape_with_its_challenge() {
    let api = api(Some("s3cret"), None);
    let (body, headers) = shape(
        send(&api, Method::POST, "/tasks/t/restart", "").await,
        StatusCode::UNAUTHORIZED,
    )
    .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer"),
        "{body}"
    );
    assert!(!body.to_string().contains("s3cret"));
    assert_eq!(
        headers.get(header::WWW_AUTHENTICATE).unwrap(),
        "Bearer realm=\"kroupier\""
    );
}

#[tokio::test]
async fn restart_answers_in_json_whether_refused_or_accepted() {
    // Without a supervisor: restarts are not enabled here.
    let (body, _) = shape(
        send(&api(None, None), Method::POST, "/tasks/t/restart", "").await,
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(
        body["error"].as_str().unwrap().contains("not enabled"),
        "{body}"
    );
    // A task this worker does not hold: ask its owner.
    let (supervisor, _) = super::tests::failed_task().await;
    let api = api(None, Some(supervisor));
    let (body, _) = shape(
        send(&api, Method::POST, "/tasks/elsewhere/restart", "").await,
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(
        body["error"].as_str().unwrap().contains("its owner"),
        "{body}"
    );
    // Accepted: JSON too.
    let response = send(&api, Method::POST, "/tasks/b/restart", "").await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body, json!({"id": "b", "restart": "requested"}));
}

#[tokio::test]
async fn rebalance_refuses_a_body_or_a_bad_generation_with_400() {
    let api = api(None, None);
    let (body, _) = shape(
        send(&api, Method::POST, "/rebalance", "garbage").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(
        body["error"].as_str().unwrap().contains("?generation=G"),
        "{body}"
    );
    let (body, _) = shape(
        send(&api, Method::POST, "/rebalance?generation=x", "").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(body["error"].as_str().unwrap().contains("`x`"), "{body}");
    let response = send(&api, Method::POST, "/rebalance?generation=3", "").await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn an_unknown_task_is_404_and_a_path_that_does_not_decode_is_400() {
    let api = api(None, None);
    let (body, _) = shape(
        send(&api, Method::GET, "/tasks/nope", "").await,
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(
        body["error"].as_str().unwrap().contains("GET /tasks"),
        "{body}"
    );
    // Not UTF-8 once decoded: axum's own rejection, in the shape.
    shape(
        send(&api, Method::GET, "/tasks/%FF", "").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    // Writes without a task store: 404 saying how to enable it.
    for (method, path) in [
        (Method::PUT, "/tasks/t"),
        (Method::DELETE, "/tasks/t"),
        (Method::POST, "/tasks/t/pause"),
        (Method::POST, "/tasks/t/resume"),
    ] {
        let (body, _) = shape(send(&api, method, path, "{}").await, StatusCode::NOT_FOUND).await;
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("tasks.store.enabled"),
            "{path}: {body}"
        );
    }
}

#[test]
fn the_route_tables_list_every_route_and_nothing_else() {
    const OPERATIONS: &str = include_str!("../../../../docs/operations.md");
    const MODULE: &str = include_str!("mod.rs");
    for (name, text) in [("docs/operations.md", OPERATIONS), ("http/mod.rs", MODULE)] {
        let rows: Vec<&str> = text
            .lines()
            .map(|line| line.trim_start_matches("//! "))
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once('`').map(|(route, _)| route))
            .filter(|route| {
                ["GET ", "PUT ", "POST ", "DELETE "]
                    .iter()
                    .any(|m| route.starts_with(m))
            })
            .collect();
        assert_eq!(rows, ROUTES, "the route table of {name}");
    }
}
