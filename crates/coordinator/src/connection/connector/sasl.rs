//! SASL authentication on a fresh connection: SaslHandshake v1, then one SaslAuthenticate per
//! client token (KIP-152), as Kafka's `SaslClientAuthenticator` does after ApiVersions.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::scram::{ScramClient, ScramHash};
use crate::connection::Detail;
use crate::connection::broker::BrokerConnection;
use crate::connection::error::ConnectionError;
use crate::connection::security::{OAuthBearerToken, Sasl};

/// UNSUPPORTED_SASL_MECHANISM.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// ILLEGAL_SASL_STATE.
const ILLEGAL_SASL_STATE: i16 = 34;
/// SASL_AUTHENTICATION_FAILED.
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// Authenticates `connection` with `sasl`, each request waiting at most `timeout`. Returns the
/// session lifetime the broker set, if any.
///
/// # Errors
/// `Authentication` when the broker refuses the mechanism or the
/// credentials (fatal), or any error of the connection.
pub(crate) async fn authenticate(
    connection: &BrokerConnection,
    sasl: &Sasl,
    timeout: Duration,
) -> Result<Option<Duration>, ConnectionError> {
    let mechanism = sasl.mechanism();
    let failed = |reason: String| {
        ConnectionError::from(Detail::Authentication {
            addr: connection.addr().to_owned(),
            mechanism,
            reason,
        })
    };
    match connection.versions().get(ApiKey::SaslHandshake) {
        Some(1..) => {}
        _ => {
            return Err(failed(
                "the broker offers no SaslHandshake v1 (Kafka 1.0+): is this listener SASL, \
                 and the broker recent enough?"
                    .to_owned(),
            ));
        }
    }
    let authenticate_version = connection.version(ApiKey::SaslAuthenticate)?;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    let response = connection.send_at(&handshake, 1, timeout).await?;
    match response.error_code {
        0 => {}
        UNSUPPORTED_SASL_MECHANISM => {
            let offered: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(failed(format!(
                "the broker does not enable {mechanism} on this listener (it offers {}): set \
                 `sasl.mechanism` to one of those, or enable {mechanism} in the broker's \
                 `sasl.enabled.mechanisms`",
                offered.join(", ")
            )));
        }
        code => return Err(failed(kafka_reason(code, None))),
    }
    let send = |token: Vec<u8>| async move {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let response = connection
            .send_at(&request, authenticate_version, timeout)
            .await?;
        if response.error_code != 0 {
            return Err(refused(&response, mechanism, connection.addr()));
        }
        Ok::<_, ConnectionError>(response)
    };
    let last = match sasl {
        Sasl::Plain { username, password } => {
            send(plain_token(username, password.expose())).await?
        }
        Sasl::ScramSha256 { username, password } | Sasl::ScramSha512 { username, password } => {
            let hash = if matches!(sasl, Sasl::ScramSha256 { .. }) {
                ScramHash::Sha256
            } else {
                ScramHash::Sha512
            };
            let mut scram = ScramClient::new(hash, username, password.expose());
            let server_first = send(scram.client_first()).await?;
            // Hi() is PBKDF2 with 4096..=16384 iterations: milliseconds in an optimised build,
            // a few hundred in a debug one. On the blocking pool it stalls no task of the
            // runtime, however often sessions are renewed.
            let (scram, client_final) = tokio::task::spawn_blocking(move || {
                let client_final = scram.client_final(&server_first.auth_bytes);
                (scram, client_final)
            })
            .await
            .map_err(|e| failed(format!("the SCRAM key derivation did not finish: {e}")))?;
            let client_final = client_final.map_err(&failed)?;
            let server_final = send(client_final).await?;
            scram
                .verify_server_final(&server_final.auth_bytes)
                .map_err(&failed)?;
            server_final
        }
        Sasl::OAuthBearer(provider) => {
            let token = provider
                .token()
                .await
                .map_err(|e| failed(format!("the token provider has no token: {e}")))?;
            let response = send(oauth_bearer_token(&token).map_err(&failed)?).await?;
            if !response.auth_bytes.is_empty() {
                // A JSON challenge: the token was refused. RFC 7628 says to answer 0x01, after
                // which the broker fails the exchange with its reason.
                let challenge = String::from_utf8_lossy(&response.auth_bytes).into_owned();
                return Err(
                    match send(vec![0x01]).await.map_err(ConnectionError::into_detail) {
                        Err(Detail::Authentication { reason, .. }) => {
                            failed(format!("{reason} (broker said {challenge})"))
                        }
                        _ => failed(format!("the broker refused the token: {challenge}")),
                    },
                );
            }
            response
        }
    };
    Ok(u64::try_from(last.session_lifetime_ms)
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis))
}

