//! [`Security`] from Kafka's own client property names, as Kafka's tools read them with
//! `--command-config`.
//!
//! The keys are listed in the [module guide](crate::connection#kafka-client-properties).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{
    ClientIdentity, Sasl, Secret, Security, SecurityError, SecurityProtocol, TlsConfig, TrustRoots,
    Unusable,
};

/// The keys this module reads.
const KNOWN: [&str; 15] = [
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.keystore.location",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.endpoint.identification.algorithm",
];

impl Security {
    /// Reads Kafka client properties: `security.protocol`, `sasl.*` and `ssl.*` (see the
    /// [table](crate::connection#kafka-client-properties) of keys). Other keys are skipped, so a whole client properties file can be
    /// passed. Files named are not read here: a missing CA file fails when the cluster client is
    /// built.
    ///
    /// # Errors
    /// A [`SecurityError`] naming the key ([`SecurityError::property`]), never its value.
    ///
    /// # Examples
    /// ```
    /// use kroupier_coordinator::connection::{Security, SecurityProtocol};
    ///
    /// let security = Security::from_properties([
    ///     ("security.protocol", "SASL_SSL"),
    ///     ("sasl.mechanism", "SCRAM-SHA-512"),
    ///     (
    ///         "sasl.jaas.config",
    ///         r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#,
    ///     ),
    ///     ("ssl.truststore.type", "PEM"),
    ///     ("ssl.truststore.location", "/etc/kafka/ca.pem"),
    /// ])?;
    /// assert_eq!(security.protocol(), SecurityProtocol::SaslSsl);
    /// # Ok::<(), kroupier_coordinator::connection::SecurityError>(())
    /// ```
    pub fn from_properties<'a>(
        properties: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, SecurityError> {
        let map: BTreeMap<&str, &str> = properties
            .into_iter()
            .filter(|(k, _)| {
                *k == "security.protocol" || k.starts_with("sasl.") || k.starts_with("ssl.")
            })
            .collect();
        let protocol: SecurityProtocol = match map.get("security.protocol") {
            Some(value) => value
                .parse()
                .map_err(|reason| invalid("security.protocol", reason))?,
            None => SecurityProtocol::Plaintext,
        };
        let ignored: BTreeSet<&str> = map.keys().copied().filter(|k| !KNOWN.contains(k)).collect();
        if !ignored.is_empty() {
            tracing::warn!(
                ?ignored,
                "security properties kroupier does not use are ignored"
            );
        }
        let unused = |prefix: &str| -> Vec<&str> {
            map.keys()
                .copied()
                .filter(|k| k.starts_with(prefix))
                .collect()
        };
        let tls = if protocol.uses_tls() {
            Some(tls_from(&map)?)
        } else {
            let keys = unused("ssl.");
            if !keys.is_empty() {
                tracing::warn!(?keys, %protocol, "ssl.* properties are ignored: security.protocol uses no TLS");
            }
            None
        };
        let sasl = if protocol.uses_sasl() {
            Some(sasl_from(&map)?)
        } else {
            let keys = unused("sasl.");
            if !keys.is_empty() {
                tracing::warn!(?keys, %protocol, "sasl.* properties are ignored: security.protocol uses no SASL");
            }
            None
        };
        Ok(Security { tls, sasl })
    }
}

fn invalid(key: &str, reason: impl Into<String>) -> SecurityError {
    SecurityError(Unusable::InvalidProperty {
        key: key.to_owned(),
        reason: reason.into(),
    })
}

/// Checks that a store type is PEM (or absent).
fn pem_type(map: &BTreeMap<&str, &str>, key: &str) -> Result<(), SecurityError> {
    match map.get(key) {
        None => Ok(()),
        Some(t) if t.trim().eq_ignore_ascii_case("PEM") => Ok(()),
        Some(t) => Err(invalid(
            key,
            format!(
                "is `{t}`; kroupier reads PEM only: convert the store (keytool -exportcert -rfc, \
                 or openssl pkcs12 -nodes) and set `{key}=PEM`"
            ),
        )),
    }
}

