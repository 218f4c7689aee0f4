//! The status HTTP API (axum). Bound to 127.0.0.1 unless configured otherwise.
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /status` | [`WorkerStatus`](super::WorkerStatus) as JSON; during a rebalance the last stable view with `rebalancing: true` |
//! | `GET /metrics` | the metrics below in the OpenMetrics text format (written by `prometheus-client`); content type `application/openmetrics-text` when `Accept` asks for it (Prometheus does), Prometheus' `text/plain; version=0.0.4` otherwise |
//! | `GET /healthz` | 200 while the process serves (liveness) |
//! | `GET /readyz` | 200 once the worker has an assignment, 503 before that and while shutting down |
//! | `POST /tasks/{id}/restart` | 202: restart requested (the way out of `FAILED`); 404 if this worker does not hold the task |
//!
//! Reads never fail because of a rebalance.
//!
//! | Metric | Type | Meaning |
//! |---|---|---|
//! | `kroupier_tasks{state}` | gauge | tasks held by this worker, by state (every state, 0 included) |
//! | `kroupier_task_restarts` | gauge | restarts after failures, summed over the tasks held |
//! | `kroupier_rebalances_total` | counter | rebalances this worker took part in |
//! | `kroupier_rebalancing` | gauge | 1 while a rebalance is in progress |
//! | `kroupier_generation` | gauge | generation of the last completed rebalance (-1 before the first) |
//! | `kroupier_catalogue_mismatch` | gauge | 1 when this worker's catalogue differs from the leader's |
//! | `kroupier_last_failover_timestamp_seconds` | gauge | Unix time of the last takeover (0 = never) |
//! | `kroupier_rebalance_latency_seconds` | histogram | from a rebalance's start to its assignment applied |

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;

use super::board::StatusBoard;
use super::metrics;
use crate::supervisor::Supervisor;

#[derive(Clone)]
struct ApiState {
    board: StatusBoard,
    supervisor: Option<Arc<Supervisor>>,
}

/// The status API's routes. With a supervisor, `POST /tasks/{id}/restart` restarts tasks.
pub fn router(board: StatusBoard, supervisor: Option<Arc<Supervisor>>) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/metrics", get(prometheus))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/tasks/{id}/restart", post(restart))
        .with_state(ApiState { board, supervisor })
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Binds the status address; the error says which address failed.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, std::io::Error> {
    TcpListener::bind(addr).await.map_err(|error| {
        std::io::Error::new(
            error.kind(),
            format!("cannot bind the status API to {addr}: {error}; pick another status address"),
        )
    })
}

async fn status(State(state): State<ApiState>) -> Json<super::WorkerStatus> {
    Json(state.board.snapshot())
}

async fn prometheus(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    (
        [(header::CONTENT_TYPE, metrics::content_type(accept))],
        metrics::render(&state.board),
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<ApiState>) -> Response {
    if state.board.is_ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no assignment yet, or shutting down\n",
        )
            .into_response()
    }
}

async fn restart(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let Some(supervisor) = state.supervisor else {
        return (
            StatusCode::NOT_FOUND,
            "restarts are not enabled on this worker\n",
        )
            .into_response();
    };
    if !supervisor.held().contains(&id) {
        return (
            StatusCode::NOT_FOUND,
            format!(
                "task `{id}` is not held by this worker; ask its owner (see /status of the group)\n"
            ),
        )
            .into_response();
    }
    let task = id.clone();
    tokio::spawn(async move {
        if let Err(error) = supervisor.restart(&task).await {
            tracing::warn!(task = %task, %error, "restart request failed");
        }
    });
    (
        StatusCode::ACCEPTED,
        format!("restart of `{id}` requested\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests;
