//! `--command-config FILE` on the example binaries: a file that does not parse or holds an
//! unknown key ends `quickstart` and `leader_election` with exit code 2 and the reason on stderr,
//! never a secret of the file. No broker is needed: the file is read before anything connects.

use std::path::PathBuf;
use std::process::Command;

const SECRET: &str = "hunter2-do-not-print";

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kroupier-examples-command-config-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("create the test dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the properties file");
    path
}

fn assert_refused(path: &PathBuf, expected: &str) {
    let runs = [
        (
            env!("CARGO_BIN_EXE_quickstart"),
            &[
                "--bootstrap",
                "127.0.0.1:1",
                "--group",
                "g",
                "--worker-id",
                "w",
                "--tasks",
                "1",
            ][..],
        ),
        (
            env!("CARGO_BIN_EXE_leader_election"),
            &["--bootstrap", "127.0.0.1:1", "--group", "g", "--id", "a"][..],
        ),
    ];
    for (binary, args) in runs {
        let output = Command::new(binary)
            .args(args)
            .arg("--command-config")
            .arg(path)
            .output()
            .expect("run the example");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{binary}: {stderr}");
        assert!(stderr.contains(expected), "{binary}: {stderr}");
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{binary} printed the secret"
        );
    }
}

#[test]
fn an_unknown_key_and_a_bad_jaas_config_exit_2_without_the_secret() {
    let jaas = |key: &str| {
        format!(
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"alice\" {key}=\"{SECRET}\";\n"
        )
    };
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{}group.idd=x\n",
        jaas("password")
    );
    assert_refused(&file("unknown.properties", &text), "`group.idd`");
    let text = format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{}",
        jaas("passwd")
    );
    assert_refused(&file("bad-jaas.properties", &text), "sasl.jaas.config");
    assert_refused(
        &PathBuf::from("/nonexistent/client.properties"),
        "cannot read",
    );
}