fn refused(
    response: &SaslAuthenticateResponse,
    mechanism: &'static str,
    addr: &str,
) -> ConnectionError {
    let message = response.error_message.as_ref().map(|m| m.as_str());
    let reason = match response.error_code {
        SASL_AUTHENTICATION_FAILED => format!(
            "{}; check the username and password (`sasl.jaas.config`) and that the user has a \
             {mechanism} credential on the cluster",
            message.unwrap_or("the broker rejected the credentials")
        ),
        code => kafka_reason(code, message),
    };
    ConnectionError::from(Detail::Authentication {
        addr: addr.to_owned(),
        mechanism,
        reason,
    })
}

fn kafka_reason(code: i16, message: Option<&str>) -> String {
    let name = match code {
        ILLEGAL_SASL_STATE => "ILLEGAL_SASL_STATE".to_owned(),
        other => format!(
            "{:?}",
            kafka_protocol::ResponseError::try_from_code(other)
                .unwrap_or(kafka_protocol::ResponseError::Unknown(other))
        ),
    };
    match message {
        Some(m) if !m.is_empty() => format!("the broker answered {name} (code {code}): {m}"),
        _ => format!("the broker answered {name} (code {code})"),
    }
}

/// PLAIN's one token (RFC 4616): empty authorization id, user, password, NUL-separated.
pub(crate) fn plain_token(username: &str, password: &str) -> Vec<u8> {
    let mut token = Vec::with_capacity(username.len() + password.len() + 2);
    token.push(0);
    token.extend_from_slice(username.as_bytes());
    token.push(0);
    token.extend_from_slice(password.as_bytes());
    token
}

/// OAUTHBEARER's client-first message (RFC 7628 §3.1, Kafka's
/// `OAuthBearerClientInitialResponse`): `n,[a=authzid],^Aauth=Bearer <token>[^Akey=value]…^A^A`.
pub(crate) fn oauth_bearer_token(token: &OAuthBearerToken) -> Result<Vec<u8>, String> {
    let value = token.value.expose();
    let token_ok = !value.is_empty()
        && value
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_~+/.".contains(&b));
    if !token_ok {
        return Err("the token has characters a bearer token may not hold".to_owned());
    }
    let mut message = String::from("n,");
    if let Some(id) = &token.authorization_id {
        message.push_str("a=");
        message.push_str(&id.replace('=', "=3D").replace(',', "=2C"));
    }
    message.push_str(",\x01auth=Bearer ");
    message.push_str(value);
    for (key, value) in &token.extensions {
        let key_ok =
            !key.is_empty() && key != "auth" && key.bytes().all(|b| b.is_ascii_alphabetic());
        let value_ok = value
            .bytes()
            .all(|b| (0x21..=0x7E).contains(&b) || b" \t\r\n".contains(&b));
        if !key_ok || !value_ok {
            return Err(format!(
                "the SASL extension `{key}` is not a valid key=value pair"
            ));
        }
        message.push('\x01');
        message.push_str(key);
        message.push('=');
        message.push_str(value);
    }
    message.push_str("\x01\x01");
    Ok(message.into_bytes())
}
