//! KIP-848 `consumer` groups (Kafka 4.0+, a Java consumer with `group.protocol=consumer`):
//! ConsumerGroupDescribe, typed.
//!
//! Such a group has no JoinGroup, no leader and no generation: the coordinator assigns
//! partitions itself (its server-side assignor) and each member converges on its target
//! assignment, epoch by epoch. DescribeGroups answers for classic groups only (a `consumer`
//! group is `Dead` to it); ListGroups v5 names a group's type, and ConsumerGroupDescribe shows
//! its state, epochs, assignor and each member's current and target partitions.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member,
};
use kafka_protocol::messages::{ApiKey, ConsumerGroupDescribeRequest, GroupId};
use kafka_protocol::protocol::StrBytes;

use super::{GROUP_ID_NOT_FOUND, Observer, check};
use crate::connection::ConnectionError;
use crate::connection::Detail;

/// One KIP-848 `consumer` group as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    /// The group id.
    pub group_id: String,
    /// Kafka's spelling of its state (`Empty`, `Assigning`, `Reconciling`, `Stable`, `Dead`).
    pub state: String,
    /// The group epoch: it grows with every change of membership or subscriptions.
    pub group_epoch: i32,
    /// The epoch of the target assignment the coordinator computed last.
    pub assignment_epoch: i32,
    /// The server-side assignor that computed it (`uniform`, `range`).
    pub assignor: String,
    /// The members, in the coordinator's order.
    pub members: Vec<ConsumerMember>,
}

/// One member of a `consumer` group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMember {
    /// The member id (chosen by the member itself under KIP-848).
    pub member_id: String,
    /// Its static instance id (`group.instance.id`), if any.
    pub instance_id: Option<String>,
    /// Its rack (`client.rack`), if any.
    pub rack_id: Option<String>,
    /// The epoch the member has reconciled to.
    pub member_epoch: i32,
    /// The client id it connected with.
    pub client_id: String,
    /// The host it connected from, as the coordinator saw it (`/10.0.0.7`).
    pub client_host: String,
    /// The topics it subscribes to by name.
    pub subscribed_topics: Vec<String>,
    /// The regular expression it subscribes with, if any (an empty one is `None`).
    pub subscribed_regex: Option<String>,
    /// The partitions it owns now.
    pub assignment: Vec<TopicPartitions>,
    /// The partitions the coordinator means it to own (equal to `assignment` once reconciled).
    pub target_assignment: Vec<TopicPartitions>,
}

/// Some partitions of one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions {
    /// The topic's name.
    pub topic: String,
    /// The partitions, as the coordinator lists them.
    pub partitions: Vec<i32>,
}

impl Observer {
    /// The KIP-848 `consumer` group `group`, from its coordinator (ConsumerGroupDescribe).
    ///
    /// # Errors
    /// `NotNegotiated` from a broker without ConsumerGroupDescribe (before
    /// Kafka 4.0, or the embedded coordinator); `Kafka` for an error about the
    /// group: GROUP_ID_NOT_FOUND (69) when it does not exist or is not a `consumer` group,
    /// GROUP_AUTHORIZATION_FAILED; otherwise as [`describe_group`](Self::describe_group).
    pub async fn describe_consumer_group(
        &self,
        group: &str,
    ) -> Result<ConsumerGroupDescription, ConnectionError> {
        self.at_coordinator(group, || self.describe_consumer_once(group))
            .await
    }

    async fn describe_consumer_once(
        &self,
        group: &str,
    ) -> Result<ConsumerGroupDescription, ConnectionError> {
        let (_, coordinator) = self.cluster.coordinator(group).await?;
        let request = ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from_string(group.to_owned()))]);
        let response = coordinator.send(&request).await?;
        let described = response
            .groups
            .iter()
            .find(|g| g.group_id.as_str() == group)
            .ok_or_else(|| {
                ConnectionError::from(Detail::Kafka {
                    api_key: ApiKey::ConsumerGroupDescribe,
                    code: GROUP_ID_NOT_FOUND,
                    error: kafka_protocol::ResponseError::GroupIdNotFound,
                    message: Some(format!("the answer has no entry for group `{group}`")),
                })
            })?;
        check(
            ApiKey::ConsumerGroupDescribe,
            described.error_code,
            described.error_message.as_ref().map(|m| m.to_string()),
        )?;
        Ok(ConsumerGroupDescription::from(described))
    }
}

