//! TLS with rustls (ring): the client configuration built once from [`TlsConfig`], the
//! handshake on each new TCP connection, and its failures told apart — a certificate problem is
//! an operator's to fix, a dropped connection is retried.

use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use rustls::AlertDescription;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::connection::Detail;
use crate::connection::error::ConnectionError;
use crate::connection::security::{ClientIdentity, SecurityError, TlsConfig, TrustRoots, Unusable};

/// A TLS client, cheap to clone.
#[derive(Clone)]
pub(crate) struct Tls {
    connector: TlsConnector,
    server_name: Option<ServerName<'static>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

fn tls_error(reason: impl Into<String>) -> SecurityError {
    SecurityError::from(Unusable::Tls {
        reason: reason.into(),
    })
}

impl Tls {
    /// Loads the CA certificates and the client identity and builds the rustls configuration.
    pub(crate) fn new(config: &TlsConfig) -> Result<Self, SecurityError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = Arc::new(root_store(&config.roots)?);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(e.to_string()))?;
        let builder = if config.verify_hostname {
            builder.with_root_certificates(roots)
        } else {
            let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| tls_error(e.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyHostName(inner)))
        };
        let client = match &config.identity {
            None => builder.with_no_client_auth(),
            Some(identity) => {
                let (chain, key) = load_identity(identity)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| tls_error(format!("the client certificate is unusable: {e}")))?
            }
        };
        let server_name = match &config.server_name {
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|_| tls_error(format!("`{name}` is not a valid server name")))?,
            ),
            None => None,
        };
        Ok(Self {
            connector: TlsConnector::from(Arc::new(client)),
            server_name,
        })
    }

    /// The TLS handshake over `tcp` to `addr` (`host:port`).
    ///
    /// # Errors
    /// `Tls` when the certificates do not check out (fatal: retrying cannot
    /// help), `Connect` when the connection drops during the handshake.
    pub(crate) async fn handshake(
        &self,
        addr: &str,
        tcp: TcpStream,
    ) -> Result<AlertWatch<TlsStream<TcpStream>>, ConnectionError> {
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => {
                let host = host_of(addr);
                ServerName::try_from(host.to_owned()).map_err(|_| {
                    ConnectionError::from(Detail::Tls {
                        addr: addr.to_owned(),
                        reason: format!(
                            "`{host}` is not a valid TLS server name; set `TlsConfig::server_name`"
                        ),
                    })
                })?
            }
        };
        let stream = self
            .connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| classify(addr, &name, e))?;
        Ok(AlertWatch {
            inner: stream,
            alert: SeenAlert::default(),
        })
    }
}

/// A TLS stream that remembers the first alert the broker sends once the handshake is done.
///
/// With TLS 1.3 the client's side of the handshake ends before the broker has checked the
/// client's certificate, so a broker that requires one (`ssl.client.auth=required`) and finds
/// it missing or unsigned answers the first request with an alert. The connection sees only a
/// failed read; the alert kept here turns it into a `Tls` that says what to
/// fix (see [`SeenAlert::explain`]).
pub(crate) struct AlertWatch<S> {
    inner: S,
    alert: SeenAlert,
}

/// The alert an [`AlertWatch`] saw, if any, still readable after the stream moved into the
/// connection.
#[derive(Clone, Default)]
pub(crate) struct SeenAlert(Arc<OnceLock<AlertDescription>>);

impl<S> AlertWatch<S> {
    /// A handle to the alert this stream receives, if any.
    pub(crate) fn seen(&self) -> SeenAlert {
        self.alert.clone()
    }
}

impl SeenAlert {
    /// `error` explained by the alert the broker sent, if it sent one: a `Tls`.
    pub(crate) fn explain(&self, addr: &str, error: ConnectionError) -> ConnectionError {
        match self.0.get() {
            Some(alert) => ConnectionError::from(Detail::Tls {
                addr: addr.to_owned(),
                reason: alert_reason(*alert),
            }),
            None => error,
        }
    }
}

