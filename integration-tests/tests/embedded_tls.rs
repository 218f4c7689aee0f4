//! Quickstart workers over mutual TLS to the embedded coordinator: `kroupier coordinator
//! --ssl-cert --ssl-client-ca` serves TLS and requires client certificates, and workers connect
//! with `--command-config` (Kafka client properties: `security.protocol=SSL`, a PEM trust store
//! and key store). Two workers share the tasks and one takes over the other's after a SIGKILL,
//! with no task on two workers at once; a worker without a client certificate ends at once with
//! an error that says what to set.
//!
//! The test starts its own coordinator, so it needs no broker, and makes its certificates with
//! the `openssl` command line tool, as `scripts/kafka start --sasl-ssl` does. Needs the binaries
//! built (`cargo build -p kroupier-examples -p kroupier-cli`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::process::{Process, Signal, binary};
use kroupier_integration_tests::quickstart::*;

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

/// A CA, then a certificate `name` signed by it with `extensions`; writes `name.key`,
/// `name.pem` and both in `name-keystore.pem` (a PEM key store, as Kafka reads one).
fn signed(dir: &Path, name: &str, extensions: &str) {
    std::fs::write(
        dir.join(format!("{name}.ext")),
        format!("basicConstraints=CA:FALSE\n{extensions}"),
    )
    .expect("write the extensions");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let (key, csr, pem, ext) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
        format!("{name}.ext"),
    );
    let subject = format!("/CN=kroupier-test-{name}");
    let mut request = vec!["req", "-new"];
    request.extend(ec);
    request.extend(["-subj", &subject, "-keyout", &key, "-out", &csr]);
    openssl(dir, &request);
    let serial = (unix_ms() % 1_000_000_000).to_string();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            &serial,
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &pem,
        ],
    );
    let both = std::fs::read_to_string(dir.join(&key)).unwrap()
        + &std::fs::read_to_string(dir.join(&pem)).unwrap();
    std::fs::write(dir.join(format!("{name}-keystore.pem")), both).unwrap();
}

/// The test PKI in `dir`: `ca.pem`, `server-keystore.pem` (for 127.0.0.1 and localhost),
/// `client-keystore.pem` (client authentication).
fn make_certificates(dir: &Path) {
    openssl(
        dir,
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
            "/CN=kroupier-test-ca",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    );
    signed(
        dir,
        "server",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    );
    signed(dir, "client", "extendedKeyUsage=clientAuth\n");
}

/// Writes Kafka client properties to `dir/name`: SSL, the CA as the trust store, and
/// `keystore` as the key store when given.
fn client_config(dir: &Path, name: &str, keystore: Option<&str>) -> PathBuf {
    let mut text = format!(
        "# kroupier's embedded coordinator over TLS\nsecurity.protocol=SSL\n\
         ssl.truststore.type=PEM\nssl.truststore.location={}\n",
        dir.join("ca.pem").display()
    );
    if let Some(keystore) = keystore {
        text += &format!(
            "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
            dir.join(keystore).display()
        );
    }
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the client config");
    path
}

/// `kroupier coordinator` over mutual TLS on a free port, and its bootstrap address.
fn coordinator(dir: &Path) -> (Process, String) {
    let args: Vec<String> = [
        "coordinator",
        "--listen",
        "127.0.0.1:0",
        "--max-session-timeout-ms",
        "300000",
        // The key is read from the certificate's file, a PEM key store.
        "--ssl-cert",
        &dir.join("server-keystore.pem").display().to_string(),
        "--ssl-client-ca",
        &dir.join("ca.pem").display().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut process = Process::spawn("kroupier", &args);
    let lines = process.stdout_lines();
    let line = lines
        .recv_timeout(Duration::from_secs(20))
        .expect("kroupier coordinator prints its bootstrap line");
    let bootstrap = line
        .strip_prefix("bootstrap=")
        .unwrap_or_else(|| panic!("not a bootstrap line: {line}"))
        .to_owned();
    (process, bootstrap)
}

#[test]
fn quickstart_workers_over_mutual_tls_share_tasks_and_fail_over() {
    let pki = TempDir::new("embedded-tls-pki");
    make_certificates(&pki.0);
    let (_coordinator, bootstrap) = coordinator(&pki.0);
    let config = client_config(&pki.0, "client.properties", Some("client-keystore.pem"));

    let journal = TempDir::new("embedded-tls-journal");
    let mut group = Group::new(&bootstrap, "embedded-tls", 8, &journal.0);
    group.extra = vec!["--command-config".into(), config.display().to_string()];
    let mut workers: Vec<Worker> = ["w1", "w2"].iter().map(|id| group.start(id)).collect();
    let owners = wait_balanced(&journal.0, 8, 2);
    assert!(counts(&owners).values().all(|&n| n == 4), "{owners:?}");

    // SIGKILL one: its tasks run on the other within the session, never on two at once.
    let victim = workers.remove(0);
    let moved = tasks_of(&owners, &victim.id);
    let killed_ms = unix_ms();
    victim.process.signal(Signal::Kill);
    let bound = SESSION_MS + 2 * HEARTBEAT_MS + SLACK_MS;
    let latency = moved_after(&journal.0, &moved, &victim.id, killed_ms, bound);
    println!(
        "MEASURE embedded_tls_kill_to_running_elsewhere_ms={latency} (session {SESSION_MS} ms, heartbeat {HEARTBEAT_MS} ms)"
    );
    assert!(latency <= bound, "took {latency} ms, bound {bound} ms");
    wait_balanced_since(&journal.0, 8, 1, killed_ms);
    assert_no_overlap(&journal.0);

    let survivor = &mut workers[0];
    survivor.process.signal(Signal::Term);
    assert_eq!(survivor.process.wait(), Some(0), "the survivor exits 0");
}

#[test]
fn a_worker_without_a_client_certificate_ends_with_a_clear_error() {
    let pki = TempDir::new("embedded-tls-nocert");
    make_certificates(&pki.0);
    let (_coordinator, bootstrap) = coordinator(&pki.0);
    let config = client_config(&pki.0, "no-certificate.properties", None);
    let journal = TempDir::new("embedded-tls-nocert-journal");
    let stderr = pki.0.join("worker.stderr");
    let args: Vec<String> = [
        "--bootstrap",
        &bootstrap,
        "--group",
        &unique("embedded-tls-nocert"),
        "--worker-id",
        "w1",
        "--tasks",
        "2",
        "--journal-dir",
        &journal.0.display().to_string(),
        "--command-config",
        &config.display().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let t0 = Instant::now();
    let mut worker = Command::new(binary("quickstart"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).expect("create the stderr log"))
        .spawn()
        .expect("start quickstart");
    let code = loop {
        if let Some(status) = worker.try_wait().expect("poll the worker") {
            break status.code();
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = worker.kill();
            let _ = worker.wait();
            panic!("the worker still ran after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = t0.elapsed();
    let log = std::fs::read_to_string(&stderr).expect("read the worker's stderr");
    println!("worker without a client certificate ({elapsed:?}, exit {code:?}):\n{log}");
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}");
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    assert!(
        log.contains("requires a client certificate") && log.contains("ssl.keystore.location"),
        "{log}"
    );
}
