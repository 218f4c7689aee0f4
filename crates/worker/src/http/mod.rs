//! The worker's HTTP side: the status API's server (axum) over the status model
//! (`crate::status`), and [`client`], the one HTTP client workers and the console use to reach
//! a status API.
//!
//! The server serves on a free loopback port unless the config's `status.addr` says otherwise
//! ([`WorkerHandle::status_addr`](crate::WorkerHandle::status_addr) tells where). It reads the
//! status board, asks the supervisor for restarts, writes to the task store and the checkpoint
//! topic, and takes fast failover's hints; the worker wires it in `group/start.rs`
//! (`serve_status`). The dependency goes one way: this module uses the model, the model never
//! uses this module.
//!
//! | Route | Answer | Errors |
//! |---|---|---|
//! | `GET /status` | 200: the worker's status as JSON (worker, group, generation, leader, each held task's state, restarts and last error); during a rebalance the last stable view with `rebalancing: true` | 401 with `status.protect_reads` and no token |
//! | `GET /metrics` | 200: the metrics in the OpenMetrics text format, content type `application/openmetrics-text; version=1.0.0; charset=utf-8` whatever `Accept` asks (scrapers pick their parser by it: Prometheus, the OpenTelemetry collector and vmagent read it) | 401 with `status.protect_reads` and no token |
//! | `GET /healthz` | 200 `ok` while the process serves (liveness) | none |
//! | `GET /readyz` | 200 `ready` once the worker has an assignment | 503 `not ready: ...` before the first assignment, while shutting down, and while the member has reached no broker for 3 s (the member's WARN text: the address, the cause, what to check) |
//! | `GET /tasks` | 200: every task of the effective catalogue (code and task store): kind, config, weight, desired state (`running`/`paused`), source (`code`/`store`) and version, this worker's state when it holds it, `UNPLACED` with the reason when no worker can take it; `invalid` lists store records that are not tasks | none |
//! | `GET /tasks/{id}` | 200: that task's entry of `GET /tasks` | 404 for a task not in the catalogue (or a store record that is not a task) |
//! | `PUT /tasks/{id}` | with a task store, body `{"kind", "config", "weight"?, "state"?}`: 200 `{"id", "version"}` | 400 for a body that is not a task, or a config its kind refuses on a worker that registers the kind (serde's message, and how to send one it accepts); 413 over the store's record limit (`limit_bytes`); 404 without a task store; 403, 503 from the store |
//! | `DELETE /tasks/{id}` | with a task store: 200 `{"id", "version"}` | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `GET /tasks/{id}/checkpoint` | with a task store: 200 `{"id", "generation", "offset", "member", "state"}`, the task's newest checkpoint (read to the topic's end) | 404 when it has none (or it was reset), or without a task store; 503 from the topic |
//! | `PUT /tasks/{id}/checkpoint` | with a task store, body any JSON value: 200 `{"id", "checkpoint": "set", "offset"}`; the task's next start reads that value (docs/tasks.md, *Checkpoint administration*) | 409 unless the task is paused in the store and not running on this worker (the message says why); 404 for an unknown task, or without a task store; 400 for a body that is not JSON; 413 over the checkpoint limit; 503 from the topic |
//! | `DELETE /tasks/{id}/checkpoint` | with a task store: 200 `{"id", "checkpoint": "reset", "offset"}`; the task's next start reads no checkpoint | 409 unless the task is paused and not running on this worker; 404 for an unknown task, or without a task store; 503 from the topic |
//! | `POST /tasks/{id}/pause` | with a task store: 200 `{"id", "version"}`; the owner stops the task (`PAUSED`) without a rebalance | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `POST /tasks/{id}/resume` | with a task store: 200 `{"id", "version"}`; the owner starts the task again without a rebalance | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `POST /tasks/{id}/restart` | with a task store and a stored task: 200 `{"id", "version"}`, the owner restarts the task wherever it runs; otherwise 202 `{"id", "restart": "requested"}`: restarted here (the way out of `FAILED`) | 404 when this worker does not hold the task (ask its owner), or restarts are not enabled |
//! | `GET /watch` | with fast failover: 200 and a body that never ends while the process serves (a peer's link; its end is the cue to check whether this process is gone) | none |
//! | `POST /rebalance` | with fast failover, `?generation=G&from=HOST:PORT` (both optional) and no body: 202 `{"rebalance": ...}`, and this worker rejoins at once if it is stable in generation `G` or older | 400 for a `G` that is not an integer, or for a body |
//!
//! Every error answer, on every route and for routes and methods that do not exist, is JSON in
//! one shape: `{"error": "...", "status": N}`, where `error` says what went wrong and what to
//! do, with `routes` for an unknown route (404), `allowed` for a method a route does not take
//! (405, and `Allow`), `limit_bytes` for a body over the limit (413). Reads never fail because
//! of a rebalance, and neither do task store writes: they go to the store's Kafka topic, not
//! through the group (503 when the store cannot be reached, 403 when the principal may not
//! write it).
//!
//! Access: with a bearer token set (`status.token`), writes need `Authorization: Bearer <token>`
//! and get 401 without it; `/status` and `/metrics` need it too with `status.protect_reads`;
//! `/healthz`, `/readyz` and `/watch` stay open (the rule is on
//! [`StatusConfig`](crate::config::StatusConfig)). Given a certificate and key
//! (`status.tls_certificate`, `status.tls_key`) the API serves HTTPS only (rustls).
//!
//! The metrics `GET /metrics` serves are listed in `crate::status` (`status/mod.rs`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::runtime::{Runtime, SharedDesired};
use crate::status::{StatusBoard, metrics};
use crate::supervisor::Supervisor;
use tls::TlsListener;

