//! `/tasks/{id}/checkpoint`: read a task's newest checkpoint, and set or reset it while the
//! task is paused (the status API's `kroupier tasks checkpoint get|set|reset`).
//!
//! A set or reset is refused with 409 unless the task's desired state in this worker's view of
//! the task store is paused and this worker does not run it (starting, running, restarting or
//! stopping); on a worker that holds the task, the write goes under at least the generation in
//! which it was granted the task. Why that keeps checkpoints fenced:
//! [`Checkpoints::set`](crate::checkpoint::Checkpoints::set).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

use super::ApiState;
use super::error::error;
use crate::checkpoint::{CheckpointError, CheckpointErrorKind, Checkpoints, MAX_CHECKPOINT_BYTES};
use crate::store::DesiredState;

/// The largest body `PUT /tasks/{id}/checkpoint` reads.
pub(crate) const MAX_BODY_BYTES: usize = MAX_CHECKPOINT_BYTES + 1024;

/// The worker's checkpoint client, or the 404 that says there is none.
fn checkpoints(state: &ApiState) -> Result<Arc<Checkpoints>, Box<Response>> {
    state
        .supervisor
        .as_ref()
        .and_then(|s| s.checkpoints())
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::NOT_FOUND,
                "this worker has no checkpoint topic; enable the task store with \
                 tasks.store.enabled=true",
            ))
        })
}

fn failed(id: &str, e: &CheckpointError) -> Response {
    let status = match e.kind() {
        CheckpointErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        CheckpointErrorKind::Serde => StatusCode::BAD_REQUEST,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    error(status, format!("task `{id}`: {e}"))
}

/// `GET /tasks/{id}/checkpoint`.
pub(super) async fn get(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let checkpoints = match checkpoints(&state) {
        Ok(c) => c,
        Err(answer) => return *answer,
    };
    match checkpoints.newest_record(&id).await {
        Ok(Some(c)) => Json(json!({
            "id": id,
            "generation": c.generation,
            "offset": c.offset,
            "member": c.member,
            "state": *c.state,
        }))
        .into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("task `{id}` has no checkpoint (none saved, or it was reset)"),
        ),
        Err(e) => failed(&id, &e),
    }
}

/// What a checkpoint write (`PUT`, `DELETE`) needs: the checkpoint client, and the generation
/// of the paused task's last owner that the write fences — or the answer that refuses it.
fn write_target(
    state: &ApiState,
    id: &str,
) -> Result<(Arc<Checkpoints>, Option<i32>), Box<Response>> {
    Ok((checkpoints(state)?, writable(state, id)?))
}

/// Why a set or reset of `id` is refused now (409), or the generation the task's owner was
/// granted it in, when this worker holds it.
fn writable(state: &ApiState, id: &str) -> Result<Option<i32>, Box<Response>> {
    let desired = state.desired.get();
    let Some(entry) = desired.entry(id) else {
        return Err(Box::new(error(
            StatusCode::NOT_FOUND,
            format!("no task `{id}` in this worker's catalogue; GET /tasks lists every task"),
        )));
    };
    if entry.state != DesiredState::Paused {
        return Err(Box::new(error(
            StatusCode::CONFLICT,
            format!(
                "task `{id}` is not paused (its desired state is {}): its owner would overwrite \
                 the checkpoint; pause it first (POST /tasks/{{id}}/pause), wait until it is \
                 PAUSED, then set or reset its checkpoint",
                entry.state
            ),
        )));
    }
    if let Some(status) = state.board.tasks().get(id)
        && status.state.is_active()
    {
        return Err(Box::new(error(
            StatusCode::CONFLICT,
            format!(
                "task `{id}` is paused in the store but still {} on this worker; retry once it \
                 is PAUSED",
                status.state.as_str()
            ),
        )));
    }
    Ok(state.supervisor.as_ref().and_then(|s| {
        s.held_with_generations()
            .into_iter()
            .find(|(held, _)| held == id)
            .map(|(_, generation)| generation)
    }))
}

/// `PUT /tasks/{id}/checkpoint`: the body, any JSON value, becomes the checkpoint.
pub(super) async fn put(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (checkpoints, owner) = match write_target(&state, &id) {
        Ok(target) => target,
        Err(answer) => return *answer,
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return error(
                rejection.status(),
                format!(
                    "cannot read the request body (a checkpoint takes at most \
                     {MAX_CHECKPOINT_BYTES} bytes): {}",
                    rejection.body_text()
                ),
            );
        }
    };
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is not JSON (send the checkpoint's value as JSON): {e}"),
            );
        }
    };
    match checkpoints.set(&id, value, owner).await {
        Ok(offset) => {
            Json(json!({"id": id, "checkpoint": "set", "offset": offset})).into_response()
        }
        Err(e) => failed(&id, &e),
    }
}

/// `DELETE /tasks/{id}/checkpoint`: the task's next start reads no checkpoint.
pub(super) async fn delete(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let (checkpoints, owner) = match write_target(&state, &id) {
        Ok(target) => target,
        Err(answer) => return *answer,
    };
    match checkpoints.reset(&id, owner).await {
        Ok(offset) => {
            Json(json!({"id": id, "checkpoint": "reset", "offset": offset})).into_response()
        }
        Err(e) => failed(&id, &e),
    }
}
