//! Runs the embedded coordinator until Ctrl-C, for pointing Kafka clients (or kroupier's
//! integration suite, through `KROUPIER_KAFKA_BOOTSTRAP`) at it.
//!
//! `cargo run -p kroupier-embedded --example serve -- [ADDR]` (default `127.0.0.1:0`); prints
//! `bootstrap=HOST:PORT` once listening. `RUST_LOG=kroupier_embedded=debug` shows each group
//! transition.

use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr (stdout is for the bootstrap line), coloured only on a terminal.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    let coordinator = kroupier_embedded::EmbeddedCoordinator::builder()
        .bind(addr.as_str())
        .await?;
    println!("bootstrap={}", coordinator.bootstrap());
    tokio::signal::ctrl_c().await?;
    coordinator.shutdown().await;
    Ok(())
}
