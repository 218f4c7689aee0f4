//! Kafka's own Java clients beside kroupier: the broker `scripts/kafka` started, and the Java
//! programs of `integration-tests/java/consumer-interop` (a `KafkaConsumer` in a group, a
//! read-committed reader), built with Maven against the broker's kafka-clients.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use crate::kafka_bootstrap;

/// The real Kafka under test.
pub struct Kafka {
    /// Its bootstrap address.
    pub bootstrap: String,
    /// The broker's jars (`scripts/kafka` keeps their directory in `$STATE/libs`).
    pub libs: PathBuf,
    /// Its version, e.g. `4.1.2`.
    pub version: String,
}

/// The broker at `KROUPIER_KAFKA_BOOTSTRAP` when `KROUPIER_KAFKA_STATE` names its state
/// directory (a Kafka started by `scripts/kafka`); `None` after a skip line otherwise (e.g. the
/// embedded coordinator, which has no Java clients to compare with).
pub fn real_kafka(test: &str) -> Option<Kafka> {
    let bootstrap = kafka_bootstrap(test)?;
    let skip = |why: String| {
        eprintln!(
            "SKIP {test}: {why}; these tests need a real Kafka (topics, Metadata, Java clients), \
             not the embedded coordinator"
        );
        None
    };
    let Some(state) = std::env::var_os("KROUPIER_KAFKA_STATE").filter(|s| !s.is_empty()) else {
        return skip("KROUPIER_KAFKA_STATE is not set".into());
    };
    let state = PathBuf::from(state);
    let read = |name: &str| std::fs::read_to_string(state.join(name)).map(|s| s.trim().to_owned());
    match (read("bootstrap"), read("libs"), read("version")) {
        (Ok(b), Ok(libs), Ok(version)) if b == bootstrap => Some(Kafka {
            bootstrap,
            libs: PathBuf::from(libs),
            version,
        }),
        (Ok(b), Ok(_), Ok(_)) => skip(format!(
            "KROUPIER_KAFKA_STATE ({}) is the broker at {b}, not {bootstrap}",
            state.display()
        )),
        _ => skip(format!(
            "{} holds no broker started by scripts/kafka",
            state.display()
        )),
    }
}

/// Builds the Java programs of `integration-tests/java/consumer-interop` once per test process
/// (Maven, kafka-clients of the broker's version) and returns their build directory:
/// `classes/` and `lib/`, under `tmp` (a test's `env!("CARGO_TARGET_TMPDIR")`).
///
/// # Panics
/// When Maven fails.
pub fn java_program(kafka: &Kafka, tmp: &Path) -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_java(&kafka.version, tmp))
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn build_java(version: &str, tmp: &Path) -> Result<PathBuf, String> {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("java/consumer-interop");
    let out = tmp.join(format!("consumer-interop-{version}"));
    // Rebuild only when the sources changed: a stamp named after their contents.
    let mut sources = vec![project.join("pom.xml")];
    let java = project.join("src/main/java/dev/kroupier/interop");
    if let Ok(dir) = std::fs::read_dir(&java) {
        let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        sources.extend(files);
    }
    let mut fingerprint: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &sources {
        for byte in std::fs::read(file).map_err(|e| format!("read {}: {e}", file.display()))? {
            fingerprint = (fingerprint ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let stamp = out.join(format!(".built-{fingerprint:016x}"));
    if stamp.exists() {
        return Ok(out);
    }
    // One stamp at a time: the build below replaces what an older stamp vouched for.
    if let Ok(dir) = std::fs::read_dir(&out) {
        for entry in dir.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".built-") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let started = Instant::now();
    let output = Command::new("mvn")
        .args(["-B", "-q", "-f"])
        .arg(project.join("pom.xml"))
        .arg("package")
        .arg(format!("-Dkafka.version={version}"))
        .arg(format!("-Dinterop.build.dir={}", out.display()))
        .output()
        .map_err(|e| format!("run mvn (Apache Maven 3.6+ must be on PATH): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "mvn package of {} failed:\n{}\n{}",
            project.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::write(&stamp, b"").map_err(|e| format!("write {}: {e}", stamp.display()))?;
    eprintln!(
        "built the Java consumer against kafka-clients {version} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(out)
}

/// `java` with `heap` (`-Xmx`, e.g. `128m`) and the settings of a short-lived test client, set to
/// run `class` of the programs [`java_program`] built into `java`; add its arguments.
pub fn java_class(java: &Path, heap: &str, class: &str) -> Command {
    let mut command = Command::new("java");
    command
        .args([
            &format!("-Xmx{heap}"),
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
        ])
        .arg(format!(
            "{}:{}/*",
            java.join("classes").display(),
            java.join("lib").display()
        ))
        .arg(class);
    command
}
