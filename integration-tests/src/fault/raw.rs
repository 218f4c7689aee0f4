//! Plain TCP forwarding for [`FaultProxy::start_tcp`](super::FaultProxy::start_tcp): a link
//! that is not Kafka (a worker's status API, its peers' fast-failover links) is pumped as bytes,
//! under the same [`Policy`] as Kafka links. A blackhole reads and drops the bytes either way;
//! a delay holds each chunk; a cut closes the connection. Either side's close still closes the
//! other, as a proxy in front of a process does when the process ends.

use std::io;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::link::Shared;
use super::rewrite::Role;

/// The most bytes read at once.
const CHUNK: usize = 16 << 10;

/// Reads chunks from one side and queues them for the other with their due time (or drops
/// them, in a blackhole). Returns when the side closes.
pub(crate) async fn read(
    shared: &Shared,
    role: Role,
    mut from: OwnedReadHalf,
    to: mpsc::UnboundedSender<(Instant, Bytes)>,
) -> io::Result<()> {
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        let due = {
            let policy = shared.policy.borrow();
            if policy.blackholes(role) {
                None
            } else {
                Some(Instant::now() + policy.request_delay(role))
            }
        };
        let Some(due) = due else {
            shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if due > Instant::now() {
            shared.counters.delayed.fetch_add(1, Ordering::Relaxed);
        }
        if to
            .send((due, Bytes::copy_from_slice(&buffer[..read])))
            .is_err()
        {
            return Ok(());
        }
    }
}

/// Writes queued chunks, each at its due time, unless a blackhole began meanwhile.
pub(crate) async fn write(
    shared: &Shared,
    role: Role,
    mut to: OwnedWriteHalf,
    mut queue: mpsc::UnboundedReceiver<(Instant, Bytes)>,
) -> io::Result<()> {
    while let Some((due, chunk)) = queue.recv().await {
        tokio::time::sleep_until(due).await;
        if shared.policy.borrow().blackholes(role) {
            shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        to.write_all(&chunk).await?;
        shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
