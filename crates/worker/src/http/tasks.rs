//! `/tasks`: every task of the group's effective catalogue as this worker knows it, and writes
//! to the task store.
//!
//! Writes go to the store's Kafka topic, never through the group, so they are answered during a
//! rebalance too; every worker follows the store and acts on the change (its owner at once,
//! the leader with a rebalance when placement changed). Errors come as
//! `{"error": "...", "status": N}`: 400 for a task id that breaks the id rule
//! ([`validate_id`]), a body that is not a task (serde's message) or a
//! config its kind refuses on a worker that registers the kind, 404 for an unknown task (or
//! no task store on this worker), 413 for a record over the store's limit, 503 when the store
//! cannot be reached.

use std::future::Future;
use std::pin::Pin;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ApiState;
use super::error::{error, error_with};
use kroupier_coordinator::log::LogErrorKind;

use crate::TaskSpec;
use crate::runtime::desired::{Desired, Source};
use crate::store::{
    DesiredState, MAX_VALUE_BYTES, StoreError, StoreErrorKind, TaskRecord, TaskStore, validate_id,
};
use crate::task::TaskConfigDetail;

/// The largest request body `PUT /tasks/{id}` reads: the store's record limit plus room for
/// the JSON around the config (the store refuses an oversized record with 413 itself).
pub(crate) const MAX_BODY_BYTES: usize = MAX_VALUE_BYTES + 64 * 1024;

/// A boxed future of a store write.
pub(crate) type WriteFuture = Pin<Box<dyn Future<Output = Result<i64, WriteError>> + Send>>;

/// Writes to the task store, as the status API needs them (implemented by the store's client;
/// a fake in tests).
pub(crate) trait TaskWrites: Send + Sync + 'static {
    /// The store's topic.
    fn topic(&self) -> String;
    /// Puts a task; returns its new version.
    fn put(&self, id: String, record: TaskRecord) -> WriteFuture;
    /// Deletes a task.
    fn delete(&self, id: String) -> WriteFuture;
    /// Sets a task's desired state.
    fn set_state(&self, id: String, state: DesiredState) -> WriteFuture;
    /// Asks the task's owner to restart it.
    fn restart(&self, id: String) -> WriteFuture;
}

/// Why a store write failed, as the status API answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// 404: no such task.
    NotFound(String),
    /// 400: the id or record breaks a rule.
    Invalid(String),
    /// 413: the record is over the limit.
    TooLarge(String),
    /// 403: the principal may not write the topic.
    Forbidden(String),
    /// 503: the store could not be reached.
    Unavailable(String),
}

