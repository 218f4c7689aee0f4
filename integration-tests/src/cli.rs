//! The `kroupier` binary as the tests drive it: one command against a group, its output,
//! `tasks list --json`, and `kroupier console` running beside a test.

use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::process::{Process, binary};

/// The first stdout line of `process` that starts with `prefix`, without the prefix.
///
/// # Panics
/// When no such line comes within 20 s.
pub fn line_after(process: &mut Process, prefix: &str) -> String {
    let lines = process.stdout_lines();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no `{prefix}` line"));
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.trim().to_owned();
        }
    }
}

/// `kroupier console` for `group` at `bootstrap`, on a free loopback port; its page's URL
/// (stopped when the returned process drops).
///
/// # Panics
/// When it prints no `console=` line within 20 s.
pub fn console(bootstrap: &str, group: &str) -> (Process, String) {
    let mut console = Process::spawn(
        "kroupier",
        &[
            "console",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--listen",
            "127.0.0.1:0",
        ]
        .map(String::from),
    );
    let url = line_after(&mut console, "console=");
    (console, url)
}

/// Runs `kroupier ARGS... --bootstrap BOOTSTRAP --group GROUP`.
///
/// # Panics
/// When the binary cannot be run (build it with `cargo build -p kroupier-cli`).
pub fn kroupier(bootstrap: &str, group: &str, args: &[&str]) -> Output {
    Command::new(binary("kroupier"))
        .args(args)
        .args(["--bootstrap", bootstrap, "--group", group])
        .output()
        .expect("run kroupier")
}

/// Runs a command that must succeed; its stdout.
///
/// # Panics
/// When it exits with anything but 0 (the message holds its stderr).
pub fn ok(bootstrap: &str, group: &str, args: &[&str]) -> String {
    let output = kroupier(bootstrap, group, args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "kroupier {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `kroupier tasks list --json`'s tasks, in its order (by id).
///
/// # Panics
/// When the command fails or prints no task array.
pub fn listed(bootstrap: &str, group: &str) -> Vec<Value> {
    let out = ok(bootstrap, group, &["tasks", "list", "--json"]);
    let json: Value = serde_json::from_str(&out).expect("one JSON object");
    json["tasks"].as_array().expect("a task array").clone()
}
