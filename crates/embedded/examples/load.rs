//! Measures the embedded coordinator over loopback TCP, in release mode:
//! `cargo run --release -p kroupier-embedded --example load -- [MEMBERS] [DELAY_MS]` (default 100
//! members, 200 ms initial rebalance delay).
//!
//! 1. Heartbeat round trips per second: one connection, then 16 connections at once.
//! 2. A cold start: MEMBERS members join one group (KIP-394, JoinGroup v9, SyncGroup v5) within
//!    the initial rebalance delay; the time until every member has its assignment. Members that
//!    come after the delay make a second generation, as on Kafka: raise the delay for many members.
//! 3. A rebalance after one member leaves: the others learn it from a heartbeat, rejoin and
//!    sync; the time from the LeaveGroup until every remaining member has its new assignment.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Client {
    framed: Framed<TcpStream, LengthDelimitedCodec>,
    next: i32,
}

impl Client {
    async fn connect(addr: std::net::SocketAddr) -> Result<Self, Error> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let codec = wire::frame_codec(wire::DEFAULT_MAX_RESPONSE_FRAME);
        Ok(Self {
            framed: Framed::new(stream, codec),
            next: 0,
        })
    }

    async fn call<R: WireRequest>(&mut self, req: &R, version: i16) -> Result<R::Response, Error> {
        self.next += 1;
        self.framed
            .send(wire::encode_request(req, version, self.next, Some("load"))?)
            .await?;
        let frame = self.framed.next().await.ok_or("connection closed")??;
        Ok(wire::decode_response::<R::Response>(frame.freeze(), version)?.1)
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn join(member: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s("load")))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(60_000)
        .with_member_id(s(member))
        .with_protocol_type(s("kroupier"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("p"))
                .with_metadata(Bytes::from_static(&[0; 64])),
        ])
}

fn heartbeat(member: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s("load")))
        .with_generation_id(generation)
        .with_member_id(s(member))
}

/// Joins (or rejoins, with `member`) and syncs; the leader assigns 8 bytes to everyone.
async fn join_and_sync(c: &mut Client, member: &str) -> Result<(String, i32), Error> {
    let mut r = c.call(&join(member), 9).await?;
    if r.error_code == 79 {
        r = c.call(&join(r.member_id.as_str()), 9).await?;
    }
    if r.error_code != 0 {
        return Err(format!("JoinGroup error {}", r.error_code).into());
    }
    let id = r.member_id.to_string();
    let assignments = r
        .members
        .iter()
        .map(|m| {
            SyncGroupRequestAssignment::default()
                .with_member_id(m.member_id.clone())
                .with_assignment(Bytes::from_static(&[1; 8]))
        })
        .collect();
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s("load")))
        .with_generation_id(r.generation_id)
        .with_member_id(s(&id))
        .with_protocol_type(Some(s("kroupier")))
        .with_protocol_name(r.protocol_name.clone())
        .with_assignments(assignments);
    let synced = c.call(&sync, 5).await?;
    if synced.error_code != 0 || synced.assignment.len() != 8 {
        return Err(format!("SyncGroup error {}", synced.error_code).into());
    }
    Ok((id, r.generation_id))
}

async fn heartbeat_rate(
    addr: std::net::SocketAddr,
    connections: usize,
    id: &str,
    generation: i32,
) -> Result<f64, Error> {
    let window = Duration::from_secs(2);
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let id = id.to_string();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await?;
            let started = Instant::now();
            let mut n = 0u64;
            while started.elapsed() < window {
                c.call(&heartbeat(&id, generation), 4).await?;
                n += 1;
            }
            Ok::<u64, Error>(n)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total as f64 / window.as_secs_f64())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let members: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100);
    let delay_ms: u64 = std::env::args()
        .nth(2)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(200);
    let coordinator = kroupier_embedded::EmbeddedCoordinator::builder()
        .initial_rebalance_delay(Duration::from_millis(delay_ms))
        .bind("127.0.0.1:0")
        .await?;
    let addr = coordinator.local_addr();

    // Cold start: everyone joins at once.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..members {
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await?;
            let (id, generation) = join_and_sync(&mut c, "").await?;
            Ok::<_, Error>((c, id, generation))
        }));
    }
    let mut joined = Vec::new();
    for t in tasks {
        joined.push(t.await??);
    }
    let cold = started.elapsed();
    let generation = joined[0].2;
    if joined.iter().any(|j| j.2 != generation) {
        println!(
            "cold start: some of the {members} members joined after the {delay_ms} ms delay; raise it"
        );
        coordinator.shutdown().await;
        return Ok(());
    }
    println!(
        "cold start: {members} members in generation {generation} in {:.0} ms (incl. the {delay_ms} ms initial delay)",
        cold.as_secs_f64() * 1e3
    );

    let id = joined[0].1.clone();
    println!(
        "heartbeats, 1 connection: {:.0}/s",
        heartbeat_rate(addr, 1, &id, generation).await?
    );
    println!(
        "heartbeats, 16 connections: {:.0}/s",
        heartbeat_rate(addr, 16, &id, generation).await?
    );

    // One member leaves; the rest rejoin after a heartbeat tells them to.
    let (mut leaver, leaver_id, _) = joined.pop().ok_or("no members")?;
    let started = Instant::now();
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("load")))
        .with_members(vec![
            MemberIdentity::default().with_member_id(s(&leaver_id)),
        ]);
    leaver.call(&leave, 5).await?;
    let mut tasks = Vec::new();
    for (mut c, id, generation) in joined {
        tasks.push(tokio::spawn(async move {
            let hb = c.call(&heartbeat(&id, generation), 4).await?;
            if hb.error_code != 27 {
                return Err::<i32, Error>(
                    format!("expected REBALANCE_IN_PROGRESS, got {}", hb.error_code).into(),
                );
            }
            Ok(join_and_sync(&mut c, &id).await?.1)
        }));
    }
    let mut generations = Vec::new();
    for t in tasks {
        generations.push(t.await??);
    }
    let rebalance = started.elapsed();
    assert!(generations.iter().all(|g| *g == generation + 1));
    println!(
        "rebalance after a leave: {} members in generation {} in {:.1} ms",
        generations.len(),
        generation + 1,
        rebalance.as_secs_f64() * 1e3
    );
    coordinator.shutdown().await;
    Ok(())
}
