//! The link to the member a follower watches, and the proof of its end.
//!
//! A link is a connection to the member's endpoint whose first line names the identity the
//! member advertised. Only such a link counts: it proves that this address, seen from this
//! member's network, reached that endpoint — not a namesake on this member's own loopback, a
//! restarted process, or whatever else listens there. The *end* of a link proves nothing by
//! itself (a middlebox may drop it); it is the cue to check: once a link reached the endpoint,
//! a new connection to the same address that is *refused* means the endpoint's socket is
//! closed, which happens only when its owner resigned or its process ended (see
//! `endpoint.rs`). A link that stays open (a paused process's kernel keeps its connections), a
//! connection that times out (a partition, a blackhole, a host down), one that succeeds, or a
//! refusal before any link reached the endpoint, is no end; the link is opened again, with
//! backoff, and the session timeout stays the only way such a member leaves the group.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The start of the first line an endpoint writes on every link, followed by its identity and
/// `\n`. (The link's two lines, this one and [`STOPPED`], live here, beside the reader; the
/// endpoint writes them.)
pub(crate) const PROCESS_LINE: &str = "kroupier-election-process: ";

/// The last line on every link when the watched process stops in order (it resigned, or its
/// worker stopped): its end is then no crash.
pub const STOPPED: &str = "kroupier: stopped\n";
use super::proof;

/// How long opening a link may take before it counts as "not now" (never as an end).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The first wait before opening an ended link again; doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between two attempts to open a link.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A link that lasted this long resets the backoff.
const STEADY: Duration = Duration::from_secs(10);
/// When a link that reached the endpoint ends, the waits before each probe of its address.
const QUICK_PROBES: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_millis(2),
    Duration::from_millis(5),
    Duration::from_millis(10),
];

/// How a watched endpoint's owner ended (a link reached it, by construction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    /// Its last link said it stopped in order (it resigned) before it ended.
    pub orderly: bool,
}

/// What one link learned before it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// It read the watched process's identity: the link reached that very process.
    pub reached: bool,
    /// After that, the process said it stopped in order ([`STOPPED`]).
    pub orderly: bool,
}

/// Keeps a link to the endpoint at `addr` whose identity is `process` until its owner
/// provably no longer acts, then says how it ended. Runs forever for an owner that lives, and
/// for one no link ever reached (the caller drops the future when it stops watching).
pub(crate) async fn until_gone(addr: SocketAddr, process: &str) -> Gone {
    let named = format!("{PROCESS_LINE}{process}\n");
    until_gone_with(
        addr,
        |stream| read_endpoint(stream, named.as_bytes()),
        || {},
    )
    .await
}

/// `until_gone` for any watched process: `speak` holds one link over a connection this
/// function opened (a worker's status API asks `GET /watch` and reads the body that names the
/// process) and says what it learned when the link ends. The connect, the backoff and the
/// proof stay here, the same for every watched process. `reached_first` is called when a link
/// first reaches the process.
pub async fn until_gone_with<F, Fut>(
    addr: SocketAddr,
    mut speak: F,
    mut reached_first: impl FnMut(),
) -> Gone
where
    F: FnMut(TcpStream) -> Fut,
    Fut: Future<Output = Held>,
{
    let mut backoff = MIN_BACKOFF;
    let mut orderly = false;
    let mut reached = false;
    loop {
        let opened = tokio::time::Instant::now();
        let held = hold(addr, &mut speak).await;
        if held.reached {
            if !reached {
                tracing::debug!(%addr, "a fast-failover link reached the watched process");
                reached_first();
            }
            reached = true;
            orderly = held.orderly;
        }
        if reached && refused_soon(addr).await {
            return Gone { orderly };
        }
        if opened.elapsed() >= STEADY {
            backoff = MIN_BACKOFF;
        }
        tracing::debug!(%addr, reached, ?backoff,
            "a fast-failover link ended but its owner is not provably gone; opening it again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Opens the link and returns when it ends (or cannot be opened).
async fn hold<F, Fut>(addr: SocketAddr, speak: &mut F) -> Held
where
    F: FnMut(TcpStream) -> Fut,
    Fut: Future<Output = Held>,
{
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr));
    let Ok(Ok(stream)) = connected.await else {
        return Held::default();
    };
    speak(stream).await
}

/// An endpoint's link: the identity line, then (at an orderly stop) STOPPED; EOF or an error
/// ends it. Only the first line may name the identity: the endpoint writes nothing else first.
async fn read_endpoint(mut stream: TcpStream, named: &[u8]) -> Held {
    let mut held = Held::default();
    let mut seen: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 256];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..read]);
        held.reached |= seen.starts_with(named);
        held.orderly |= held.reached && seen[named.len()..].starts_with(STOPPED.as_bytes());
        if !held.reached && (seen.len() >= named.len() || !named.starts_with(&seen)) {
            // Someone else answers: not a link to this endpoint.
            break;
        }
        if seen.len() > 4096 {
            break;
        }
    }
    held
}

