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

use kroupier_coordinator::failover::link::{self, Greeting};

use super::peers::Peer;
use crate::group::proof::{self, Proofs};

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
    let Some(addr) = proof::dial_addr(&peer.status_addr) else {
        // A host name may resolve elsewhere between the link and the probe: no proof.
        return std::future::pending().await;
    };
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
    //! The wrapper's own part: what it records for the leader. The link itself (no death
    //! without a link, a namesake, a blackhole, a hang) is tested where it lives, in
    //! `kroupier_coordinator::failover::link`.

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
}
