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

use kroupier_coordinator::failover::link::{self, Greeting};

use super::peers::Peer;
use crate::group::proof::Proofs;

/// The last line of a `/watch` body when the worker stops in order.
pub(crate) use kroupier_coordinator::failover::link::STOPPED;

/// The start of a `/watch` body's first line, followed by the process identity and `\n`.
pub(crate) const PROCESS_LINE: &str = "kroupier-process: ";

/// How a peer's process ended, as its links saw it (a link reached it, by construction).
pub(crate) use kroupier_coordinator::failover::link::Gone;

/// Keeps a link to `peer` until its process is provably gone, then says how it ended; records
/// what it learns in `proofs`. Runs forever for a peer that lives, and for one whose process
/// no link ever reached, or whose address is not `ip:port` (the caller aborts it when the peer
/// leaves the watch list). The link, its backoff and the proof are the coordinator crate's
/// fast failover's (`kroupier_coordinator::failover::link`), spoken to the status API.
pub(crate) async fn until_gone(peer: &Peer, proofs: &Arc<Proofs>) -> Gone {
    let Ok(mut addr) = peer.status_addr.parse::<SocketAddr>() else {
        // A host name may resolve elsewhere between the link and the probe: no proof.
        return std::future::pending().await;
    };
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let named = format!("{PROCESS_LINE}{}\n", peer.process_id);
    let gone = link::until_gone_with(addr, &named, Greeting::Watch, || {
        proofs.linked(&peer.member_id, &peer.status_addr);
    })
    .await;
    proofs.dead(&peer.member_id, &peer.status_addr);
    gone
}

#[cfg(test)]
mod tests {
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
