//! Fault injection and stop/restart on the same port.

use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest};
use kafka_protocol::protocol::StrBytes;

use super::{Client, api_versions_request, assert_closed_after, join_request, raw, start};
use crate::server::EmbeddedDetail;
use crate::{EmbeddedError, Fault, ServedApi};

#[tokio::test]
async fn injected_error_applies_the_given_number_of_times() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    handle.faults().set(
        ServedApi::FindCoordinator,
        Fault::error(ResponseError::CoordinatorNotAvailable.code()).times(2),
    );
    let req = FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g"));
    for _ in 0..2 {
        let r = c.call(&req, 3).await;
        assert_eq!(r.error_code, ResponseError::CoordinatorNotAvailable.code());
        assert_eq!(r.node_id.0, -1);
    }
    assert_eq!(c.call(&req, 3).await.error_code, 0);
    // An injected JoinGroup error does not touch the group.
    handle.faults().set(
        ServedApi::JoinGroup,
        Fault::error(ResponseError::CoordinatorLoadInProgress.code()),
    );
    let r = c.call(&join_request("", b"m", 10_000), 9).await;
    assert_eq!(
        r.error_code,
        ResponseError::CoordinatorLoadInProgress.code()
    );
    assert!(handle.describe_group("g").await.is_none());
    handle.faults().clear_all();
    assert_eq!(
        c.call(&join_request("", b"m", 10_000), 3).await.error_code,
        0
    );
    handle.shutdown().await;
}

#[tokio::test]
async fn dropped_response_is_never_sent_and_later_ones_are() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    handle
        .faults()
        .set(ServedApi::ApiVersions, Fault::drop_response().times(1));
    let _dropped = c.send(&api_versions_request(), 3).await;
    let next = c.send(&api_versions_request(), 3).await;
    // `receive` checks the correlation id: the first response never comes.
    let r = c.receive::<ApiVersionsRequest>(next, 3).await;
    assert_eq!(r.error_code, 0);
    handle.shutdown().await;
}

#[tokio::test]
async fn delayed_response_waits_at_least_the_delay() {
    let handle = start().await;
    let mut c = Client::connect(&handle).await;
    let delay = Duration::from_millis(200);
    handle
        .faults()
        .set(ServedApi::Metadata, Fault::delay(delay));
    let started = Instant::now();
    let r = c.call(&MetadataRequest::default(), 9).await;
    assert!(started.elapsed() >= delay);
    assert_eq!(r.brokers.len(), 1);
    handle.faults().clear(ServedApi::Metadata);
    handle.shutdown().await;
}

#[tokio::test]
async fn stop_closes_connections_and_restart_serves_the_same_port_and_groups() {
    let handle = start().await;
    let addr = handle.local_addr();
    let mut c = Client::connect(&handle).await;
    let joined = c.call(&join_request("", b"m", 60_000), 3).await;
    assert_eq!(joined.error_code, 0);
    let idle = raw(&handle).await;
    handle.stop().await;
    assert!(!handle.is_serving());
    assert_closed_after(idle, &[]).await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens while stopped"
    );
    assert!(matches!(handle.restart().await, Ok(())));
    assert!(
        matches!(handle.restart().await, Err(EmbeddedError(EmbeddedDetail::AlreadyServing(a))) if a == addr)
    );
    assert_eq!(handle.local_addr(), addr);
    let mut c = Client::connect(&handle).await;
    let rejoined = c
        .call(&join_request(joined.member_id.as_str(), b"m", 60_000), 3)
        .await;
    assert_eq!(rejoined.error_code, 0, "the group survived the restart");
    assert_eq!(rejoined.generation_id, joined.generation_id);
    handle.shutdown().await;
}

#[tokio::test]
async fn bind_errors_name_the_address_and_bad_configs_are_refused() {
    let handle = start().await;
    let taken = handle.local_addr();
    let err = crate::EmbeddedCoordinator::builder()
        .bind(taken)
        .await
        .unwrap_err();
    assert!(matches!(err, EmbeddedError(EmbeddedDetail::Bind { .. })));
    assert!(err.to_string().contains(&taken.to_string()), "{err}");
    let err = crate::EmbeddedCoordinator::builder()
        .min_session_timeout(Duration::from_secs(10))
        .max_session_timeout(Duration::from_secs(5))
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        matches!(err, EmbeddedError(EmbeddedDetail::Config(_))),
        "{err}"
    );
    let err = crate::EmbeddedCoordinator::builder()
        .max_request_frame(8)
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        matches!(err, EmbeddedError(EmbeddedDetail::Config(_))),
        "{err}"
    );
    handle.shutdown().await;
}
