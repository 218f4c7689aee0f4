//! ApiVersions negotiation: for each API kroupier uses, the highest version both kroupier and
//! the broker support, or a clear error naming the Kafka release needed.

use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use super::error::ConnectionError;
use crate::connection::Detail;
use crate::wire;

/// What kroupier needs of one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRequirement {
    /// The API.
    pub api_key: ApiKey,
    /// The lowest version kroupier can work with.
    pub min: i16,
    /// Whether a connection fails without it (group membership) or merely lacks it (the
    /// observer APIs).
    pub required: bool,
    /// The first Kafka release that has version `min`.
    pub kafka: &'static str,
}

const fn need(api_key: ApiKey, min: i16, required: bool, kafka: &'static str) -> ApiRequirement {
    ApiRequirement {
        api_key,
        min,
        required,
        kafka,
    }
}

/// The APIs kroupier negotiates on every connection. Membership needs static membership
/// (KIP-345: JoinGroup v5, SyncGroup/Heartbeat v3, batched LeaveGroup v3) and flexible
/// FindCoordinator (v3), so Kafka 2.4 or later. SaslHandshake v1 and SaslAuthenticate (KIP-152,
/// Kafka 1.0) are needed only when SASL is configured; the security layer says so then. The log
/// APIs (a compacted topic as the task store) are optional for membership: v2 record batches
/// need Produce v3 and Fetch v4 (Kafka 0.11), ListOffsets v1 answers one offset per partition
/// (0.10.1), CreateTopics v2 is Kafka 1.0's, DescribeConfigs v1 (config sources) Kafka 1.1's.
/// ConsumerGroupDescribe (KIP-848 `consumer` groups, Kafka 4.0) is the observer's, optional too.
/// So are the transaction APIs a transactional producer sends, InitProducerId, AddPartitionsToTxn
/// and EndTxn, all from v0 (KIP-98, Kafka 0.11). The version negotiated for AddPartitionsToTxn
/// can be one only brokers send (v4 and later batch transactions): a producer sends at most v3.
pub const REQUIREMENTS: [ApiRequirement; 20] = [
    need(ApiKey::ApiVersions, 0, true, "0.10.0"),
    need(ApiKey::FindCoordinator, 3, true, "2.4"),
    need(ApiKey::JoinGroup, 5, true, "2.3"),
    need(ApiKey::SyncGroup, 3, true, "2.3"),
    need(ApiKey::Heartbeat, 3, true, "2.3"),
    need(ApiKey::LeaveGroup, 3, true, "2.4"),
    need(ApiKey::DescribeGroups, 5, false, "2.4"),
    need(ApiKey::ListGroups, 3, false, "2.4"),
    need(ApiKey::Metadata, 4, false, "1.0"),
    need(ApiKey::SaslHandshake, 1, false, "1.0"),
    need(ApiKey::SaslAuthenticate, 0, false, "1.0"),
    need(ApiKey::Produce, 3, false, "0.11"),
    need(ApiKey::Fetch, 4, false, "0.11"),
    need(ApiKey::ListOffsets, 1, false, "0.10.1"),
    need(ApiKey::CreateTopics, 2, false, "1.0"),
    need(ApiKey::DescribeConfigs, 1, false, "1.1"),
    need(ApiKey::ConsumerGroupDescribe, 0, false, "4.0"),
    need(ApiKey::InitProducerId, 0, false, "0.11"),
    need(ApiKey::AddPartitionsToTxn, 0, false, "0.11"),
    need(ApiKey::EndTxn, 0, false, "0.11"),
];

/// The version to use for each API on one connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NegotiatedVersions {
    versions: Vec<(ApiKey, i16)>,
}

