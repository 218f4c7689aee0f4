//! Between kafka-protocol's group messages (every version) and the state machine's types.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DescribeGroupsResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::group::{
    GroupDescription, GroupListing, Heartbeat, JoinGroup, JoinGroupResult, LeaveGroup,
    LeaveGroupResult, LeavingMember, MemberAssignment, Protocol, SyncGroup, SyncGroupResult,
};

/// `authorized_operations` when the client did not ask for them (Kafka's `Integer.MIN_VALUE`).
const NO_AUTHORIZED_OPERATIONS: i32 = i32::MIN;

fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(0, |e| e.code())
}

fn text(s: &StrBytes) -> String {
    s.as_str().to_string()
}

fn opt(s: Option<&StrBytes>) -> Option<String> {
    s.map(text)
}

fn bytes(s: String) -> StrBytes {
    StrBytes::from_string(s)
}

/// A JoinGroup from the wire. v0 has no rebalance timeout (the session timeout stands in);
/// v4+ requires a known member id (KIP-394).
pub(crate) fn join_request(
    req: &JoinGroupRequest,
    version: i16,
    client_id: String,
    client_host: String,
) -> JoinGroup {
    JoinGroup {
        group_id: text(&req.group_id.0),
        member_id: text(&req.member_id),
        group_instance_id: opt(req.group_instance_id.as_ref()),
        protocol_type: text(&req.protocol_type),
        protocols: req
            .protocols
            .iter()
            .map(|p| Protocol {
                name: text(&p.name),
                metadata: p.metadata.clone(),
            })
            .collect(),
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: if version == 0 {
            req.session_timeout_ms
        } else {
            req.rebalance_timeout_ms
        },
        client_id,
        client_host,
        require_known_member_id: version >= 4,
        reason: opt(req.reason.as_ref()),
    }
}

/// A JoinGroup answer at `version` (fields the version lacks are left out).
pub(crate) fn join_response(r: JoinGroupResult, version: i16) -> JoinGroupResponse {
    let members = r
        .members
        .into_iter()
        .map(|m| {
            JoinGroupResponseMember::default()
                .with_member_id(bytes(m.member_id))
                .with_group_instance_id(if version >= 5 {
                    m.group_instance_id.map(bytes)
                } else {
                    None
                })
                .with_metadata(m.metadata)
        })
        .collect();
    // Below v7 the protocol name is not nullable: Kafka sends "" instead of null.
    let protocol_name = match r.protocol_name {
        Some(name) => Some(bytes(name)),
        None if version < 7 => Some(StrBytes::default()),
        None => None,
    };
    JoinGroupResponse::default()
        .with_error_code(code(r.error))
        .with_generation_id(r.generation_id)
        .with_protocol_type(if version >= 7 {
            r.protocol_type.map(bytes)
        } else {
            None
        })
        .with_protocol_name(protocol_name)
        .with_leader(bytes(r.leader))
        .with_skip_assignment(version >= 9 && r.skip_assignment)
        .with_member_id(bytes(r.member_id))
        .with_members(members)
}

/// A SyncGroup from the wire.
pub(crate) fn sync_request(req: &SyncGroupRequest) -> SyncGroup {
    SyncGroup {
        group_id: text(&req.group_id.0),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: opt(req.group_instance_id.as_ref()),
        protocol_type: opt(req.protocol_type.as_ref()),
        protocol_name: opt(req.protocol_name.as_ref()),
        assignments: req
            .assignments
            .iter()
            .map(|a| MemberAssignment {
                member_id: text(&a.member_id),
                assignment: a.assignment.clone(),
            })
            .collect(),
    }
}

/// A SyncGroup answer at `version`.
pub(crate) fn sync_response(r: SyncGroupResult, version: i16) -> SyncGroupResponse {
    let v5 = version >= 5;
    SyncGroupResponse::default()
        .with_error_code(code(r.error))
        .with_protocol_type(r.protocol_type.filter(|_| v5).map(bytes))
        .with_protocol_name(r.protocol_name.filter(|_| v5).map(bytes))
        .with_assignment(r.assignment)
}

/// A Heartbeat from the wire.
pub(crate) fn heartbeat_request(req: &HeartbeatRequest) -> Heartbeat {
    Heartbeat {
        group_id: text(&req.group_id.0),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: opt(req.group_instance_id.as_ref()),
    }
}

