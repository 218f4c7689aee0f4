//! Harness for kroupier's integration tests.
//!
//! The tests run against a broker whose address is in `KROUPIER_KAFKA_BOOTSTRAP` (what
//! `scripts/kafka start` prints as `bootstrap=HOST:PORT`). Without it a test prints one skip line
//! and returns — unless `CI=true` or `KROUPIER_REQUIRE_KAFKA=1`, where a missing broker fails the
//! run: in CI, a skipped test must never look like a passing one.

pub mod admin;
pub mod cli;
pub mod fault;
pub mod java;
pub mod journal;
pub mod netns;
pub mod process;
pub mod quickstart;
pub mod roles;
pub mod topics;
pub mod wire;

/// The environment variable that names the broker the tests run against.
pub const BOOTSTRAP_ENV: &str = "KROUPIER_KAFKA_BOOTSTRAP";

/// Whether a missing broker must fail the run rather than skip.
pub fn kafka_required() -> bool {
    let flag = |name: &str| {
        std::env::var(name)
            .map(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "yes"))
            .unwrap_or(false)
    };
    flag("CI") || flag("KROUPIER_REQUIRE_KAFKA")
}

/// The bootstrap address of the Kafka broker to test against, or `None` (after printing one
/// skip line) when none is configured and none is required.
///
/// # Panics
/// When no broker is configured but one is required (`CI=true` or `KROUPIER_REQUIRE_KAFKA=1`):
/// that is the test failing, which is the point.
pub fn kafka_bootstrap(test: &str) -> Option<String> {
    match std::env::var(BOOTSTRAP_ENV) {
        Ok(addr) if !addr.trim().is_empty() => Some(addr.trim().to_string()),
        _ if kafka_required() => panic!(
            "{test}: a Kafka broker is required (CI=true or KROUPIER_REQUIRE_KAFKA=1) but \
             {BOOTSTRAP_ENV} is not set; run `scripts/kafka start` and export the address it prints"
        ),
        _ => {
            eprintln!(
                "SKIP {test}: {BOOTSTRAP_ENV} is not set (start Kafka with `scripts/kafka start`)"
            );
            None
        }
    }
}
