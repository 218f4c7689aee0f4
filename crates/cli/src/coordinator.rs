//! `kroupier coordinator`: run the embedded coordinator (Kafka's group coordinator, in one
//! process, on one port) until ctrl-c or SIGTERM.
//!
//! Prints `bootstrap=HOST:PORT` once listening, like `scripts/kafka start`; point workers,
//! `kroupier describe` and `kroupier watch` at it. The default `127.0.0.1:9092` is Kafka's own
//! default port, so tools that assume a local Kafka find it; `--listen 127.0.0.1:0` picks a
//! free port.

use std::error::Error;
use std::time::Duration;

use kroupier_embedded::EmbeddedCoordinator;

/// Arguments of `kroupier coordinator`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to listen, `HOST:PORT` (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: String,
    /// The smallest session timeout members may ask for (Kafka's
    /// `group.min.session.timeout.ms`, 6000 there); lower lets demos fail over faster.
    #[arg(long, default_value_t = 1_000)]
    min_session_timeout_ms: u64,
    /// The largest session timeout members may ask for (Kafka's
    /// `group.max.session.timeout.ms`).
    #[arg(long, default_value_t = 1_800_000)]
    max_session_timeout_ms: u64,
    /// How long a new group waits for more members before its first rebalance (Kafka's
    /// `group.initial.rebalance.delay.ms`, 3000 there).
    #[arg(long, default_value_t = 0)]
    initial_rebalance_delay_ms: u64,
}

/// Runs the command until ctrl-c or SIGTERM.
pub fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let coordinator = EmbeddedCoordinator::builder()
            .min_session_timeout(Duration::from_millis(args.min_session_timeout_ms))
            .max_session_timeout(Duration::from_millis(args.max_session_timeout_ms))
            .initial_rebalance_delay(Duration::from_millis(args.initial_rebalance_delay_ms))
            .bind(args.listen.as_str())
            .await?;
        println!("bootstrap={}", coordinator.bootstrap());
        crate::signal::terminated().await?;
        coordinator.shutdown().await;
        Ok(())
    })
}