pub(crate) mod access;
mod checkpoint;
pub mod client;
mod error;
pub(crate) mod failover;
mod tasks;
pub(crate) mod tls;

pub(crate) use error::error;

pub(crate) use tasks::TaskWrites;

#[derive(Clone)]
struct ApiState {
    board: StatusBoard,
    /// The effective catalogue `/tasks` lists.
    desired: SharedDesired,
    supervisor: Option<Arc<Supervisor>>,
    /// The task store, when enabled.
    writes: Option<Arc<dyn TaskWrites>>,
}

/// The status API over `runtime`'s board, with restart requests enabled and, with a task
/// store, `/tasks` writes (the routes: [`self`]).
pub(crate) fn routes(runtime: &Runtime, writes: Option<Arc<dyn TaskWrites>>) -> Router {
    router(
        runtime.board().clone(),
        runtime.shared_desired(),
        Some(runtime.supervisor().clone()),
        writes,
    )
}

/// The status API's routes. With a supervisor, `POST /tasks/{id}/restart` restarts tasks; with
/// a task store, `/tasks` writes to it.
pub(crate) fn router(
    board: StatusBoard,
    desired: SharedDesired,
    supervisor: Option<Arc<Supervisor>>,
    writes: Option<Arc<dyn TaskWrites>>,
) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/metrics", get(prometheus))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/tasks", get(tasks::list))
        .route(
            "/tasks/{id}",
            get(tasks::one)
                .put(tasks::put)
                .delete(tasks::delete)
                .layer(DefaultBodyLimit::max(tasks::MAX_BODY_BYTES)),
        )
        .route(
            "/tasks/{id}/checkpoint",
            get(checkpoint::get)
                .put(checkpoint::put)
                .delete(checkpoint::delete)
                .layer(DefaultBodyLimit::max(checkpoint::MAX_BODY_BYTES)),
        )
        .route("/tasks/{id}/pause", post(tasks::pause))
        .route("/tasks/{id}/resume", post(tasks::resume))
        .route("/tasks/{id}/restart", post(restart))
        .with_state(ApiState {
            board,
            desired,
            supervisor,
            writes,
        })
}

/// `router` (the routes above, with fast failover's and the access rule) as served: every
/// error answer in the one shape (see [`error()`]), axum's own 404 and 405 included.
pub(crate) fn finish(router: Router) -> Router {
    // Around the whole router, not each route: a 405's `Allow` header is set as the answer
    // leaves the route, and the shape names the methods from it.
    Router::new()
        .fallback_service(router)
        .layer(axum::middleware::from_fn(error::one_shape))
}

/// Serves `router` on `listener` until `shutdown` completes: HTTPS with `tls`, HTTP without.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match tls {
        Some(acceptor) => {
            axum::serve(TlsListener::new(listener, acceptor), router)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}

/// Binds the status address; the error says which address failed.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener, std::io::Error> {
    TcpListener::bind(addr).await.map_err(|error| {
        std::io::Error::new(
            error.kind(),
            format!("cannot bind the status API to {addr}: {error}; pick another status address"),
        )
    })
}

async fn status(State(state): State<ApiState>) -> Json<crate::status::WorkerStatus> {
    Json(state.board.snapshot())
}

async fn prometheus(State(state): State<ApiState>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.board.render_metrics(),
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<ApiState>) -> Response {
    match state.board.not_ready() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(why) => error(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}")),
    }
}

async fn restart(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    // With a task store, a stored task's restart goes through the store: its owner restarts
    // it wherever it runs.
    if let Some(answer) = tasks::restart_in_store(&state, &id).await {
        return answer;
    }
    let Some(supervisor) = state.supervisor else {
        return error(
            StatusCode::NOT_FOUND,
            "restarts are not enabled on this worker",
        );
    };
    if !supervisor.held().contains(&id) {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "task `{id}` is not held by this worker; ask its owner (GET /status on each \
                 worker, or `kroupier describe`, shows who holds it)"
            ),
        );
    }
    let task = id.clone();
    tokio::spawn(async move {
        if let Err(error) = supervisor.restart(&task).await {
            tracing::warn!(task = %task, %error, "restart request failed");
        }
    });
    (
        StatusCode::ACCEPTED,
        Json(serde_json::json!({"id": id, "restart": "requested"})),
    )
        .into_response()
}

#[cfg(test)]
mod errors_tests;
#[cfg(test)]
mod tests;
