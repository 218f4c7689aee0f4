//! `--command-config FILE` on every subcommand that connects: a file that does not parse, an
//! unknown key or unusable security settings end the command with exit code 2 and the reason on
//! stderr, and no secret of the file is ever printed. No broker is needed: the file is read
//! before anything connects.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SECRET: &str = "hunter2-do-not-print";

/// A fresh file named `name` holding `text`, in a directory of this test run.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kroupier-cli-command-config-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("create the test dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the properties file");
    path
}

fn jaas(password_key: &str) -> String {
    format!(
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"alice\" {password_key}=\"{SECRET}\";\n"
    )
}

/// Every subcommand that connects, with `--command-config path`.
fn runs(path: &Path) -> Vec<(String, Output)> {
    let path = path.to_str().expect("a UTF-8 path");
    let commands: [&[&str]; 4] = [
        &[
            "describe",
            "--bootstrap",
            "127.0.0.1:1",
            "--group",
            "g",
            "--json",
        ],
        &["watch", "--bootstrap", "127.0.0.1:1", "--group", "g"],
        &["demo", "--bootstrap", "127.0.0.1:1", "--plain"],
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
        ],
    ];
    commands
        .iter()
        .map(|args| {
            let output = Command::new(env!("CARGO_BIN_EXE_kroupier"))
                .args(*args)
                .args(["--command-config", path])
                .output()
                .expect("run kroupier");
            (args[0].to_owned(), output)
        })
        .collect()
}

/// Each subcommand exits 2 with a stderr naming `expected`, and prints no secret.
fn assert_refused(path: &Path, expected: &str) {
    for (command, output) in runs(path) {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("--command-config"), "{command}: {stderr}");
        assert!(stderr.contains(expected), "{command}: {stderr}");
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{command} printed the secret"
        );
    }
}

#[test]
fn a_missing_file_is_refused_with_exit_2() {
    assert_refused(Path::new("/nonexistent/client.properties"), "cannot read");
}

#[test]
fn an_unknown_key_is_refused_with_exit_2_naming_it() {
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{}bootstrap.server=x:9092\n",
        jaas("password")
    );
    assert_refused(&file("unknown-key.properties", &text), "`bootstrap.server`");
}

#[test]
fn a_bad_security_value_is_refused_without_quoting_the_secret() {
    // A misspelt password key: the JAAS value holds the secret, and the error must not show it.
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{}",
        jaas("passwd")
    );
    assert_refused(&file("bad-jaas.properties", &text), "sasl.jaas.config");
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n{}",
        jaas("password")
    );
    assert_refused(&file("gssapi.properties", &text), "sasl.mechanism");
}

#[test]
fn a_line_that_does_not_parse_is_refused_with_its_number() {
    let text = format!("security.protocol=SASL_SSL\n{}=no-key\n", jaas("password"));
    assert_refused(&file("syntax.properties", &text), ":3:");
}

#[test]
fn a_trust_store_that_does_not_load_is_refused_by_describe() {
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{}\
         ssl.truststore.location=/nonexistent/ca.pem\n",
        jaas("password")
    );
    let path = file("missing-ca.properties", &text);
    let output = Command::new(env!("CARGO_BIN_EXE_kroupier"))
        .args(["describe", "--bootstrap", "127.0.0.1:1", "--group", "g"])
        .arg("--command-config")
        .arg(&path)
        .output()
        .expect("run kroupier");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ssl.truststore.location"), "{stderr}");
    assert!(!stderr.contains(SECRET), "the secret was printed: {stderr}");
}

#[test]
fn the_demo_refuses_a_command_config_without_bootstrap() {
    let output = Command::new(env!("CARGO_BIN_EXE_kroupier"))
        .args(["demo", "--plain", "--command-config", "client.properties"])
        .output()
        .expect("run kroupier");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs --bootstrap"), "{stderr}");
}
