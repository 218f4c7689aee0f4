//! Group membership over SASL_SSL against `scripts/kafka start --sasl-ssl`: SCRAM-SHA-512 over
//! TLS, and the failures an operator must see at once — a wrong password, a CA that did not sign
//! the broker's certificate, a user without ACLs on the group.
//!
//! The tests run when `KROUPIER_KAFKA_SASL_SSL_BOOTSTRAP` (the `bootstrap=` line) and
//! `KROUPIER_KAFKA_SASL_SSL_CONFIG` (the `client_config=` line, user `admin`) are set; the script
//! writes `client-alice.properties`, a user with no ACLs, beside the latter. Without them each
//! test prints one skip line, unless `KROUPIER_REQUIRE_SASL_SSL=1`, where that fails:
//! `scripts/test` sets it in its SASL_SSL phase, so CI cannot pass with these skipped, while its
//! other phases (PLAINTEXT brokers, `CI=true` or not) run them as skips.
//!
//! Three `quickstart` workers over SASL_SSL (`--command-config`) share 12 tasks and fail over
//! after a SIGKILL with no task on two workers at once, `kroupier describe --command-config`
//! sees them, and no line the processes logged (at debug level) holds a password of the client
//! configs; the failover time is printed as `MEASURE sasl_ssl_kill_to_running_elsewhere_ms`,
//! to set beside the PLAINTEXT `kill_to_running_elsewhere_ms` of `tests/worker.rs` (same
//! session and heartbeat). Needs the binaries built (`cargo build -p kroupier-examples -p
//! kroupier-cli`).
//!
//! The same broker's SSL listener requires client certificates (`client-mtls.properties`): a
//! member with one joins, one without gets a fatal TLS error naming `ssl.keystore.location`.
//! Its SASL sessions last 8 s (`connections.max.reauth.ms`): two quickstart workers keep their
//! tasks, generation and membership through three lifetimes while kroupier renews their
//! connections before each session ends.
//!
//! `handshake_cost` prints `MEASURE` lines: the median time to open a ready connection (TCP, TLS,
//! ApiVersions, SCRAM-SHA-512) beside a PLAINTEXT one when `KROUPIER_KAFKA_BOOTSTRAP` is set too.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kroupier_coordinator::connection::{
    Cluster, ClusterConfig, ConnectionErrorKind, OAuthBearerToken, Sasl, Security, TokenProvider,
    TrustRoots,
};
use kroupier_coordinator::driver::{Member, MemberConfig, MemberError};
use kroupier_coordinator::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberState,
    ProtocolMetadata,
};
use kroupier_integration_tests::journal::{self, unix_ms};
use kroupier_integration_tests::process::{Signal, binary};
use kroupier_integration_tests::quickstart::*;
use serde_json::Value;

const BOOTSTRAP_ENV: &str = "KROUPIER_KAFKA_SASL_SSL_BOOTSTRAP";
const CONFIG_ENV: &str = "KROUPIER_KAFKA_SASL_SSL_CONFIG";

/// The SASL_SSL broker and its client properties file, or `None` after a skip line.
fn sasl_ssl_broker(test: &str) -> Option<(String, PathBuf)> {
    let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match (var(BOOTSTRAP_ENV), var(CONFIG_ENV)) {
        (Some(bootstrap), Some(config)) => Some((bootstrap.trim().to_owned(), config.into())),
        _ if std::env::var("KROUPIER_REQUIRE_SASL_SSL").is_ok_and(|v| v.trim() == "1") => panic!(
            "{test}: a SASL_SSL broker is required (KROUPIER_REQUIRE_SASL_SSL=1) but \
             {BOOTSTRAP_ENV} and {CONFIG_ENV} are not both set; run `scripts/kafka start \
             --sasl-ssl` and export its bootstrap= and client_config= lines"
        ),
        _ => {
            eprintln!(
                "SKIP {test}: {BOOTSTRAP_ENV}/{CONFIG_ENV} are not set (start Kafka with \
                 `scripts/kafka start --sasl-ssl`)"
            );
            None
        }
    }
}

