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

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::peers::Peer;
use crate::group::proof::{self, Proofs};

/// How long opening a link may take before it counts as "not now" (never as a death).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The first wait before opening an ended link again; doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between two attempts to open a link.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A link that lasted this long resets the backoff.
const STEADY: Duration = Duration::from_secs(10);

/// The last line of a `/watch` body when the worker stops in order.
pub(crate) const STOPPED: &str = "kroupier: stopped\n";

/// The start of a `/watch` body's first line, followed by the process identity and `\n`.
pub(crate) const PROCESS_LINE: &str = "kroupier-process: ";

/// How a peer's process ended, as its links saw it (a link reached it, by construction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gone {
    /// Its last link said it stopped in order ([`STOPPED`]).
    pub(crate) orderly: bool,
}

/// Keeps a link to `peer` until its process is provably gone, then says how it ended; records
/// what it learns in `proofs`. Runs forever for a peer that lives, and for one whose process
/// no link ever reached (the caller aborts it when the peer leaves the watch list).
pub(crate) async fn until_gone(peer: &Peer, proofs: &Arc<Proofs>) -> Gone {
    let mut backoff = MIN_BACKOFF;
    let mut orderly = false;
    let mut reached = false;
    loop {
        let opened = tokio::time::Instant::now();
        let held = hold(peer).await;
        if held.reached {
            if !reached {
                proofs.linked(&peer.member_id, &peer.status_addr);
            }
            reached = true;
            orderly = held.orderly;
        }
        if reached && refused(peer).await {
            proofs.dead(&peer.member_id, &peer.status_addr);
            return Gone { orderly };
        }
        if opened.elapsed() >= STEADY {
            backoff = MIN_BACKOFF;
        }
        tracing::debug!(peer = %peer.member_id, addr = %peer.status_addr, reached, ?backoff,
            "link to a peer ended but its process is not provably gone; opening it again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// How one link ended.
struct Held {
    /// The answer named the peer's process.
    reached: bool,
    /// The peer said it stopped in order.
    orderly: bool,
}

/// Opens the link and returns when it ends (or cannot be opened).
async fn hold(peer: &Peer) -> Held {
    let mut held = Held {
        reached: false,
        orderly: false,
    };
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&peer.status_addr));
    let Ok(Ok(mut stream)) = connected.await else {
        return held;
    };
    let request = format!(
        "GET /watch HTTP/1.1\r\nHost: {}\r\nUser-Agent: kroupier-worker\r\n\r\n",
        peer.status_addr
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return held;
    }
    let named = format!("{PROCESS_LINE}{}\n", peer.process_id);
    // The response head, the process line, then (at an orderly stop) STOPPED; EOF or an
    // error ends the link. Only the tail is kept: each line is looked for as it arrives.
    let mut seen: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 512];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..read]);
        held.reached |= contains(&seen, named.as_bytes());
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

/// Whether a new connection to `peer`'s address is refused.
async fn refused(peer: &Peer) -> bool {
    let addr = peer.status_addr.clone();
    tokio::task::spawn_blocking(move || proof::refused(&addr))
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

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

    #[tokio::test]
    async fn a_peer_no_link_ever_reached_is_never_a_death() {
        // Refused from the first connection on: a peer in another network, a port nobody in
        // this one listens on. Nothing says who listened there, if anyone ever did.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, proofs) = watch(peer(listener.local_addr().unwrap()));
        drop(listener);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !link.is_finished(),
            "a refusal without a link proves nothing"
        );
        assert!(!proofs.is_gone("m-1"));
        link.abort();
    }

    #[tokio::test]
    async fn a_namesake_answering_for_another_process_is_never_a_death() {
        // The advertised address, dialled from this worker's network, reaches another process
        // (this host's own worker on the same loopback port: containers that share a host
        // name); then that one ends too.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, proofs) = watch(peer(listener.local_addr().unwrap()));
        let accepted = answer(&listener, "p-other").await;
        drop(listener);
        drop(accepted);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !link.is_finished(),
            "the link never reached the member's process"
        );
        assert!(!proofs.is_gone("m-1"));
        link.abort();
    }

    #[tokio::test]
    async fn a_link_that_ends_while_the_peer_listens_is_no_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, _) = watch(peer(listener.local_addr().unwrap()));
        // The peer drops every link it accepts, yet keeps listening.
        // (The probes in between connect and send nothing.)
        let mut links = 0;
        while links < 3 {
            let (mut accepted, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 64];
            let read = accepted.read(&mut head).await.unwrap();
            if read > 0 {
                assert!(head[..read].starts_with(b"GET /watch HTTP/1.1\r\n"));
                let answer = format!("HTTP/1.1 200 OK\r\n\r\n{PROCESS_LINE}p-1\n");
                accepted.write_all(answer.as_bytes()).await.unwrap();
                links += 1;
            }
        }
        assert!(!link.is_finished());
        link.abort();
    }

    #[tokio::test]
    async fn a_blackholed_peer_is_never_a_death() {
        // The peer's host accepts connections (its kernel does, even for a paused process or
        // behind a blackhole) and nothing ever comes back; then its links end (a middlebox
        // drops them) and new ones connect and stay silent.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (link, _) = watch(peer(listener.local_addr().unwrap()));
        let first = answer(&listener, "p-1").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!link.is_finished(), "a silent link is no death");
        drop(first);
        // From now on nothing is accepted: the kernel still completes the handshakes.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !link.is_finished(),
            "a link that ends on a silent peer is no death"
        );
        link.abort();
        drop(listener);
    }

    #[tokio::test]
    async fn a_peer_whose_connections_hang_is_never_a_death() {
        // A listener whose accept queue is full: the kernel drops new handshakes, so
        // connections hang as they do across a partition or to a host that is down.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut fillers = Vec::new();
        for _ in 0..3 {
            fillers.push(tokio::spawn(async move {
                let stream = TcpStream::connect(addr).await;
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(stream);
            }));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let probe = tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr));
        assert!(probe.await.is_err(), "new connections hang");
        let (link, _) = watch(peer(addr));
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!link.is_finished(), "a connection that hangs is no death");
        link.abort();
        for filler in fillers {
            filler.abort();
        }
        drop(listener);
    }
}
