//! The one shape of every error answer of the status API (and of the console's, which uses
//! [`error`] too): a JSON object `{"error": "...", "status": N}` whose `error` says what went
//! wrong and what to do, with more fields where they help (`limit_bytes` for 413, `allowed`
//! for 405, `routes` for 404 on an unknown route).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

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
