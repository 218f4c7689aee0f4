//! The typed security settings: TLS, SASL, and the secrets they hold. A leaf: plain data, and
//! Kafka's client properties read into it (`properties.rs`); the connector
//! (`connection/connector/`) is what applies them. The guide is the
//! [`connection`](super) module's.

mod properties;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use futures::future::BoxFuture;

/// A password, key or token: kept as given, never shown. `Debug` prints `Secret(***)`; there
/// is no `Display`, so a secret cannot end up in a log line or an error by `{}` either.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the code that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

/// Kafka's `security.protocol`: whether connections use TLS, SASL, both or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// Plain TCP, no authentication (the default, as in Kafka).
    #[default]
    Plaintext,
    /// TLS, authenticated by a client certificate if the broker asks for one.
    Ssl,
    /// SASL over plain TCP: credentials travel unencrypted with PLAIN.
    SaslPlaintext,
    /// SASL over TLS: what managed Kafka services use.
    SaslSsl,
}

impl SecurityProtocol {
    /// The name Kafka uses: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (its `Display`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether connections are wrapped in TLS.
    pub(crate) fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub(crate) fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SecurityProtocol {
    type Err = String;

    /// Parses Kafka's names, in any case (as Kafka does).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(Self::Plaintext),
            "SSL" => Ok(Self::Ssl),
            "SASL_PLAINTEXT" => Ok(Self::SaslPlaintext),
            "SASL_SSL" => Ok(Self::SaslSsl),
            _ => Err(format!(
                "is `{s}`; use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
            )),
        }
    }
}

/// The certificates a client trusts to sign the brokers' certificates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TrustRoots {
    /// Mozilla's root programme, as shipped by the `webpki-roots` crate (the default): right for
    /// brokers with publicly signed certificates (managed services), independent of the host's
    /// certificate store; a private CA needs [`PemFile`](Self::PemFile).
    #[default]
    WebPki,
    /// The PEM certificates in this file (Kafka's `ssl.truststore.location` with
    /// `ssl.truststore.type=PEM`), for example a private CA or the host's bundle
    /// (`/etc/ssl/certs/ca-certificates.crt`).
    PemFile(PathBuf),
    /// These PEM certificates (Kafka's `ssl.truststore.certificates`).
    Pem(String),
}

/// The client's own certificate, for brokers that require one (mutual TLS,
/// `ssl.client.auth=required`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// One PEM file holding an unencrypted PKCS#8 (or PKCS#1/SEC1) private key and the
    /// certificate chain, leaf first (Kafka's `ssl.keystore.location` with
    /// `ssl.keystore.type=PEM`).
    PemFile(PathBuf),
    /// The chain and the key as PEM text (Kafka's `ssl.keystore.certificate.chain` and
    /// `ssl.keystore.key`).
    Pem {
        /// The certificate chain, leaf first.
        certificate_chain: String,
        /// The unencrypted private key.
        private_key: Secret,
    },
}

/// TLS settings of every broker connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// Which CAs to trust. Default [`TrustRoots::WebPki`].
    pub roots: TrustRoots,
    /// The client certificate. Default `None`: brokers with `ssl.client.auth=required` refuse
    /// the handshake.
    pub identity: Option<ClientIdentity>,
    /// The name to verify the broker's certificate against and to send as SNI. Default `None`:
    /// the host of the address connected to (a bootstrap server, or the host a broker
    /// advertises). Set it when brokers are reached through an address their certificates do not
    /// name (a tunnel, a load balancer).
    pub server_name: Option<String>,
    /// Whether the broker's certificate must name the host connected to. Default `true` (Kafka's
    /// `ssl.endpoint.identification.algorithm=https`). Turning it off still checks the chain but
    /// lets anyone holding *any* certificate from a trusted CA pose as the broker.
    pub verify_hostname: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            roots: TrustRoots::default(),
            identity: None,
            server_name: None,
            verify_hostname: true,
        }
    }
}

/// An OAUTHBEARER token, as a [`TokenProvider`] hands it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerToken {
    /// The token (a JWT for most identity providers).
    pub value: Secret,
    /// The authorization id sent beside it (`a=` in the GS2 header). Default `None`.
    pub authorization_id: Option<String>,
    /// SASL extensions (KIP-342), `key=value` pairs the broker's validator may read. Default
    /// empty.
    pub extensions: Vec<(String, String)>,
}

impl OAuthBearerToken {
    /// A token with no authorization id or extensions.
    pub fn new(value: impl Into<Secret>) -> Self {
        Self {
            value: value.into(),
            authorization_id: None,
            extensions: Vec::new(),
        }
    }
}

/// Where OAUTHBEARER tokens come from: the application fetches them (from its identity provider,
/// a file, a sidecar) and kroupier asks for one at every new connection.
///
/// The broker ends a session when its token expires; kroupier reconnects before that, with a
/// fresh token (see [`Sasl`]).
///
/// # Examples
/// ```
/// use futures::future::BoxFuture;
/// use kroupier_coordinator::connection::{OAuthBearerToken, TokenProvider};
///
/// struct FromEnv;
///
/// impl TokenProvider for FromEnv {
///     fn token(&self) -> BoxFuture<'_, Result<OAuthBearerToken, String>> {
///         Box::pin(async {
///             let token = std::env::var("KAFKA_TOKEN").map_err(|e| format!("KAFKA_TOKEN: {e}"))?;
///             Ok(OAuthBearerToken::new(token))
///         })
///     }
/// }
/// ```
pub trait TokenProvider: Send + Sync + 'static {
    /// A currently valid token, or why there is none (shown in the connection error; keep the
    /// token itself out of it).
    fn token(&self) -> BoxFuture<'_, Result<OAuthBearerToken, String>>;
}

