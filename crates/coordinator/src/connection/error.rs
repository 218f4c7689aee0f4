//! Errors of the connection layer, each with the broker address or API it concerns and what to
//! do next.

use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;

use super::security::SecurityError;
use crate::wire::WireError;

/// What went wrong talking to a broker. Its message names the broker or setting and says what
/// to do next; [`kind`](Self::kind) sorts it for code, and [`is_fatal`](Self::is_fatal) says
/// whether to stop rather than retry.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ConnectionError(Detail);

/// What kind of [`ConnectionError`] happened, for code that acts on it (the message says the
/// rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionErrorKind {
    /// A setting of [`ClusterConfig`](super::ClusterConfig) or its security cannot work (a bad
    /// field, a property, a certificate file that does not load): fix the configuration.
    InvalidConfig,
    /// The TLS handshake failed on the broker's certificate or the client's: fatal, an operator
    /// must fix the certificates or the settings.
    Tls,
    /// The broker refused SASL authentication (mechanism, credentials): fatal.
    Authentication,
    /// No broker could be reached in time (one address, or every bootstrap server): retry with
    /// backoff, and check the addresses and the network.
    Unreachable,
    /// The connection failed or was closed (by either side, or after an earlier error):
    /// reconnect.
    Disconnected,
    /// The broker sent bytes that are not Kafka's protocol, or a request could not be encoded
    /// at the version negotiated.
    Protocol,
    /// A request got no answer within its timeout; the connection was closed.
    Timeout,
    /// The broker is too old for kroupier or lacks an API it needs: upgrade the broker.
    UnsupportedBroker,
    /// The broker answered with a Kafka error code (retriable or not, as the message says).
    Kafka,
    /// No coordinator was found for the group before the lookup timeout.
    CoordinatorNotFound,
}

/// The error itself, with the fields its message is made of (crate-internal: code in this crate
/// constructs and matches it; users see the message and the [`ConnectionErrorKind`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Detail {
    /// The configuration is invalid.
    #[error("invalid connection configuration: `{field}` {reason}")]
    InvalidConfig {
        /// The field at fault.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The security settings cannot be used (a bad property, a CA file that does not load).
    #[error("invalid security configuration: {0}")]
    InvalidSecurity(SecurityError),
    /// The TLS handshake failed on the broker's certificate or the client's: retrying cannot
    /// help, an operator must fix the certificates or the settings.
    #[error("TLS handshake with broker {addr} failed: {reason}")]
    Tls {
        /// The broker's `host:port`.
        addr: String,
        /// What failed and what to change.
        reason: String,
    },
    /// The broker refused SASL authentication (UNSUPPORTED_SASL_MECHANISM,
    /// SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE, or a SCRAM server proof that does not
    /// check out): retrying cannot help.
    #[error("SASL {mechanism} authentication with broker {addr} failed: {reason}")]
    Authentication {
        /// The broker's `host:port`.
        addr: String,
        /// The mechanism, as `sasl.mechanism` spells it.
        mechanism: &'static str,
        /// What failed and what to change.
        reason: String,
    },
    /// The TCP connection could not be made in time.
    #[error(
        "could not connect to broker {addr}: {reason}; check the address and that the broker \
         listens there (retry with backoff)"
    )]
    Connect {
        /// The broker's `host:port`.
        addr: String,
        /// The IO error, or the timeout.
        reason: String,
    },
    /// None of the bootstrap brokers could be reached.
    #[error(
        "no bootstrap broker reachable ({}); check `bootstrap_servers` and the network, then retry",
        attempts.join("; ")
    )]
    NoBrokerReachable {
        /// One line per address tried: `addr: error`.
        attempts: Vec<String>,
    },
    /// The connection is closed (by either side, or after an earlier error).
    #[error("connection to broker {addr} is closed: {reason}; reconnect")]
    Closed {
        /// The broker's `host:port`.
        addr: String,
        /// Why it closed.
        reason: String,
    },
    /// A frame from the broker did not decode; the connection has been closed.
    #[error("broker {addr} sent a frame kroupier cannot read: {source}")]
    Wire {
        /// The broker's `host:port`.
        addr: String,
        /// The decoding error.
        #[source]
        source: WireError,
    },
    /// A request could not be encoded (a field set that the negotiated version does not carry).
    #[error("could not encode a request for broker {addr}: {source}")]
    Encode {
        /// The broker's `host:port`.
        addr: String,
        /// The encoding error.
        #[source]
        source: WireError,
    },
    /// The broker answered a correlation id no request is waiting for; the connection has been
    /// closed.
    #[error(
        "broker {addr} answered correlation id {correlation_id}, which no request is waiting \
         for; the connection was closed, reconnect"
    )]
    UnexpectedCorrelationId {
        /// The broker's `host:port`.
        addr: String,
        /// The id in the response.
        correlation_id: i32,
    },
    /// No response came within the request timeout; the connection has been closed (as Kafka's
    /// clients do), since the response may still arrive later.
    #[error(
        "{api_key:?} to broker {addr} got no response within {timeout:?}; the connection was \
         closed, retry on a new one (raise `request_timeout` if the broker is slow)"
    )]
    RequestTimeout {
        /// The broker's `host:port`.
        addr: String,
        /// The request's API.
        api_key: ApiKey,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// The broker does not offer an API kroupier needs.
    #[error(
        "broker {addr} does not offer {api_key:?}; kroupier needs Kafka {kafka} or later for it"
    )]
    MissingApi {
        /// The broker's `host:port`.
        addr: String,
        /// The API.
        api_key: ApiKey,
        /// The first Kafka release with the versions kroupier needs.
        kafka: &'static str,
    },
    /// The broker's versions of an API do not overlap kroupier's.
    #[error(
        "broker {addr} supports {api_key:?} v{broker_min}..=v{broker_max}, kroupier needs \
         v{min}..=v{max}: upgrade the broker to Kafka {kafka} or later"
    )]
    UnsupportedBroker {
        /// The broker's `host:port`.
        addr: String,
        /// The API.
        api_key: ApiKey,
        /// The broker's lowest version.
        broker_min: i16,
        /// The broker's highest version.
        broker_max: i16,
        /// kroupier's lowest usable version.
        min: i16,
        /// kroupier's highest known version.
        max: i16,
        /// The first Kafka release with version `min`.
        kafka: &'static str,
    },
    /// A request was sent for an API this connection did not negotiate.
    #[error("{api_key:?} was not negotiated with broker {addr}; it does not offer the API")]
    NotNegotiated {
        /// The broker's `host:port`.
        addr: String,
        /// The API.
        api_key: ApiKey,
    },
    /// The broker answered with an error code where the connection layer cannot go on.
    #[error(
        "broker answered {api_key:?} with {error} (code {code}){}; {}",
        message_suffix(.message),
        if error.is_retriable() { "retriable: retry with backoff" } else { "not retriable: fix the cause (permissions, group id, broker version) before retrying" }
    )]
    Kafka {
        /// The API.
        api_key: ApiKey,
        /// The error code.
        code: i16,
        /// The error, as kafka-protocol names it.
        error: ResponseError,
        /// The broker's error message, if any.
        message: Option<String>,
    },
    /// No coordinator was found for the group before the lookup timeout.
    #[error(
        "no coordinator found for group `{group}` within {timeout:?} (last: {last}); check that \
         the cluster is healthy and `__consumer_offsets` is available, then retry"
    )]
    CoordinatorNotFound {
        /// The group.
        group: String,
        /// The lookup timeout that passed.
        timeout: Duration,
        /// The last error seen.
        last: String,
    },
}

