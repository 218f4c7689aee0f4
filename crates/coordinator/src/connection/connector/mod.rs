//! Opens secured broker connections, the one way kroupier connects: TCP connect → TLS
//! handshake (rustls, if [`Security::tls`]) → ApiVersions → SaslHandshake v1 +
//! SaslAuthenticate (if [`Security::sasl`]) → ready, all within the connect timeout; then keeps
//! a SASL session alive in place (KIP-368).
//!
//! This layer sits above [`BrokerConnection`], which runs over any byte stream
//! (`BrokerConnection::handshake`), and below the [`Cluster`](super::Cluster); it reads the
//! settings of `security` (a leaf: plain data and Kafka's client properties), and uses a
//! connection only through its crate API (`send_at`, and the re-authentication gate of
//! `broker::WeakConnection`).

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

use super::broker::{self, BrokerConnection};
use super::config::ConnectionConfig;
use super::error::ConnectionError;
use super::security::{Sasl, Security, SecurityError};
use crate::connection::Detail;

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
    /// A [`SecurityError`] when a file does not load.
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
    /// `Connect` if the broker cannot be reached in time,
    /// `Tls` or `Authentication` (fatal), or any error of
    /// [`BrokerConnection::handshake`].
    pub(crate) async fn connect(
        &self,
        addr: &str,
        config: &ConnectionConfig,
    ) -> Result<BrokerConnection, ConnectionError> {
        let connect_error = |reason: String| {
            ConnectionError::from(Detail::Connect {
                addr: addr.to_owned(),
                reason,
            })
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
