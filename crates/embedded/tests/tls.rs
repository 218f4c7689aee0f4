//! The embedded coordinator over TLS and mutual TLS, with kroupier's own client (Kafka client
//! properties, as `--command-config` reads them): a client that trusts the CA joins a group; one
//! that trusts another CA gets a clear TLS error; with a client CA, a client without a
//! certificate, or with one another CA signed, is refused with a clear error, and one with a
//! certificate the client CA signed joins.
//!
//! The certificates are made for each run with the `openssl` command line tool, as
//! `scripts/kafka start --sasl-ssl` makes its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kroupier_coordinator::connection::{Cluster, ClusterConfig, ConnectionErrorKind, Security};
use kroupier_coordinator::driver::{Member, MemberConfig};
use kroupier_coordinator::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberState,
    ProtocolMetadata,
};
use kroupier_embedded::{CoordinatorHandle, EmbeddedCoordinator, EmbeddedErrorKind, ServerTls};

/// An upper bound for anything a test waits on; reaching it is a failure.
const PATIENCE: Duration = Duration::from_secs(20);

/// A directory of test certificates, removed when dropped.
struct Pki {
    dir: PathBuf,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run openssl ({e}); install it (Debian: apt-get install openssl)")
        });
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Pki {
    /// Two CAs (`ca`, `other-ca`), a server certificate for 127.0.0.1 and localhost signed by
    /// `ca`, and client certificates signed by each (`client`, `other-client`): for each
    /// certificate `NAME.pem`, its key `NAME.key` and both in `NAME-keystore.pem`.
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kroupier-embedded-tls-{test}-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).expect("create the certificate dir");
        let pki = Self { dir };
        for ca in ["ca", "other-ca"] {
            openssl(
                &pki.dir,
                &[
                    "req",
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-days",
                    "2",
                    "-subj",
                    &format!("/CN=kroupier-test-{ca}"),
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                    "-keyout",
                    &format!("{ca}.key"),
                    "-out",
                    &format!("{ca}.pem"),
                ],
            );
        }
        pki.leaf(
            "server",
            "ca",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        );
        pki.leaf("client", "ca", "extendedKeyUsage=clientAuth\n");
        pki.leaf("other-client", "other-ca", "extendedKeyUsage=clientAuth\n");
        pki
    }

    fn leaf(&self, name: &str, ca: &str, extensions: &str) {
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.join(&ext),
            format!("basicConstraints=CA:FALSE\n{extensions}"),
        )
        .expect("write the extensions");
        openssl(
            &self.dir,
            &[
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN=kroupier-test-{name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-set_serial",
                &rand_suffix().to_string(),
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &format!("{name}.pem"),
            ],
        );
        let key = std::fs::read_to_string(self.path(&format!("{name}.key"))).unwrap();
        let cert = std::fs::read_to_string(self.path(&format!("{name}.pem"))).unwrap();
        std::fs::write(self.path(&format!("{name}-keystore.pem")), key + &cert).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A string path for Kafka client properties.
    fn file(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn server(&self) -> ServerTls {
        ServerTls::new(self.path("server.pem"), self.path("server.key"))
    }
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.subsec_nanos())
        | 1
}

async fn start(tls: ServerTls) -> CoordinatorHandle {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    EmbeddedCoordinator::builder()
        .min_session_timeout(Duration::from_millis(500))
        .tls(tls)
        .bind("127.0.0.1:0")
        .await
        .expect("bind with TLS")
}

/// Security from Kafka client properties, as `--command-config` reads them.
fn ssl(pairs: &[(&str, &str)]) -> Security {
    let mut all = vec![("security.protocol", "SSL"), ("ssl.truststore.type", "PEM")];
    all.extend_from_slice(pairs);
    Security::from_properties(all).expect("valid client properties")
}

/// A protocol that gives every member the whole group.
struct Solo;

impl GroupProtocol for Solo {
    fn protocol_type(&self) -> &str {
        "kroupier-tls-test"
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        vec![ProtocolMetadata::new("solo", b"solo".to_vec())]
    }

    fn assign(
        &self,
        _context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        Ok(members
            .iter()
            .map(|m| MemberAssignment::new(m.member_id.clone(), Bytes::from_static(b"all")))
            .collect())
    }
}

