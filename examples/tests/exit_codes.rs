//! The example binaries follow the exit-code table of docs/operations.md, as `kroupier` does: 2
//! for bad input found before anything is sent (a flag clap refuses, a `--command-config` key
//! it does not know), 1 when the cluster says no (here: SASL against a listener without it, which
//! is not retried), each with the reason on stderr and no panic.

use std::process::{Command, Output};

use kroupier_embedded::EmbeddedCoordinator;

/// Each example binary with the flags it needs besides `--bootstrap`.
fn examples() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    vec![
        (
            "quickstart",
            env!("CARGO_BIN_EXE_quickstart"),
            vec!["--group", "g", "--worker-id", "w", "--tasks", "1"],
        ),
        (
            "leader_election",
            env!("CARGO_BIN_EXE_leader_election"),
            vec!["--group", "g", "--id", "a"],
        ),
        (
            "active_standby",
            env!("CARGO_BIN_EXE_active_standby"),
            vec!["--group", "g", "--id", "a"],
        ),
        (
            "single_writer",
            env!("CARGO_BIN_EXE_single_writer"),
            vec![
                "--group",
                "g",
                "--id",
                "a",
                "--http",
                "127.0.0.1:0",
                "--store",
            ],
        ),
        (
            "consumer_group",
            env!("CARGO_BIN_EXE_consumer_group"),
            vec![
                "--group",
                "g",
                "--id",
                "a",
                "--topic",
                "t",
                "--assignor",
                "range",
            ],
        ),
    ]
}

fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .expect("run the example binary")
}

/// A new file `name` holding `text`, in a directory of its own: the tests of this file run at
/// once, and two of them giving one path to the binaries (a store they open) would each
/// truncate the other's file under a running process.
fn temp_file(name: &str, text: &str) -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("kroupier-examples-exit-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the test dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the test file");
    path.to_str().expect("a UTF-8 temp path").to_owned()
}

/// The flags of `example`, with `--store` given a fresh path where it needs one.
fn flags(name: &str, flags: &[&'static str]) -> Vec<String> {
    let mut all: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    if all.last().is_some_and(|f| f == "--store") {
        all.push(temp_file(&format!("{name}.sqlite"), ""));
    }
    all
}

fn check(code: i32, bootstrap: &str, extra: &[&str], expected: &str) {
    let mut wrong = Vec::new();
    for (name, bin, needed) in examples() {
        let mut args = vec!["--bootstrap".to_owned(), bootstrap.to_owned()];
        args.extend(flags(name, &needed));
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run(bin, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(code)
            || !stderr.contains(expected)
            || stderr.contains("panicked")
        {
            wrong.push(format!(
                "{name} {args:?} exited {:?}: {stderr}",
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

#[test]
fn bad_input_exits_2_before_anything_is_sent() {
    // Port 1: a binary that sent anything would fail another way.
    check(2, "127.0.0.1:1", &["--no-such-flag"], "unexpected argument");
    let unknown = temp_file("unknown.properties", "no.such.key=1\n");
    check(
        2,
        "127.0.0.1:1",
        &["--command-config", &unknown],
        "no.such.key",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_says_no_exits_1_with_the_reason() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .expect("start the embedded coordinator");
    let bootstrap = coordinator.bootstrap().to_string();
    let sasl = temp_file(
        "sasl.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.\
         kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";\n",
    );
    tokio::task::spawn_blocking(move || {
        check(
            1,
            &bootstrap,
            &["--command-config", &sasl],
            "SASL PLAIN authentication",
        )
    })
    .await
    .expect("the checks ran");
    coordinator.shutdown().await;
}
