//! The status HTTP API (axum): the routes and their handlers. [`super`] lists the routes and the
//! metrics.

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

use super::board::StatusBoard;
use super::metrics;
use super::tls::TlsListener;
use crate::supervisor::Supervisor;

mod checkpoint;
mod error;
mod tasks;

pub(crate) use error::error;

pub(crate) use tasks::TaskWrites;

#[derive(Clone)]
struct ApiState {
    board: StatusBoard,
    supervisor: Option<Arc<Supervisor>>,
    /// The task store, when enabled.
    writes: Option<Arc<dyn TaskWrites>>,
}

/// The status API's routes. With a supervisor, `POST /tasks/{id}/restart` restarts tasks; with
/// a task store, `/tasks` writes to it.
pub(crate) fn router(
    board: StatusBoard,
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
            supervisor,
            writes,
        })
}

/// `router` (the routes above, with fast failover's and the access rule) as served: every
/// error answer in the one shape (see [`error`]), axum's own 404 and 405 included.
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

async fn status(State(state): State<ApiState>) -> Json<super::WorkerStatus> {
    Json(state.board.snapshot())
}

async fn prometheus(State(state): State<ApiState>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        metrics::render(&state.board),
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
