//! The server's limits: open connections and idle time (on the paused clock over an in-memory
//! stream, and end to end over TCP), and the group limits as a Kafka client sees them.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    ApiVersionsRequest, DescribeGroupsRequest, GroupId, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::time::Instant;
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

use super::super::config::Config;
use super::super::connection::{ConnectionLimits, serve};
use super::super::dispatch::Dispatcher;
use super::super::fuzzing::in_memory_dispatcher;
use super::{
    Client, PATIENCE, api_versions_request, assert_closed_after, framed, join_request, raw,
};
use crate::server::EmbeddedDetail;
use crate::{CoordinatorHandle, EmbeddedCoordinator, EmbeddedError};

type InMemory = Framed<DuplexStream, LengthDelimitedCodec>;

/// One connection served over an in-memory stream with `idle` as its idle timeout.
fn connect_in_memory(
    dispatcher: &Dispatcher,
    idle: Duration,
    stop: &CancellationToken,
) -> InMemory {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let limits = ConnectionLimits {
        max_frame: Config::default().max_request_frame,
        max_connections: 1,
        idle_timeout: idle,
    };
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000));
    tokio::spawn(serve(
        server,
        peer,
        dispatcher.clone(),
        limits,
        stop.clone(),
    ));
    Framed::new(client, wire::frame_codec(wire::DEFAULT_MAX_RESPONSE_FRAME))
}

async fn send<R: WireRequest>(c: &mut InMemory, request: &R, version: i16, correlation_id: i32) {
    let frame = wire::encode_request(request, version, correlation_id, Some("test-client"))
        .expect("encode request");
    c.send(frame).await.expect("send request");
}

async fn receive<R: WireRequest>(c: &mut InMemory, version: i16) -> R::Response {
    let frame = c
        .next()
        .await
        .expect("the connection is open")
        .expect("a readable frame");
    wire::decode_response::<R::Response>(frame.freeze(), version)
        .expect("decode response")
        .1
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_nothing_for_the_idle_timeout_is_closed() {
    let config = Config::default();
    let idle = config.connections_max_idle;
    assert_eq!(
        idle,
        Duration::from_secs(600),
        "Kafka's connections.max.idle.ms"
    );
    let stop = CancellationToken::new();
    let dispatcher = in_memory_dispatcher(&config, &stop);
    let mut c = connect_in_memory(&dispatcher, idle, &stop);
    // A request just before the timeout keeps the connection; the clock restarts after it.
    for correlation_id in 1..=2 {
        tokio::time::sleep(idle - Duration::from_millis(1)).await;
        send(&mut c, &api_versions_request(), 3, correlation_id).await;
        assert_eq!(receive::<ApiVersionsRequest>(&mut c, 3).await.error_code, 0);
    }
    let waiting = Instant::now();
    let end = tokio::time::timeout(2 * idle, c.next()).await;
    assert!(
        matches!(end, Ok(None)),
        "closed by the server within twice the idle timeout"
    );
    let waited = waiting.elapsed();
    assert!(
        waited >= idle && waited < idle + Duration::from_millis(10),
        "closed after {waited:?}, not the idle timeout"
    );
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_request_parked_in_a_rebalance_is_not_idle() {
    let config = Config::default();
    let idle = Duration::from_secs(1);
    let stop = CancellationToken::new();
    let dispatcher = in_memory_dispatcher(&config, &stop);
    // A joins and never speaks again (its connection idles out, its member expires after the
    // session timeout); B's JoinGroup waits for that, much longer than the idle timeout.
    let mut a = connect_in_memory(&dispatcher, idle, &stop);
    send(&mut a, &join_request("", b"a", 10_000), 3, 1).await;
    assert_eq!(
        receive::<JoinGroupRequest>(&mut a, 3).await.generation_id,
        1
    );
    let mut b = connect_in_memory(&dispatcher, idle, &stop);
    let sent = Instant::now();
    send(&mut b, &join_request("", b"b", 10_000), 3, 1).await;
    let joined = receive::<JoinGroupRequest>(&mut b, 3).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 2));
    assert!(
        sent.elapsed() >= Duration::from_secs(10),
        "answered at A's expiry"
    );
    assert!(a.next().await.is_none(), "A's silent connection was closed");
    stop.cancel();
}

/// A coordinator on an OS-picked port, built by `build` from the test defaults.
async fn start_with(build: impl FnOnce(crate::Builder) -> crate::Builder) -> CoordinatorHandle {
    build(EmbeddedCoordinator::builder().min_session_timeout(Duration::from_millis(100)))
        .bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0")
}