fn message_suffix(message: &Option<String>) -> String {
    match message {
        Some(m) if !m.is_empty() => format!(": {m}"),
        _ => String::new(),
    }
}

impl From<Detail> for ConnectionError {
    fn from(detail: Detail) -> Self {
        Self(detail)
    }
}

impl From<SecurityError> for ConnectionError {
    fn from(error: SecurityError) -> Self {
        Self(Detail::InvalidSecurity(error))
    }
}

impl ConnectionError {
    /// What kind of error this is.
    pub fn kind(&self) -> ConnectionErrorKind {
        use ConnectionErrorKind as Kind;
        match &self.0 {
            Detail::InvalidConfig { .. } | Detail::InvalidSecurity(_) => Kind::InvalidConfig,
            Detail::Tls { .. } => Kind::Tls,
            Detail::Authentication { .. } => Kind::Authentication,
            Detail::Connect { .. } | Detail::NoBrokerReachable { .. } => Kind::Unreachable,
            Detail::Closed { .. } => Kind::Disconnected,
            Detail::Wire { .. }
            | Detail::Encode { .. }
            | Detail::UnexpectedCorrelationId { .. } => Kind::Protocol,
            Detail::RequestTimeout { .. } => Kind::Timeout,
            Detail::MissingApi { .. }
            | Detail::UnsupportedBroker { .. }
            | Detail::NotNegotiated { .. } => Kind::UnsupportedBroker,
            Detail::Kafka { .. } => Kind::Kafka,
            Detail::CoordinatorNotFound { .. } => Kind::CoordinatorNotFound,
        }
    }

    /// The error's fields, for the code of this crate that acts on them.
    pub(crate) fn detail(&self) -> &Detail {
        &self.0
    }

    /// The error's fields, by value.
    pub(crate) fn into_detail(self) -> Detail {
        self.0
    }

    /// Whether retrying cannot help: the security settings are unusable, or the broker refused
    /// the TLS handshake or the SASL credentials. A member stops on these with the error.
    pub fn is_fatal(&self) -> bool {
        matches!(
            &self.0,
            Detail::InvalidSecurity(_) | Detail::Tls { .. } | Detail::Authentication { .. }
        )
    }

    /// Whether the connection this error came from is gone (reconnect before retrying).
    pub(crate) fn is_disconnect(&self) -> bool {
        matches!(
            &self.0,
            Detail::Closed { .. }
                | Detail::Wire { .. }
                | Detail::UnexpectedCorrelationId { .. }
                | Detail::RequestTimeout { .. }
                | Detail::Connect { .. }
                | Detail::NoBrokerReachable { .. }
        )
    }
}
