use std::sync::Arc;

use futures::future::BoxFuture;

use super::properties::parse_jaas;
use super::*;

const SCRAM_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#;

#[test]
fn jaas_config_parses_quoted_and_bare_options() {
    let entry = parse_jaas(SCRAM_JAAS).unwrap();
    assert_eq!(
        entry.module,
        "org.apache.kafka.common.security.scram.ScramLoginModule"
    );
    assert_eq!(entry.options["username"].expose(), "alice");
    assert_eq!(entry.options["password"].expose(), "alice-secret");
    let entry = parse_jaas(
        "  m.PlainLoginModule   optional\n username=bob password=\"a \\\"quoted\\\"; pass\" ; ",
    )
    .unwrap();
    assert_eq!(entry.options["username"].expose(), "bob");
    assert_eq!(entry.options["password"].expose(), "a \"quoted\"; pass");
    for bad in [
        "",
        "m.Module username=\"a\";",
        "m.Module required username=\"a\"",
        "m.Module required username=\"unterminated;",
        "m.Module required a=\"1\"; n.Other required;",
        "m.Module required =\"1\";",
    ] {
        let e = parse_jaas(bad).unwrap_err();
        assert!(!e.contains("unterminated;"), "{e}");
    }
    // A password given where the module belongs is not echoed.
    let e = parse_jaas("hunter2-secret;").unwrap_err();
    assert!(!e.contains("hunter2"), "{e}");
}

fn props(pairs: &[(&'static str, &'static str)]) -> Result<Security, SecurityError> {
    Security::from_properties(pairs.iter().copied())
}

#[test]
fn properties_build_each_protocol() {
    assert_eq!(props(&[]).unwrap(), Security::default());
    assert_eq!(
        props(&[
            ("bootstrap.servers", "b:1"),
            ("ssl.truststore.location", "x")
        ])
        .unwrap(),
        Security::default(),
        "PLAINTEXT ignores ssl.*"
    );
    let ssl = props(&[
        ("security.protocol", "ssl"),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", "/ca.pem"),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", "/client.pem"),
    ])
    .unwrap();
    assert_eq!(ssl.protocol(), SecurityProtocol::Ssl);
    let tls = ssl.tls.unwrap();
    assert_eq!(tls.roots, TrustRoots::PemFile("/ca.pem".into()));
    assert_eq!(
        tls.identity,
        Some(ClientIdentity::PemFile("/client.pem".into()))
    );
    assert!(tls.verify_hostname);

    let sasl_ssl = props(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
        ("ssl.endpoint.identification.algorithm", ""),
    ])
    .unwrap();
    assert_eq!(sasl_ssl.protocol(), SecurityProtocol::SaslSsl);
    assert_eq!(sasl_ssl.tls.as_ref().unwrap().roots, TrustRoots::WebPki);
    assert!(!sasl_ssl.tls.as_ref().unwrap().verify_hostname);
    assert_eq!(
        sasl_ssl.sasl,
        Some(Sasl::ScramSha512 {
            username: "alice".to_owned(),
            password: "alice-secret".into()
        })
    );

    let plain = props(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "bob"),
        ("sasl.password", "bob-secret"),
    ])
    .unwrap();
    assert_eq!(plain.protocol(), SecurityProtocol::SaslPlaintext);
    assert_eq!(plain.sasl.unwrap().mechanism(), "PLAIN");
}

#[test]
fn bad_properties_name_the_key_and_never_the_secret() {
    let key_of = |pairs: &[(&'static str, &'static str)]| match props(pairs).map_err(|e| e.0) {
        Err(Unusable::InvalidProperty { key, reason }) => {
            assert!(!reason.contains("alice-secret"), "{reason}");
            key
        }
        other => panic!("expected InvalidProperty, got {other:?}"),
    };
    assert_eq!(key_of(&[("security.protocol", "TLS")]), "security.protocol");
    let sasl = ("security.protocol", "SASL_SSL");
    assert_eq!(key_of(&[sasl]), "sasl.mechanism");
    assert_eq!(
        key_of(&[sasl, ("sasl.mechanism", "GSSAPI")]),
        "sasl.mechanism"
    );
    assert_eq!(
        key_of(&[sasl, ("sasl.mechanism", "OAUTHBEARER")]),
        "sasl.mechanism"
    );
    assert_eq!(
        key_of(&[sasl, ("sasl.mechanism", "PLAIN")]),
        "sasl.jaas.config"
    );
    assert_eq!(
        key_of(&[
            sasl,
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", SCRAM_JAAS)
        ]),
        "sasl.jaas.config",
        "a SCRAM login module for PLAIN"
    );
    assert_eq!(
        key_of(&[
            sasl,
            ("sasl.mechanism", "SCRAM-SHA-256"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required password="alice-secret";"#
            )
        ]),
        "sasl.jaas.config"
    );
    assert_eq!(
        key_of(&[("security.protocol", "SSL"), ("ssl.truststore.type", "JKS")]),
        "ssl.truststore.type"
    );
    assert_eq!(
        key_of(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.password", "alice-secret")
        ]),
        "ssl.truststore.password"
    );
    assert_eq!(
        key_of(&[
            ("security.protocol", "SSL"),
            ("ssl.endpoint.identification.algorithm", "http")
        ]),
        "ssl.endpoint.identification.algorithm"
    );
}

struct Fixed;

impl TokenProvider for Fixed {
    fn token(&self) -> BoxFuture<'_, Result<OAuthBearerToken, String>> {
        Box::pin(async { Ok(OAuthBearerToken::new("token-secret")) })
    }
}

#[test]
fn debug_output_redacts_every_secret() {
    let secret = Secret::new("alice-secret");
    assert_eq!(format!("{secret:?}"), "Secret(***)");
    assert_eq!(secret.expose(), "alice-secret");
    let security = props(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
    ])
    .unwrap();
    let shown = format!("{security:?} {security:#?}");
    assert!(
        shown.contains("alice") && shown.contains("SCRAM-SHA-512"),
        "{shown}"
    );
    assert!(!shown.contains("alice-secret"), "{shown}");
    let inline_key = Security {
        tls: Some(TlsConfig {
            identity: Some(ClientIdentity::Pem {
                certificate_chain: String::new(),
                private_key: "key-secret".into(),
            }),
            ..TlsConfig::default()
        }),
        sasl: Some(Sasl::OAuthBearer(Arc::new(Fixed))),
    };
    let shown = format!("{inline_key:?}");
    assert!(
        !shown.contains("key-secret") && !shown.contains("token-secret"),
        "{shown}"
    );
    assert!(shown.contains("OAUTHBEARER"), "{shown}");
    assert_eq!(
        format!("{:?}", OAuthBearerToken::new("t-secret"))
            .matches("t-secret")
            .count(),
        0
    );
    // A provider is equal only to itself.
    let provider: Arc<dyn TokenProvider> = Arc::new(Fixed);
    assert_eq!(
        Sasl::OAuthBearer(provider.clone()),
        Sasl::OAuthBearer(provider)
    );
    assert_ne!(
        Sasl::OAuthBearer(Arc::new(Fixed)),
        Sasl::OAuthBearer(Arc::new(Fixed))
    );
}
