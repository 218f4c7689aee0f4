//! The endpoint a member's peers link to: a TCP listener that names its owner on every
//! connection and keeps the connection open for as long as the owner may act.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::FailoverEndpoint;
use super::link::{PROCESS_LINE, STOPPED};
use super::proof;

/// At most this many links are held open at once; more are closed at once (a link that ends
/// while the endpoint listens proves nothing, so this costs a peer its speed, never safety).
const MAX_LINKS: usize = 1024;

/// How long a stopping endpoint tries to write [`STOPPED`] to a link.
const STOPPED_WRITE: Duration = Duration::from_secs(1);

/// A member's endpoint.
///
/// The listening socket has two descriptors: one held here until [`close`](Self::close), one
/// owned by the accept loop ([`serve`](Self::serve)). A connection to the address is refused
/// only once *both* are closed, i.e. only after `close` (called when the member resigns) or
/// the end of the process. That is what makes a refusal, after a link read this endpoint's
/// identity, a proof that its owner no longer acts.
#[derive(Debug)]
pub(crate) struct Endpoint {
    held: Mutex<Option<std::net::TcpListener>>,
    serving: Mutex<Option<std::net::TcpListener>>,
    stop: CancellationToken,
    advertised: FailoverEndpoint,
}

impl Endpoint {
    /// Listens on `listen` and advertises `advertise` (default: the listening address) with
    /// the bound port and a new identity. The error says what is wrong, for the config error.
    pub(crate) fn bind(listen: SocketAddr, advertise: Option<IpAddr>) -> Result<Self, String> {
        let host = advertise.unwrap_or(listen.ip());
        if !listen.ip().is_unspecified() && host != listen.ip() {
            return Err(format!(
                "advertises {host}, but listens only on {}: advertise the listening address, \
                 or listen on every address",
                listen.ip()
            ));
        }
        // Never advertise what could refuse while this member runs (a proxy's address, a NAT).
        proof::advertised_is_own(&SocketAddr::new(host, listen.port()).to_string())?;
        let listener = std::net::TcpListener::bind(listen)
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?
            .port();
        let serving = listener
            .try_clone()
            .map_err(|e| format!("cannot share the listening socket: {e}"))?;
        serving
            .set_nonblocking(true)
            .map_err(|e| format!("cannot make the listening socket non-blocking: {e}"))?;
        Ok(Self {
            held: Mutex::new(Some(listener)),
            serving: Mutex::new(Some(serving)),
            stop: CancellationToken::new(),
            advertised: FailoverEndpoint {
                addr: SocketAddr::new(host, port).to_string(),
                process: proof::new_process_identity(),
                network: proof::own_network().map(str::to_owned),
            },
        })
    }

    /// What the member advertises in its metadata.
    pub(crate) fn advertised(&self) -> &FailoverEndpoint {
        &self.advertised
    }

    /// The owner stops acting: every link reads [`STOPPED`] and ends, and the address refuses
    /// new connections once the accept loop has ended too.
    pub(crate) fn close(&self) {
        self.stop.cancel();
        // Both descriptors: the accept loop's too if it never started (it then finds none).
        for descriptor in [&self.held, &self.serving] {
            drop(
                descriptor
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
        }
    }

    /// Accepts links until [`close`](Self::close) (then tells them, and returns); dropping the
    /// future drops its descriptor and the links, never the one [`close`](Self::close) holds.
    pub(crate) async fn serve(&self) {
        let taken = self
            .serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let listener = match taken.map(tokio::net::TcpListener::from_std) {
            Some(Ok(listener)) => listener,
            Some(Err(error)) => {
                tracing::warn!(%error, "the fast-failover endpoint cannot serve; peers wait for the session");
                return self.stop.cancelled().await;
            }
            None => return self.stop.cancelled().await,
        };
        let line: std::sync::Arc<str> =
            format!("{PROCESS_LINE}{}\n", self.advertised.process).into();
        let mut links = JoinSet::new();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => break,
                Some(_) = links.join_next(), if !links.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) if links.len() < MAX_LINKS => {
                        links.spawn(hold(stream, line.clone(), self.stop.clone()));
                    }
                    Ok(_) => tracing::debug!("too many fast-failover links; closing a new one"),
                    Err(error) => {
                        // Out of descriptors, most likely: try again soon.
                        tracing::debug!(%error, "the fast-failover endpoint could not accept");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        drop(listener);
        while links.join_next().await.is_some() {}
    }
}

/// One link: the identity line, then silence until the peer goes or the owner stops.
async fn hold(mut stream: TcpStream, line: std::sync::Arc<str>, stop: CancellationToken) {
    let _ = stream.set_nodelay(true);
    if stream.write_all(line.as_bytes()).await.is_err() {
        return;
    }
    let mut buffer = [0u8; 64];
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                let stopped = stream.write_all(STOPPED.as_bytes());
                let _ = tokio::time::timeout(STOPPED_WRITE, stopped).await;
                return;
            }
            read = stream.read(&mut buffer) => match read {
                // Whatever a peer sends is ignored; its end ends the link.
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}