impl WriteError {
    fn status(&self) -> StatusCode {
        match self {
            WriteError::NotFound(_) => StatusCode::NOT_FOUND,
            WriteError::Invalid(_) => StatusCode::BAD_REQUEST,
            WriteError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            WriteError::Forbidden(_) => StatusCode::FORBIDDEN,
            WriteError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn message(&self) -> &str {
        match self {
            WriteError::NotFound(m)
            | WriteError::Invalid(m)
            | WriteError::TooLarge(m)
            | WriteError::Forbidden(m)
            | WriteError::Unavailable(m) => m,
        }
    }
}

impl From<StoreError> for WriteError {
    fn from(error: StoreError) -> Self {
        let message = error.to_string();
        let log = error.log().map(|e| e.kind());
        match error.kind() {
            StoreErrorKind::NotFound => WriteError::NotFound(message),
            StoreErrorKind::TooLarge => WriteError::TooLarge(message),
            StoreErrorKind::Log if log == Some(LogErrorKind::RecordTooLarge) => {
                WriteError::TooLarge(message)
            }
            StoreErrorKind::Log if log == Some(LogErrorKind::NotAuthorized) => {
                WriteError::Forbidden(message)
            }
            StoreErrorKind::InvalidId
            | StoreErrorKind::InvalidRecord
            | StoreErrorKind::Unreadable
            | StoreErrorKind::InvalidTopic => WriteError::Invalid(message),
            _ => WriteError::Unavailable(message),
        }
    }
}

impl TaskWrites for TaskStore {
    fn topic(&self) -> String {
        TaskStore::topic(self).to_owned()
    }

    fn put(&self, id: String, record: TaskRecord) -> WriteFuture {
        let store = self.clone();
        Box::pin(async move { Ok(TaskStore::put(&store, &id, record).await?) })
    }

    fn delete(&self, id: String) -> WriteFuture {
        let store = self.clone();
        Box::pin(async move { Ok(TaskStore::delete(&store, &id).await?) })
    }

    fn set_state(&self, id: String, state: DesiredState) -> WriteFuture {
        let store = self.clone();
        Box::pin(async move { Ok(TaskStore::set_state(&store, &id, state).await?) })
    }

    fn restart(&self, id: String) -> WriteFuture {
        let store = self.clone();
        Box::pin(async move { Ok(TaskStore::restart(&store, &id).await?) })
    }
}

/// The body of `PUT /tasks/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PutBody {
    kind: String,
    /// Required, as `kroupier tasks put --config` is: a missing config would be stored as
    /// `null`, which no kind with settings can read (`{}` for a kind without any).
    config: serde_json::Value,
    #[serde(default)]
    weight: Option<u32>,
    #[serde(default)]
    state: Option<DesiredState>,
}

/// One task in `GET /tasks`.
#[derive(Debug, Serialize)]
struct TaskEntry {
    id: String,
    kind: String,
    config: serde_json::Value,
    weight: u32,
    /// `running` or `paused`.
    desired: DesiredState,
    /// `code` or `store`.
    source: &'static str,
    /// The offset of the task's latest store record.
    version: Option<i64>,
    /// This worker's state of the task when it holds it (`RUNNING`, `PAUSED`, `FAILED`, ...),
    /// `UNPLACED` when the last assignment said no worker can take it, otherwise `null` (it
    /// runs elsewhere, or waits for a rebalance).
    state: Option<String>,
    /// This worker's id when it holds the task.
    owner: Option<String>,
    /// Why it is unplaced, or the last error on this worker.
    reason: Option<String>,
    /// The generator that declared it, `null` for a task no generator declared.
    generated_by: Option<String>,
}

/// A store record that is not a task record.
#[derive(Debug, Serialize)]
struct InvalidEntry {
    id: String,
    reason: String,
}

/// The body of `GET /tasks`.
#[derive(Debug, Serialize)]
struct TasksBody {
    worker_id: String,
    /// The store's topic, `null` without a task store.
    store_topic: Option<String>,
    /// The store offset this worker's view has read up to.
    store_offset: Option<i64>,
    tasks: Vec<TaskEntry>,
    invalid: Vec<InvalidEntry>,
}

/// The entry of `spec`, a task of the effective catalogue, as `GET /tasks` and
/// `GET /tasks/{id}` show it.
fn entry(state: &ApiState, desired: &Desired, spec: &TaskSpec) -> TaskEntry {
    let unplaced = state.board.unplaced();
    let worker_id = state.board.worker_id();
    let entry = desired.entries.get(&spec.id);
    let local = state.board.tasks().get(&spec.id);
    let (task_state, owner, reason) = match (&local, unplaced.get(&spec.id)) {
        (Some(status), _) => (
            Some(status.state.as_str().to_owned()),
            Some(worker_id.to_owned()),
            status.last_error.clone(),
        ),
        (None, Some(why)) => (Some("UNPLACED".to_owned()), None, Some(why.clone())),
        (None, None) => (None, None, None),
    };
    TaskEntry {
        id: spec.id.clone(),
        kind: spec.kind.clone(),
        config: spec.config.clone(),
        weight: spec.weight,
        desired: entry.map_or(DesiredState::Running, |e| e.state),
        source: match entry.map(|e| e.source) {
            Some(Source::Store { .. }) => "store",
            _ => "code",
        },
        version: match entry.map(|e| e.source) {
            Some(Source::Store { version }) => Some(version),
            _ => None,
        },
        state: task_state,
        owner,
        reason,
        generated_by: desired.parent(&spec.id).map(str::to_owned),
    }
}

pub(super) async fn list(State(state): State<ApiState>) -> Json<serde_json::Value> {
    let desired = state.desired.get();
    let tasks = desired
        .catalogue
        .iter()
        .map(|spec| entry(&state, &desired, spec))
        .collect();
    let invalid = desired
        .invalid
        .iter()
        .map(|(id, reason)| InvalidEntry {
            id: id.clone(),
            reason: reason.clone(),
        })
        .collect();
    let body = TasksBody {
        worker_id: state.board.worker_id().to_owned(),
        store_topic: state.writes.as_ref().map(|w| w.topic()),
        store_offset: desired.offset,
        tasks,
        invalid,
    };
    Json(serde_json::to_value(body).unwrap_or_default())
}

/// `GET /tasks/{id}`: the task's entry of `GET /tasks`, or 404.
pub(super) async fn one(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let desired = state.desired.get();
    match desired.catalogue.iter().find(|spec| spec.id == id) {
        Some(spec) => Json(entry(&state, &desired, spec)).into_response(),
        None => match desired.invalid.get(&id) {
            Some(reason) => error(
                StatusCode::NOT_FOUND,
                format!(
                    "task `{id}` has a store record that is not a task ({reason}); put it \
                     again with PUT /tasks/{{id}}"
                ),
            ),
            None => error(
                StatusCode::NOT_FOUND,
                format!(
                    "no task `{id}` in this worker's catalogue (code and task store); GET \
                     /tasks lists every task"
                ),
            ),
        },
    }
}

fn no_store() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "this worker has no task store; enable it with tasks.store.enabled=true",
    )
}

