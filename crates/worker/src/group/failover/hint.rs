//! "Rejoin now": the hint one worker sends its peers when it starts a rebalance (a peer died,
//! it joins or leaves, a cooperative follow-up round), so that they rejoin at once instead of
//! at their next heartbeat. `POST /rebalance?generation=G&from=ADDR` on the peer's status API
//! (`ADDR`: the sender's own status API), with the status bearer token when one is set
//! (workers of a group share it). `from` lets a member that does not know the sender yet (a
//! worker that just joined) include it in the hints it sends itself, before DescribeGroups
//! can show the newcomer's metadata.
//!
//! A hint is only ever a shortcut: a peer that misses it learns of the rebalance from its next
//! heartbeat, as without fast failover. A peer acts on it only while it is stable in
//! generation `G` or older, so a late hint never starts a rebalance of its own.

use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, Request, StatusCode, header};
use kroupier_coordinator::connection::Secret;

use crate::http::client;

/// How long one hint may take, all told.
const HINT_TIMEOUT: Duration = Duration::from_secs(1);

/// The hint's request (no body): `POST /rebalance` with its query, and the token.
fn request(
    addr: &str,
    generation: Option<i32>,
    from: &str,
    token: Option<&Secret>,
) -> Result<Request<Bytes>, hyper::http::Error> {
    let query = match generation {
        Some(g) => format!("?generation={g}&from={from}"),
        None => format!("?from={from}"),
    };
    let mut request = client::request(addr, Method::POST, &format!("/rebalance{query}"));
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {}", token.expose()));
    }
    request.body(Bytes::new())
}

/// Sends a hint to the status API at `addr`; returns whether the peer accepted it (202).
pub(crate) async fn send(
    addr: &str,
    generation: Option<i32>,
    from: &str,
    token: Option<&Secret>,
) -> bool {
    let request = request(addr, generation, from, token);
    let answer = client::send(addr, request, HINT_TIMEOUT).await;
    matches!(answer, Ok(answer) if answer.code == StatusCode::ACCEPTED.as_u16())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// The bytes of the hint `send` puts on the wire, and whether it was accepted when the
    /// peer answers `answer`.
    async fn on_the_wire(
        generation: Option<i32>,
        token: Option<&Secret>,
        answer: &'static str,
    ) -> (String, bool) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let peer = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = vec![0u8; 1024];
            let read = stream.read(&mut head).await.unwrap();
            stream.write_all(answer.as_bytes()).await.unwrap();
            String::from_utf8_lossy(&head[..read]).into_owned()
        });
        let accepted = send(&addr, generation, "127.0.0.1:8", token).await;
        (peer.await.unwrap(), accepted)
    }

    #[tokio::test]
    async fn a_hint_names_the_generation_and_carries_the_token() {
        let accepted = "HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\n\r\n{}";
        let (plain, sent) = on_the_wire(Some(7), None, accepted).await;
        assert!(
            plain.starts_with("POST /rebalance?generation=7&from=127.0.0.1:8 HTTP/1.1\r\n"),
            "{plain}"
        );
        assert!(!plain.contains("Authorization"));
        assert!(plain.ends_with("\r\n\r\n"));
        assert!(sent, "a 202 is an accepted hint");
        let token = Secret::new("t0ken");
        let refused = "HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}";
        let (guarded, sent) = on_the_wire(None, Some(&token), refused).await;
        assert!(
            guarded.starts_with("POST /rebalance?from=127.0.0.1:8 HTTP/1.1\r\n"),
            "{guarded}"
        );
        assert!(guarded.contains("Authorization: Bearer t0ken\r\n"));
        assert!(!sent, "any other answer is not");
    }
}