/// Whether a new connection to `addr` is refused, now or within a few milliseconds: a process
/// that ends closes its sockets one by one, so a link may end a moment before the listening
/// socket does. Probing again is safe (only a refusal counts) and spares the backoff.
async fn refused_soon(addr: SocketAddr) -> bool {
    for wait in QUICK_PROBES {
        tokio::time::sleep(wait).await;
        if refused(addr).await {
            return true;
        }
    }
    false
}

/// Whether a new connection to `addr` is refused.
async fn refused(addr: SocketAddr) -> bool {
    tokio::task::spawn_blocking(move || proof::refused(addr))
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    use super::*;
    use crate::failover::endpoint::Endpoint;

    fn watch(addr: SocketAddr, process: &str) -> JoinHandle<Gone> {
        let process = process.to_owned();
        tokio::spawn(async move { until_gone(addr, &process).await })
    }

    /// Accepts the link and answers it as an endpoint whose identity is `process` does.
    async fn answer(listener: &TcpListener, process: &str) -> TcpStream {
        let (mut accepted, _) = listener.accept().await.unwrap();
        let line = format!("{PROCESS_LINE}{process}\n");
        accepted.write_all(line.as_bytes()).await.unwrap();
        accepted
    }

    async fn ends_within(link: JoinHandle<Gone>, within: Duration) -> Gone {
        tokio::time::timeout(within, link)
            .await
            .expect("the end is seen at once")
            .unwrap()
    }

    #[tokio::test]
    async fn a_closed_listener_after_a_link_reached_the_process_is_a_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
        let accepted = answer(&listener, "p-1").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!link.is_finished(), "an open link is a live leader");
        // What the kernel does at SIGKILL: every socket of the process closes.
        drop(listener);
        drop(accepted);
        let gone = ends_within(link, Duration::from_secs(2)).await;
        assert_eq!(gone, Gone { orderly: false });
    }

    #[tokio::test]
    async fn a_peer_that_never_answered_is_never_a_death() {
        // Refused from the first connection on: an endpoint in another network, a port nobody
        // in this one listens on. Nothing says who listened there, if anyone ever did.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
        drop(listener);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !link.is_finished(),
            "a refusal without a link proves nothing"
        );
        link.abort();
    }

    #[tokio::test]
    async fn a_namesake_answering_for_another_process_is_never_a_death() {
        // The advertised address, dialled from this member's network, reaches another
        // endpoint (this host's own member on the same loopback port); then that one ends.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
        let accepted = answer(&listener, "p-other").await;
        drop(listener);
        drop(accepted);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(
            !link.is_finished(),
            "the link never reached the leader's endpoint"
        );
        link.abort();
    }

    #[tokio::test]
    async fn an_identity_that_only_starts_like_the_leader_s_is_another_one() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
        let accepted = answer(&listener, "p-10").await;
        drop(listener);
        drop(accepted);
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        assert!(!link.is_finished());
        link.abort();
    }

    #[tokio::test]
    async fn a_link_that_ends_while_the_peer_still_listens_is_no_death() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
        // The endpoint drops every link it accepts (a middlebox), yet keeps listening; the
        // probes in between are accepted and dropped too.
        for _ in 0..6 {
            drop(answer(&listener, "p-1").await);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!link.is_finished());
        link.abort();
    }

    #[tokio::test]
    async fn a_blackholed_peer_is_never_a_death() {
        // The leader's host accepts connections (its kernel does, even for a paused process
        // or behind a blackhole) and nothing ever comes back; then its link ends (a middlebox
        // drops it) and new ones connect and stay silent.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let link = watch(listener.local_addr().unwrap(), "p-1");
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
        let link = watch(addr, "p-1");
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!link.is_finished(), "a connection that hangs is no death");
        link.abort();
        for filler in fillers {
            filler.abort();
        }
        drop(listener);
    }

    fn loopback() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    fn addr_of(endpoint: &Endpoint) -> SocketAddr {
        endpoint.advertised().addr.parse().unwrap()
    }

    #[tokio::test]
    async fn an_endpoint_that_closes_is_an_orderly_end() {
        let endpoint = Arc::new(Endpoint::bind(loopback(), None).unwrap());
        let serving = endpoint.clone();
        let server = tokio::spawn(async move { serving.serve().await });
        let link = watch(addr_of(&endpoint), &endpoint.advertised().process);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !link.is_finished(),
            "an endpoint that serves is a live owner"
        );
        endpoint.close();
        let gone = ends_within(link, Duration::from_secs(2)).await;
        assert_eq!(gone, Gone { orderly: true }, "it resigned, then closed");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn an_endpoint_whose_loop_ends_before_its_owner_resigns_is_no_death() {
        // The runtime that served it shut down (or its driver was dropped), but the owner's
        // handle lives and could still act on its token: the held descriptor keeps the
        // address from refusing.
        let endpoint = Arc::new(Endpoint::bind(loopback(), None).unwrap());
        let serving = endpoint.clone();
        let server = tokio::spawn(async move { serving.serve().await });
        let link = watch(addr_of(&endpoint), &endpoint.advertised().process);
        tokio::time::sleep(Duration::from_millis(200)).await;
        server.abort();
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(!link.is_finished(), "the owner has not resigned");
        endpoint.close();
        let gone = ends_within(link, Duration::from_secs(8)).await;
        assert_eq!(
            gone,
            Gone { orderly: false },
            "closed without a word, after resigning"
        );
    }

    #[tokio::test]
    async fn an_endpoint_answers_every_link_with_its_identity() {
        let endpoint = Arc::new(Endpoint::bind(loopback(), None).unwrap());
        let serving = endpoint.clone();
        let server = tokio::spawn(async move { serving.serve().await });
        for _ in 0..3 {
            let mut stream = TcpStream::connect(addr_of(&endpoint)).await.unwrap();
            let mut line = vec![0u8; PROCESS_LINE.len() + endpoint.advertised().process.len() + 1];
            stream.read_exact(&mut line).await.unwrap();
            let expected = format!("{PROCESS_LINE}{}\n", endpoint.advertised().process);
            assert_eq!(line, expected.as_bytes());
        }
        endpoint.close();
        server.await.unwrap();
        assert!(proof::refused(addr_of(&endpoint)), "closed for good");
    }

    #[test]
    fn an_endpoint_advertises_only_what_it_listens_on() {
        let error = Endpoint::bind(loopback(), Some("10.1.2.3".parse().unwrap())).unwrap_err();
        assert!(error.contains("listens only on"), "{error}");
        let error = Endpoint::bind(
            "0.0.0.0:0".parse().unwrap(),
            Some("203.0.113.7".parse().unwrap()),
        )
        .unwrap_err();
        assert!(error.contains("not an address of this host"), "{error}");
        let any = Endpoint::bind("0.0.0.0:0".parse().unwrap(), None).unwrap();
        assert!(any.advertised().addr.starts_with("0.0.0.0:"));
        assert_ne!(any.advertised().addr, "0.0.0.0:0", "the bound port");
        assert_eq!(any.advertised().network.as_deref(), proof::own_network());
    }
}
