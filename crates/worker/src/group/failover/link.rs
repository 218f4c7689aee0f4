//! The link to one peer: a TCP connection to its status API that stays open for as long as
//! the peer's process lives, and a proof of death when it ends.
//!
//! Over plain HTTP the link is `GET /watch`, which the peer answers with a body that never
//! ends (until its status API stops). Over HTTPS the link is a bare connection with no
//! handshake: it still ends when the peer's process does. Either way the *end* of a link
//! proves nothing by itself — the peer may have closed an idle connection, a middlebox may
//! have dropped it — so it is only the cue to check: a new connection to the same address
//! that is *refused* means nothing listens there any more, which on a live host means the
//! process ended (see `liveness.rs`). A link that stays open (a paused process's kernel keeps
//! its connections), a connection that times out (a partition, a blackhole, a host down) or
//! that succeeds (a live, slow or paused process) is not a death; the link is opened again,
//! with backoff, and the session timeout stays the only way such a peer leaves the group.
//!
//! A worker whose loop ends in order (a shutdown, or the member stopped by itself) ends its
//! `/watch` bodies with [`STOPPED`] first: then its end is no crash. Kafka keeps a static
//! member's place through a restart, and fast failover must not undo that. A peer whose first
//! connection is already refused was never watched, so how it ended is unknown (see
//! [`Gone::linked`]).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::peers::Peer;
use crate::group::liveness;

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

/// How a peer's process ended, as its links saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gone {
    /// Its last link said it stopped in order ([`STOPPED`]); always `false` over HTTPS.
    pub(crate) orderly: bool,
    /// Whether a link to it was ever open. A peer first seen refusing was never watched: how
    /// it ended (a crash or an orderly stop) is unknown.
    pub(crate) linked: bool,
}

/// How a link speaks to the peer's status API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkMode {
    /// Plain HTTP: `GET /watch`, a response that never ends.
    Http,
    /// HTTPS: a bare TCP connection, no handshake (its end is all that matters).
    Bare,
}

/// Keeps a link to `peer` until its process is provably gone, then says how it ended. Runs
/// forever for a peer that lives (the caller aborts it when the peer leaves the watch list).
pub(crate) async fn until_gone(peer: &Peer, own_host: Option<&str>, mode: LinkMode) -> Gone {
    let mut backoff = MIN_BACKOFF;
    let mut orderly = false;
    let mut linked = false;
    loop {
        let opened = tokio::time::Instant::now();
        let held = hold(peer, mode).await;
        orderly |= held.orderly;
        linked |= held.linked;
        if is_gone(peer, own_host).await {
            return Gone { orderly, linked };
        }
        if opened.elapsed() >= STEADY {
            backoff = MIN_BACKOFF;
        }
        tracing::debug!(peer = %peer.member_id, addr = %peer.status_addr, ?backoff,
            "link to a peer ended but its process is not provably gone; opening it again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// How one link ended.
struct Held {
    /// The connection was open.
    linked: bool,
    /// The peer said it stopped in order.
    orderly: bool,
}

/// Opens the link and returns when it ends (or cannot be opened).
async fn hold(peer: &Peer, mode: LinkMode) -> Held {
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&peer.status_addr));
    let Ok(Ok(mut stream)) = connected.await else {
        return Held {
            linked: false,
            orderly: false,
        };
    };
    if mode == LinkMode::Http {
        let request = format!(
            "GET /watch HTTP/1.1\r\nHost: {}\r\nUser-Agent: kroupier-worker\r\n\r\n",
            peer.status_addr
        );
        if stream.write_all(request.as_bytes()).await.is_err() {
            return Held {
                linked: true,
                orderly: false,
            };
        }
    }
    // The response head, then (at an orderly stop) STOPPED; EOF or an error ends the link.
    let mut seen: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 512];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..read]);
        if seen.len() > 4096 {
            seen.drain(..seen.len() - 64);
        }
    }
    Held {
        linked: true,
        orderly: seen.windows(STOPPED.len()).any(|w| w == STOPPED.as_bytes()),
    }
}