/// A member joins `group` over `security` and gets its assignment, then leaves.
async fn joins(coordinator: &CoordinatorHandle, group: &str, security: Security) {
    let mut config = MemberConfig::new(&coordinator.bootstrap(), group)
        .with_timeouts(Duration::from_secs(3), Duration::from_millis(300));
    config.membership.min_session_timeout = Duration::from_millis(500);
    config.cluster.security = security;
    let (handle, driver) = Member::new(config, Arc::new(Solo)).expect("valid member");
    let driver = tokio::spawn(driver);
    let deadline = Instant::now() + PATIENCE;
    while handle.current().state != MemberState::Stable {
        assert!(
            !driver.is_finished(),
            "the member ended: {:?}",
            driver.await
        );
        assert!(
            Instant::now() < deadline,
            "no stable membership over TLS: {:?}",
            handle.current()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(handle.current().assignment.as_deref(), Some(&b"all"[..]));
    let described = coordinator.describe_group(group).await.expect("the group");
    assert_eq!(described.members.len(), 1, "{described:?}");
    handle.leave("test done").await;
    tokio::time::timeout(PATIENCE, driver)
        .await
        .expect("the member ends after leaving")
        .expect("driver task")
        .expect("a clean leave");
}

/// The error of connecting with `security`, which must be fatal TLS one.
async fn tls_error(coordinator: &CoordinatorHandle, security: Security) -> String {
    let mut config = ClusterConfig::new(&coordinator.bootstrap());
    config.security = security;
    let error = Cluster::new(config)
        .expect("the client settings load")
        .any_broker()
        .await
        .expect_err("the connection must be refused");
    assert!(error.kind() == ConnectionErrorKind::Tls, "{error:?}");
    assert!(error.is_fatal(), "{error:?}");
    println!("refused: {error}");
    error.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_trusts_the_ca_joins_over_tls() {
    let pki = Pki::new("join");
    let coordinator = start(pki.server()).await;
    let ca = pki.file("ca.pem");
    joins(
        &coordinator,
        "tls-join",
        ssl(&[("ssl.truststore.location", &ca)]),
    )
    .await;

    // A restart serves the same certificate.
    coordinator.stop().await;
    coordinator.restart().await.expect("restart");
    joins(
        &coordinator,
        "tls-join-after-restart",
        ssl(&[("ssl.truststore.location", &ca)]),
    )
    .await;
    coordinator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_trusts_another_ca_gets_a_clear_tls_error() {
    let pki = Pki::new("wrong-ca");
    let coordinator = start(pki.server()).await;
    let other = pki.file("other-ca.pem");
    let message = tls_error(&coordinator, ssl(&[("ssl.truststore.location", &other)])).await;
    assert!(
        message.contains("not signed by a trusted CA")
            && message.contains("ssl.truststore.location"),
        "{message}"
    );

    // The coordinator serves the next client as before.
    let ca = pki.file("ca.pem");
    joins(
        &coordinator,
        "tls-after-refusal",
        ssl(&[("ssl.truststore.location", &ca)]),
    )
    .await;
    coordinator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_clients_without_a_certificate_the_client_ca_signed() {
    let pki = Pki::new("mtls");
    let coordinator = start(pki.server().require_client_certificates(pki.path("ca.pem"))).await;
    let ca = pki.file("ca.pem");

    let message = tls_error(&coordinator, ssl(&[("ssl.truststore.location", &ca)])).await;
    assert!(
        message.contains("requires a client certificate")
            && message.contains("ssl.keystore.location"),
        "{message}"
    );

    let other = pki.file("other-client-keystore.pem");
    let message = tls_error(
        &coordinator,
        ssl(&[
            ("ssl.truststore.location", &ca),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &other),
        ]),
    )
    .await;
    assert!(
        message.contains("rejected the client certificate")
            && message.contains("ssl.keystore.location"),
        "{message}"
    );

    let client = pki.file("client-keystore.pem");
    joins(
        &coordinator,
        "mtls-join",
        ssl(&[
            ("ssl.truststore.location", &ca),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &client),
        ]),
    )
    .await;
    coordinator.shutdown().await;
}

#[tokio::test]
async fn tls_files_that_do_not_load_are_named_at_bind() {
    let pki = Pki::new("bad-files");
    let missing = EmbeddedCoordinator::builder()
        .tls(ServerTls::new(
            pki.path("missing.pem"),
            pki.path("server.key"),
        ))
        .bind("127.0.0.1:0")
        .await
        .expect_err("a missing certificate fails");
    assert_eq!(missing.kind(), EmbeddedErrorKind::Tls, "{missing:?}");
    assert!(missing.to_string().contains("missing.pem"), "{missing}");

    // A certificate is no key: the error names the file, never its contents.
    let no_key = EmbeddedCoordinator::builder()
        .tls(ServerTls::new(
            pki.path("server.pem"),
            pki.path("server.pem"),
        ))
        .bind("127.0.0.1:0")
        .await
        .expect_err("a certificate as the key fails");
    let message = no_key.to_string();
    assert!(
        message.contains("no unencrypted PEM private key"),
        "{message}"
    );
    assert!(!message.contains("BEGIN"), "{message}");

    // A key that does not match the certificate.
    let mismatch = EmbeddedCoordinator::builder()
        .tls(ServerTls::new(
            pki.path("server.pem"),
            pki.path("client.key"),
        ))
        .bind("127.0.0.1:0")
        .await
        .expect_err("a key of another certificate fails");
    assert!(
        mismatch.to_string().contains("do not make a TLS identity"),
        "{mismatch}"
    );

    let not_a_ca = EmbeddedCoordinator::builder()
        .tls(
            pki.server()
                .require_client_certificates(pki.path("client.key")),
        )
        .bind("127.0.0.1:0")
        .await
        .expect_err("a key as the client CA fails");
    assert!(not_a_ca.to_string().contains("client CA"), "{not_a_ca}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_a_tls_listener_is_closed_at_once_and_served_nothing() {
    let pki = Pki::new("plaintext");
    let coordinator = start(pki.server()).await;
    let mut config = ClusterConfig::new(&coordinator.bootstrap());
    config.connection.connect_timeout = Duration::from_secs(10);
    let t0 = Instant::now();
    let error = Cluster::new(config)
        .expect("plaintext settings")
        .any_broker()
        .await
        .expect_err("a plaintext client gets no Kafka answer from a TLS listener");
    println!("plaintext client: {error}");
    // The listener answers the plaintext request with a TLS alert and closes: the client sees a
    // broken connection within a moment, not a hang until its timeout.
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(error.kind() != ConnectionErrorKind::Tls, "{error:?}");

    let ca = pki.file("ca.pem");
    joins(
        &coordinator,
        "tls-after-plaintext",
        ssl(&[("ssl.truststore.location", &ca)]),
    )
    .await;
    coordinator.shutdown().await;
}
