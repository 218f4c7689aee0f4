//! `kroupier worker` that cannot reach Kafka says so at the default log level (WARN), within
//! 5 s, naming the cause and what to check, and its `/readyz` answers 503 with the reason: an
//! address where nothing listens, and `security.protocol=SSL` against a PLAINTEXT listener (the
//! embedded coordinator's).
//!
//! Real processes, sockets and time; the 5 s bound is the promise under test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kroupier_embedded::EmbeddedCoordinator;

const KROUPIER: &str = env!("CARGO_BIN_EXE_kroupier");

/// How soon after its start a worker must say why it cannot work.
const WITHIN: Duration = Duration::from_secs(5);

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `--command-config` file with `properties` and a status API on `status_port`.
fn command_config(name: &str, status_port: u16, properties: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kroupier-unreachable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("kroupier.status.addr=127.0.0.1:{status_port}\n{properties}"),
    )
    .unwrap();
    path
}

/// A worker process, killed when dropped; its stderr lines arrive on `lines`.
struct Worker {
    child: Child,
    lines: mpsc::Receiver<String>,
    started: Instant,
}

impl Worker {
    fn start(bootstrap: &str, config: &PathBuf) -> Worker {
        let started = Instant::now();
        let mut child = Command::new(KROUPIER)
            .args(["worker", "--bootstrap", bootstrap, "--group", "g"])
            .args(["--worker-id", "w1", "--tasks", "1", "--command-config"])
            .arg(config)
            // The default level: whatever the caller's environment says.
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kroupier worker");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Worker {
            child,
            lines,
            started,
        }
    }

    /// The first stderr line with every one of `words`, if it comes within `within` of the
    /// start; every line seen on the way, for the failure message.
    fn line_with(&self, words: &[&str], within: Duration) -> Result<String, Vec<String>> {
        let mut seen = Vec::new();
        loop {
            let left = within.saturating_sub(self.started.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if words.iter().all(|w| line.contains(w)) => return Ok(line),
                Ok(line) => seen.push(line),
                Err(_) => return Err(seen),
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /readyz` on the status API at `port`: the status code and the body.
fn readyz(port: u16) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the status API serves");
    stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let code = answer.split(' ').nth(1).unwrap().parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
    (code, body)
}

/// Asserts the WARN within 5 s naming `cause` and `addr`, then `/readyz`'s 503 naming them.
fn assert_says_why(worker: &Worker, status_port: u16, addr: &str, cause: &str) {
    let line = worker
        .line_with(
            &["WARN", "no usable connection to Kafka", addr, cause],
            WITHIN,
        )
        .unwrap_or_else(|seen| {
            panic!("no WARN naming `{cause}` and {addr} within 5 s; stderr: {seen:#?}")
        });
    assert!(line.contains("security.protocol"), "{line}");
    assert!(line.contains("bootstrap"), "{line}");
    // The worker's board follows the member's status a moment after the WARN line: poll, still
    // within the 5 s.
    let (code, body) = loop {
        let (code, body) = readyz(status_port);
        if body.contains("no usable connection") || worker.started.elapsed() > WITHIN {
            break (code, body);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, 503, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(body["status"], 503, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.starts_with("not ready: no usable connection to Kafka"),
        "{error}"
    );
    assert!(error.contains(addr) && error.contains(cause), "{error}");
}

#[test]
fn a_worker_with_nothing_at_its_bootstrap_warns_within_5_s_and_readyz_says_why() {
    let status_port = free_port();
    let config = command_config("refused.properties", status_port, "");
    let worker = Worker::start("127.0.0.1:1", &config);
    assert_says_why(&worker, status_port, "127.0.0.1:1", "Connection refused");
}

#[test]
fn a_static_worker_with_nothing_at_its_bootstrap_warns_within_5_s_and_readyz_says_why() {
    // A static member first asks who holds its instance id (for up to 5 s) before its member
    // exists: that wait must not be silent either.
    let status_port = free_port();
    let config = command_config("static.properties", status_port, "group.instance.id=w1\n");
    let worker = Worker::start("127.0.0.1:1", &config);
    assert_says_why(&worker, status_port, "127.0.0.1:1", "Connection refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_speaking_tls_to_a_plaintext_listener_warns_within_5_s_and_readyz_says_why() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bootstrap = coordinator.bootstrap();
    let status_port = free_port();
    let config = command_config("ssl.properties", status_port, "security.protocol=SSL\n");
    let addr = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let worker = Worker::start(&addr, &config);
        assert_says_why(&worker, status_port, &addr, "TLS handshake");
    })
    .await
    .unwrap();
    coordinator.shutdown().await;
}
