//! The worker binaries' logs when stderr is a file: plain text, no colour codes (as the
//! coordinator's). Needs no broker: the workers dial a bootstrap nothing listens on.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kroupier_integration_tests::process::binary;

/// Runs the binary `name` with `args` against a bootstrap nothing listens on, at debug level,
/// with stderr going to a file; stops it once it logged a few lines (bounded) and checks that
/// the file has log lines and no colour codes.
fn assert_plain_log_file(name: &str, args: &[&str]) {
    let path = std::env::temp_dir().join(format!("kroupier-{name}-{}.log", std::process::id()));
    let file = std::fs::File::create(&path).expect("create the log file");
    let mut child = Command::new(binary(name))
        .args(args)
        .args([
            "--bootstrap",
            "127.0.0.1:1",
            "--group",
            "g",
            "--worker-id",
            "w",
            "--tasks",
            "1",
        ])
        .env("RUST_LOG", "debug")
        // tracing honours NO_COLOR; the test is about the terminal check alone.
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .expect("start the worker");
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut bytes = Vec::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        bytes = std::fs::read(&path).expect("read the log file");
        if bytes.iter().filter(|&&b| b == b'\n').count() >= 3 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("DEBUG") || text.contains("INFO"),
        "{name}: no log lines: {text}"
    );
    assert!(
        !text.contains('\x1b'),
        "{name}: colour codes in a log file: {text:?}"
    );
}

#[test]
fn a_workers_log_file_has_no_colour_codes() {
    assert_plain_log_file("kroupier", &["worker"]);
}

#[test]
fn the_quickstart_log_file_has_no_colour_codes() {
    assert_plain_log_file("quickstart", &[]);
}
