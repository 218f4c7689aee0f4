//! `quickstart`'s bounds: a `--tasks` beyond what it can hold is bad input, refused at once
//! with exit code 2 and a message naming the flag, before anything is built or connects.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn too_many_tasks_exit_2_at_once() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args([
            "--bootstrap",
            "127.0.0.1:1",
            "--group",
            "g",
            "--worker-id",
            "w",
        ])
        .args(["--tasks", "4294967296"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quickstart");
    let started = Instant::now();
    while child.try_wait().expect("poll quickstart").is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("quickstart --tasks 4294967296 still ran after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("read quickstart's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tasks"), "{stderr}");
    assert!(stderr.contains("1000000"), "{stderr}");
}