/// What an alert from the broker most likely means.
fn alert_reason(alert: AlertDescription) -> String {
    match alert {
        AlertDescription::CertificateRequired => format!(
            "the broker requires a client certificate (alert {alert:?}): set \
             `ssl.keystore.location` to a PEM file with the client's key and certificate"
        ),
        AlertDescription::BadCertificate
        | AlertDescription::UnknownCA
        | AlertDescription::CertificateUnknown
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::CertificateExpired
        | AlertDescription::CertificateRevoked
        | AlertDescription::DecryptError => format!(
            "the broker rejected the client certificate, or its absence (alert {alert:?}): set \
             `ssl.keystore.location` to a PEM file with the client's key and a certificate \
             that a CA the broker trusts signed, valid now and for client authentication"
        ),
        _ => format!(
            "the broker refused the handshake (alert {alert:?}); if it requires client \
             certificates (`ssl.client.auth=required`), set `ssl.keystore.location`"
        ),
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AlertWatch<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Err(error)) = &polled
            && let Some(rustls::Error::AlertReceived(alert)) = error
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            let _ = this.alert.0.set(*alert);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AlertWatch<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The host part of `host:port` (without the brackets of an IPv6 address).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

fn root_store(roots: &TrustRoots) -> Result<RootCertStore, SecurityError> {
    let mut store = RootCertStore::empty();
    let (certificates, from): (Vec<CertificateDer<'static>>, String) = match roots {
        TrustRoots::WebPki => {
            store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            return Ok(store);
        }
        TrustRoots::PemFile(path) => {
            let from = format!("`ssl.truststore.location` ({})", path.display());
            let certificates = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| tls_error(format!("{from}: {e}")))?;
            (certificates, from)
        }
        TrustRoots::Pem(pem) => {
            let from = "`ssl.truststore.certificates`".to_owned();
            let certificates = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| tls_error(format!("{from}: {e}")))?;
            (certificates, from)
        }
    };
    let (added, _ignored) = store.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(tls_error(format!(
            "{from} holds no usable CA certificate (want PEM `BEGIN CERTIFICATE` blocks)"
        )));
    }
    Ok(store)
}

fn load_identity(
    identity: &ClientIdentity,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), SecurityError> {
    let (chain, key, from) = match identity {
        ClientIdentity::PemFile(path) => {
            let from = format!("`ssl.keystore.location` ({})", path.display());
            let chain = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| tls_error(format!("{from}: {e}")))?;
            let key = PrivateKeyDer::from_pem_file(path)
                .map_err(|e| tls_error(format!("{from}: no unencrypted private key ({e})")))?;
            (chain, key, from)
        }
        ClientIdentity::Pem {
            certificate_chain,
            private_key,
        } => {
            let from = "`ssl.keystore.certificate.chain`".to_owned();
            let chain = CertificateDer::pem_slice_iter(certificate_chain.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| tls_error(format!("{from}: {e}")))?;
            let key =
                PrivateKeyDer::from_pem_slice(private_key.expose().as_bytes()).map_err(|_| {
                    tls_error("`ssl.keystore.key` holds no unencrypted PEM private key")
                })?;
            (chain, key, from)
        }
    };
    if chain.is_empty() {
        return Err(tls_error(format!("{from} holds no certificate")));
    }
    Ok((chain, key))
}

/// Turns a failed handshake into an error that says what to fix.
fn classify(addr: &str, name: &ServerName<'_>, error: std::io::Error) -> ConnectionError {
    let tls = |reason: String| {
        ConnectionError::from(Detail::Tls {
            addr: addr.to_owned(),
            reason,
        })
    };
    let rustls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(e)) => tls(match e {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => format!(
                "the broker's certificate is not signed by a trusted CA ({e:?}): set \
                 `ssl.truststore.location` to the CA certificate that signed it"
            ),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the broker's certificate does not name `{}` ({e:?}): connect with a name \
                     or address among its subjectAltNames, or set `TlsConfig::server_name`",
                    name.to_str()
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the broker's certificate has expired ({e:?}): renew it")
            }
            other => format!("the broker's certificate was rejected: {other:?}"),
        }),
        Some(rustls::Error::AlertReceived(alert)) => tls(alert_reason(*alert)),
        Some(other) => tls(format!("{other}")),
        None if matches!(
            error.kind(),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
        ) =>
        {
            ConnectionError::from(Detail::Connect {
                addr: addr.to_owned(),
                reason: format!(
                    "the broker closed the connection during the TLS handshake ({error}); check \
                     that this listener speaks TLS (`security.protocol` SSL or SASL_SSL)"
                ),
            })
        }
        None => ConnectionError::from(Detail::Connect {
            addr: addr.to_owned(),
            reason: format!("TLS handshake: {error}"),
        }),
    }
}

/// Checks the chain like the default verifier but accepts any host name
/// (`ssl.endpoint.identification.algorithm=`).
#[derive(Debug)]
struct AnyHostName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain first and the name last, so a name error means the chain
        // is good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
