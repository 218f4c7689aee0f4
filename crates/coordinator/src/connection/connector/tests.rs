use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;

use super::sasl::{oauth_bearer_token, plain_token};
use super::scram::{ScramClient, ScramHash};
use crate::connection::ConnectionError;
use crate::connection::Detail;
use crate::connection::security::{OAuthBearerToken, Security, TlsConfig, TrustRoots};
use crate::wire::{decode_response, encode_response};

#[test]
fn scram_sha_256_matches_rfc_7677() {
    let mut client = ScramClient::with_nonce(
        ScramHash::Sha256,
        "user",
        "pencil",
        "rOprNGfwEbeRWgbNEkqO".to_owned(),
    );
    assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let server_first =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let client_final = client.client_final(server_first).unwrap();
    assert_eq!(
        String::from_utf8(client_final).unwrap(),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
         p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    client
        .verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .unwrap();
    let forged = client
        .verify_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .unwrap_err();
    assert!(forged.contains("signature is wrong"), "{forged}");
}

/// SCRAM-SHA-512 has no RFC vector; this one was computed independently with Python's
/// `hashlib.pbkdf2_hmac` and `hmac` (which reproduce the RFC 7677 vector above).
#[test]
fn scram_sha_512_matches_an_independent_computation() {
    let mut client = ScramClient::with_nonce(
        ScramHash::Sha512,
        "alice",
        "alice-secret",
        "fyko+d2lbbFgONRv9qkxdawL".to_owned(),
    );
    let client_final = client
        .client_final(b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=8192")
        .unwrap();
    assert_eq!(
        String::from_utf8(client_final).unwrap(),
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=1uD337zPqNn1bciC/AtAeY7NsSFjfrgo\
         dvlr373tcD9c0JkZ6pi7bZ/y0TA4Dn+Vgk5gE1FqZQd18+CJPDazvQ=="
    );
    client
        .verify_server_final(
            b"v=ds/4+Yv00LuYJS4GW1MGY44E/I8D8ycIlIN5E4AUmfL8JpHu0+3PKvac57LW27Hqa6arBWY/n7PDh4s34vsB2g==",
        )
        .unwrap();
}

#[test]
fn scram_refuses_a_foreign_nonce_and_iterations_outside_kafkas_range() {
    let client = || ScramClient::with_nonce(ScramHash::Sha512, "a,b=c", "p", "abc".to_owned());
    assert_eq!(client().client_first(), b"n,,n=a=2Cb=3Dc,r=abc");
    let nonce = client()
        .client_final(b"r=xyz123,s=QQ==,i=4096")
        .unwrap_err();
    assert!(nonce.contains("nonce"), "{nonce}");
    let same = client().client_final(b"r=abc,s=QQ==,i=4096").unwrap_err();
    assert!(same.contains("nonce"), "{same}");
    for i in ["4095", "16385"] {
        let e = client()
            .client_final(format!("r=abc1,s=QQ==,i={i}").as_bytes())
            .unwrap_err();
        assert!(e.contains("iterations"), "{e}");
    }
    assert!(client().client_final(b"r=abc1,s=QQ==,i=16384").is_ok());
    let e = client().client_final(b"e=unknown-user").unwrap_err();
    assert!(e.contains("unknown-user"), "{e}");
}

#[test]
fn plain_and_oauth_bearer_tokens() {
    assert_eq!(plain_token("alice", "pw"), b"\0alice\0pw");
    let mut token = OAuthBearerToken::new("eyJh.eyJz.sig_-~+/=");
    assert_eq!(
        oauth_bearer_token(&token).unwrap(),
        b"n,,\x01auth=Bearer eyJh.eyJz.sig_-~+/=\x01\x01"
    );
    token.authorization_id = Some("admin".to_owned());
    token.extensions = vec![("traceId".to_owned(), "123".to_owned())];
    assert_eq!(
        oauth_bearer_token(&token).unwrap(),
        b"n,a=admin,\x01auth=Bearer eyJh.eyJz.sig_-~+/=\x01traceId=123\x01\x01"
    );
    token.extensions = vec![("auth".to_owned(), "x".to_owned())];
    assert!(oauth_bearer_token(&token).is_err());
    assert!(oauth_bearer_token(&OAuthBearerToken::new("has space")).is_err());
}

#[test]
fn a_missing_ca_file_fails_when_the_cluster_is_built() {
    let mut config = crate::connection::ClusterConfig::new("127.0.0.1:9093");
    config.security.tls = Some(TlsConfig {
        roots: TrustRoots::PemFile("/nonexistent/ca.pem".into()),
        ..TlsConfig::default()
    });
    let err = crate::connection::Cluster::new(config).unwrap_err();
    assert!(err.is_fatal());
    assert!(err.to_string().contains("ssl.truststore.location"), "{err}");
    let empty = TlsConfig {
        roots: TrustRoots::Pem("not a certificate".to_owned()),
        ..TlsConfig::default()
    };
    let err = super::Connector::new(&Security {
        tls: Some(empty),
        sasl: None,
    })
    .unwrap_err();
    assert!(err.to_string().contains("no usable CA"), "{err}");
}

#[test]
fn sasl_messages_go_through_the_wire_guard() {
    let handshake = SaslHandshakeResponse::default()
        .with_error_code(33)
        .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]);
    let frame = encode_response(5, 1, &handshake).unwrap();
    let (_, decoded) = decode_response::<SaslHandshakeResponse>(frame, 1).unwrap();
    assert_eq!(decoded, handshake);
    for v in 0..=2 {
        let answer = SaslAuthenticateResponse::default()
            .with_auth_bytes(Bytes::from_static(b"r=abc,s=QQ==,i=4096"))
            .with_session_lifetime_ms(if v >= 1 { 60_000 } else { 0 });
        let frame = encode_response(6, v, &answer).unwrap();
        let (_, decoded) = decode_response::<SaslAuthenticateResponse>(frame, v).unwrap();
        assert_eq!(decoded, answer);
    }
    // A mechanisms array claiming i32::MAX entries is refused before anything is reserved.
    let hostile = Bytes::from_static(&[0, 0, 0, 5, 0, 33, 0x7F, 0xFF, 0xFF, 0xFF]);
    assert!(decode_response::<SaslHandshakeResponse>(hostile, 1).is_err());
}

#[test]
fn security_errors_are_fatal_and_say_what_to_fix() {
    let auth = ConnectionError::from(Detail::Authentication {
        addr: "b:9094".to_owned(),
        mechanism: "SCRAM-SHA-512",
        reason: "bad credentials".to_owned(),
    });
    assert!(auth.is_fatal() && !auth.is_disconnect());
    assert!(auth.to_string().contains("SCRAM-SHA-512"), "{auth}");
    let tls = ConnectionError::from(Detail::Tls {
        addr: "b:9094".to_owned(),
        reason: "unknown issuer".to_owned(),
    });
    assert!(tls.is_fatal() && !tls.is_disconnect());
}