/// A Heartbeat answer.
pub(crate) fn heartbeat_response(error: Option<ResponseError>) -> HeartbeatResponse {
    HeartbeatResponse::default().with_error_code(code(error))
}

/// A LeaveGroup from the wire: one member below v3, a batch from v3.
pub(crate) fn leave_request(req: &LeaveGroupRequest, version: i16) -> LeaveGroup {
    let members = if version < 3 {
        vec![LeavingMember {
            member_id: text(&req.member_id),
            group_instance_id: None,
            reason: None,
        }]
    } else {
        req.members
            .iter()
            .map(|m| LeavingMember {
                member_id: text(&m.member_id),
                group_instance_id: opt(m.group_instance_id.as_ref()),
                reason: opt(m.reason.as_ref()),
            })
            .collect()
    };
    LeaveGroup {
        group_id: text(&req.group_id.0),
        members,
    }
}

/// A LeaveGroup answer; below v3 the single member's error is the top-level error, as Kafka does.
pub(crate) fn leave_response(r: LeaveGroupResult, version: i16) -> LeaveGroupResponse {
    if version < 3 {
        let error = r.error.or_else(|| r.members.iter().find_map(|m| m.error));
        return LeaveGroupResponse::default().with_error_code(code(error));
    }
    let members = r
        .members
        .into_iter()
        .map(|m| {
            MemberResponse::default()
                .with_member_id(bytes(m.member_id))
                .with_group_instance_id(m.group_instance_id.map(bytes))
                .with_error_code(code(m.error))
        })
        .collect();
    LeaveGroupResponse::default()
        .with_error_code(code(r.error))
        .with_members(members)
}

/// A DescribeGroups answer. v6 (KIP-1043) reports an unknown group as GROUP_ID_NOT_FOUND; older
/// versions describe it as `Dead`.
pub(crate) fn describe_response(
    groups: Vec<(bool, GroupDescription)>,
    version: i16,
) -> DescribeGroupsResponse {
    let groups = groups
        .into_iter()
        .map(|(exists, d)| {
            let mut g = DescribedGroup::default()
                .with_group_id(GroupId(bytes(d.group_id.clone())))
                .with_group_state(StrBytes::from_static_str(d.state.as_str()))
                .with_protocol_type(bytes(d.protocol_type))
                .with_protocol_data(bytes(d.protocol));
            if version >= 3 {
                g.authorized_operations = NO_AUTHORIZED_OPERATIONS;
            }
            if !exists && version >= 6 {
                g.error_code = ResponseError::GroupIdNotFound.code();
                g.error_message = Some(bytes(format!("group {} not found", d.group_id)));
            }
            g.members = d
                .members
                .into_iter()
                .map(|m| {
                    DescribedGroupMember::default()
                        .with_member_id(bytes(m.member_id))
                        .with_group_instance_id(if version >= 4 {
                            m.group_instance_id.map(bytes)
                        } else {
                            None
                        })
                        .with_client_id(bytes(m.client_id))
                        .with_client_host(bytes(m.client_host))
                        .with_member_metadata(m.metadata)
                        .with_member_assignment(m.assignment)
                })
                .collect();
            g
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// A ListGroups answer, with the v4 state filter and the v5 type filter (case-insensitive, as
/// Kafka). Every group here is a classic group.
pub(crate) fn list_response(
    groups: Vec<GroupListing>,
    req: &ListGroupsRequest,
    version: i16,
) -> ListGroupsResponse {
    let wants = |filter: &[StrBytes], value: &str| {
        filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
    };
    let groups = groups
        .into_iter()
        .filter(|g| version < 4 || wants(&req.states_filter, g.state.as_str()))
        .filter(|_| version < 5 || wants(&req.types_filter, "classic"))
        .map(|g| {
            let mut listed = ListedGroup::default()
                .with_group_id(GroupId(bytes(g.group_id)))
                .with_protocol_type(bytes(g.protocol_type));
            if version >= 4 {
                listed.group_state = StrBytes::from_static_str(g.state.as_str());
            }
            if version >= 5 {
                listed.group_type = StrBytes::from_static_str("classic");
            }
            listed
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
