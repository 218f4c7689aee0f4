//! Partition counts from a Metadata request: what the leader assigns over.

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;
use kroupier::connection::{Cluster, ConnectionError};

/// The partition count of each of `topics` that exists, from one Metadata request to any
/// broker of `cluster`. A topic that does not exist (or that this client may not describe) is
/// left out, as Java's consumer skips topics it has no metadata for. Topics are never
/// created.
///
/// # Errors
/// When no broker answers ([`ConnectionError`], which says why).
pub async fn partition_counts(
    cluster: &Cluster,
    topics: impl IntoIterator<Item = &str>,
) -> Result<BTreeMap<String, i32>, ConnectionError> {
    let topics = topics
        .into_iter()
        .map(|t| {
            MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(t.to_owned()))))
        })
        .collect();
    let request = MetadataRequest::default()
        .with_topics(Some(topics))
        .with_allow_auto_topic_creation(false);
    let response = cluster.send_any(&request).await?;
    Ok(response
        .topics
        .into_iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| {
            let n = i32::try_from(t.partitions.len()).ok()?;
            t.name.map(|name| (name.0.to_string(), n))
        })
        .collect())
}
