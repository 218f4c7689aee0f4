//! The whole request path on an in-memory stream, for the fuzz target and property tests:
//! framing, guarded decoding, dispatch, the group state machine and in-memory topics, without a
//! socket.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::config::Config;
use super::connection::{ConnectionLimits, serve};
use super::dispatch::Dispatcher;
use super::faults::Faults;
use super::groups::Groups;
use super::node::Node;
use crate::group::GroupCoordinator;
use crate::log::Topics;

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
    let defaults = Config::default();
    let dispatcher = in_memory_dispatcher(&defaults, &shutdown);
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000));
    let limits = ConnectionLimits {
        max_frame,
        max_connections: 1,
        idle_timeout: defaults.connections_max_idle,
    };
    let server_task = tokio::spawn(serve(server, peer, dispatcher, limits, shutdown.clone()));
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

/// A dispatcher with a fresh group task for `config`, for connections served without a
/// listener; the group task ends when `shutdown` is cancelled.
pub(crate) fn in_memory_dispatcher(config: &Config, shutdown: &CancellationToken) -> Dispatcher {
    let coordinator = GroupCoordinator::new(config.group.clone(), 0);
    Dispatcher {
        node: Arc::new(Node {
            node_id: config.node_id,
            host: StrBytes::from_static_str("127.0.0.1"),
            port: 9092,
            cluster_id: StrBytes::from_string(config.cluster_id.clone()),
        }),
        groups: Groups::spawn(coordinator, shutdown.clone()),
        topics: Topics::in_memory(config.topic_limits()),
        faults: Faults::default(),
    }
}