async fn written(id: String, write: WriteFuture) -> Response {
    match write.await {
        Ok(version) => {
            (StatusCode::OK, Json(json!({"id": id, "version": version}))).into_response()
        }
        Err(WriteError::TooLarge(message)) => too_large(message),
        Err(e) => error(e.status(), e.message()),
    }
}

/// 413, naming the limit.
fn too_large(message: impl Into<String>) -> Response {
    let mut limit = serde_json::Map::new();
    limit.insert("limit_bytes".to_owned(), json!(MAX_VALUE_BYTES));
    error_with(StatusCode::PAYLOAD_TOO_LARGE, message, limit)
}

pub(super) async fn put(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Some(writes) = state.writes.clone() else {
        return no_store();
    };
    if let Err(e) = validate_id(&id) {
        return error(StatusCode::BAD_REQUEST, e.to_string());
    }
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return too_large(format!(
                "the body is over {MAX_BODY_BYTES} bytes: a task's record (its config included) \
                 may take at most {MAX_VALUE_BYTES} bytes; keep large data outside the task \
                 store and put a reference to it in the config"
            ));
        }
        Err(rejection) => {
            return error(
                rejection.status(),
                format!("cannot read the request body: {}", rejection.body_text()),
            );
        }
    };
    let body: PutBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "the body is not a task ({{\"kind\", \"config\", \"weight\"?, \"state\"?}}; \
                     \"config\": {{}} for a kind without settings): {e}"
                ),
            );
        }
    };
    let record = TaskRecord {
        kind: body.kind,
        config: body.config,
        state: body.state.unwrap_or_default(),
        weight: body.weight.unwrap_or(1),
        restart: 0,
        generated_by: None,
    };
    // A worker that registers the kind checks the config now: a bad one is refused here
    // rather than FAILED on its owner.
    if let Some(supervisor) = &state.supervisor {
        let registry = supervisor.registry();
        if registry.contains(&record.kind)
            && let Err(e) = registry.check(&record.to_spec(&id))
        {
            let message = match e.0 {
                TaskConfigDetail::InvalidConfig { kind, message, .. } => format!(
                    "task `{id}`: kind `{kind}` refuses this config: {message}; send a \
                     `config` that kind `{kind}` accepts in the body of PUT /tasks/{{id}}"
                ),
                other => other.to_string(),
            };
            return error(StatusCode::BAD_REQUEST, message);
        }
    }
    written(id.clone(), writes.put(id, record)).await
}

pub(super) async fn delete(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let Some(writes) = state.writes.clone() else {
        return no_store();
    };
    written(id.clone(), writes.delete(id)).await
}

pub(super) async fn pause(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let Some(writes) = state.writes.clone() else {
        return no_store();
    };
    written(id.clone(), writes.set_state(id, DesiredState::Paused)).await
}

pub(super) async fn resume(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let Some(writes) = state.writes.clone() else {
        return no_store();
    };
    written(id.clone(), writes.set_state(id, DesiredState::Running)).await
}

/// `POST /tasks/{id}/restart` with a task store: the store's restart counter, so the owner
/// restarts the task wherever it runs. `None` without a store (the local restart applies).
pub(super) async fn restart_in_store(state: &ApiState, id: &str) -> Option<Response> {
    let writes = state.writes.clone()?;
    // A task defined in code alone has no record to count restarts in: restart it here.
    let desired = state.desired.get();
    let code_only = matches!(desired.entry(id).map(|e| e.source), Some(Source::Code));
    if code_only {
        return None;
    }
    Some(written(id.to_owned(), writes.restart(id.to_owned())).await)
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
