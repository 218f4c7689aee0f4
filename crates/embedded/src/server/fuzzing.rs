//! The whole request path on an in-memory stream, for the fuzz target and property tests:
//! framing, guarded decoding, dispatch and the group state machine, without a socket.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::apis::Node;
use super::connection::serve;
use super::dispatch::Dispatcher;
use super::faults::Faults;
use super::groups::Groups;
use crate::group::{GroupConfig, GroupCoordinator};

/// How long (in the runtime's time, virtual when paused) one input may take: longer than any
/// deadline a request can set (a rebalance timeout is at most `i32::MAX` ms, about 25 days).
pub const VIRTUAL_PATIENCE: Duration = Duration::from_secs(100 * 24 * 3600);

/// Feeds `input` as the bytes a client sends on one connection to a fresh coordinator, closes
/// the client's write side, and returns every byte the coordinator wrote back.
///
/// Run it on a runtime with paused time so that parked JoinGroup/SyncGroup requests resolve at
/// their (virtual) deadlines at once.
///
/// # Panics
/// If the connection does not finish within [`VIRTUAL_PATIENCE`]: a request parked forever is
/// a bug worth a crash report.
pub async fn serve_bytes(input: &[u8], max_frame: usize) -> Vec<u8> {
    let shutdown = CancellationToken::new();
    let coordinator = GroupCoordinator::new(GroupConfig::default(), 0);
    let dispatcher = Dispatcher {
        node: Arc::new(Node {
            node_id: 0,
            host: StrBytes::from_static_str("127.0.0.1"),
            port: 9092,
            cluster_id: StrBytes::from_static_str("fuzz"),
        }),
        groups: Groups::spawn(coordinator, shutdown.clone()),
        faults: Faults::default(),
    };
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000));
    let server_task = tokio::spawn(serve(server, peer, dispatcher, max_frame, shutdown.clone()));
    let exchange = async {
        let (mut read, mut write) = tokio::io::split(&mut client);
        let writer = async {
            // The server may close early (bad input); a failed write is expected then.
            let _ = write.write_all(input).await;
            let _ = write.shutdown().await;
        };
        let mut output = Vec::new();
        let reader = read.read_to_end(&mut output);
        let ((), read) = tokio::join!(writer, reader);
        read.map(|_| output)
    };
    let output = tokio::time::timeout(VIRTUAL_PATIENCE, exchange)
        .await
        .expect("every request is answered or the connection closed within the patience")
        .unwrap_or_default();
    shutdown.cancel();
    let _ = server_task.await;
    output
}
