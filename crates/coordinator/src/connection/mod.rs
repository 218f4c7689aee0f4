//! How kroupier reaches Kafka: the settings a user gives ([`ClusterConfig`]: bootstrap servers,
//! timeouts, backoff; [`Security`]: TLS and SASL), the [`Cluster`] client built from them, and
//! its [`ConnectionError`].
//!
//! Inside, bottom up, each layer using only the ones below it:
//! - settings (`config.rs`, `security/`): plain data and Kafka's client properties; a leaf.
//! - `broker.rs`: one connection to one broker over any byte stream; requests are pipelined
//!   and matched to responses by correlation id; a frame that does not decode closes it.
//! - `versions.rs`: the highest version of each API both sides support, picked from
//!   ApiVersions on connect; a broker too old for kroupier is refused with the Kafka release it
//!   needs.
//! - `connector/`: the one way to connect: TCP, TLS (rustls), ApiVersions, SASL (PLAIN,
//!   SCRAM, OAUTHBEARER), then re-authentication in place when the session has a lifetime.
//! - [`Cluster`]: a bootstrap connection to "any broker" with failover and a capped, jittered
//!   exponential backoff, FindCoordinator (for groups and for transactional ids) with retries,
//!   and one kept connection per coordinator node.
//!
//! The connections themselves are kroupier's internals (shared with its other crates through
//! the `unstable` feature): a [`Cluster`] is what a user builds and hands on, to a task store
//! for example. Its requests are cancel safe: a dropped request either was never sent or is
//! sent and its response discarded, and the connection stays in step.
//!
//! # Security
//!
//! TLS and SASL for broker connections: what Kafka's `security.protocol` `SSL`,
//! `SASL_PLAINTEXT` and `SASL_SSL` do, set by [`ClusterConfig::security`].
//!
//! A new connection goes: TCP connect → TLS handshake (rustls, if [`Security::tls`]) →
//! ApiVersions → SaslHandshake v1 + SaslAuthenticate (if [`Security::sasl`]) → ready, all within
//! the connect timeout. Everything above the connection — requests, pipelining, timeouts — is
//! unchanged: a broker connection runs over any byte stream.
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
//!   ([`ConnectionErrorKind::Tls`]), refused credentials or mechanism
//!   ([`ConnectionErrorKind::Authentication`]) — are not retried: see
//!   [`ConnectionError::is_fatal`].
//! - Secrets are [`Secret`]s: `Debug` shows `***`, and no error or log line carries one.
//!
//! ## Kafka client properties
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
//! ## Examples
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
//! // Certificates and keys load here: a missing file fails now, not at the first request.
//! let cluster = Cluster::new(config)?;
//! # let _ = cluster;
//! # Ok(()) }
//! ```

mod cluster;
mod config;
mod connector;
mod error;
mod security;
#[cfg(test)]
pub(crate) mod tests;
// Internal, shared with kroupier's other crates through `unstable`.
unstable_mod!(pub(crate) broker);
unstable_mod!(pub(crate) versions);

pub(crate) use broker::{BrokerConnection, BrokerNode};
pub use cluster::Cluster;
pub(crate) use cluster::{TRANSACTION_KEY, lookup};
pub use config::{ClusterConfig, ConnectionConfig};
pub(crate) use error::Detail;
pub use error::{ConnectionError, ConnectionErrorKind};
pub use security::{
    ClientIdentity, OAuthBearerToken, Sasl, Secret, Security, SecurityError, SecurityProtocol,
    TlsConfig, TokenProvider, TrustRoots,
};
