//! `/metrics` of a real worker against the embedded coordinator (Kafka's wire protocol on a
//! local socket): its first join is a rebalance like any other.
//!
//! Real sockets and real time, with generous waits; no assertion depends on how long anything
//! takes.

use std::net::SocketAddr;
use std::time::Duration;

use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

/// `GET path` over HTTP/1.1: the header block and the body.
async fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_join_counts_as_a_rebalance_with_its_latency() {
    let coordinator = EmbeddedCoordinator::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut config = WorkerConfig::new("metrics");
    config.member.cluster.bootstrap_servers = vec![coordinator.bootstrap()];
    config.worker_id = "solo".to_owned();
    config.status.addr = Some("127.0.0.1:0".parse().unwrap());
    let worker = WorkerBuilder::new(config)
        .register::<Idle>("idle")
        .task(TaskSpec::new("idle-0", "idle", serde_json::json!({})))
        .spawn()
        .await
        .unwrap();
    let addr = worker.status_addr().unwrap();
    for _ in 0..200 {
        if worker.status().group.generation.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(worker.status().group.generation.is_some(), "never joined");
    let (head, body) = get(addr, "/metrics").await;
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    for line in [
        "kroupier_rebalances_total 1",
        "kroupier_rebalance_latency_seconds_count 1",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing `{line}` in\n{body}"
        );
    }
    worker.shutdown().await.unwrap();
}
