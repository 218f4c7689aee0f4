//! The console's web server (axum): the page and its two assets, embedded at build time; the
//! snapshots as Server-Sent Events; a worker's last `/status`; and the one action the status
//! API has, restarting a task, passed through to the worker that holds it.
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /` | the page, with the current snapshot inline (drawn before any event arrives) |
//! | `GET /console.js`, `GET /console.css` | the page's script and style |
//! | `GET /events` | `text/event-stream`: an event `snapshot` (JSON) now and on every change |
//! | `GET /api/snapshot` | the current snapshot (JSON) |
//! | `GET /api/workers/{name}/status` | the worker's last `/status` answer (JSON), 404 if none |
//! | `POST /api/workers/{name}/tasks/{id}/restart` | the worker's answer to `POST /tasks/{id}/restart` |
//! | `PUT /api/tasks/{id}` (JSON task) | a worker's answer to `PUT /tasks/{id}` |
//! | `DELETE /api/tasks/{id}` | a worker's answer to `DELETE /tasks/{id}` |
//! | `POST /api/tasks/{id}/{pause,resume,restart}` | a worker's answer to the same `POST` |
//!
//! Every error the console answers itself is JSON in the status API's shape,
//! `{"error": "...", "status": N}` (an unknown route lists the routes; a method a route does not
//! take names the ones it does, in `Allow` too); a worker's answer passes through as it came.
//!
//! The `/api/tasks` writes go to the group's task store (docs/tasks.md) through the status API
//! of the first worker that answers; any worker will do, since they all write to the same
//! topic. A group without a task store answers them 404, and the page stays read-only.
//!
//! Every write needs the header `X-Kroupier-Console: 1` (a page of another site cannot send it
//! without a CORS preflight, which this server never grants), and passes the request's
//! `Authorization` header on: a worker with a status token answers 401 without it, and the
//! page asks for the token then. The console itself holds no token.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use kroupier_worker::http::client::{self, Failure};

use super::poll::Shared;

/// The page; `/*SNAPSHOT*/null` is replaced by the current snapshot.
pub(crate) const INDEX_HTML: &str = include_str!("../../assets/console/index.html");
/// The page's script.
pub(crate) const CONSOLE_JS: &str = include_str!("../../assets/console/console.js");
/// The page's style.
pub(crate) const CONSOLE_CSS: &str = include_str!("../../assets/console/console.css");
const PLACEHOLDER: &str = "/*SNAPSHOT*/null";

/// The console's routes over `shared`.
pub(crate) fn router(shared: Shared) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/console.js", get(script))
        .route("/console.css", get(style))
        .route("/events", get(events))
        .route("/api/snapshot", get(snapshot))
        .route("/api/workers/{name}/status", get(worker_status))
        .route("/api/workers/{name}/tasks/{id}/restart", post(restart))
        .route("/api/tasks/{id}", put(put_task).delete(delete_task))
        .route("/api/tasks/{id}/{action}", post(task_action))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared)
}

/// The console's routes, as a 404 for an unknown route lists them.
const ROUTES: [&str; 10] = [
    "GET /",
    "GET /console.js",
    "GET /console.css",
    "GET /events",
    "GET /api/snapshot",
    "GET /api/workers/{name}/status",
    "POST /api/workers/{name}/tasks/{id}/restart",
    "PUT /api/tasks/{id}",
    "DELETE /api/tasks/{id}",
    "POST /api/tasks/{id}/{pause,resume,restart}",
];

/// An error answer in the status API's shape: `{"error": message, "status": N}` (and `extra`).
fn error_with(code: StatusCode, message: impl Into<String>, extra: serde_json::Value) -> Response {
    let mut body = match extra {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    body.insert("error".to_owned(), message.into().into());
    body.insert("status".to_owned(), code.as_u16().into());
    json_response(code, serde_json::Value::Object(body).to_string())
}

fn error(code: StatusCode, message: impl Into<String>) -> Response {
    error_with(code, message, serde_json::Value::Null)
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    error_with(
        StatusCode::NOT_FOUND,
        format!(
            "no route {method} {}; the console's routes are listed in `routes`",
            uri.path()
        ),
        serde_json::json!({ "routes": ROUTES }),
    )
}

/// The methods each route takes, by its first path segments (the console's routes are few).
fn allowed(path: &str) -> &'static [&'static str] {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", "workers", _, "tasks", _, "restart"] => &["POST"],
        ["api", "tasks", _] => &["PUT", "DELETE"],
        ["api", "tasks", _, _] => &["POST"],
        _ => &["GET", "HEAD"],
    }
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let allowed = allowed(uri.path());
    error_with(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} does not take {method}; use {}",
            uri.path(),
            allowed.join(" or ")
        ),
        serde_json::json!({ "allowed": allowed }),
    )
}

/// The page with `snapshot` inline (`</` escaped, so the JSON cannot end the script element).
pub(crate) fn page(snapshot: &str) -> String {
    INDEX_HTML.replace(PLACEHOLDER, &snapshot.replace("</", "<\\/"))
}

async fn index(State(shared): State<Shared>) -> Response {
    let snapshot = shared.snapshot.borrow().clone();
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        page(&snapshot),
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        CONSOLE_JS,
    )
        .into_response()
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        CONSOLE_CSS,
    )
        .into_response()
}

async fn events(
    State(shared): State<Shared>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let updates = shared.snapshot.subscribe();
    let stream = futures::stream::unfold((updates, true), |(mut updates, first)| async move {
        if !first {
            updates.changed().await.ok()?;
        }
        let json = updates.borrow_and_update().clone();
        let event = Event::default().event("snapshot").data(json.as_str());
        Some((Ok(event), (updates, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn snapshot(State(shared): State<Shared>) -> Response {
    let json = shared.snapshot.borrow().clone();
    json_response(StatusCode::OK, json.to_string())
}

async fn worker_status(State(shared): State<Shared>, Path(name): Path<String>) -> Response {
    match shared.with(|b| b.status_of(&name).map(ToString::to_string)) {
        Some(json) => json_response(StatusCode::OK, json),
        None => error(
            StatusCode::NOT_FOUND,
            format!(
                "no /status answer from worker `{name}` (no status API, or not reachable); the \
                 snapshot's `workers` lists those that answered"
            ),
        ),
    }
}

async fn restart(
    State(shared): State<Shared>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !headers.contains_key("x-kroupier-console") {
        return error(
            StatusCode::FORBIDDEN,
            "send the header X-Kroupier-Console: 1 (the page does)",
        );
    }
    let Some(addr) = shared.with(|b| b.status_addrs().get(&name).cloned()) else {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "worker `{name}` advertises no status API; restart the task through another worker's or with `kroupier tasks restart`"
            ),
        );
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let path = format!("/tasks/{}/restart", client::segment(&id));
    match to_worker(&addr, Method::POST, &path, authorization, None).await {
        Ok(answer) => json_response(
            StatusCode::from_u16(answer.code).unwrap_or(StatusCode::BAD_GATEWAY),
            answer.body,
        ),
        Err(Failure::Refused) => error(
            StatusCode::BAD_GATEWAY,
            format!("worker `{name}` refused the connection at {addr}: is it running?"),
        ),
        Err(Failure::Other(e)) => error(
            StatusCode::BAD_GATEWAY,
            format!("worker `{name}` at {addr}: {e}"),
        ),
    }
}

async fn put_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = format!("/tasks/{}", client::segment(&id));
    to_any_worker(&shared, &headers, Method::PUT, &path, Some(&body)).await
}

async fn delete_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/tasks/{}", client::segment(&id));
    to_any_worker(&shared, &headers, Method::DELETE, &path, None).await
}

async fn task_action(
    State(shared): State<Shared>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !["pause", "resume", "restart"].contains(&action.as_str()) {
        return error(
            StatusCode::NOT_FOUND,
            format!("no task action `{action}`: use pause, resume or restart"),
        );
    }
    let path = format!("/tasks/{}/{action}", client::segment(&id));
    to_any_worker(&shared, &headers, Method::POST, &path, None).await
}

/// Sends a task write to the status API of the first worker that answers (in name order);
/// its answer is the console's.
async fn to_any_worker(
    shared: &Shared,
    headers: &HeaderMap,
    method: Method,
    path: &str,
    json: Option<&[u8]>,
) -> Response {
    if !headers.contains_key("x-kroupier-console") {
        return error(
            StatusCode::FORBIDDEN,
            "send the header X-Kroupier-Console: 1 (the page does)",
        );
    }
    let addrs: Vec<(String, String)> = shared.with(|b| {
        b.status_addrs()
            .iter()
            .map(|(name, addr)| (name.clone(), addr.clone()))
            .collect()
    });
    if addrs.is_empty() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no worker of this group advertises a status API to write through; start one with \
             its status API on, or write with `kroupier tasks`",
        );
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let mut failures = Vec::new();
    for (name, addr) in addrs {
        match to_worker(&addr, method.clone(), path, authorization, json).await {
            Ok(answer) => {
                return json_response(
                    StatusCode::from_u16(answer.code).unwrap_or(StatusCode::BAD_GATEWAY),
                    answer.body,
                );
            }
            Err(Failure::Refused) => failures.push(format!("{name} at {addr}: refused")),
            Err(Failure::Other(e)) => failures.push(format!("{name} at {addr}: {e}")),
        }
    }
    error(
        StatusCode::BAD_GATEWAY,
        format!("no worker answered: {}", failures.join("; ")),
    )
}

/// Sends `method path` to the status API at `addr` through the worker's HTTP client, with the
/// page's `Authorization` passed on and an optional JSON body; 5 s at most.
async fn to_worker(
    addr: &str,
    method: Method,
    path: &str,
    authorization: Option<&str>,
    json: Option<&[u8]>,
) -> Result<client::Answer, Failure> {
    let mut request = client::request(addr, method, path);
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    if json.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let body = json.map(Bytes::copy_from_slice).unwrap_or_default();
    client::send(addr, request.body(body), Duration::from_secs(5)).await
}

fn json_response(code: StatusCode, json: String) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], json).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_the_snapshot_inline_and_safely() {
        assert!(INDEX_HTML.contains(PLACEHOLDER));
        let page = page(r#"{"group":"</script><script>alert(1)"}"#);
        assert!(!page.contains(PLACEHOLDER));
        assert!(page.contains(r#"{"group":"<\/script><script>alert(1)"}"#));
        assert_eq!(
            page.matches("</script>").count(),
            INDEX_HTML.matches("</script>").count()
        );
    }

    /// Serves the console's router on a loopback port; its address.
    async fn serve() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let app = router(Shared::new("g", "127.0.0.1:1"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    }

    /// Asserts an answer in the one error shape with `code`; its body.
    fn shape(answer: &client::Answer, code: u16) -> serde_json::Value {
        assert_eq!(answer.code, code, "{}", answer.body);
        let body: serde_json::Value =
            serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body));
        assert_eq!(body["status"], code, "{body}");
        assert!(
            !body["error"].as_str().unwrap_or_default().is_empty(),
            "{body}"
        );
        body
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_error_the_console_answers_is_json_in_the_status_apis_shape() {
        let addr = serve().await;
        let ask = |method: &'static str, path: &'static str, console: bool| {
            let addr = addr.clone();
            async move {
                let method = Method::from_bytes(method.as_bytes()).unwrap();
                let mut request = client::request(&addr, method, path);
                if console {
                    request = request.header("X-Kroupier-Console", "1");
                }
                let request = request.body(Bytes::new());
                client::send(&addr, request, Duration::from_secs(5))
                    .await
                    .expect("an HTTP answer")
            }
        };
        let body = shape(&ask("GET", "/nope", false).await, 404);
        assert_eq!(body["routes"], serde_json::json!(ROUTES));
        let body = shape(&ask("POST", "/api/snapshot", false).await, 405);
        assert_eq!(body["allowed"], serde_json::json!(["GET", "HEAD"]));
        let body = shape(&ask("GET", "/api/tasks/t", false).await, 405);
        assert_eq!(body["allowed"], serde_json::json!(["PUT", "DELETE"]));
        let body = shape(&ask("GET", "/api/tasks/t/pause", false).await, 405);
        assert_eq!(body["allowed"], serde_json::json!(["POST"]));
        shape(&ask("GET", "/api/workers/w9/status", false).await, 404);
        let body = shape(&ask("POST", "/api/tasks/t/pause", false).await, 403);
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("X-Kroupier-Console")
        );
        shape(
            &ask("POST", "/api/workers/w9/tasks/t/restart", true).await,
            404,
        );
        shape(&ask("POST", "/api/tasks/t/explode", true).await, 404);
        // No worker to write through yet.
        shape(&ask("DELETE", "/api/tasks/t", true).await, 503);
    }

    #[test]
    fn the_assets_are_self_contained() {
        for asset in [INDEX_HTML, CONSOLE_JS, CONSOLE_CSS] {
            for remote in [
                "src=\"http",
                "href=\"http",
                "url(http",
                "@import",
                "import(",
            ] {
                assert!(!asset.contains(remote), "no CDN: {remote}");
            }
        }
    }
}
