//! The routes of fast failover (`crate::group::failover`): `GET /watch`, the link a peer keeps
//! open for as long as this process lives, and `POST /rebalance`, a peer's "rejoin now".
//!
//! This module owns the `/watch` body's format ([`PROCESS_LINE`], [`STOPPED`]); the link that
//! reads it (`group/failover/link.rs`) takes both from here. What a hint does is fast
//! failover's: the routes hand it to [`Hints`], so this module never reaches into the group.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use futures::StreamExt;

use super::error::error;

/// The last line of a `/watch` body when the worker stops in order (a crash ends it without).
pub(crate) use kroupier_coordinator::failover::link::STOPPED;

/// The start of a `/watch` body's first line, followed by the process identity and `\n`.
pub(crate) const PROCESS_LINE: &str = "kroupier-process: ";

/// Where a peer's "rejoin now" goes (fast failover's handle).
pub(crate) trait Hints: Send + Sync + 'static {
    /// A peer (whose status API is `from`) asked this worker to rejoin, if it is stable in
    /// `generation` or older.
    fn hinted(&self, generation: Option<i32>, from: Option<String>);
}

#[derive(Clone)]
struct FailoverState {
    hints: Arc<dyn Hints>,
    /// This process's identity, named by every `/watch` body.
    process: Arc<str>,
    stop: CancellationToken,
}

/// The routes: hints go to `hints`, `/watch` names `process`; `stop` ends every open `/watch`
/// (the status API is stopping).
pub(crate) fn router(hints: Arc<dyn Hints>, process: &str, stop: CancellationToken) -> Router {
    Router::new()
        .route("/watch", get(watch))
        .route("/rebalance", post(rebalance))
        .with_state(FailoverState {
            hints,
            process: process.into(),
            stop,
        })
}

/// A response whose body never ends while this process serves: its end is the peer's cue to
/// check whether this process is gone. Its first line names this process
/// ([`PROCESS_LINE`] and the identity this worker advertises), so that the peer knows its
/// link reached this very process and not whatever listens at that address in its own
/// network. When the worker stops in order, the body ends with [`STOPPED`]; a crash ends it
/// without.
async fn watch(State(state): State<FailoverState>) -> Response {
    let stop = state.stop.cancelled_owned();
    let first = format!("{PROCESS_LINE}{}\n", state.process);
    let last = futures::stream::once(async move {
        stop.await;
        Ok::<_, Infallible>(Bytes::from_static(STOPPED.as_bytes()))
    });
    let body =
        futures::stream::once(async move { Ok::<_, Infallible>(Bytes::from(first)) }).chain(last);
    (
        [(header::CONTENT_TYPE, "text/plain")],
        Body::from_stream(body),
    )
        .into_response()
}

/// A peer (`&from=ADDR`) started a rebalance from `?generation=G` (none: a joining peer):
/// rejoin at once if still stable in `G` or older. The hint is all in the query: a request
/// with a body is not a peer's, and is refused.
async fn rebalance(
    State(state): State<FailoverState>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if !body.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "POST /rebalance takes no body: its hint is the query \
             `?generation=G&from=HOST:PORT` (both optional)",
        );
    }
    let (generation, from) = match parse_hint(query.as_deref()) {
        Ok(hint) => hint,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    state.hints.hinted(generation, from);
    (
        StatusCode::ACCEPTED,
        Json(serde_json::json!({"rebalance": "rejoining if still in that generation or older"})),
    )
        .into_response()
}

/// `generation` (an integer, optional) and `from` (the sender's status API, optional) of a
/// hint's query string.
fn parse_hint(query: Option<&str>) -> Result<(Option<i32>, Option<String>), String> {
    let mut generation = None;
    let mut from = None;
    for pair in query.unwrap_or_default().split('&') {
        match pair.split_once('=') {
            Some(("generation", value)) => {
                generation = Some(value.parse().map_err(|_| {
                    format!("`generation` must be a generation id (an integer), not `{value}`")
                })?);
            }
            Some(("from", value)) if !value.is_empty() => from = Some(value.to_owned()),
            _ => {}
        }
    }
    Ok((generation, from))
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use futures::StreamExt;
    use tower::ServiceExt;

    use super::*;
    use crate::group::failover::FastFailover;

    /// The routes as a worker serves them, over a fast failover that is off.
    fn router(stop: CancellationToken) -> Router {
        super::router(
            Arc::new(FastFailover::off()),
            crate::group::own_process_id(),
            stop,
        )
    }

    #[test]
    fn the_generation_and_sender_come_from_the_query() {
        assert_eq!(parse_hint(None), Ok((None, None)));
        assert_eq!(parse_hint(Some("generation=7")), Ok((Some(7), None)));
        assert_eq!(
            parse_hint(Some("x=1&generation=-1&from=127.0.0.1:9")),
            Ok((Some(-1), Some("127.0.0.1:9".to_owned())))
        );
        assert!(parse_hint(Some("generation=seven")).is_err());
    }

    #[tokio::test]
    async fn a_hint_is_accepted_and_a_bad_one_refused() {
        let stop = CancellationToken::new();
        let app = router(stop);
        let post = |uri: &str| Request::post(uri.to_owned()).body(Body::empty()).unwrap();
        let accepted = app
            .clone()
            .oneshot(post("/rebalance?generation=3"))
            .await
            .unwrap();
        assert_eq!(accepted.status(), StatusCode::ACCEPTED);
        let refused = app.oneshot(post("/rebalance?generation=x")).await.unwrap();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn a_watch_lasts_until_the_api_stops() {
        let stop = CancellationToken::new();
        let app = router(stop.clone());
        let response = app
            .oneshot(Request::get("/watch").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = response.into_body().into_data_stream();
        let first = tokio::time::timeout(std::time::Duration::from_secs(1), body.next()).await;
        let first = first.expect("a first line").expect("some").expect("bytes");
        let expected = format!("{PROCESS_LINE}{}\n", crate::group::own_process_id());
        assert_eq!(first, expected.as_bytes(), "it names this process first");
        let open = tokio::time::timeout(std::time::Duration::from_millis(100), body.next()).await;
        assert!(open.is_err(), "the body stays open");
        stop.cancel();
        let last = tokio::time::timeout(std::time::Duration::from_secs(1), body.next()).await;
        let last = last.expect("a last chunk").expect("some").expect("bytes");
        assert_eq!(last, STOPPED.as_bytes(), "an orderly stop says so");
        let ended = tokio::time::timeout(std::time::Duration::from_secs(1), body.next()).await;
        assert!(matches!(ended, Ok(None)), "then the body ends");
    }
}
