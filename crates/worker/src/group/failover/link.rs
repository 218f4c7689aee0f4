//! The link to one peer: a connection to its status API (`GET /watch`) that stays open for as
//! long as the peer's process lives, and a proof of death when it ends.
//!
//! The peer answers with a body that never ends (until its status API stops), whose first line
//! names its process ([`PROCESS_LINE`]). Only a link whose answer names the process the member
//! advertised counts: it proves that this address, seen from this worker's network, reached
//! that process — not a namesake on this worker's own loopback, a restarted process, or
//! whatever else listens there. The *end* of a link proves nothing by itself (the peer may have
//! closed an idle connection, a middlebox may have dropped it); it is the cue to check: once a
//! link reached the process, a new connection to the same address that is *refused* means the
//! process no longer holds its port, which it does for as long as its worker loop runs (see
//! `proof.rs`). A link that stays open (a paused process's kernel keeps its connections), a
//! connection that times out (a partition, a blackhole, a host down), one that succeeds, or a
//! refusal before any link reached the process, is not a death; the link is opened again, with
//! backoff, and the session timeout stays the only way such a peer leaves the group.
//!
//! A worker whose loop ends in order (a shutdown, or the member stopped by itself) ends its
//! `/watch` bodies with [`STOPPED`] first: then its end is no crash. Kafka keeps a static
//! member's place through a restart, and fast failover must not undo that.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use hyper::Method;
use kroupier_coordinator::failover::link::{self, Held};
use tokio::net::TcpStream;

use super::peers::Peer;
use crate::group::proof::{self, Proofs};
use crate::http::client;

/// The `/watch` body's lines, as the status API writes them.
pub(crate) use crate::http::failover::{PROCESS_LINE, STOPPED};

/// How a peer's process ended, as its links saw it (a link reached it, by construction).
pub(crate) use kroupier_coordinator::failover::link::Gone;

/// Keeps a link to `peer` until its process is provably gone, then says how it ended; records
/// what it learns in `proofs`. Runs forever for a peer that lives, and for one whose process
/// no link ever reached, or whose address is not `ip:port` (the caller aborts it when the peer
/// leaves the watch list). The connect, its backoff and the proof are the coordinator crate's
/// fast failover's (`kroupier_coordinator::failover::link`); what is said over each connection
/// is `GET /watch`, through the one HTTP client ([`client`]).
pub(crate) async fn until_gone(peer: &Peer, proofs: &Arc<Proofs>) -> Gone {
    let Some(addr) = proof::dial_addr(&peer.status_addr) else {
        // A host name may resolve elsewhere between the link and the probe: no proof.
        return std::future::pending().await;
    };
    let named = format!("{PROCESS_LINE}{}\n", peer.process_id);
    let speak = |stream| watch(stream, addr, named.as_bytes());
    let gone = link::until_gone_with(addr, speak, || {
        proofs.linked(&peer.member_id, &peer.status_addr);
    })
    .await;
    proofs.dead(&peer.member_id, &peer.status_addr);
    gone
}

