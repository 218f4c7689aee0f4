//! Observe groups without joining them: ListGroups, DescribeGroups and ConsumerGroupDescribe,
//! typed.
//!
//! [`Observer::list_groups`] asks every broker (ListGroups answers only for the groups the
//! receiving broker coordinates; the broker list comes from Metadata).
//! [`Observer::remove_member`] removes another member (LeaveGroup v3+ naming it).
//! [`Observer::describe_group`] asks the group's coordinator, found and kept by the
//! [`Cluster`], and retries with backoff when the coordinator is loading or has moved.
//! [`Observer::describe_consumer_group`] does the same with ConsumerGroupDescribe for a KIP-848
//! `consumer` group ([`GroupListing::group_type`] says which a group is), which DescribeGroups
//! shows as `Dead`.
//!
//! DescribeGroups gives a group's state, protocol type, chosen protocol and, per member, its
//! ids, client id and host, and its raw metadata and assignment. It gives **no generation and
//! no leader**; decode them from the assignments with an [`AssignmentDecoder`] (see
//! [`GroupDescription::decode`]).
//!
//! # Examples
//! ```no_run
//! # async fn example() -> Result<(), kroupier_coordinator::connection::ConnectionError> {
//! use std::sync::Arc;
//! use kroupier_coordinator::connection::{Cluster, ClusterConfig};
//! use kroupier_coordinator::observer::Observer;
//!
//! let observer = Observer::new(Arc::new(Cluster::new(ClusterConfig::new("127.0.0.1:9092"))?));
//! for listing in observer.list_groups().await? {
//!     let group = observer.describe_group(&listing.group_id).await?;
//!     println!("{} {} {} members", group.group_id, group.state, group.members.len());
//! }
//! # Ok(()) }
//! ```
//!
//! # Cancel safety
//! Every method is cancel safe.

mod consumer;
mod group;
mod remove;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, GroupId, ListGroupsRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

pub use consumer::{ConsumerGroupDescription, ConsumerMember, TopicPartitions};
pub use group::{
    AssignmentDecoder, DecodedGroup, GroupDescription, GroupListing, GroupState, MemberDescription,
};
pub use remove::Removal;

use crate::backoff::Backoff;
use crate::connection::Detail;
use crate::connection::{BrokerNode, Cluster, ConnectionError};

/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
const COORDINATOR_ERRORS: [i16; 3] = [14, 15, 16];
/// GROUP_ID_NOT_FOUND (DescribeGroups v6 answers it for a group that does not exist).
const GROUP_ID_NOT_FOUND: i16 = 69;

/// Reads groups' membership through a [`Cluster`].
#[derive(Debug, Clone)]
pub struct Observer {
    cluster: Arc<Cluster>,
}

impl Observer {
    /// An observer over `cluster` (which may be shared with members).
    pub fn new(cluster: Arc<Cluster>) -> Self {
        Self { cluster }
    }

    /// Every group of the cluster, sorted by group id.
    ///
    /// # Errors
    /// Any [`ConnectionError`] reaching a broker, or `Kafka` when a broker
    /// answers with an error (e.g. CLUSTER_AUTHORIZATION_FAILED).
    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, ConnectionError> {
        let bootstrap = self.cluster.any_broker().await?;
        let metadata_version = bootstrap.version(ApiKey::Metadata)?;
        let request = MetadataRequest::default()
            .with_topics(Some(Vec::new()))
            .with_allow_auto_topic_creation(metadata_version < 4);
        let metadata = bootstrap.send(&request).await?;
        let mut groups = BTreeMap::new();
        for broker in &metadata.brokers {
            let node = BrokerNode {
                node_id: broker.node_id.0,
                host: broker.host.to_string(),
                port: broker.port,
            };
            let connection = self.cluster.node(&node).await?;
            let response = connection.send(&ListGroupsRequest::default()).await?;
            check(ApiKey::ListGroups, response.error_code, None)?;
            for listed in &response.groups {
                let listing = GroupListing::from(listed);
                groups.insert(listing.group_id.clone(), listing);
            }
        }
        Ok(groups.into_values().collect())
    }

