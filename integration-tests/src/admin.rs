//! What an operator does to a group from outside it, as Kafka's Admin client does: find a
//! worker's member id (DescribeGroups) and remove a member (LeaveGroup v3+ naming it, as
//! `kafka-consumer-groups --delete-members` and Admin `removeMembersFromConsumerGroup` do).

use std::time::Duration;

use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{DescribeGroupsRequest, GroupId, LeaveGroupRequest};
use kafka_protocol::protocol::StrBytes;
use kroupier_worker::protocol::MemberMetadata;

use crate::wire::Connection;

/// The member id of the worker whose metadata names `worker_id`, from DescribeGroups once the
/// group is stable (Kafka shows members' metadata only then). Tries for 10 s.
///
/// # Panics
/// When the broker cannot be reached, or the worker is not in the stable group by then.
pub async fn member_id_of(bootstrap: &str, group: &str, worker_id: &str) -> String {
    member_id_where(bootstrap, group, worker_id, |metadata| {
        MemberMetadata::decode(metadata).is_ok_and(|meta| meta.worker_id == worker_id)
    })
    .await
}

/// The member id of the member whose metadata `matches` (`what` names it in the panic), from
/// DescribeGroups once the group is stable. Tries for 10 s.
///
/// # Panics
/// When the broker cannot be reached, or no such member is in the stable group by then.
pub async fn member_id_where(
    bootstrap: &str,
    group: &str,
    what: &str,
    matches: impl Fn(&[u8]) -> bool,
) -> String {
    let mut connection = Connection::connect(bootstrap).await.expect("connect");
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.to_owned()))]);
    let mut last = None;
    for _ in 0..100 {
        let response = connection.send(&request, 5).await.expect("DescribeGroups");
        let described = response.groups.into_iter().next().expect("one group");
        let found = described
            .members
            .iter()
            .find(|m| matches(&m.member_metadata))
            .map(|m| m.member_id.to_string());
        if let Some(member_id) = found.filter(|_| described.group_state.as_str() == "Stable") {
            return member_id;
        }
        last = Some(described);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} is not in the stable group {group}: {last:?}")
}

/// Removes `member_id` from `group` as an operator would: LeaveGroup v5 naming it, and its
/// `group.instance.id` when it is a static member (Kafka removes a static member only by its
/// instance id, and fences the instance id's other member ids).
///
/// # Panics
/// When the broker cannot be reached or refuses the removal.
pub async fn remove_member(
    bootstrap: &str,
    group: &str,
    member_id: &str,
    group_instance_id: Option<&str>,
) {
    let mut connection = Connection::connect(bootstrap).await.expect("connect");
    let request = LeaveGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_members(vec![
            MemberIdentity::default()
                .with_member_id(StrBytes::from_string(member_id.to_owned()))
                .with_group_instance_id(
                    group_instance_id.map(|id| StrBytes::from_string(id.into())),
                )
                .with_reason(Some(StrBytes::from_static_str("removed by an operator"))),
        ]);
    let response = connection.send(&request, 5).await.expect("LeaveGroup");
    assert_eq!(response.error_code, 0, "{response:?}");
    assert!(
        response.members.iter().all(|m| m.error_code == 0),
        "{response:?}"
    );
}