fn tls_from(map: &BTreeMap<&str, &str>) -> Result<TlsConfig, SecurityError> {
    pem_type(map, "ssl.truststore.type")?;
    pem_type(map, "ssl.keystore.type")?;
    if map.contains_key("ssl.truststore.password") {
        return Err(invalid(
            "ssl.truststore.password",
            "is set, but a PEM trust store takes no password (as in Kafka): remove it",
        ));
    }
    if map.contains_key("ssl.keystore.password") || map.contains_key("ssl.key.password") {
        return Err(invalid(
            "ssl.keystore.password/ssl.key.password",
            "is set, but kroupier reads unencrypted PEM keys only: decrypt the key with \
             `openssl pkcs8 -topk8 -nocrypt` and remove the password",
        ));
    }
    let roots = match (
        map.get("ssl.truststore.location"),
        map.get("ssl.truststore.certificates"),
    ) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "ssl.truststore.location",
                "and `ssl.truststore.certificates` are both set: keep one",
            ));
        }
        (Some(path), None) => TrustRoots::PemFile(PathBuf::from(path.trim())),
        (None, Some(pem)) => TrustRoots::Pem((*pem).to_owned()),
        (None, None) => TrustRoots::WebPki,
    };
    let identity = match (
        map.get("ssl.keystore.location"),
        map.get("ssl.keystore.key"),
        map.get("ssl.keystore.certificate.chain"),
    ) {
        (None, None, None) => None,
        (Some(path), None, None) => Some(ClientIdentity::PemFile(PathBuf::from(path.trim()))),
        (None, Some(key), Some(chain)) => Some(ClientIdentity::Pem {
            certificate_chain: (*chain).to_owned(),
            private_key: Secret::new(*key),
        }),
        _ => {
            return Err(invalid(
                "ssl.keystore.location",
                "or the pair `ssl.keystore.key` + `ssl.keystore.certificate.chain`: set one of \
                 the two, fully",
            ));
        }
    };
    let verify_hostname = match map
        .get("ssl.endpoint.identification.algorithm")
        .map(|v| v.trim())
    {
        None => true,
        Some(v) if v.eq_ignore_ascii_case("https") => true,
        Some("") => {
            tracing::warn!(
                "ssl.endpoint.identification.algorithm is empty: broker certificates are not \
                 checked against the broker's host name, so any holder of a certificate from a \
                 trusted CA can pose as a broker"
            );
            false
        }
        Some(other) => {
            return Err(invalid(
                "ssl.endpoint.identification.algorithm",
                format!("is `{other}`; use `https` (the default) or empty (no host name check)"),
            ));
        }
    };
    Ok(TlsConfig {
        roots,
        identity,
        server_name: None,
        verify_hostname,
    })
}

fn sasl_from(map: &BTreeMap<&str, &str>) -> Result<Sasl, SecurityError> {
    let Some(mechanism) = map.get("sasl.mechanism").map(|m| m.trim()) else {
        return Err(invalid(
            "sasl.mechanism",
            "is not set and Kafka's default, GSSAPI (Kerberos), is not supported: set PLAIN, \
             SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
        ));
    };
    let module = match mechanism.to_ascii_uppercase().as_str() {
        "PLAIN" => "org.apache.kafka.common.security.plain.PlainLoginModule",
        "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
            "org.apache.kafka.common.security.scram.ScramLoginModule"
        }
        "OAUTHBEARER" => {
            return Err(invalid(
                "sasl.mechanism",
                "is OAUTHBEARER, whose tokens come from the application: set \
                 `Security::sasl` to `Sasl::OAuthBearer(provider)` in code",
            ));
        }
        _ => {
            return Err(invalid(
                "sasl.mechanism",
                format!("is `{mechanism}`; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"),
            ));
        }
    };
    let (username, password) = match (
        map.get("sasl.jaas.config"),
        map.get("sasl.username"),
        map.get("sasl.password"),
    ) {
        (Some(jaas), None, None) => credentials_from_jaas(jaas, module)?,
        (None, Some(user), Some(password)) => ((*user).to_owned(), Secret::new(*password)),
        (None, _, _) => {
            return Err(invalid(
                "sasl.jaas.config",
                format!("is not set: set it to `{module} required username=\"…\" password=\"…\";`"),
            ));
        }
        (Some(_), _, _) => {
            return Err(invalid(
                "sasl.jaas.config",
                "and `sasl.username`/`sasl.password` are both set: keep one",
            ));
        }
    };
    if username.is_empty() || password.expose().is_empty() {
        return Err(invalid(
            "sasl.jaas.config",
            "has an empty username or password",
        ));
    }
    Ok(match mechanism.to_ascii_uppercase().as_str() {
        "PLAIN" => Sasl::Plain { username, password },
        "SCRAM-SHA-256" => Sasl::ScramSha256 { username, password },
        _ => Sasl::ScramSha512 { username, password },
    })
}

