//! The replica's HTTP API, in Schema Registry's shape: reads are served by every replica from
//! the shared store; a write is applied by the writer with its fencing token, and a follower
//! forwards it to the writer and answers with the writer's reply.
//!
//! - `PUT /kv/{key}` with the value as the body: `200 {"key","value","generation","writer"}`;
//!   `409` when the store fenced the write (its writer was replaced); `503` when this replica
//!   cannot write and knows no writer to forward to; `502` when the writer did not answer.
//! - `GET /kv/{key}`: `200` with the entry, `404` if absent.
//! - `GET /role`: `{"id","role","generation","writer_id","writer_url"}`.
//!
//! Keys are 1 to 200 characters of `A-Z a-z 0-9 . _ -`, so they travel in a URL unescaped.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kroupier::protocol::MemberHandle;
use serde_json::{Value, json};

use super::protocol::{Role, SingleWriter};
use super::store::{Store, StoreError};

/// The header a follower adds to a forwarded write: the writer never forwards it again, so a
/// write cannot loop between two replicas that disagree for a moment on who writes.
pub const FORWARDED_BY: &str = "x-forwarded-by";
/// How long a follower waits for the writer's answer.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// What the handlers share: this replica's id, role, membership and store.
#[derive(Debug)]
pub struct Replica {
    /// The stable id, written with every write this replica applies.
    pub id: String,
    /// The protocol, for the current role.
    pub protocol: Arc<SingleWriter>,
    /// The membership, for the fencing token's validity at the moment of a write.
    pub member: MemberHandle,
    /// The shared store.
    pub store: Arc<Store>,
}

/// The API's routes over `replica`.
pub fn router(replica: Arc<Replica>) -> Router {
    Router::new()
        .route("/kv/{key}", get(read).put(write))
        .route("/role", get(role))
        .with_state(replica)
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn valid_key(key: &str) -> bool {
    (1..=200).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn bad_key(key: &str) -> Response {
    reply(
        StatusCode::BAD_REQUEST,
        json!({"error": "bad_key", "detail": format!(
            "key {key:?}: use 1 to 200 characters of A-Z a-z 0-9 . _ -"
        )}),
    )
}

async fn read(State(replica): State<Arc<Replica>>, Path(key): Path<String>) -> Response {
    if !valid_key(&key) {
        return bad_key(&key);
    }
    let store = replica.store.clone();
    match tokio::task::spawn_blocking(move || store.get(&key)).await {
        Ok(Ok(Some(entry))) => reply(StatusCode::OK, json!(entry)),
        Ok(Ok(None)) => reply(StatusCode::NOT_FOUND, json!({"error": "not_found"})),
        Ok(Err(e)) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "store", "detail": e.to_string()}),
        ),
        Err(e) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "store", "detail": e.to_string()}),
        ),
    }
}

async fn write(
    State(replica): State<Arc<Replica>>,
    Path(key): Path<String>,
    headers: HeaderMap,
    value: String,
) -> Response {
    if !valid_key(&key) {
        return bad_key(&key);
    }
    match replica.protocol.role() {
        Some(Role::Leader { token }) => {
            // The token must be valid now: a writer that was paused past its session finds
            // it expired here, before it touches the store.
            if !replica.member.is_token_valid(&token) {
                return reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"error": "not_writer", "detail": format!(
                        "{} may no longer write with generation {}", replica.id, token.generation_id
                    )}),
                );
            }
            let generation = token.generation_id;
            let store = replica.store.clone();
            let writer = replica.id.clone();
            let (k, v) = (key.clone(), value.clone());
            // The store checks the token again, in the write's own transaction: a pause
            // between the check above and this write cannot land a stale write.
            let done =
                tokio::task::spawn_blocking(move || store.put(generation, &writer, &k, &v)).await;
            match done {
                Ok(Ok(())) => reply(
                    StatusCode::OK,
                    json!({"key": key, "value": value, "generation": generation, "writer": replica.id}),
                ),
                Ok(Err(StoreError::Fenced { token, newest })) => reply(
                    StatusCode::CONFLICT,
                    json!({"error": "fenced", "token": token, "newest": newest}),
                ),
                Ok(Err(e)) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"error": "store", "detail": e.to_string()}),
                ),
                Err(e) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"error": "store", "detail": e.to_string()}),
                ),
            }
        }
        Some(Role::Follower {
            writer: Some(writer),
            ..
        }) if !headers.contains_key(FORWARDED_BY) => {
            match tokio::time::timeout(
                FORWARD_TIMEOUT,
                forward(&writer.url, &key, value, &replica.id),
            )
            .await
            {
                Ok(Ok((status, body))) => {
                    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
                }
                Ok(Err(detail)) => reply(
                    StatusCode::BAD_GATEWAY,
                    json!({"error": "forward", "writer": writer.id, "detail": detail}),
                ),
                Err(_) => reply(
                    StatusCode::GATEWAY_TIMEOUT,
                    json!({"error": "forward", "writer": writer.id, "detail": "no answer in time"}),
                ),
            }
        }
        _ => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": "no_writer", "detail": format!("{} does not write now", replica.id)}),
        ),
    }
}

/// Sends the write to the writer at `base_url` and returns its status and body.
async fn forward(
    base_url: &str,
    key: &str,
    value: String,
    from: &str,
) -> Result<(StatusCode, Bytes), String> {
    let uri: hyper::Uri = format!("{}/kv/{key}", base_url.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("writer URL {base_url:?}: {e}"))?;
    let authority = uri
        .authority()
        .ok_or_else(|| format!("writer URL {base_url:?} has no host"))?
        .clone();
    let stream = tokio::net::TcpStream::connect(authority.as_str())
        .await
        .map_err(|e| format!("connect to {authority}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP to {authority}: {e}"))?;
    tokio::spawn(connection);
    let request = Request::put(uri.path())
        .header(header::HOST, authority.as_str())
        .header(FORWARDED_BY, from)
        .body(Full::new(Bytes::from(value)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("PUT {uri}: {e}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("PUT {uri}: {e}"))?
        .to_bytes();
    Ok((status, body))
}

async fn role(State(replica): State<Arc<Replica>>) -> Response {
    let (name, generation, writer) = match replica.protocol.role() {
        Some(Role::Leader { token }) if replica.member.is_token_valid(&token) => (
            "leader",
            Some(token.generation_id),
            Some((replica.id.clone(), replica.protocol.identity().url)),
        ),
        Some(Role::Leader { token }) => ("lost", Some(token.generation_id), None),
        Some(Role::Follower {
            generation_id,
            writer,
        }) => (
            "follower",
            Some(generation_id),
            writer.map(|w| (w.id, w.url)),
        ),
        Some(Role::Lost { generation_id }) => ("lost", generation_id, None),
        None => ("joining", None, None),
    };
    let (writer_id, writer_url) = writer.unzip();
    reply(
        StatusCode::OK,
        json!({"id": replica.id, "role": name, "generation": generation,
               "writer_id": writer_id, "writer_url": writer_url}),
    )
}

#[cfg(test)]
mod tests {
    use super::valid_key;

    #[test]
    fn keys_are_url_safe() {
        assert!(valid_key("schema-1.v_2"));
        assert!(!valid_key(""));
        assert!(!valid_key("a/b"));
        assert!(!valid_key("a b"));
        assert!(!valid_key(&"k".repeat(201)));
    }
}
