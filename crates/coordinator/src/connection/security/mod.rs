//! TLS and SASL for broker connections: what Kafka's `security.protocol` `SSL`, `SASL_PLAINTEXT`
//! and `SASL_SSL` do.
//!
//! A new connection goes: TCP connect → TLS handshake (rustls, if [`Security::tls`]) →
//! ApiVersions → SaslHandshake v1 + SaslAuthenticate (if [`Security::sasl`]) → ready, all within
//! the connect timeout. Everything above the connection — requests, pipelining, timeouts — is
//! unchanged: `BrokerConnection::handshake` already takes any byte stream.
//!
//! - TLS: rustls with the ring provider; trust the CAs of a PEM file or Mozilla's roots; an
//!   optional client certificate (mTLS); host names verified unless turned off.
//! - SASL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (hand-written on `hmac`/`sha2`/`pbkdf2`, as Kafka
//!   speaks it), and OAUTHBEARER with tokens from a [`TokenProvider`].
//! - Session lifetime (KIP-368): when the broker sets one, kroupier re-authenticates in place at
//!   a random 85–95 % of it, as Kafka's clients do: the requests in flight finish, new ones wait,
//!   SaslHandshake and SaslAuthenticate run again on the same connection. If that fails the
//!   connection closes and the next request reconnects.
//! - Failures an operator must fix — a certificate that does not check out
//!   ([`ConnectionError::Tls`]), refused credentials or mechanism
//!   ([`ConnectionError::Authentication`]) — are not retried: see
//!   [`ConnectionError::is_fatal`].
//! - Secrets are [`Secret`]s: `Debug` shows `***`, and no error or log line carries one.
//!
//! # Kafka client properties
//!
//! [`Security::from_properties`] reads these, as Kafka's tools read `--command-config`:
//!
//! | property | what kroupier does with it |
//! |---|---|
//! | `security.protocol` | `PLAINTEXT` (default), `SSL`, `SASL_PLAINTEXT`, `SASL_SSL` |
//! | `sasl.mechanism` | `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`; `OAUTHBEARER` needs a [`TokenProvider`] set in code; Kafka's default `GSSAPI` is not supported |
//! | `sasl.jaas.config` | `PlainLoginModule` / `ScramLoginModule required username="…" password="…";` |
//! | `sasl.username`, `sasl.password` | librdkafka's names, instead of `sasl.jaas.config` |
//! | `ssl.truststore.location` / `ssl.truststore.certificates` | PEM CA certificates (file / inline); neither: Mozilla's roots |
//! | `ssl.truststore.type`, `ssl.keystore.type` | `PEM` (absent means PEM too); `JKS`/`PKCS12` are refused |
//! | `ssl.keystore.location` / `ssl.keystore.key` + `ssl.keystore.certificate.chain` | client certificate for mTLS (file with key + chain / inline) |
//! | `ssl.endpoint.identification.algorithm` | `https` (default) verifies the host name; empty turns that off (warned) |
//!
//! Other `ssl.*`/`sasl.*` keys (cipher suites, protocols, login callbacks…) are ignored with a
//! warning naming them. Values never appear in errors or logs.
//!
//! # Examples
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use kroupier_coordinator::connection::{Cluster, ClusterConfig, Security};
//!
//! let mut config = ClusterConfig::new("broker-1:9094");
//! config.security = Security::from_properties([
//!     ("security.protocol", "SASL_SSL"),
//!     ("sasl.mechanism", "SCRAM-SHA-512"),
//!     (
//!         "sasl.jaas.config",
//!         r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#,
//!     ),
//!     ("ssl.truststore.type", "PEM"),
//!     ("ssl.truststore.location", "/etc/kafka/ca.pem"),
//! ])?;
//! let cluster = Cluster::new(config)?;
//! let broker = cluster.any_broker().await?;
//! # Ok(()) }
//! ```

mod config;
mod properties;
#[cfg(test)]
mod reauth_tests;
mod sasl;
mod scram;
#[cfg(test)]
mod tests;
mod tls;

use std::time::Duration;

use rand::Rng;
use tokio::net::TcpStream;

pub use config::{
    ClientIdentity, OAuthBearerToken, Sasl, Secret, Security, SecurityError, SecurityProtocol,
    TlsConfig, TokenProvider, TrustRoots,
};

use super::broker::{self, BrokerConnection};
use super::config::ConnectionConfig;
use super::error::ConnectionError;

/// Opens secured connections: the TLS client built once from the settings, and the SASL
/// credentials.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    tls: Option<tls::Tls>,
    sasl: Option<Sasl>,
}

impl Connector {
    /// Loads certificates and keys (once, not per connection).
    ///
    /// # Errors
    /// [`SecurityError::Tls`] when a file does not load.
    pub(crate) fn new(security: &Security) -> Result<Self, SecurityError> {
        Ok(Self {
            tls: security.tls.as_ref().map(tls::Tls::new).transpose()?,
            sasl: security.sasl.clone(),
        })
    }