/// One link over `stream`, a connection the coordinator's link opened to `addr`: `GET /watch`,
/// then the body as it arrives, until it ends or the connection fails. The link reached the
/// process once the body carries `named` (its identity line); it ended in order once
/// [`STOPPED`] follows. Only the tail is kept: each line is looked for as it arrives.
async fn watch(stream: TcpStream, addr: SocketAddr, named: &[u8]) -> Held {
    let mut held = Held::default();
    let request = client::request(&addr.to_string(), Method::GET, "/watch").body(Bytes::new());
    let Ok(request) = request else {
        return held;
    };
    let Ok(mut reply) = client::exchange(stream, request).await else {
        return held;
    };
    let mut seen: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = reply.chunk().await {
        seen.extend_from_slice(&chunk);
        held.reached |= contains(&seen, named);
        held.orderly |= held.reached && contains(&seen, STOPPED.as_bytes());
        if seen.len() > 4096 {
            seen.drain(..seen.len() - 128);
        }
    }
    held
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    //! The `/watch` link, and what it records for the leader. The link's connect, backoff and
    //! proof (no death without a link, a namesake, a blackhole, a hang) are tested where they
    //! live, in `kroupier_coordinator::failover::link`.

    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    fn peer(addr: std::net::SocketAddr) -> Peer {
        Peer {
            member_id: "m-1".to_owned(),
            group_instance_id: None,
            status_addr: addr.to_string(),
            process_id: "p-1".to_owned(),
        }
    }

    fn watch(peer: Peer) -> (tokio::task::JoinHandle<Gone>, Arc<Proofs>) {
        let proofs = Arc::new(Proofs::default());
        let shared = proofs.clone();
        (
            tokio::spawn(async move { until_gone(&peer, &shared).await }),
            proofs,
        )
    }

    /// Accepts the link and answers it as a worker whose process is `process` does.
    async fn answer(listener: &TcpListener, process: &str) -> TcpStream {
        let (mut accepted, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 128];
        let _ = accepted.read(&mut head).await.unwrap();
        let answer = format!("HTTP/1.1 200 OK\r\n\r\n{PROCESS_LINE}{process}\n");
        accepted.write_all(answer.as_bytes()).await.unwrap();
        accepted
    }

    #[tokio::test]
    async fn a_closed_listener_after_a_link_reached_the_process_is_a_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, proofs) = watch(peer(listener.local_addr().unwrap()));
        let accepted = answer(&listener, "p-1").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!link.is_finished(), "an open link is a live peer");
        drop(listener);
        drop(accepted);
        let gone = tokio::time::timeout(Duration::from_secs(2), link)
            .await
            .expect("the end of the process is seen at once")
            .unwrap();
        assert_eq!(gone, Gone { orderly: false });
        assert!(proofs.is_gone("m-1"), "and recorded for the leader");
    }

    #[tokio::test]
    async fn a_peer_that_says_it_stopped_ended_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, _) = watch(peer(listener.local_addr().unwrap()));
        let mut accepted = answer(&listener, "p-1").await;
        accepted.write_all(STOPPED.as_bytes()).await.unwrap();
        drop(listener);
        drop(accepted);
        let gone = tokio::time::timeout(Duration::from_secs(2), link)
            .await
            .expect("the end of the process is seen at once")
            .unwrap();
        assert_eq!(gone, Gone { orderly: true });
    }

    async fn ends_within(link: tokio::task::JoinHandle<Gone>, within: Duration) -> Gone {
        tokio::time::timeout(within, link)
            .await
            .expect("the end is seen at once")
            .unwrap()
    }

    // The `/watch` links of `kroupier_coordinator::failover::link`'s tests, where the request
    // was written before it went through the one HTTP client.

    /// A `/watch` link to a worker whose process is `process`: `GET /watch`, then its identity
    /// line after the response head.
    fn watch_worker(addr: SocketAddr, process: &str) -> tokio::task::JoinHandle<Gone> {
        let mut peer = peer(addr);
        peer.process_id = process.to_owned();
        watch(peer).0
    }

    /// Accepts a `/watch` link (a probe sends nothing: it is dropped) and answers it as a
    /// worker whose process is `process` does; `None` for a probe.
    async fn answer_watch(listener: &TcpListener, process: &str) -> Option<TcpStream> {
        let (mut accepted, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 128];
        let read = accepted.read(&mut head).await.unwrap_or(0);
        if read == 0 {
            return None;
        }
        assert!(head[..read].starts_with(b"GET /watch HTTP/1.1\r\n"));
        let answer = format!("HTTP/1.1 200 OK\r\n\r\nkroupier-process: {process}\n");
        accepted.write_all(answer.as_bytes()).await.unwrap();
        Some(accepted)
    }

    #[tokio::test]
    async fn a_watch_link_that_reached_the_worker_then_a_refusal_is_a_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch_worker(listener.local_addr().unwrap(), "p-1");
        let accepted = answer_watch(&listener, "p-1").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!link.is_finished(), "an open link is a live worker");
        drop(listener);
        drop(accepted);
        let gone = ends_within(link, Duration::from_secs(2)).await;
        assert_eq!(gone, Gone { orderly: false });
    }

    #[tokio::test]
    async fn a_watch_body_that_says_stopped_is_an_orderly_end() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch_worker(listener.local_addr().unwrap(), "p-1");
        let mut accepted = answer_watch(&listener, "p-1").await.expect("the link");
        accepted.write_all(STOPPED.as_bytes()).await.unwrap();
        drop(listener);
        drop(accepted);
        let gone = ends_within(link, Duration::from_secs(2)).await;
        assert_eq!(gone, Gone { orderly: true });
    }

    #[tokio::test]
    async fn a_watch_answered_by_another_worker_is_never_a_death() {
        // A namesake: this host's own worker on the same loopback port answers; then it ends.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch_worker(listener.local_addr().unwrap(), "p-1");
        let accepted = answer_watch(&listener, "p-other").await;
        drop(listener);
        drop(accepted);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(!link.is_finished(), "the link never reached that worker");
        link.abort();
    }

    #[tokio::test]
    async fn a_watch_link_that_ends_while_the_worker_listens_is_no_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch_worker(listener.local_addr().unwrap(), "p-1");
        // The worker drops every link it answers, yet keeps listening.
        let mut links = 0;
        while links < 3 {
            if answer_watch(&listener, "p-1").await.is_some() {
                links += 1;
            }
        }
        assert!(!link.is_finished());
        link.abort();
    }
}