/// Whether a fresh connection gets an answer to ApiVersions (`false`: closed unanswered).
async fn answers_on_a_new_connection(handle: &CoordinatorHandle) -> bool {
    let mut stream = raw(handle).await;
    let request =
        wire::encode_request(&ApiVersionsRequest::default(), 0, 1, None).expect("encode request");
    if stream.write_all(&framed(&request)).await.is_err() {
        return false;
    }
    let mut buf = [0u8; 4];
    matches!(
        tokio::time::timeout(PATIENCE, stream.read(&mut buf)).await,
        Ok(Ok(n)) if n > 0
    )
}

#[tokio::test]
async fn connections_over_the_cap_are_closed_at_once() {
    let handle = start_with(|b| b.max_connections(2)).await;
    let mut a = Client::connect(&handle).await;
    let mut b = Client::connect(&handle).await;
    // Answered requests prove both connections hold their slots.
    assert_eq!(a.call(&api_versions_request(), 3).await.error_code, 0);
    assert_eq!(b.call(&api_versions_request(), 3).await.error_code, 0);
    let over = std::time::Instant::now();
    assert_closed_after(raw(&handle).await, &[]).await;
    assert!(over.elapsed() < Duration::from_secs(5), "closed at once");
    assert_eq!(a.call(&api_versions_request(), 3).await.error_code, 0);
    // Once B is gone its slot serves a new connection.
    drop(b);
    let freed = tokio::time::timeout(PATIENCE, async {
        while !answers_on_a_new_connection(&handle).await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(freed.is_ok(), "a closed connection frees its slot");
    handle.shutdown().await;
}

#[tokio::test]
async fn an_idle_tcp_connection_is_closed_after_the_configured_timeout() {
    let idle = Duration::from_millis(200);
    let handle = start_with(|b| b.connections_max_idle(idle)).await;
    let opened = std::time::Instant::now();
    assert_closed_after(raw(&handle).await, &[]).await;
    assert!(opened.elapsed() >= idle);
    assert!(answers_on_a_new_connection(&handle).await);
    handle.shutdown().await;
}

#[tokio::test]
async fn limits_that_cannot_work_are_refused() {
    for build in [
        (|b: crate::Builder| b.max_connections(0)) as fn(crate::Builder) -> crate::Builder,
        |b| b.connections_max_idle(Duration::ZERO),
        |b| b.max_groups(0),
        |b| b.max_rebalance_timeout(Duration::ZERO),
    ] {
        let refused = build(EmbeddedCoordinator::builder())
            .bind("127.0.0.1:0")
            .await;
        assert!(matches!(
            refused,
            Err(EmbeddedError(EmbeddedDetail::Config(_)))
        ));
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[tokio::test]
async fn a_deleted_group_is_described_as_an_unknown_one() {
    let handle = start_with(|b| b.empty_group_retention(Duration::from_millis(100))).await;
    let mut c = Client::connect(&handle).await;
    let joined = c.call(&join_request("", b"m", 10_000), 3).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_members(vec![
            MemberIdentity::default().with_member_id(joined.member_id),
        ]);
    assert_eq!(c.call(&leave, 3).await.error_code, 0);
    let describe = DescribeGroupsRequest::default().with_groups(vec![GroupId(s("g"))]);
    assert_eq!(
        c.call(&describe, 5).await.groups[0].group_state.as_str(),
        "Empty"
    );
    let deleted = tokio::time::timeout(PATIENCE, async {
        loop {
            let d = c.call(&describe, 5).await;
            if d.groups[0].group_state.as_str() == "Dead" {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the empty group is deleted after its retention");
    assert_eq!(deleted.groups[0].error_code, 0);
    assert!(deleted.groups[0].members.is_empty());
    assert_eq!(
        c.call(&describe, 6).await.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    assert!(
        c.call(&ListGroupsRequest::default(), 4)
            .await
            .groups
            .is_empty()
    );
    assert!(handle.describe_group("g").await.is_none());
    handle.shutdown().await;
}

#[tokio::test]
async fn group_limits_answer_kafka_error_codes() {
    let handle = start_with(|b| {
        b.max_groups(1)
            .max_rebalance_timeout(Duration::from_secs(60))
    })
    .await;
    let mut c = Client::connect(&handle).await;
    let mut slow = join_request("", b"m", 10_000);
    slow.rebalance_timeout_ms = 60_001;
    assert_eq!(
        c.call(&slow, 3).await.error_code,
        ResponseError::InvalidSessionTimeout.code()
    );
    assert_eq!(
        c.call(&join_request("", b"m", 10_000), 3).await.error_code,
        0
    );
    let other = join_request("", b"m", 10_000).with_group_id(GroupId(s("other")));
    assert_eq!(
        c.call(&other, 3).await.error_code,
        ResponseError::PolicyViolation.code()
    );
    handle.shutdown().await;
}