fn credentials_from_jaas(jaas: &str, module: &str) -> Result<(String, Secret), SecurityError> {
    let key = "sasl.jaas.config";
    let mut entry = parse_jaas(jaas).map_err(|reason| invalid(key, reason))?;
    if entry.module != module {
        return Err(invalid(
            key,
            format!("names another login module, but `sasl.mechanism` needs `{module}`"),
        ));
    }
    if entry
        .options
        .remove("tokenauth")
        .is_some_and(|v| v.expose() == "true")
    {
        return Err(invalid(
            key,
            "sets tokenauth=true: delegation tokens are not supported",
        ));
    }
    let username = entry.options.remove("username");
    let password = entry.options.remove("password");
    match (username, password) {
        (Some(u), Some(p)) => Ok((u.expose().to_owned(), p)),
        _ => Err(invalid(
            key,
            "needs both `username=\"…\"` and `password=\"…\"`",
        )),
    }
}

/// One JAAS login module entry: `module flag key="value" …;`.
#[derive(Debug)]
pub(crate) struct JaasEntry {
    /// The login module's class name.
    pub(crate) module: String,
    /// Its options; every value is kept as a secret (passwords are among them).
    pub(crate) options: BTreeMap<String, Secret>,
}

/// Parses Kafka's `sasl.jaas.config`: exactly one entry, `Module flag (key=value)* ;`, values
/// quoted with `"` (a `\` escapes the next character) or bare. Errors never quote a value.
pub(crate) fn parse_jaas(text: &str) -> Result<JaasEntry, String> {
    let mut chars = text.trim().chars().peekable();
    let word = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut w = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == '=' || c == ';' || c == '"' {
                break;
            }
            w.push(c);
            chars.next();
        }
        w
    };
    let module = word(&mut chars);
    if module.is_empty() {
        return Err("has no login module: start it with the module's class name".to_owned());
    }
    let flag = word(&mut chars);
    if !matches!(
        flag.as_str(),
        "required" | "requisite" | "sufficient" | "optional"
    ) {
        // Not quoted: a misplaced password would be the first word.
        return Err("needs a control flag (`required`) after the login module's name".to_owned());
    }
    let mut options = BTreeMap::new();
    loop {
        let key = word(&mut chars);
        match chars.peek() {
            Some(';') if key.is_empty() => {
                chars.next();
                break;
            }
            Some('=') if !key.is_empty() => {
                chars.next();
            }
            None => return Err("does not end with `;`".to_owned()),
            _ => {
                return Err(format!(
                    "has a malformed option after `{flag}` (want key=\"value\")"
                ));
            }
        }
        let value = if chars.peek() == Some(&'"') {
            chars.next();
            let mut v = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => v.push(c),
                        None => return Err(format!("has an unterminated value for `{key}`")),
                    },
                    Some(c) => v.push(c),
                    None => return Err(format!("has an unterminated value for `{key}`")),
                }
            }
            v
        } else {
            word(&mut chars)
        };
        options.insert(key, Secret::new(value));
    }
    if chars.any(|c| !c.is_whitespace()) {
        return Err("has more than one login module entry; kroupier takes exactly one".to_owned());
    }
    Ok(JaasEntry { module, options })
}
