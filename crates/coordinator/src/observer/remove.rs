//! Removing another member from a group: LeaveGroup v3+ naming it, as Kafka's
//! `Admin::removeMembersFromConsumerGroup` does.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;

use super::{Observer, check};
use crate::connection::ConnectionError;
use crate::connection::Detail;
use crate::membership::LeaveGroup;

/// UNKNOWN_MEMBER_ID: the member is not (or no longer) in the group.
const UNKNOWN_MEMBER_ID: i16 = 25;

/// Whether [`Observer::remove_member`] removed the member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Removal {
    /// The coordinator removed it: the group rebalances without it.
    Removed,
    /// The coordinator did not know it (it left, expired, or someone removed it first).
    Unknown,
}

impl Observer {
    /// Removes the member `member_id` (with its `group.instance.id`, if static) from `group`:
    /// LeaveGroup v3 or later naming it, sent by a process that is not that member. Kafka
    /// removes it at once and rebalances the group; the member itself learns it only at its
    /// next heartbeat, so remove only a member whose process is known to have ended.
    ///
    /// # Errors
    /// `UnsupportedBroker` when the coordinator speaks LeaveGroup below v3
    /// (before Kafka 2.4); `Kafka` for an error about the group or the
    /// member (e.g. FENCED_INSTANCE_ID when another process holds the instance id now); any
    /// [`ConnectionError`] reaching the coordinator.
    pub async fn remove_member(
        &self,
        group: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        reason: &str,
    ) -> Result<Removal, ConnectionError> {
        let (_, coordinator) = self.cluster.coordinator(group).await?;
        let version = coordinator.version(ApiKey::LeaveGroup)?;
        if version < 3 {
            return Err(ConnectionError::from(Detail::UnsupportedBroker {
                addr: coordinator.addr().to_owned(),
                api_key: ApiKey::LeaveGroup,
                broker_min: 0,
                broker_max: version,
                min: 3,
                max: 5,
                kafka: "2.4",
            }));
        }
        let leave = LeaveGroup {
            group_id: group.to_owned(),
            member_id: member_id.to_owned(),
            group_instance_id: group_instance_id.map(str::to_owned),
            reason: reason.to_owned(),
        };
        let response = coordinator.send(&leave.to_request(version)).await?;
        if response.error_code != 0 {
            self.cluster.forget_coordinator(group);
        }
        check(ApiKey::LeaveGroup, response.error_code, None)?;
        let Some(member) = response.members.first() else {
            return Err(ConnectionError::from(Detail::Kafka {
                api_key: ApiKey::LeaveGroup,
                code: -1,
                error: ResponseError::UnknownServerError,
                message: Some("the answer names no member".to_owned()),
            }));
        };
        match member.error_code {
            0 => Ok(Removal::Removed),
            UNKNOWN_MEMBER_ID => Ok(Removal::Unknown),
            code => check(ApiKey::LeaveGroup, code, None).map(|()| Removal::Removed),
        }
    }
}