/// Whether `peer`'s process is provably gone: a refused connection on its host.
async fn is_gone(peer: &Peer, own_host: Option<&str>) -> bool {
    let addr = peer.status_addr.clone();
    let host = peer.host.clone();
    let own_host = own_host.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        liveness::is_gone(&addr, host.as_deref(), own_host.as_deref())
    })
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
            host: Some("here".to_owned()),
        }
    }

    #[tokio::test]
    async fn a_closed_listener_and_its_links_are_a_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let watched = peer(addr);
        let watch =
            tokio::spawn(async move { until_gone(&watched, Some("here"), LinkMode::Bare).await });
        let (accepted, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!watch.is_finished(), "an open link is a live peer");
        drop(listener);
        drop(accepted);
        let gone = tokio::time::timeout(Duration::from_secs(2), watch)
            .await
            .expect("the end of the process is seen at once")
            .unwrap();
        assert_eq!(
            gone,
            Gone {
                orderly: false,
                linked: true
            }
        );
    }

    #[tokio::test]
    async fn a_peer_that_says_it_stopped_ended_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let watched = peer(addr);
        let watch =
            tokio::spawn(async move { until_gone(&watched, Some("here"), LinkMode::Http).await });
        let (mut accepted, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 64];
        let _ = accepted.read(&mut head).await.unwrap();
        let body = format!("HTTP/1.1 200 OK\r\n\r\n{STOPPED}");
        accepted.write_all(body.as_bytes()).await.unwrap();
        drop(listener);
        drop(accepted);
        let gone = tokio::time::timeout(Duration::from_secs(2), watch)
            .await
            .expect("the end of the process is seen at once")
            .unwrap();
        assert_eq!(
            gone,
            Gone {
                orderly: true,
                linked: true
            }
        );
    }

    #[tokio::test]
    async fn a_peer_first_seen_refusing_is_gone_without_a_link() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let watched = peer(listener.local_addr().unwrap());
        drop(listener);
        let gone = tokio::time::timeout(
            Duration::from_secs(2),
            until_gone(&watched, Some("here"), LinkMode::Http),
        )
        .await
        .expect("a refused first connection is seen at once");
        assert_eq!(
            gone,
            Gone {
                orderly: false,
                linked: false
            }
        );
    }

    #[tokio::test]
    async fn a_link_that_ends_while_the_peer_listens_is_no_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let watched = peer(addr);
        let watch =
            tokio::spawn(async move { until_gone(&watched, Some("here"), LinkMode::Http).await });
        // The peer drops every link it accepts, yet keeps listening.
        // (The liveness probes in between connect and send nothing.)
        let mut links = 0;
        while links < 3 {
            let (mut accepted, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 64];
            let read = accepted.read(&mut head).await.unwrap();
            if read > 0 {
                assert!(head[..read].starts_with(b"GET /watch HTTP/1.1\r\n"));
                links += 1;
            }
        }
        assert!(!watch.is_finished());
        watch.abort();
    }

    #[tokio::test]
    async fn a_blackholed_peer_is_never_a_death() {
        // The peer's host accepts connections (its kernel does, even for a paused process or
        // behind a blackhole) and nothing ever comes back; then its links end (a middlebox
        // drops them) and new ones connect and stay silent.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let watched = peer(addr);
        let watch =
            tokio::spawn(async move { until_gone(&watched, Some("here"), LinkMode::Http).await });
        let (first, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!watch.is_finished(), "a silent link is no death");
        drop(first);
        // From now on nothing is accepted: the kernel still completes the handshakes.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !watch.is_finished(),
            "a link that ends on a silent peer is no death"
        );
        watch.abort();
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
        let watched = peer(addr);
        let watch =
            tokio::spawn(async move { until_gone(&watched, Some("here"), LinkMode::Http).await });
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!watch.is_finished(), "a connection that hangs is no death");
        watch.abort();
        for filler in fillers {
            filler.abort();
        }
        drop(listener);
    }

    #[tokio::test]
    async fn another_host_s_loopback_is_never_a_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let watched = peer(addr);
        let watch =
            tokio::spawn(
                async move { until_gone(&watched, Some("elsewhere"), LinkMode::Bare).await },
            );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !watch.is_finished(),
            "nothing is provable from another host"
        );
        watch.abort();
    }
}
