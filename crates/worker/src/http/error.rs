//! The one shape of every error answer of the status API: a JSON object
//! `{"error": "...", "status": N}` whose `error` says what went wrong and what to do, with more
//! fields where they help (`limit_bytes` with 413, `allowed` with 405, `routes` with 404 for an
//! unknown route). The console's server answers its own errors in the same shape.
//!
//! Handlers answer with [`error`] themselves; [`one_shape`], the outermost layer of the API,
//! turns what axum answers on its own (404 for an unknown route, 405 for a method a route does
//! not take, the text of a rejected extractor) into the shape as well, so that no error leaves
//! in another form.

use axum::Json;
use axum::body::to_bytes;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// Every route of the status API (the fast-failover ones only with fast failover), as a 404 for
/// an unknown route lists them; docs/operations.md, "The status API", describes each.
pub(crate) const ROUTES: [&str; 16] = [
    "GET /status",
    "GET /metrics",
    "GET /healthz",
    "GET /readyz",
    "GET /tasks",
    "GET /tasks/{id}",
    "PUT /tasks/{id}",
    "DELETE /tasks/{id}",
    "GET /tasks/{id}/checkpoint",
    "PUT /tasks/{id}/checkpoint",
    "DELETE /tasks/{id}/checkpoint",
    "POST /tasks/{id}/pause",
    "POST /tasks/{id}/resume",
    "POST /tasks/{id}/restart",
    "GET /watch",
    "POST /rebalance",
];

/// The largest body of an error answer [`one_shape`] reads to quote it.
const MAX_QUOTED: usize = 64 * 1024;

/// An error answer: `status` with `{"error": message, "status": N}`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    error_with(status, message, Map::new())
}

/// An error answer with `extra` fields beside `error` and `status`.
pub(crate) fn error_with(
    status: StatusCode,
    message: impl Into<String>,
    mut extra: Map<String, Value>,
) -> Response {
    extra.insert("error".to_owned(), Value::String(message.into()));
    extra.insert("status".to_owned(), json!(status.as_u16()));
    (status, Json(Value::Object(extra))).into_response()
}

/// Middleware: an error answer that is not JSON yet leaves in the one shape, its text quoted
/// (a 404 for an unknown route lists the routes, a 405 names the allowed methods).
pub(crate) async fn one_shape(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_QUOTED)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let allow = parts.headers.get(header::ALLOW).cloned();
    let mut answer = match status {
        StatusCode::METHOD_NOT_ALLOWED => {
            let allowed: Vec<String> = allow
                .as_ref()
                .and_then(|value| value.to_str().ok())
                .map(|value| value.split(',').map(|m| m.trim().to_owned()).collect())
                .unwrap_or_default();
            let message = format!(
                "{path} does not take {method}; use {}",
                allowed.join(" or ")
            );
            error_with(status, message, one_field("allowed", json!(allowed)))
        }
        StatusCode::NOT_FOUND if text.is_empty() => error_with(
            status,
            format!(
                "no route {method} {path}; the routes are listed in `routes` and described in \
                 docs/operations.md (\"The status API\")"
            ),
            one_field("routes", json!(ROUTES)),
        ),
        _ if text.is_empty() => error(
            status,
            status.canonical_reason().unwrap_or("error").to_owned(),
        ),
        _ => error(status, text),
    };
    // What the answer said beside its body (`Allow`, `WWW-Authenticate`, ...) stays.
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    answer
}

fn one_field(name: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(name.to_owned(), value);
    map
}
