//! TLS on the coordinator's listener: the rustls server configuration (the ring provider, as
//! kroupier's clients use) built once from PEM files, and each connection's handshake.
//!
//! With a client CA the listener requires a client certificate signed by it (mutual TLS, Kafka's
//! `ssl.client.auth=required`); without one it asks for none (`ssl.client.auth=none`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete its TLS handshake before its connection is closed:
/// a silent client holds a connection slot no longer than this.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS settings of the listener: the server's certificate and key, and optionally the CA that
/// signs the client certificates it then requires.
///
/// Every file is PEM, as Kafka's `ssl.keystore.type=PEM`: the certificate chain leaf first, an
/// unencrypted PKCS#8, PKCS#1 or SEC1 key. The certificate and the key may be one file (Kafka's
/// PEM key store). Clients verify the server's name against the certificate's subjectAltNames,
/// so it must name the host they connect to (the advertised host: `127.0.0.1` by default).
///
/// # Examples
/// ```no_run
/// # async fn example() -> Result<(), kroupier_embedded::EmbeddedError> {
/// use kroupier_embedded::{EmbeddedCoordinator, ServerTls};
///
/// let coordinator = EmbeddedCoordinator::builder()
///     .tls(ServerTls::new("/etc/kroupier/server.pem", "/etc/kroupier/server.key")
///         .require_client_certificates("/etc/kroupier/client-ca.pem"))
///     .bind("127.0.0.1:9093")
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// The PEM certificate chain the server presents, leaf first.
    pub certificate: PathBuf,
    /// The PEM private key of the leaf certificate (unencrypted).
    pub key: PathBuf,
    /// The PEM CA certificates that sign client certificates. `Some`: every client must present
    /// a certificate signed by one of them (mutual TLS); `None` (the default): no client
    /// certificate is asked for.
    pub client_ca: Option<PathBuf>,
}

impl ServerTls {
    /// Serves TLS with the chain in `certificate` and the key in `key`, asking clients for no
    /// certificate.
    pub fn new(certificate: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self {
            certificate: certificate.into(),
            key: key.into(),
            client_ca: None,
        }
    }

    /// Requires every client to present a certificate signed by a CA in `client_ca` (mutual
    /// TLS).
    pub fn require_client_certificates(mut self, client_ca: impl Into<PathBuf>) -> Self {
        self.client_ca = Some(client_ca.into());
        self
    }

    /// Loads the files and builds the acceptor.
    ///
    /// # Errors
    /// Why a file does not load, naming it (never quoting a key).
    pub(crate) fn acceptor(&self) -> Result<Acceptor, String> {
        let chain = certificates(&self.certificate, "certificate")?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|_| {
            format!(
                "the key {} holds no unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1), or \
                 cannot be read",
                self.key.display()
            )
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = rustls::RootCertStore::empty();
                let (added, _ignored) =
                    roots.add_parsable_certificates(certificates(path, "client CA")?);
                if added == 0 {
                    return Err(format!(
                        "the client CA {} holds no usable CA certificate",
                        path.display()
                    ));
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .map_err(|e| format!("the client CA {}: {e}", path.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(chain, key).map_err(|e| {
            format!(
                "the certificate {} and the key {} do not make a TLS identity: {e}",
                self.certificate.display(),
                self.key.display()
            )
        })?;
        Ok(Acceptor(TlsAcceptor::from(Arc::new(config))))
    }
}

/// The TLS server built from a [`ServerTls`], cheap to clone.
#[derive(Clone)]
pub(crate) struct Acceptor(pub(crate) TlsAcceptor);

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor").finish_non_exhaustive()
    }
}

/// The PEM certificates in `path`, at least one.
fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| format!("the {what} {} does not load: {e}", path.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "the {what} {} holds no PEM certificate (`BEGIN CERTIFICATE`)",
            path.display()
        ));
    }
    Ok(chain)
}

/// Why a handshake failed, in words an operator can act on.
pub(crate) fn explain(error: &std::io::Error) -> String {
    let rustls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::NoCertificatesPresented) => {
            "the client presented no certificate, and this listener requires one signed by its \
             client CA"
                .to_owned()
        }
        Some(rustls::Error::InvalidCertificate(e)) => {
            format!("the client's certificate was rejected ({e:?}); is it signed by the client CA?")
        }
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the client refused the handshake (alert {alert:?}); does it trust the CA that \
             signed this server's certificate?"
        ),
        Some(rustls::Error::InvalidMessage(_)) => {
            format!("{error}; is the client speaking TLS (security.protocol SSL or SASL_SSL)?")
        }
        _ => error.to_string(),
    }
}