impl From<&DescribedGroup> for ConsumerGroupDescription {
    fn from(g: &DescribedGroup) -> Self {
        ConsumerGroupDescription {
            group_id: g.group_id.to_string(),
            state: g.group_state.to_string(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            assignor: g.assignor_name.to_string(),
            members: g.members.iter().map(ConsumerMember::from).collect(),
        }
    }
}

impl From<&Member> for ConsumerMember {
    fn from(m: &Member) -> Self {
        ConsumerMember {
            member_id: m.member_id.to_string(),
            instance_id: m.instance_id.as_ref().map(|s| s.to_string()),
            rack_id: m.rack_id.as_ref().map(|s| s.to_string()),
            member_epoch: m.member_epoch,
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            subscribed_topics: m
                .subscribed_topic_names
                .iter()
                .map(|t| t.to_string())
                .collect(),
            // Kafka 4.1 sends an empty string, not null, for "no regex".
            subscribed_regex: m
                .subscribed_topic_regex
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| s.to_string()),
            assignment: partitions(&m.assignment),
            target_assignment: partitions(&m.target_assignment),
        }
    }
}

fn partitions(assignment: &Assignment) -> Vec<TopicPartitions> {
    assignment
        .topic_partitions
        .iter()
        .map(|t| TopicPartitions {
            topic: t.topic_name.to_string(),
            partitions: t.partitions.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::ConsumerGroupDescribeResponse;
    use kafka_protocol::messages::consumer_group_describe_response::TopicPartitions as Wire;

    use super::*;
    use crate::wire::{decode_response, encode_response};

    fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_owned())
    }

    fn assigned(topic: &str, partitions: &[i32]) -> Assignment {
        Assignment::default().with_topic_partitions(vec![
            Wire::default()
                .with_topic_name(kafka_protocol::messages::TopicName(s(topic)))
                .with_partitions(partitions.to_vec()),
        ])
    }

    /// What Kafka 4.1 answers for a `consumer` group of one Java consumer still reconciling.
    fn response(version: i16) -> ConsumerGroupDescribeResponse {
        let member = Member::default()
            .with_member_id(s("Zq3Y8ZbFRh2mO9dW1x0n6A"))
            .with_instance_id(None)
            .with_rack_id(Some(s("eu-1a")))
            .with_member_epoch(4)
            .with_client_id(s("console-consumer"))
            .with_client_host(s("/127.0.0.1"))
            .with_subscribed_topic_names(vec![kafka_protocol::messages::TopicName(s("orders"))])
            .with_subscribed_topic_regex(None)
            .with_assignment(assigned("orders", &[0, 1]))
            .with_target_assignment(assigned("orders", &[0, 1, 2]))
            .with_member_type(if version >= 1 { 0 } else { -1 });
        ConsumerGroupDescribeResponse::default().with_groups(vec![
            DescribedGroup::default()
                .with_group_id(GroupId(s("orders-app")))
                .with_group_state(s("Reconciling"))
                .with_group_epoch(5)
                .with_assignment_epoch(5)
                .with_assignor_name(s("uniform"))
                .with_members(vec![member]),
        ])
    }

    #[test]
    fn a_consumer_group_description_decodes_through_the_guard() {
        for version in 0..=1 {
            let frame = encode_response(7, version, &response(version)).unwrap();
            let (_, decoded): (_, ConsumerGroupDescribeResponse) =
                decode_response(frame.clone(), version).unwrap();
            let group = ConsumerGroupDescription::from(&decoded.groups[0]);
            assert_eq!(
                (
                    group.group_id.as_str(),
                    group.state.as_str(),
                    group.group_epoch,
                    group.assignment_epoch,
                    group.assignor.as_str()
                ),
                ("orders-app", "Reconciling", 5, 5, "uniform")
            );
            let member = &group.members[0];
            assert_eq!(member.member_epoch, 4);
            assert_eq!(member.rack_id.as_deref(), Some("eu-1a"));
            assert_eq!(member.subscribed_topics, ["orders"]);
            assert_eq!(
                member.assignment,
                [TopicPartitions {
                    topic: "orders".into(),
                    partitions: vec![0, 1]
                }]
            );
            assert_eq!(member.target_assignment[0].partitions, [0, 1, 2]);
            // Every truncation is an error, never a panic or a wrong answer.
            for len in 0..frame.len() {
                let cut = frame.slice(..len);
                assert!(
                    decode_response::<ConsumerGroupDescribeResponse>(cut, version).is_err(),
                    "v{version} cut at {len}"
                );
            }
        }
    }
}
