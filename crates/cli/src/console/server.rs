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
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use super::http::{self, Failure};
use super::poll::Shared;

/// The page; `/*SNAPSHOT*/null` is replaced by the current snapshot.
pub const INDEX_HTML: &str = include_str!("../../assets/console/index.html");
/// The page's script.
pub const CONSOLE_JS: &str = include_str!("../../assets/console/console.js");
/// The page's style.
pub const CONSOLE_CSS: &str = include_str!("../../assets/console/console.css");
const PLACEHOLDER: &str = "/*SNAPSHOT*/null";

/// The console's routes over `shared`.
pub fn router(shared: Shared) -> Router {
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
        .with_state(shared)
}

/// The page with `snapshot` inline (`</` escaped, so the JSON cannot end the script element).
pub fn page(snapshot: &str) -> String {
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
        None => (
            StatusCode::NOT_FOUND,
            format!("no /status answer from worker `{name}` (no status API, or not reachable)\n"),
        )
            .into_response(),
    }
}

async fn restart(
    State(shared): State<Shared>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !headers.contains_key("x-kroupier-console") {
        return (
            StatusCode::FORBIDDEN,
            "send the header X-Kroupier-Console: 1 (the page does)\n",
        )
            .into_response();
    }
    let Some(addr) = shared.with(|b| b.status_addrs().get(&name).cloned()) else {
        return (
            StatusCode::NOT_FOUND,
            format!("worker `{name}` advertises no status API\n"),
        )
            .into_response();
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let path = format!("/tasks/{}/restart", http::segment(&id));
    match http::request(&addr, "POST", &path, authorization, Duration::from_secs(5)).await {
        Ok(answer) => (
            StatusCode::from_u16(answer.code).unwrap_or(StatusCode::BAD_GATEWAY),
            answer.body,
        )
            .into_response(),
        Err(Failure::Refused) => (
            StatusCode::BAD_GATEWAY,
            format!("worker `{name}` refused the connection at {addr}: is it running?\n"),
        )
            .into_response(),
        Err(Failure::Other(e)) => (
            StatusCode::BAD_GATEWAY,
            format!("worker `{name}` at {addr}: {e}\n"),
        )
            .into_response(),
    }
}

async fn put_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = format!("/tasks/{}", http::segment(&id));
    to_any_worker(&shared, &headers, "PUT", &path, Some(&body)).await
}

async fn delete_task(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/tasks/{}", http::segment(&id));
    to_any_worker(&shared, &headers, "DELETE", &path, None).await
}

async fn task_action(
    State(shared): State<Shared>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !["pause", "resume", "restart"].contains(&action.as_str()) {
        return (
            StatusCode::NOT_FOUND,
            format!("no task action `{action}`: pause, resume or restart\n"),
        )
            .into_response();
    }
    let path = format!("/tasks/{}/{action}", http::segment(&id));
    to_any_worker(&shared, &headers, "POST", &path, None).await
}

/// Sends a task write to the status API of the first worker that answers (in name order);
/// its answer is the console's.
async fn to_any_worker(
    shared: &Shared,
    headers: &HeaderMap,
    method: &str,
    path: &str,
    json: Option<&[u8]>,
) -> Response {
    if !headers.contains_key("x-kroupier-console") {
        return (
            StatusCode::FORBIDDEN,
            "send the header X-Kroupier-Console: 1 (the page does)\n",
        )
            .into_response();
    }
    let addrs: Vec<(String, String)> = shared.with(|b| {
        b.status_addrs()
            .iter()
            .map(|(name, addr)| (name.clone(), addr.clone()))
            .collect()
    });
    if addrs.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "no worker of this group advertises a status API to write through\n",
        )
            .into_response();
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let mut failures = Vec::new();
    for (name, addr) in addrs {
        match http::send(
            &addr,
            method,
            path,
            authorization,
            json,
            Duration::from_secs(5),
        )
        .await
        {
            Ok(answer) => {
                return (
                    StatusCode::from_u16(answer.code).unwrap_or(StatusCode::BAD_GATEWAY),
                    [(header::CONTENT_TYPE, "application/json")],
                    answer.body,
                )
                    .into_response();
            }
            Err(Failure::Refused) => failures.push(format!("{name} at {addr}: refused")),
            Err(Failure::Other(e)) => failures.push(format!("{name} at {addr}: {e}")),
        }
    }
    (
        StatusCode::BAD_GATEWAY,
        format!("no worker answered: {}\n", failures.join("; ")),
    )
        .into_response()
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