    /// Connects to `addr` (`host:port`): TCP, TLS, ApiVersions, SASL, within
    /// `config.connect_timeout`.
    ///
    /// # Errors
    /// [`ConnectionError::Connect`] if the broker cannot be reached in time,
    /// [`ConnectionError::Tls`] or [`ConnectionError::Authentication`] (fatal), or any error of
    /// [`BrokerConnection::handshake`].
    pub(crate) async fn connect(
        &self,
        addr: &str,
        config: &ConnectionConfig,
    ) -> Result<BrokerConnection, ConnectionError> {
        let connect_error = |reason: String| ConnectionError::Connect {
            addr: addr.to_owned(),
            reason,
        };
        let attempt = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| connect_error(e.to_string()))?;
            // Requests are small and latency matters more than packet count.
            let _ = tcp.set_nodelay(true);
            let connection = match &self.tls {
                Some(tls) => {
                    let stream = tls.handshake(addr, tcp).await?;
                    // A broker that refuses the client's certificate says so with an alert in
                    // answer to the first request (TLS 1.3).
                    let alert = stream.seen();
                    BrokerConnection::handshake(stream, addr, config)
                        .await
                        .map_err(|e| alert.explain(addr, e))?
                }
                None => BrokerConnection::handshake(tcp, addr, config).await?,
            };
            if let Some(sasl) = &self.sasl {
                match sasl::authenticate(&connection, sasl, config.request_timeout).await {
                    Ok(Some(lifetime)) => {
                        tokio::spawn(reauthenticate(
                            connection.downgrade(),
                            sasl.clone(),
                            config.request_timeout,
                            lifetime,
                        ));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        connection.close();
                        return Err(e);
                    }
                }
            }
            Ok(connection)
        };
        match tokio::time::timeout(config.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(connect_error(format!(
                "no connection{} within {:?}",
                match (&self.tls, &self.sasl) {
                    (None, None) => " and ApiVersions answer",
                    (Some(_), None) => ", TLS handshake and ApiVersions answer",
                    (_, Some(_)) => ", handshakes and SASL authentication",
                },
                config.connect_timeout
            ))),
        }
    }
}

/// How long one try to pause a connection for re-authentication may hold new requests back.
const PAUSE_TRY: Duration = Duration::from_millis(250);

/// Keeps a SASL session alive in place (KIP-368): at a random 85–95 % of each session's
/// lifetime, once the requests in flight are answered and with new ones held back, it runs
/// SaslHandshake and SaslAuthenticate again on the same connection, as Kafka's clients do.
/// Requests wait for a few round trips instead of failing with a closed connection. If the
/// broker refuses (credentials changed, say), or the requests in flight outlast the session,
/// the connection closes and the next request reconnects — where a refusal is then fatal.
/// Ends when nothing uses the connection any more.
async fn reauthenticate(
    connection: broker::WeakConnection,
    sasl: Sasl,
    timeout: Duration,
    mut lifetime: Duration,
) {
    loop {
        let at = renew_at(lifetime);
        tracing::debug!(?lifetime, reauthenticate_after = ?at, "SASL session has a lifetime");
        tokio::select! {
            () = connection.closed() => return,
            () = tokio::time::sleep(at) => {}
        }
        // Waits for the requests in flight to be answered. New requests queue behind a waiting
        // pause, so each try is short: a JoinGroup in flight for the whole rebalance must not
        // hold back the requests after it. Past the session's end the broker closes the
        // connection, which ends this task.
        let paused = loop {
            tokio::select! {
                () = connection.closed() => return,
                paused = tokio::time::timeout(PAUSE_TRY, connection.pause()) => match paused {
                    Ok(paused) => break paused,
                    Err(_) => tokio::time::sleep(PAUSE_TRY).await,
                },
            }
        };
        let (Some(_paused), Some(alone)) = (paused, connection.ungated()) else {
            return;
        };
        let renewed = sasl::authenticate(&alone, &sasl, timeout).await;
        drop(alone);
        match renewed {
            Ok(Some(next)) => {
                tracing::debug!(addr = %connection_addr(&connection), "SASL session renewed in place");
                lifetime = next;
            }
            Ok(None) => return,
            Err(error) => {
                connection.close(format!("re-authentication failed ({error}); reconnecting"));
                return;
            }
        }
    }
}

/// The broker's address, for logs.
fn connection_addr(connection: &broker::WeakConnection) -> String {
    connection
        .ungated()
        .map_or_else(|| "?".to_owned(), |c| c.addr().to_owned())
}

/// When to renew within a session of `lifetime`: a random 85–95 % of it, as Kafka's clients
/// pick their re-authentication time, so that many connections do not renew at once.
fn renew_at(lifetime: Duration) -> Duration {
    lifetime.mul_f64(rand::rng().random_range(0.85..0.95))
}
