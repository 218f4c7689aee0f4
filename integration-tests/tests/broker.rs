//! The broker the suite runs against answers ApiVersions with the group APIs kroupier needs,
//! and finds a group coordinator.

use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, api_versions_response::ApiVersionsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_integration_tests::{kafka_bootstrap, wire::Connection};

/// The lowest version of each group API that kroupier relies on, and the highest it prefers.
const NEEDED: [(ApiKey, i16, i16); 6] = [
    (ApiKey::JoinGroup, 5, 9),
    (ApiKey::SyncGroup, 3, 5),
    (ApiKey::Heartbeat, 3, 4),
    (ApiKey::LeaveGroup, 3, 5),
    (ApiKey::FindCoordinator, 3, 4),
    (ApiKey::DescribeGroups, 5, 5),
];

fn range(resp: &ApiVersionsResponse, key: ApiKey) -> Option<(i16, i16)> {
    resp.api_keys
        .iter()
        .find(|k| k.api_key == key as i16)
        .map(|k| (k.min_version, k.max_version))
}

#[tokio::test]
async fn api_versions_cover_the_group_apis() {
    let Some(addr) = kafka_bootstrap("api_versions_cover_the_group_apis") else {
        return;
    };
    let mut conn = Connection::connect(&addr).await.expect("connect to broker");
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kroupier-it"))
        .with_client_software_version(StrBytes::from_static_str("0.1.0"));
    let resp = conn.send(&request, 3).await.expect("ApiVersions v3");
    assert_eq!(resp.error_code, 0, "ApiVersions error");
    for (key, min_needed, preferred) in NEEDED {
        let (min, max) = range(&resp, key).unwrap_or_else(|| panic!("broker lacks {key:?}"));
        assert!(
            min <= min_needed && max >= preferred,
            "{key:?}: broker supports {min}..={max}, kroupier needs {min_needed}..={preferred}"
        );
    }
}

#[tokio::test]
async fn find_coordinator_for_a_group() {
    let Some(addr) = kafka_bootstrap("find_coordinator_for_a_group") else {
        return;
    };
    let mut conn = Connection::connect(&addr).await.expect("connect to broker");
    let group = format!("kroupier-it-{}", std::process::id());
    // The first lookup may create __consumer_offsets; the broker answers with retriable errors
    // until the partition is loaded.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let request = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![StrBytes::from_string(group.clone())]);
        let resp = conn.send(&request, 4).await.expect("FindCoordinator v4");
        let c = resp.coordinators.first().expect("one coordinator entry");
        match c.error_code {
            0 => {
                assert!(c.node_id.0 >= 0, "coordinator node id {}", c.node_id.0);
                assert!(c.port > 0, "coordinator port {}", c.port);
                assert_eq!(c.key.as_str(), group);
                return;
            }
            // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
            14 | 15 if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            code => panic!("FindCoordinator error {code}"),
        }
    }
}
