//! Who may use the status API: the bearer-token rule of
//! [`StatusConfig`](crate::config::StatusConfig), as an axum middleware.
//!
//! With a token set, a write (any method but `GET` and `HEAD`) needs `Authorization: Bearer
//! <token>`; so does a read of `/status` or `/metrics` when reads are protected. `/healthz` and
//! `/readyz` stay open. A request without the right token gets 401 with `WWW-Authenticate:
//! Bearer`; the token is compared in constant time and never logged.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use kroupier_coordinator::connection::Secret;

/// The access rule of one status API.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    /// The token; `None` leaves every route open.
    pub(crate) token: Option<Secret>,
    /// Whether `/status` and `/metrics` need the token too.
    pub(crate) protect_reads: bool,
}

impl Access {
    /// `router` with the rule applied to every route (nothing changes without a token).
    pub(crate) fn protect(self, router: Router) -> Router {
        if self.token.is_none() {
            return router;
        }
        router.layer(from_fn_with_state(Arc::new(self), check))
    }

    /// Whether a request of `method` on `path` must carry the token.
    fn needs_token(&self, method: &Method, path: &str) -> bool {
        let read = *method == Method::GET || *method == Method::HEAD;
        let probe = matches!(path, "/healthz" | "/readyz" | "/watch");
        self.token.is_some() && (!read || (self.protect_reads && !probe))
    }
}

async fn check(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if !access.needs_token(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let expected = access.token.as_ref().map(Secret::expose);
    match (given, expected) {
        (Some(given), Some(expected)) if same(given.as_bytes(), expected.as_bytes()) => {
            next.run(request).await
        }
        (given, _) => {
            tracing::warn!(
                method = %request.method(),
                path = %request.uri().path(),
                token_given = given.is_some(),
                "status API request refused: no valid bearer token"
            );
            let mut answer = super::error::error(
                StatusCode::UNAUTHORIZED,
                "this request needs `Authorization: Bearer <token>` with the worker's \
                 kroupier.status.token",
            );
            answer.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"kroupier\""),
            );
            answer
        }
    }
}

/// Equal bytes, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(protect_reads: bool) -> Access {
        Access {
            token: Some(Secret::new("t0ken")),
            protect_reads,
        }
    }

    #[test]
    fn writes_need_the_token_reads_only_when_protected_probes_never() {
        let open = access(false);
        assert!(open.needs_token(&Method::POST, "/tasks/a/restart"));
        assert!(open.needs_token(&Method::PUT, "/status"));
        assert!(open.needs_token(&Method::DELETE, "/tasks/a"));
        assert!(!open.needs_token(&Method::GET, "/status"));
        assert!(!open.needs_token(&Method::HEAD, "/metrics"));
        let closed = access(true);
        assert!(closed.needs_token(&Method::GET, "/status"));
        assert!(closed.needs_token(&Method::GET, "/metrics"));
        assert!(!closed.needs_token(&Method::GET, "/healthz"));
        assert!(!closed.needs_token(&Method::GET, "/readyz"));
        let none = Access {
            token: None,
            protect_reads: true,
        };
        assert!(!none.needs_token(&Method::POST, "/tasks/a/restart"));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"t0ken", b"t0ken"));
        assert!(!same(b"t0ken", b"t0kem"));
        assert!(!same(b"t0ken", b"t0ke"));
        assert!(!same(b"", b"t"));
    }

    #[test]
    fn debug_hides_the_token() {
        let shown = format!("{:?}", access(false));
        assert!(!shown.contains("t0ken"), "{shown}");
    }
}
