//! The DescribeGroups and ListGroups views of a classic group.

use bytes::Bytes;

use super::classic::ClassicGroup;
use super::types::{GroupDescription, GroupListing, GroupState, MemberDescription};

impl ClassicGroup {
    /// Kafka's `ClassicGroup.describe`: metadata, assignments and the protocol only when Stable.
    pub(crate) fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol = if stable {
            self.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let members = self
            .members
            .values()
            .map(|m| MemberDescription {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata(&protocol)
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect();
        GroupDescription {
            group_id: self.group_id.clone(),
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol,
            members,
        }
    }

    /// The ListGroups entry.
    pub(crate) fn listing(&self) -> GroupListing {
        GroupListing {
            group_id: self.group_id.clone(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            state: self.state,
        }
    }
}