/// `key=value` lines of a client properties file as `scripts/kafka` writes it.
fn read_properties(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

fn security_from(path: &Path) -> Security {
    let properties = read_properties(path);
    Security::from_properties(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .expect("the script's client properties parse")
}

fn unique_group(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-{test}-{}-{nanos}", std::process::id())
}

/// A protocol with one name and no plan to speak of.
struct Solo;

impl GroupProtocol for Solo {
    fn protocol_type(&self) -> &str {
        "kroupier-it"
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

fn member_config(bootstrap: &str, group: &str, security: Security) -> MemberConfig {
    let mut config = MemberConfig::new(bootstrap, group)
        .with_timeouts(Duration::from_secs(6), Duration::from_millis(500));
    config.membership.min_session_timeout = Duration::from_secs(1);
    config.membership.rebalance_timeout = Duration::from_secs(10);
    config.cluster.security = security;
    config
}

/// Runs a member until it ends, at most `within`; `Ok(None)` if it still runs.
async fn run_member(config: MemberConfig, within: Duration) -> Result<(), MemberError> {
    let (_handle, driver) = Member::new(config, Arc::new(Solo)).expect("valid member");
    match tokio::time::timeout(within, driver).await {
        Ok(result) => result,
        Err(_) => panic!("the member was still running after {within:?}"),
    }
}

fn with_password(security: &Security, password: &str) -> Security {
    let mut security = security.clone();
    security.sasl = match security.sasl {
        Some(Sasl::ScramSha512 { username, .. }) => Some(Sasl::ScramSha512 {
            username,
            password: password.into(),
        }),
        other => panic!("expected SCRAM-SHA-512 credentials, got {other:?}"),
    };
    security
}

fn password_of(security: &Security) -> String {
    match &security.sasl {
        Some(Sasl::ScramSha512 { password, .. }) => password.expose().to_owned(),
        other => panic!("expected SCRAM-SHA-512 credentials, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_joins_over_sasl_ssl_with_scram_sha_512() {
    let Some((bootstrap, config)) = sasl_ssl_broker("a_member_joins_over_sasl_ssl") else {
        return;
    };
    let group = unique_group("sasl-join");
    let t0 = Instant::now();
    let (handle, driver) = Member::new(
        member_config(&bootstrap, &group, security_from(&config)),
        Arc::new(Solo),
    )
    .expect("valid member");
    let driver = tokio::spawn(driver);
    let deadline = Instant::now() + Duration::from_secs(30);
    while handle.current().state != MemberState::Stable {
        assert!(
            Instant::now() < deadline && !driver.is_finished(),
            "no stable membership over SASL_SSL within 30 s: {:?}",
            handle.current().state
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("MEASURE sasl_ssl_first_join={}ms", t0.elapsed().as_millis());
    let status = handle.current();
    assert_eq!(
        status.assignment.as_deref(),
        Some(&b"all"[..]),
        "{status:?}"
    );
    handle.leave("test done").await;
    let ended = tokio::time::timeout(Duration::from_secs(10), driver)
        .await
        .expect("the driver ends after leaving");
    ended.expect("driver task").expect("a clean leave");
}

/// Base64url without padding (RFC 4648 §5), as JWS parts are written.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Unsecured JWS tokens (`alg: none`) for `sub`, valid for `lifetime_s` seconds (negative: an
/// expired token): what the test broker's default OAUTHBEARER validator accepts (for tests
/// only). Counts the tokens it handed out.
struct UnsecuredTokens {
    sub: &'static str,
    lifetime_s: i64,
    issued: std::sync::atomic::AtomicUsize,
}

impl TokenProvider for UnsecuredTokens {
    fn token(
        &self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<OAuthBearerToken, String>> + Send + '_>,
    > {
        Box::pin(async move {
            self.issued
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let now = (unix_ms() / 1_000) as i64;
            let claims = format!(
                "{{\"sub\":\"{}\",\"iat\":{now},\"exp\":{}}}",
                self.sub,
                now + self.lifetime_s
            );
            let jws = format!(
                "{}.{}.",
                base64url(br#"{"alg":"none"}"#),
                base64url(claims.as_bytes())
            );
            Ok(OAuthBearerToken::new(jws))
        })
    }
}

fn with_oauth_bearer(security: &Security, tokens: Arc<UnsecuredTokens>) -> Security {
    Security {
        tls: security.tls.clone(),
        sasl: Some(Sasl::OAuthBearer(tokens)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_stays_through_oauth_bearer_token_expiries() {
    let Some((bootstrap, config)) = sasl_ssl_broker("oauthbearer") else {
        return;
    };
    // The broker ends each session when its token expires: 4 s here.
    let tokens = Arc::new(UnsecuredTokens {
        sub: "admin",
        lifetime_s: 4,
        issued: Default::default(),
    });
    let security = with_oauth_bearer(&security_from(&config), tokens.clone());
    let group = unique_group("oauthbearer");
    let (handle, driver) = Member::new(member_config(&bootstrap, &group, security), Arc::new(Solo))
        .expect("valid member");
    let driver = tokio::spawn(driver);
    let deadline = Instant::now() + Duration::from_secs(30);
    while handle.current().state != MemberState::Stable {
        assert!(
            Instant::now() < deadline && !driver.is_finished(),
            "no stable membership over SASL_SSL/OAUTHBEARER within 30 s: {:?}",
            handle.current().state
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let joined = handle.current().generation.expect("a generation");
    let first_tokens = tokens.issued.load(std::sync::atomic::Ordering::SeqCst);
    // Three token lifetimes: each session is renewed in place with a fresh token.
    tokio::time::sleep(Duration::from_secs(13)).await;
    let status = handle.current();
    assert_eq!(status.state, MemberState::Stable, "{status:?}");
    assert_eq!(
        status.generation.as_ref().map(|g| g.generation_id),
        Some(joined.generation_id),
        "the member kept its generation through the token expiries"
    );
    let renewed = tokens.issued.load(std::sync::atomic::Ordering::SeqCst) - first_tokens;
    println!("{renewed} fresh tokens over three token lifetimes");
    assert!(
        renewed >= 3,
        "sessions were renewed with fresh tokens: {renewed}"
    );
    handle.leave("test done").await;
    let ended = tokio::time::timeout(Duration::from_secs(10), driver)
        .await
        .expect("the driver ends after leaving");
    ended.expect("driver task").expect("a clean leave");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_oauth_bearer_token_is_a_fatal_error() {
    let Some((bootstrap, config)) = sasl_ssl_broker("oauthbearer expired") else {
        return;
    };
    let tokens = Arc::new(UnsecuredTokens {
        sub: "admin",
        lifetime_s: -60,
        issued: Default::default(),
    });
    let security = with_oauth_bearer(&security_from(&config), tokens);
    let group = unique_group("oauthbearer-expired");
    let error = run_member(
        member_config(&bootstrap, &group, security),
        Duration::from_secs(20),
    )
    .await
    .expect_err("an expired token is refused");
    let text = error.to_string();
    assert!(text.contains("OAUTHBEARER"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_ends_the_member_within_seconds() {
    let Some((bootstrap, config)) = sasl_ssl_broker("a_wrong_password_ends_the_member") else {
        return;
    };
    let right = security_from(&config);
    let wrong_password = "wrong-password-4f1d";
    let t0 = Instant::now();
    let error = run_member(
        member_config(
            &bootstrap,
            &unique_group("sasl-wrong"),
            with_password(&right, wrong_password),
        ),
        Duration::from_secs(15),
    )
    .await
    .expect_err("a wrong password must end the member");
    let elapsed = t0.elapsed();
    let message = error.to_string();
    println!(
        "MEASURE sasl_wrong_password_fatal={}ms",
        elapsed.as_millis()
    );
    println!("wrong password: {message}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(
        message.contains("SASL SCRAM-SHA-512 authentication")
            && message.contains("sasl.jaas.config"),
        "{message}"
    );
    assert!(
        !message.contains(wrong_password) && !message.contains(&password_of(&right)),
        "the error shows a password: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_that_did_not_sign_the_broker_gives_a_clear_tls_error() {
    let Some((bootstrap, config)) = sasl_ssl_broker("a_wrong_ca_gives_a_tls_error") else {
        return;
    };
    // Mozilla's roots did not sign the test broker's certificate.
    let mut security = security_from(&config);
    security.tls.as_mut().expect("SASL_SSL has TLS").roots = TrustRoots::WebPki;
    let mut cluster = ClusterConfig::new(&bootstrap);
    cluster.security = security.clone();
    let error = Cluster::new(cluster)
        .unwrap()
        .any_broker()
        .await
        .expect_err("an untrusted certificate must fail");
    println!("wrong CA: {error}");
    assert!(error.is_fatal(), "{error:?}");
    assert!(error.kind() == ConnectionErrorKind::Tls, "{error:?}");
    assert!(
        error.to_string().contains("ssl.truststore.location"),
        "{error}"
    );

    // The member stops on it too, rather than retrying.
    let t0 = Instant::now();
    let error = run_member(
        member_config(&bootstrap, &unique_group("sasl-ca"), security),
        Duration::from_secs(15),
    )
    .await
    .expect_err("an untrusted certificate must end the member");
    assert!(error.to_string().contains("TLS handshake"), "{error}");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_acls_on_the_group_gets_an_authorization_error() {
    let Some((bootstrap, config)) = sasl_ssl_broker("a_user_without_acls") else {
        return;
    };
    let alice = config.with_file_name("client-alice.properties");
    let error = run_member(
        member_config(&bootstrap, &unique_group("sasl-acl"), security_from(&alice)),
        Duration::from_secs(15),
    )
    .await
    .expect_err("a user without ACLs must be refused");
    println!("no ACLs: {error}");
    assert!(
        error.to_string().contains("not authorized for the group"),
        "{error}"
    );
}

#[tokio::test]
async fn a_user_without_acls_on_a_transactional_id_is_told_which_acl_to_add() {
    let Some((bootstrap, config)) = sasl_ssl_broker("a_user_without_acls_on_a_transactional_id")
    else {
        return;
    };
    let alice = config.with_file_name("client-alice.properties");
    let mut cluster = ClusterConfig::new(bootstrap.as_str());
    cluster.security = security_from(&alice);
    let cluster = Arc::new(Cluster::new(cluster).expect("a cluster client"));
    let id = unique_group("txn");
    let error = kroupier_coordinator::log::TransactionalProducer::init(
        cluster,
        id.as_str(),
        Duration::from_secs(60),
    )
    .await
    .expect_err("a user without ACLs on the transactional id must be refused");
    println!("no ACLs on the transactional id: {error}");
    assert!(
        error.kind() == kroupier_coordinator::log::TransactionErrorKind::NotAuthorized,
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("--transactional-id {id}")) && text.contains("kafka-acls.sh"),
        "the error names the ACL to add: {text}"
    );
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn connect_times(cluster: &Cluster, addr: &str, n: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let connection = cluster.connect(addr).await.expect("connect");
        samples.push(t0.elapsed());
        connection.close();
    }
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_outlives_its_sasl_sessions_by_renewing_them_in_place() {
    let Some((bootstrap, config)) = sasl_ssl_broker("sasl re-authentication in place") else {
        return;
    };
    let addr = bootstrap.split(',').next().unwrap().to_owned();
    let mut secured = ClusterConfig::new(&bootstrap);
    secured.security = security_from(&config);
    let cluster = Cluster::new(secured).unwrap();
    let connection = cluster.connect(&addr).await.expect("connect");
    // scripts/kafka gives SASL sessions 8 s (KROUPIER_KAFKA_REAUTH_MS): past three of them the
    // broker would have closed a connection that did not renew.
    let lifetime_ms: u64 = std::env::var("KROUPIER_KAFKA_REAUTH_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(8_000);
    let until = Instant::now() + Duration::from_millis(3 * lifetime_ms + 1_000);
    let mut requests = 0;
    while Instant::now() < until {
        let metadata = kafka_protocol::messages::MetadataRequest::default();
        connection
            .send(&metadata)
            .await
            .unwrap_or_else(|e| panic!("request {requests} failed: {e}"));
        requests += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !connection.is_closed(),
        "the connection closed: its sessions were not renewed in place"
    );
    println!("{requests} requests on one connection over three SASL session lifetimes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_cost() {
    let Some((bootstrap, config)) = sasl_ssl_broker("handshake_cost") else {
        return;
    };
    let addr = bootstrap.split(',').next().unwrap().to_owned();
    let mut secured = ClusterConfig::new(&bootstrap);
    secured.security = security_from(&config);
    let secured = Cluster::new(secured).unwrap();
    let sasl_ssl = median(connect_times(&secured, &addr, 20).await);
    println!(
        "MEASURE handshake_sasl_ssl_scram_sha_512_median={}us",
        sasl_ssl.as_micros()
    );
    if let Ok(plain) = std::env::var("KROUPIER_KAFKA_BOOTSTRAP") {
        let plain_addr = plain.trim().split(',').next().unwrap().to_owned();
        let cluster = Cluster::new(ClusterConfig::new(&plain_addr)).unwrap();
        let plaintext = median(connect_times(&cluster, &plain_addr, 20).await);
        println!(
            "MEASURE handshake_plaintext_median={}us",
            plaintext.as_micros()
        );
    }
}

/// Every secret of a client properties file: the passwords in its `sasl.jaas.config`.
fn passwords_in(path: &Path) -> Vec<String> {
    let mut passwords = vec![password_of(&security_from(path))];
    // The whole JAAS value, too: it must never be logged either.
    passwords.extend(
        read_properties(path)
            .into_iter()
            .filter(|(k, _)| k == "sasl.jaas.config")
            .map(|(_, v)| v),
    );
    passwords
}

/// Asserts that no file in `dir` holds any of `secrets`; returns how many lines were scanned.
fn assert_no_secret_in_logs(dir: &Path, secrets: &[String]) -> usize {
    let mut lines = 0;
    for entry in std::fs::read_dir(dir).expect("the log dir") {
        let path = entry.expect("a log file").path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read a log")).into_owned();
        for (n, line) in text.lines().enumerate() {
            lines += 1;
            for secret in secrets {
                assert!(
                    !line.contains(secret.as_str()),
                    "{}:{} holds a secret of the client config",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    lines
}

/// `kroupier describe --command-config config --json`, its stderr appended to `log`.
fn describe_over_sasl_ssl(bootstrap: &str, group: &str, config: &Path, log: &Path) -> Value {
    let output = std::process::Command::new(binary("kroupier"))
        .args([
            "describe",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--json",
        ])
        .arg("--command-config")
        .arg(config)
        .env("RUST_LOG", DEBUG_LOGS)
        .output()
        .expect("run kroupier describe");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the describe log");
    file.write_all(&output.stderr)
        .expect("keep describe's stderr");
    file.write_all(&output.stdout)
        .expect("keep describe's stdout");
    assert_eq!(
        output.status.code(),
        Some(0),
        "kroupier describe --command-config: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// What the processes of the log scan log: everything of kroupier's own crates.
const DEBUG_LOGS: &str = "info,kroupier_coordinator=debug,kroupier_worker=debug";

#[test]
fn quickstart_workers_over_sasl_ssl_share_tasks_fail_over_and_log_no_secret() {
    let Some((bootstrap, config)) = sasl_ssl_broker("quickstart over SASL_SSL") else {
        return;
    };
    let journal = TempDir::new("sasl-journal");
    let logs = TempDir::new("sasl-logs");
    let mut group = Group::new(&bootstrap, "sasl-workers", 12, &journal.0);
    group.extra = vec!["--command-config".into(), config.display().to_string()];
    group.logs = Some(logs.0.clone());
    group.env = vec![("RUST_LOG".into(), DEBUG_LOGS.into())];
    let mut workers: Vec<Worker> = ["w1", "w2", "w3"]
        .iter()
        .map(|id| group.start(id))
        .collect();
    let owners = wait_balanced(&journal.0, 12, 3);
    assert!(counts(&owners).values().all(|&n| n == 4), "{owners:?}");

    // The observer sees the same group over SASL_SSL.
    let described = describe_over_sasl_ssl(
        &bootstrap,
        &group.group,
        &config,
        &logs.0.join("describe.stderr"),
    );
    let members = described["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{described}");
    let tasks: BTreeSet<&str> = members
        .iter()
        .flat_map(|m| m["tasks"].as_array().expect("tasks").iter())
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tasks.len(), 12, "{described}");

    // SIGKILL one: its tasks run elsewhere within the session, never on two workers at once.
    let victim = workers.remove(1);
    let moved = tasks_of(&owners, &victim.id);
    let killed_ms = unix_ms();
    victim.process.signal(Signal::Kill);
    let bound = SESSION_MS + 2 * HEARTBEAT_MS + SLACK_MS;
    let latency = moved_after(&journal.0, &moved, &victim.id, killed_ms, bound);
    println!(
        "MEASURE sasl_ssl_kill_to_running_elsewhere_ms={latency} (session {SESSION_MS} ms, heartbeat {HEARTBEAT_MS} ms)"
    );
    assert!(latency <= bound, "took {latency} ms, bound {bound} ms");
    wait_balanced_since(&journal.0, 12, 2, killed_ms);
    assert_no_overlap(&journal.0);

    // A graceful end, so that every log is complete before the scan.
    for worker in &mut workers {
        worker.process.signal(Signal::Term);
    }
    for worker in &mut workers {
        assert_eq!(worker.process.wait(), Some(0), "{} exits 0", worker.id);
    }
    drop(victim);
    let mut secrets = passwords_in(&config);
    secrets.extend(passwords_in(
        &config.with_file_name("client-alice.properties"),
    ));
    let scanned = assert_no_secret_in_logs(&logs.0, &secrets);
    println!("scanned {scanned} log lines for secrets");
    assert!(scanned > 0, "the workers logged nothing to scan");
}

/// The SSL listener of the `--sasl-ssl` broker, which requires client certificates, and its
/// client properties (`client-mtls.properties` beside the SASL_SSL ones): its address and the
/// security settings with the client certificate.
fn mtls_listener(config: &Path) -> (String, Security) {
    let path = config.with_file_name("client-mtls.properties");
    let properties = read_properties(&path);
    let bootstrap = properties
        .iter()
        .find(|(k, _)| k == "bootstrap.servers")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("{} names no bootstrap.servers", path.display()));
    (bootstrap, security_from(&path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_authenticates_over_ssl_and_none_is_a_clear_error() {
    let Some((_, config)) = sasl_ssl_broker("a_client_certificate_authenticates") else {
        return;
    };
    let (bootstrap, security) = mtls_listener(&config);
    assert!(
        security
            .tls
            .as_ref()
            .is_some_and(|tls| tls.identity.is_some())
            && security.sasl.is_none(),
        "client-mtls.properties must be SSL with a key store: {security:?}"
    );
    let group = unique_group("mtls-join");
    let (handle, driver) = Member::new(
        member_config(&bootstrap, &group, security.clone()),
        Arc::new(Solo),
    )
    .expect("valid member");
    let driver = tokio::spawn(driver);
    let deadline = Instant::now() + Duration::from_secs(30);
    while handle.current().state != MemberState::Stable {
        assert!(
            Instant::now() < deadline && !driver.is_finished(),
            "no stable membership over SSL with a client certificate within 30 s: {:?}",
            handle.current().state
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.leave("test done").await;
    let ended = tokio::time::timeout(Duration::from_secs(10), driver)
        .await
        .expect("the driver ends after leaving");
    ended.expect("driver task").expect("a clean leave");

    // Without the certificate the broker refuses the connection: a fatal TLS error that says
    // what to set, not a retry loop.
    let mut without = security;
    without.tls.as_mut().expect("SSL has TLS").identity = None;
    let mut cluster = ClusterConfig::new(&bootstrap);
    cluster.security = without.clone();
    let error = Cluster::new(cluster)
        .unwrap()
        .any_broker()
        .await
        .expect_err("a client without a certificate must be refused");
    println!("no client certificate: {error}");
    assert!(error.kind() == ConnectionErrorKind::Tls, "{error:?}");
    assert!(error.is_fatal(), "{error:?}");
    assert!(
        error.to_string().contains("ssl.keystore.location"),
        "{error}"
    );
    let t0 = Instant::now();
    let error = run_member(
        member_config(&bootstrap, &unique_group("mtls-none"), without),
        Duration::from_secs(15),
    )
    .await
    .expect_err("a member without a client certificate must end");
    assert!(
        error.to_string().contains("ssl.keystore.location"),
        "{error}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}

/// A duration as `Debug` shows it (`8s`, `7.5s`, `800ms`).
fn parse_duration(text: &str) -> Option<Duration> {
    if let Some(ms) = text.strip_suffix("ms") {
        return ms
            .parse::<f64>()
            .ok()
            .map(|ms| Duration::from_secs_f64(ms / 1_000.0));
    }
    text.strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .map(Duration::from_secs_f64)
}

/// Drops ANSI colour codes: the workers colour their logs.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// How many times a worker's log says it renewed a SASL session in place, and the session
/// lifetimes the broker granted.
fn renewals_in(log: &Path) -> (usize, BTreeSet<String>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<String> = text.lines().map(plain).collect();
    let renewals = lines
        .iter()
        .filter(|l| l.contains("SASL session renewed in place"))
        .count();
    let lifetimes = lines
        .iter()
        .filter(|l| l.contains("SASL session has a lifetime"))
        .filter_map(|l| l.split("lifetime=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    (renewals, lifetimes)
}

#[test]
fn workers_keep_their_tasks_and_membership_across_sasl_session_renewals() {
    let Some((bootstrap, config)) = sasl_ssl_broker("sasl session renewals") else {
        return;
    };
    let journal = TempDir::new("sasl-reauth-journal");
    let logs = TempDir::new("sasl-reauth-logs");
    let mut group = Group::new(&bootstrap, "sasl-reauth", 4, &journal.0);
    group.extra = vec!["--command-config".into(), config.display().to_string()];
    group.logs = Some(logs.0.clone());
    group.env = vec![("RUST_LOG".into(), DEBUG_LOGS.into())];
    let mut workers: Vec<Worker> = ["w1", "w2"].iter().map(|id| group.start(id)).collect();
    let owners = wait_balanced(&journal.0, 4, 2);
    let generation = settled_generation(&journal.0);
    let since = unix_ms();

    // scripts/kafka gives SASL sessions 8 s (connections.max.reauth.ms) and kroupier renews
    // each at 85-95 % of it: watch for three lifetimes, as the broker states them.
    let log_of = |worker: &Worker| logs.0.join(format!("{}.stderr", worker.id));
    let lifetime = workers
        .iter()
        .flat_map(|w| renewals_in(&log_of(w)).1)
        .filter_map(|l| parse_duration(&l))
        .max()
        .expect("the broker grants SASL sessions a lifetime (connections.max.reauth.ms)");
    let watch = lifetime * 3 + Duration::from_secs(1);
    println!("SASL session lifetime {lifetime:?}; watching for {watch:?}");
    std::thread::sleep(watch);
    for worker in &workers {
        let (renewals, lifetimes) = renewals_in(&log_of(worker));
        println!(
            "{}: {renewals} SASL sessions renewed in place, lifetimes {lifetimes:?}",
            worker.id
        );
        // At least its coordinator connection, three times.
        assert!(renewals >= 3, "{}: only {renewals} renewals", worker.id);
        let text = plain(&std::fs::read_to_string(log_of(worker)).unwrap_or_default());
        assert!(
            !text.contains("re-authentication failed"),
            "{}: a renewal failed",
            worker.id
        );
    }

    // No rebalance and no lost membership meanwhile: no assignment or loss event since, every
    // task ran on its owner without a gap, in the same generation.
    for worker in &mut workers {
        worker.drain();
        let events: Vec<&Value> = worker
            .seen
            .iter()
            .filter(|v| v["ts_ms"].as_u64().is_some_and(|t| t > since))
            .filter(|v| v["event"] == "assigned" || v["event"] == "lost")
            .collect();
        assert!(
            events.is_empty(),
            "{} rebalanced or lost its membership: {events:?}",
            worker.id
        );
    }
    // Beats come every 100 ms; a loaded 2-core machine can delay one by a few hundred ms
    // without the task stopping (a stop would come with an event above), so a gap only counts
    // when it is longer than that.
    let now = unix_ms();
    for (task, beats) in journals(&journal.0) {
        let recent: Vec<_> = beats.into_iter().filter(|b| b.unix_ms > since).collect();
        let tenures = journal::tenures(&recent, 1_000);
        assert_eq!(
            tenures.len(),
            1,
            "{task} did not run in one stretch: {tenures:?}"
        );
        let tenure = &tenures[0];
        assert_eq!(Some(&tenure.worker), owners.get(&task), "{task} moved");
        assert_eq!(tenure.generation, generation, "{task}: a new generation");
        assert!(
            tenure.last_ms + RECENT_MS >= now,
            "{task} stopped: {tenure:?}"
        );
    }

    for worker in &mut workers {
        worker.process.signal(Signal::Term);
    }
    for worker in &mut workers {
        assert_eq!(worker.process.wait(), Some(0), "{} exits 0", worker.id);
    }
}
