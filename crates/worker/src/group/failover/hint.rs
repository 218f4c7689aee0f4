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

use kroupier_coordinator::connection::Secret;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one hint may take, all told.
const HINT_TIMEOUT: Duration = Duration::from_secs(1);

/// The request line and headers of a hint (no body).
pub(crate) fn request(
    addr: &str,
    generation: Option<i32>,
    from: &str,
    token: Option<&Secret>,
) -> String {
    let query = match generation {
        Some(g) => format!("?generation={g}&from={from}"),
        None => format!("?from={from}"),
    };
    let authorization = token.map_or(String::new(), |t| {
        format!("Authorization: Bearer {}\r\n", t.expose())
    });
    format!(
        "POST /rebalance{query} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kroupier-worker\r\n\
         {authorization}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

/// Sends a hint to the status API at `addr`; returns whether the peer accepted it (202).
pub(crate) async fn send(
    addr: &str,
    generation: Option<i32>,
    from: &str,
    token: Option<&Secret>,
) -> bool {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.set_nodelay(true).ok()?;
        stream
            .write_all(request(addr, generation, from, token).as_bytes())
            .await
            .ok()?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.ok()?;
        Some(head.starts_with(b"HTTP/1.1 202"))
    };
    let accepted = tokio::time::timeout(HINT_TIMEOUT, exchange).await;
    matches!(accepted, Ok(Some(true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_names_the_generation_and_carries_the_token() {
        let plain = request("127.0.0.1:9", Some(7), "127.0.0.1:8", None);
        assert!(
            plain.starts_with("POST /rebalance?generation=7&from=127.0.0.1:8 HTTP/1.1\r\n"),
            "{plain}"
        );
        assert!(!plain.contains("Authorization"));
        assert!(plain.ends_with("\r\n\r\n"));
        let token = Secret::new("t0ken");
        let guarded = request("127.0.0.1:9", None, "127.0.0.1:8", Some(&token));
        assert!(
            guarded.starts_with("POST /rebalance?from=127.0.0.1:8 HTTP/1.1\r\n"),
            "{guarded}"
        );
        assert!(guarded.contains("Authorization: Bearer t0ken\r\n"));
    }
}