    /// The group's description from its coordinator. A group that does not exist is
    /// described as [`GroupState::Dead`] with no members.
    ///
    /// # Errors
    /// `Kafka` for an error about the group (e.g.
    /// GROUP_AUTHORIZATION_FAILED), `CoordinatorNotFound` when the
    /// coordinator does not settle within the cluster's lookup timeout, or any
    /// [`ConnectionError`] reaching it.
    pub async fn describe_group(&self, group: &str) -> Result<GroupDescription, ConnectionError> {
        self.at_coordinator(group, || self.describe_once(group))
            .await
    }

    /// Runs `ask` against `group`'s coordinator, and again with backoff while the coordinator
    /// is loading or has moved, up to the cluster's coordinator lookup timeout.
    async fn at_coordinator<T, F, Fut>(&self, group: &str, ask: F) -> Result<T, ConnectionError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ConnectionError>>,
    {
        let config = self.cluster.config();
        let deadline = Instant::now() + config.coordinator_lookup_timeout;
        let mut backoff = Backoff::new(config.retry_backoff, config.retry_backoff_max);
        loop {
            let last = match ask().await {
                Ok(answer) => return Ok(answer),
                Err(e) if is_coordinator_trouble(&e) => {
                    self.cluster.forget_coordinator(group);
                    e.to_string()
                }
                Err(e) => return Err(e),
            };
            let at = Instant::now() + backoff.next_delay();
            if at > deadline {
                return Err(ConnectionError::from(Detail::CoordinatorNotFound {
                    group: group.to_owned(),
                    timeout: config.coordinator_lookup_timeout,
                    last,
                }));
            }
            tokio::time::sleep_until(at).await;
        }
    }

    /// [`describe_group`](Self::describe_group), then [`GroupDescription::decode`].
    ///
    /// # Errors
    /// As [`describe_group`](Self::describe_group); members that do not decode are `Err`
    /// entries of the result instead.
    pub async fn describe_decoded<D: AssignmentDecoder>(
        &self,
        group: &str,
        decoder: &D,
    ) -> Result<DecodedGroup<D::Member, D::Error>, ConnectionError> {
        Ok(self.describe_group(group).await?.decode(decoder))
    }

    async fn describe_once(&self, group: &str) -> Result<GroupDescription, ConnectionError> {
        let (_, coordinator) = self.cluster.coordinator(group).await?;
        let request = DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_string(group.to_owned()))]);
        let response = coordinator.send(&request).await?;
        let Some(described) = response
            .groups
            .iter()
            .find(|g| g.group_id.as_str() == group)
        else {
            return Err(ConnectionError::from(Detail::Kafka {
                api_key: ApiKey::DescribeGroups,
                code: -1,
                error: ResponseError::UnknownServerError,
                message: Some(format!("the answer has no entry for group `{group}`")),
            }));
        };
        if described.error_code == GROUP_ID_NOT_FOUND {
            return Ok(GroupDescription {
                group_id: group.to_owned(),
                state: GroupState::Dead,
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            });
        }
        check(
            ApiKey::DescribeGroups,
            described.error_code,
            described.error_message.as_ref().map(|m| m.to_string()),
        )?;
        Ok(GroupDescription::from(described))
    }
}

fn is_coordinator_trouble(error: &ConnectionError) -> bool {
    match error.detail() {
        Detail::Kafka { code, .. } => COORDINATOR_ERRORS.contains(code),
        _ => error.is_disconnect(),
    }
}

fn check(api_key: ApiKey, code: i16, message: Option<String>) -> Result<(), ConnectionError> {
    if code == 0 {
        return Ok(());
    }
    Err(ConnectionError::from(Detail::Kafka {
        api_key,
        code,
        error: ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code)),
        message,
    }))
}