/// A SASL mechanism and its credentials.
///
/// Sessions: when the broker gives the session a lifetime (always for OAUTHBEARER, whose token
/// expires; for the others only with `connections.max.reauth.ms`), kroupier re-authenticates in
/// place at a random 85–95 % of it (KIP-368; an OAUTHBEARER session asks the provider for a
/// token again): requests in flight finish first, new ones wait for the few round trips.
#[derive(Clone)]
pub enum Sasl {
    /// PLAIN (RFC 4616): the password travels as is, so use it over TLS only.
    Plain {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// SCRAM-SHA-256 (RFC 5802/7677): the password never leaves the client.
    ScramSha256 {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// SCRAM-SHA-512: as SCRAM-SHA-256, with SHA-512.
    ScramSha512 {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// OAUTHBEARER (KIP-255) with tokens from the application's provider.
    OAuthBearer(Arc<dyn TokenProvider>),
}

impl Sasl {
    /// The mechanism's name, as Kafka's `sasl.mechanism` spells it.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Self::Plain { .. } => "PLAIN",
            Self::ScramSha256 { .. } => "SCRAM-SHA-256",
            Self::ScramSha512 { .. } => "SCRAM-SHA-512",
            Self::OAuthBearer(_) => "OAUTHBEARER",
        }
    }

    fn username(&self) -> Option<&str> {
        match self {
            Self::Plain { username, .. }
            | Self::ScramSha256 { username, .. }
            | Self::ScramSha512 { username, .. } => Some(username),
            Self::OAuthBearer(_) => None,
        }
    }
}

impl fmt::Debug for Sasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Sasl");
        s.field("mechanism", &self.mechanism());
        if let Some(username) = self.username() {
            s.field("username", &username).field("password", &"***");
        }
        s.finish()
    }
}

impl PartialEq for Sasl {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::OAuthBearer(a), Self::OAuthBearer(b)) => Arc::ptr_eq(a, b),
            (
                Self::Plain {
                    username: a,
                    password: p,
                },
                Self::Plain {
                    username: b,
                    password: q,
                },
            )
            | (
                Self::ScramSha256 {
                    username: a,
                    password: p,
                },
                Self::ScramSha256 {
                    username: b,
                    password: q,
                },
            )
            | (
                Self::ScramSha512 {
                    username: a,
                    password: p,
                },
                Self::ScramSha512 {
                    username: b,
                    password: q,
                },
            ) => a == b && p == q,
            _ => false,
        }
    }
}

impl Eq for Sasl {}

/// How every broker connection is secured: TLS, SASL, both or neither.
///
/// The default is PLAINTEXT (no TLS, no SASL), as in Kafka. Build it in code, or from Kafka's
/// client properties with [`Security::from_properties`].
///
/// # Examples
/// ```
/// use kroupier_coordinator::connection::{Sasl, Security, SecurityProtocol, TlsConfig};
///
/// let security = Security {
///     tls: Some(TlsConfig::default()),
///     sasl: Some(Sasl::ScramSha512 {
///         username: "alice".to_owned(),
///         password: "alice-secret".into(),
///     }),
/// };
/// assert_eq!(security.protocol(), SecurityProtocol::SaslSsl);
/// assert!(!format!("{security:?}").contains("alice-secret"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Security {
    /// TLS settings; `None` (the default) connects over plain TCP.
    pub tls: Option<TlsConfig>,
    /// SASL mechanism and credentials; `None` (the default) does not authenticate.
    pub sasl: Option<Sasl>,
}

impl Security {
    /// The `security.protocol` these settings amount to.
    pub fn protocol(&self) -> SecurityProtocol {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => SecurityProtocol::Plaintext,
            (true, false) => SecurityProtocol::Ssl,
            (false, true) => SecurityProtocol::SaslPlaintext,
            (true, true) => SecurityProtocol::SaslSsl,
        }
    }
}

/// Security settings that cannot be used: a property with a bad value, or a certificate or key
/// that does not load. Its message says what to change, and never carries a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct SecurityError(Unusable);

impl From<Unusable> for SecurityError {
    fn from(unusable: Unusable) -> Self {
        Self(unusable)
    }
}

impl SecurityError {
    /// The Kafka client property at fault (never its value), when a property's value is the
    /// cause; `None` when TLS files or keys do not load.
    pub fn property(&self) -> Option<&str> {
        match &self.0 {
            Unusable::InvalidProperty { key, .. } => Some(key),
            Unusable::Tls { .. } => None,
        }
    }
}

/// What is unusable, with the parts of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unusable {
    /// A Kafka client property has a value kroupier cannot use.
    #[error("`{key}` {reason}")]
    InvalidProperty {
        /// The property.
        key: String,
        /// What is wrong and what to set instead.
        reason: String,
    },
    /// The TLS settings do not load (a missing file, no certificate in it, a bad key).
    #[error("TLS settings unusable: {reason}")]
    Tls {
        /// What is wrong and what to change.
        reason: String,
    },
}
