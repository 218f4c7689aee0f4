//! `kroupier watch` end to end: without a terminal it prints a line (or a JSON object) per
//! change and ends with exit 0 on SIGTERM; on a terminal, a SIGTERM from outside leaves the
//! terminal as it found it (main screen, cursor shown).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig};
use serde_json::Value;

const KROUPIER: &str = env!("CARGO_BIN_EXE_kroupier");

/// A task that runs until it is revoked.
#[derive(Debug, serde::Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

fn sigterm(child: &Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
}

/// `kroupier watch ARGS` with stdout piped; its stdout's lines as they come.
fn spawn_watch(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(KROUPIER)
        .arg("watch")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kroupier watch");
    let stdout = child.stdout.take().expect("stdout piped");
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    (child, receive)
}

/// Waits (bounded) for a line that `accept` takes; every line seen, for the failure message.
fn wait_for(lines: &mpsc::Receiver<String>, accept: impl Fn(&str) -> bool) -> (bool, Vec<String>) {
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(20)) {
        let done = accept(&line);
        seen.push(line);
        if done {
            return (true, seen);
        }
    }
    (false, seen)
}

/// SIGTERM, then the exit code and stderr.
fn stop(mut child: Child) -> (Option<i32>, String) {
    sigterm(&child);
    let code = child.wait().expect("wait for kroupier watch").code();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    (code, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_watch_prints_each_change_and_exits_0_on_sigterm() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bootstrap = coordinator.bootstrap();
    let mut config = WorkerConfig::new("cli-watch");
    config.member.cluster.bootstrap_servers = vec![bootstrap.clone()];
    config.worker_id = "worker-a".into();
    config.member.membership.session_timeout = Duration::from_secs(3);
    config.member.membership.heartbeat_interval = Duration::from_millis(500);
    config.status.addr = None;
    let worker = WorkerBuilder::new(config)
        .register::<Idle>("idle")
        .task(TaskSpec::new("task-0", "idle", serde_json::json!({})))
        .task(TaskSpec::new("task-1", "idle", serde_json::json!({})))
        .spawn()
        .await
        .unwrap();

    let target = ["--bootstrap", bootstrap.as_str(), "--group", "cli-watch"];
    // Plain lines, chosen because stdout is a pipe.
    let (child, lines) = spawn_watch(&target);
    let (found, seen) = tokio::task::spawn_blocking(move || {
        wait_for(&lines, |l| l.ends_with("Stable generation 1: worker-a 2"))
    })
    .await
    .unwrap();
    let (code, stderr) = stop(child);
    assert!(found, "no stable line in {seen:?}; stderr: {stderr}");
    assert_eq!(seen[0], format!("group cli-watch at {bootstrap}"));
    assert_eq!(code, Some(0), "{stderr}");

    // JSON objects, one a line: the group as `describe --json` shows it.
    let mut args = target.to_vec();
    args.push("--json");
    let (child, lines) = spawn_watch(&args);
    let (found, seen) = tokio::task::spawn_blocking(move || {
        wait_for(&lines, |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["event"] == "group"
                    && v["group"]["state"] == "Stable"
                    && v["group"]["members"][0]["tasks"] == serde_json::json!(["task-0", "task-1"])
            })
        })
    })
    .await
    .unwrap();
    let (code, stderr) = stop(child);
    assert!(found, "no stable group in {seen:?}; stderr: {stderr}");
    for line in &seen {
        let value: Value = serde_json::from_str(line).expect("every line is one JSON object");
        assert!(value["at_ms"].as_u64().is_some(), "{line}");
    }
    assert_eq!(code, Some(0), "{stderr}");

    worker.shutdown().await.unwrap();
    coordinator.shutdown().await;
}

#[test]
fn a_sigterm_restores_the_terminal() {
    // `script` (util-linux) runs the command on a pseudo-terminal and copies what it writes.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` command to run kroupier watch on a terminal");
        return;
    }
    // The shell prints its pid, then becomes kroupier (exec): that pid gets the SIGTERM.
    let command = format!("echo PID=$$; exec {KROUPIER} watch --bootstrap 127.0.0.1:1 --group g");
    let mut script = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start script");
    let mut stdout = script.stdout.take().expect("stdout piped");
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut chunk = [0; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut chunk) {
            if send.send(chunk[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    // Read until the view is up: kroupier asked for the alternate screen and drew a frame
    // (which hides the cursor).
    let mut bytes = Vec::new();
    let up = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        text.split_once("\x1b[?1049h")
            .is_some_and(|(_, drawn)| drawn.contains("\x1b[?25l"))
    };
    while !up(&bytes) {
        match receive.recv_timeout(Duration::from_secs(20)) {
            Ok(chunk) => bytes.extend(chunk),
            Err(_) => {
                let _ = script.kill();
                panic!(
                    "the view never started: {:?}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }
    let pid = String::from_utf8_lossy(&bytes)
        .split("PID=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        .expect("the shell printed its pid");
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let code = script.wait().expect("wait for script").code();
    while let Ok(chunk) = receive.recv_timeout(Duration::from_secs(5)) {
        bytes.extend(chunk);
    }
    let text = String::from_utf8_lossy(&bytes);
    let entered = text
        .rfind("\x1b[?1049h")
        .unwrap_or_else(|| panic!("the view never started: {text:?}"));
    let after = &text[entered..];
    assert!(
        after.contains("\x1b[?1049l"),
        "still on the alternate screen: {:?}",
        &after[after.len().saturating_sub(200)..]
    );
    assert!(
        after.rfind("\x1b[?25h") >= after.rfind("\x1b[?25l"),
        "the cursor is left hidden: {:?}",
        &after[after.len().saturating_sub(200)..]
    );
    assert_eq!(code, Some(0), "kroupier watch exits 0 on SIGTERM");
}