impl NegotiatedVersions {
    /// Picks, for each API of [`REQUIREMENTS`], the highest version both sides support.
    ///
    /// # Errors
    /// `Kafka` if the response carries an error code,
    /// `MissingApi` or `UnsupportedBroker` when a required
    /// API is missing or its versions do not overlap kroupier's.
    pub fn negotiate(addr: &str, response: &ApiVersionsResponse) -> Result<Self, ConnectionError> {
        if response.error_code != 0 {
            return Err(ConnectionError::from(Detail::Kafka {
                api_key: ApiKey::ApiVersions,
                code: response.error_code,
                error: kafka_protocol::ResponseError::try_from_code(response.error_code)
                    .unwrap_or(kafka_protocol::ResponseError::Unknown(response.error_code)),
                message: None,
            }));
        }
        let mut versions = Vec::with_capacity(REQUIREMENTS.len());
        for need in REQUIREMENTS {
            let Some(ours) = wire::versions(need.api_key) else {
                continue;
            };
            let offered = response
                .api_keys
                .iter()
                .find(|k| k.api_key == need.api_key as i16);
            let Some(offered) = offered else {
                if need.required {
                    return Err(ConnectionError::from(Detail::MissingApi {
                        addr: addr.to_owned(),
                        api_key: need.api_key,
                        kafka: need.kafka,
                    }));
                }
                continue;
            };
            let high = offered.max_version.min(*ours.end());
            let low = offered.min_version.max(need.min);
            if low <= high {
                versions.push((need.api_key, high));
            } else if need.required {
                return Err(ConnectionError::from(Detail::UnsupportedBroker {
                    addr: addr.to_owned(),
                    api_key: need.api_key,
                    broker_min: offered.min_version,
                    broker_max: offered.max_version,
                    min: need.min,
                    max: *ours.end(),
                    kafka: need.kafka,
                }));
            }
        }
        Ok(Self { versions })
    }

    /// kroupier's highest version of every API it speaks (for tests and in-process peers that
    /// are known to be current).
    pub fn latest() -> Self {
        let versions = REQUIREMENTS
            .iter()
            .filter_map(|n| wire::versions(n.api_key).map(|v| (n.api_key, *v.end())))
            .collect();
        Self { versions }
    }

