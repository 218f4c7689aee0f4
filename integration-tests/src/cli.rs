//! The `kroupier` binary as the tests drive it: one command against a group, its output, and
//! `tasks list --json`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::process::binary;

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
