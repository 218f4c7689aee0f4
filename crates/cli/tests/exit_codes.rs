//! The exit-code table of docs/operations.md, one test per kind of outcome: 2 for bad input
//! (found before anything is sent), 1 when the cluster says no or the run fails. Flags clap
//! refuses are `tests/cli.rs`'s `bad_arguments_exit_2`; `--command-config` files are
//! `tests/command_config.rs`'s.

use std::process::{Command, Output};

use kroupier_embedded::EmbeddedCoordinator;

const KROUPIER: &str = env!("CARGO_BIN_EXE_kroupier");

fn kroupier(args: &[&str]) -> Output {
    Command::new(KROUPIER)
        .args(args)
        .output()
        .expect("run the kroupier binary")
}

/// Runs each command and checks its exit code and that stderr names the problem; reports every
/// command that does not, at once.
fn assert_exits(code: i32, cases: &[(&[&str], &str)]) {
    let mut wrong = Vec::new();
    for (args, expected) in cases {
        let output = kroupier(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(code)
            || !stderr.contains(expected)
            || stderr.contains("panicked")
        {
            wrong.push(format!(
                "{args:?} exited {:?}: {stderr}",
                output.status.code()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "expected exit {code}:\n{}",
        wrong.join("\n")
    );
}

/// A port something listens on (the returned listener), for "address in use".
fn busy_port() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    (listener, addr)
}

#[test]
fn values_no_command_can_use_exit_2_before_anything_is_sent() {
    // Port 1: a command that sent anything would fail to connect, with another message.
    let on = ["--bootstrap", "127.0.0.1:1", "--group", "g"];
    let with = |args: &[&'static str]| -> Vec<&'static str> {
        let mut all = args.to_vec();
        all.extend_from_slice(&on);
        all
    };
    let big = std::env::temp_dir().join(format!("kroupier-exit-big-{}.json", std::process::id()));
    std::fs::write(&big, format!(r#"{{"blob":"{}"}}"#, "x".repeat(600 * 1024))).unwrap();
    let big = big.to_str().unwrap();
    let long_id = "x".repeat(250);
    let put_big = [
        &with(&["tasks", "put", "big", "--kind", "beat"])[..],
        &["--config-file", big],
    ]
    .concat();
    let put_long = [
        &["tasks", "put", &long_id, "--kind", "beat", "--config", "{}"][..],
        &on[..],
    ]
    .concat();
    assert_exits(
        2,
        &[
            (
                &["describe", "--bootstrap", "nohost", "--group", "g"],
                "not `host:port`",
            ),
            (
                &["tasks", "list", "--bootstrap", "", "--group", "g"],
                "`bootstrap_servers` is empty",
            ),
            (&with(&["tasks", "pause", ""]), "task id \"\" is invalid"),
            (&put_long, "it is 250 characters long"),
            // The task id rule: what breaks tables, URLs and file names is refused.
            (
                &with(&["tasks", "put", "x/y", "--kind", "beat", "--config", "{}"]),
                "ASCII letters, digits",
            ),
            (&with(&["tasks", "restart", "✓\n"]), "ASCII letters, digits"),
            // A put without a config: refused, not stored as `null` for the task to fail on.
            (
                &with(&["tasks", "put", "t-0", "--kind", "beat"]),
                "<--config <CONFIG>|--config-file <CONFIG_FILE>>",
            ),
            // A group id that cannot name a topic: the advice is the CLI's flag.
            (
                &[
                    "tasks",
                    "list",
                    "--bootstrap",
                    "127.0.0.1:1",
                    "--group",
                    "a b",
                ],
                "pass --topic",
            ),
            (&put_big, "over the task store's limit"),
            (
                &with(&["tasks", "list", "--topic", "a b"]),
                "--topic: topic `a b`",
            ),
            (
                &["demo", "--heartbeat-interval-ms", "5000"],
                "--heartbeat-interval-ms must be below --session-timeout-ms",
            ),
            (&["demo", "--bootstrap", "nohost"], "not `host:port`"),
            (
                &[
                    "worker",
                    "--bootstrap",
                    "127.0.0.1:1",
                    "--group",
                    "g",
                    "--worker-id",
                    "w",
                    "--tasks",
                    "1",
                    "--heartbeat-interval-ms",
                    "5000",
                ],
                "heartbeat_interval 5s must be below session_timeout 3s",
            ),
            (
                &["coordinator", "--listen", "nonsense"],
                "could not bind \"nonsense\"",
            ),
            (
                &[
                    "coordinator",
                    "--listen",
                    "127.0.0.1:0",
                    "--ssl-cert",
                    "/nonexistent/kroupier.pem",
                ],
                "/nonexistent/kroupier.pem",
            ),
            (
                &[
                    "coordinator",
                    "--listen",
                    "127.0.0.1:0",
                    "--min-session-timeout-ms",
                    "5000",
                    "--max-session-timeout-ms",
                    "1000",
                ],
                "min_session_timeout (5s) is above max_session_timeout (1s)",
            ),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_saying_no_exits_1() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bootstrap = coordinator.bootstrap();
    tokio::task::spawn_blocking(move || {
        let on = ["--bootstrap", bootstrap.as_str(), "--group", "exit-codes"];
        assert_exits(
            1,
            &[
                (
                    &[&["describe"][..], &on[..]].concat(),
                    "group `exit-codes` does not exist",
                ),
                (
                    &[&["tasks", "pause", "x"][..], &on[..]].concat(),
                    "no task store yet",
                ),
                (
                    &[&["tasks", "list"][..], &on[..]].concat(),
                    "no task store yet",
                ),
            ],
        );
    })
    .await
    .unwrap();
    coordinator.shutdown().await;
}

#[test]
fn an_unreachable_cluster_or_a_busy_port_exits_1() {
    let (_listener, busy) = busy_port();
    let free = {
        let (listener, addr) = busy_port();
        drop(listener);
        addr
    };
    assert_exits(
        1,
        &[
            (
                &[
                    "tasks",
                    "list",
                    "--bootstrap",
                    &free,
                    "--group",
                    "g",
                    "--timeout-ms",
                    "2000",
                ],
                &free,
            ),
            (
                &["coordinator", "--listen", &busy],
                "Address already in use",
            ),
            (
                &[
                    "console",
                    "--bootstrap",
                    &free,
                    "--group",
                    "g",
                    "--listen",
                    &busy,
                ],
                "cannot serve the console",
            ),
        ],
    );
}

#[test]
fn the_table_is_in_the_operations_guide() {
    let guide = include_str!("../../../docs/operations.md");
    for row in [
        "| 0 | done;",
        "| 1 | the cluster said no, or the run failed |",
        "| 2 | bad input, found before anything is sent |",
    ] {
        assert!(guide.contains(row), "docs/operations.md lacks `{row}`");
    }
}