    /// The version negotiated for `api_key`, or `None` when the broker does not offer a usable
    /// one.
    pub fn get(&self, api_key: ApiKey) -> Option<i16> {
        self.versions
            .iter()
            .find(|(k, _)| *k == api_key)
            .map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    use super::*;

    fn offer(ranges: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default().with_api_keys(
            ranges
                .iter()
                .map(|&(k, min, max)| {
                    ApiVersion::default()
                        .with_api_key(k as i16)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
    }

    const KAFKA_4_1: [(ApiKey, i16, i16); 20] = [
        (ApiKey::ApiVersions, 0, 4),
        (ApiKey::Metadata, 0, 13),
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::JoinGroup, 0, 9),
        (ApiKey::SyncGroup, 0, 5),
        (ApiKey::Heartbeat, 0, 4),
        (ApiKey::LeaveGroup, 0, 5),
        (ApiKey::DescribeGroups, 0, 6),
        (ApiKey::ListGroups, 0, 5),
        (ApiKey::SaslHandshake, 0, 1),
        (ApiKey::SaslAuthenticate, 0, 2),
        (ApiKey::Produce, 0, 13),
        (ApiKey::Fetch, 4, 18),
        (ApiKey::ListOffsets, 1, 10),
        (ApiKey::CreateTopics, 2, 7),
        (ApiKey::DescribeConfigs, 1, 4),
        (ApiKey::ConsumerGroupDescribe, 0, 1),
        (ApiKey::InitProducerId, 0, 5),
        (ApiKey::AddPartitionsToTxn, 0, 5),
        (ApiKey::EndTxn, 0, 5),
    ];

    #[test]
    fn a_current_broker_gets_the_highest_versions() {
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&KAFKA_4_1)).unwrap();
        assert_eq!(v.get(ApiKey::JoinGroup), Some(9));
        assert_eq!(v.get(ApiKey::SyncGroup), Some(5));
        assert_eq!(v.get(ApiKey::Heartbeat), Some(4));
        assert_eq!(v.get(ApiKey::LeaveGroup), Some(5));
        assert_eq!(v.get(ApiKey::FindCoordinator), Some(6));
        assert_eq!(v.get(ApiKey::DescribeGroups), Some(6));
        assert_eq!(v.get(ApiKey::ListGroups), Some(5));
        assert_eq!(v.get(ApiKey::Produce), Some(13));
        assert_eq!(v.get(ApiKey::Fetch), Some(18));
        assert_eq!(v.get(ApiKey::ListOffsets), Some(10));
        assert_eq!(v.get(ApiKey::CreateTopics), Some(7));
        assert_eq!(v.get(ApiKey::DescribeConfigs), Some(4));
        assert_eq!(v.get(ApiKey::ConsumerGroupDescribe), Some(1));
        assert_eq!(v.get(ApiKey::InitProducerId), Some(5));
        assert_eq!(v.get(ApiKey::AddPartitionsToTxn), Some(5));
        assert_eq!(v.get(ApiKey::EndTxn), Some(5));
        assert_eq!(v.get(ApiKey::OffsetCommit), None);
        assert_eq!(v, NegotiatedVersions::latest());
    }

    #[test]
    fn a_newer_broker_is_capped_at_what_kroupier_knows() {
        let mut ranges = KAFKA_4_1;
        ranges[3] = (ApiKey::JoinGroup, 2, 12);
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&ranges)).unwrap();
        assert_eq!(v.get(ApiKey::JoinGroup), Some(9));
    }

    #[test]
    fn an_older_broker_falls_back_to_find_coordinator_v3() {
        let mut ranges = KAFKA_4_1;
        ranges[2] = (ApiKey::FindCoordinator, 0, 3);
        ranges[3] = (ApiKey::JoinGroup, 0, 7);
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&ranges)).unwrap();
        assert_eq!(v.get(ApiKey::FindCoordinator), Some(3));
        assert_eq!(v.get(ApiKey::JoinGroup), Some(7));
    }

    #[test]
    fn a_too_old_broker_is_refused_with_the_kafka_release_needed() {
        let mut ranges = KAFKA_4_1;
        ranges[3] = (ApiKey::JoinGroup, 0, 4);
        let err = NegotiatedVersions::negotiate("b:9092", &offer(&ranges)).unwrap_err();
        assert!(matches!(
            err.detail(),
            Detail::UnsupportedBroker {
                api_key: ApiKey::JoinGroup,
                broker_max: 4,
                min: 5,
                kafka: "2.3",
                ..
            }
        ));
        assert!(err.to_string().contains("Kafka 2.3 or later"), "{err}");
    }

    #[test]
    fn a_missing_required_api_fails_and_a_missing_observer_api_does_not() {
        let without_heartbeat: Vec<_> = KAFKA_4_1
            .iter()
            .copied()
            .filter(|r| r.0 != ApiKey::Heartbeat)
            .collect();
        let err = NegotiatedVersions::negotiate("b:9092", &offer(&without_heartbeat)).unwrap_err();
        assert!(matches!(
            err.detail(),
            Detail::MissingApi {
                api_key: ApiKey::Heartbeat,
                ..
            }
        ));
        let without_list: Vec<_> = KAFKA_4_1
            .iter()
            .copied()
            .filter(|r| r.0 != ApiKey::ListGroups)
            .collect();
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&without_list)).unwrap();
        assert_eq!(v.get(ApiKey::ListGroups), None);
        // A broker without the log APIs (a group coordinator only) still serves membership.
        let groups_only: Vec<_> = KAFKA_4_1
            .iter()
            .copied()
            .filter(|r| !wire::LOG_APIS.contains(&r.0))
            .collect();
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&groups_only)).unwrap();
        assert_eq!((v.get(ApiKey::Produce), v.get(ApiKey::Fetch)), (None, None));
        assert_eq!(v.get(ApiKey::JoinGroup), Some(9));
        // Nor does one without transactions.
        let without_transactions: Vec<_> = KAFKA_4_1
            .iter()
            .copied()
            .filter(|r| !wire::TRANSACTION_APIS.contains(&r.0))
            .collect();
        let v = NegotiatedVersions::negotiate("b:9092", &offer(&without_transactions)).unwrap();
        assert_eq!(v.get(ApiKey::InitProducerId), None);
        assert_eq!(v.get(ApiKey::Produce), Some(13));
    }

    #[test]
    fn an_error_answer_is_an_error() {
        let err = NegotiatedVersions::negotiate("b:9092", &offer(&KAFKA_4_1).with_error_code(35))
            .unwrap_err();
        assert!(matches!(err.detail(), Detail::Kafka { code: 35, .. }));
    }
}
