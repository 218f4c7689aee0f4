//! HTTPS for the status API: a rustls server configuration from PEM files (the ring provider,
//! as the coordinator's client), and a listener whose connections are TLS streams, for
//! `axum::serve`.
//!
//! Handshakes run concurrently, each bounded by [`HANDSHAKE_TIMEOUT`], so one slow or silent
//! client cannot hold up the others; a failed handshake is logged at debug level and dropped.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client may take to complete its TLS handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn invalid(reason: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, reason)
}

/// The acceptor for the certificate chain in `certificate` and the key in `key` (PEM files).
///
/// # Errors
/// An [`io::ErrorKind::InvalidInput`] error naming the file and what is wrong with it.
pub(crate) fn acceptor(certificate: &Path, key: &Path) -> io::Result<TlsAcceptor> {
    let chain = CertificateDer::pem_file_iter(certificate)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| {
            invalid(format!(
                "the status API certificate {} does not load: {e}",
                certificate.display()
            ))
        })?;
    if chain.is_empty() {
        return Err(invalid(format!(
            "the status API certificate {} holds no PEM certificate",
            certificate.display()
        )));
    }
    // The key's error never quotes the file's contents.
    let private_key = PrivateKeyDer::from_pem_file(key).map_err(|_| {
        invalid(format!(
            "the status API key {} holds no unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)",
            key.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .map_err(|e| {
            invalid(format!(
                "the status API certificate {} and key {} do not make a TLS identity: {e}",
                certificate.display(),
                key.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A TCP listener whose accepted connections have completed a TLS handshake.
pub(crate) struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl TlsListener {
    /// Serves TLS with `acceptor` on `tcp`.
    pub(crate) fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> Self {
        Self {
            tcp,
            acceptor,
            handshakes: JoinSet::new(),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    // Cancel safe: `TcpListener::accept` is, and handshakes in progress live in `self`.
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((tcp, addr)) => {
                        let acceptor = self.acceptor.clone();
                        self.handshakes.spawn(async move {
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                                Ok(Ok(stream)) => Some((stream, addr)),
                                Ok(Err(error)) => {
                                    tracing::debug!(%addr, %error, "status API TLS handshake failed");
                                    None
                                }
                                Err(_) => {
                                    tracing::debug!(%addr, "status API TLS handshake timed out");
                                    None
                                }
                            }
                        });
                    }
                    // Out of file descriptors and the like: wait, as axum's own listener does.
                    Err(error) => {
                        tracing::warn!(%error, "status API cannot accept a connection");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(ready)) = done {
                        return ready;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, RootCertStore};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;

    use super::*;
    use crate::http::access::Access;
    use crate::http::{bind, router, serve};
    use crate::status::{StatusBoard, TaskTable};
    use kroupier_coordinator::connection::Secret;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    }

    fn client() -> TlsConnector {
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_file_iter(data("status-test-ca.pem")).unwrap() {
            roots.add(certificate.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        TlsConnector::from(Arc::new(config))
    }

    /// One HTTPS request; the response's status line and body.
    async fn https(addr: SocketAddr, request: &str) -> String {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut stream = client().connect(name, tcp).await.expect("TLS handshake");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        // A server that closes without close_notify is fine for these tests.
        let _ = stream.read_to_string(&mut response).await;
        response
    }

    #[tokio::test]
    async fn serves_https_with_a_token_and_refuses_plain_http() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let acceptor =
            acceptor(&data("status-test-cert.pem"), &data("status-test-key.pem")).unwrap();
        let board = StatusBoard::new("w", "g", 0, TaskTable::new());
        let access = Access {
            token: Some(Secret::new("s3cret-token")),
            protect_reads: false,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            Some(acceptor),
            access.protect(router(
                board,
                crate::runtime::SharedDesired::default(),
                None,
                None,
            )),
            async {
                let _ = stopped.await;
            },
        ));
        // A silent client does not hold up the handshakes of others.
        let _silent = TcpStream::connect(addr).await.unwrap();

        let health = https(
            addr,
            "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(health.starts_with("HTTP/1.1 200 OK"), "{health}");
        let refused = https(
            addr,
            "POST /tasks/a/restart HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
        let allowed = https(
            addr,
            "POST /tasks/a/restart HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
             Authorization: Bearer s3cret-token\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        // Past the token check: this worker has no supervisor to restart with.
        assert!(allowed.starts_with("HTTP/1.1 404"), "{allowed}");
        assert!(allowed.contains("restarts are not enabled"), "{allowed}");

        // Plain HTTP on the HTTPS port gets no HTTP answer.
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let _ = plain.read_to_end(&mut answer).await;
        assert!(
            !answer.starts_with(b"HTTP/1.1 200"),
            "plain HTTP was served"
        );

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[test]
    fn files_that_do_not_load_are_named() {
        let error = acceptor(&data("missing.pem"), &data("status-test-key.pem"))
            .err()
            .expect("a missing certificate fails");
        assert!(error.to_string().contains("missing.pem"), "{error}");
        // A certificate is no key: the error names the file, not its contents.
        let error = acceptor(&data("status-test-cert.pem"), &data("status-test-cert.pem"))
            .err()
            .expect("a certificate as the key fails");
        assert!(
            error.to_string().contains("no unencrypted PEM private key"),
            "{error}"
        );
        assert!(!error.to_string().contains("BEGIN"), "{error}");
    }
}
