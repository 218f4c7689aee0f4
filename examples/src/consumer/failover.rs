//! Fast failover among the kroupier members of a consumer group: what they add to the
//! consumer protocol's `user_data`, where Java's assignors do not look.
//!
//! A kroupier member with fast failover appends its endpoint to its subscription's `user_data`
//! (after the generation `cooperative-sticky` writes there; Java reads that only from
//! subscriptions older than version 2, and kroupier sends version 3). A kroupier leader gives
//! each such member, in its assignment's `user_data`, the endpoints of every *other* such member;
//! each follows them all, so a crashed member is proven gone, removed and its partitions moved
//! in round trips. Java members advertise nothing, are given nothing and are left to their
//! session; a Java leader gives nobody anything, and then the whole group waits for sessions.

use kroupier::failover::{FailoverEndpoint, FailoverTarget};
use kroupier::protocol::GroupMember;
use serde::{Deserialize, Serialize};

use super::wire::Subscription;

/// Marks the endpoint in a subscription's `user_data`; its text form follows to the end.
const ENDPOINT_MARK: &[u8] = b"kroupier-failover ";
/// Marks the targets in an assignment's `user_data`; a JSON array follows to the end.
const TARGETS_MARK: &[u8] = b"kroupier-failover-targets ";

/// One member to follow, as the leader writes it.
#[derive(Debug, Serialize, Deserialize)]
struct Target {
    member_id: String,
    group_instance_id: Option<String>,
    endpoint: String,
}

/// `user_data` with `endpoint` appended.
pub(crate) fn advertise(user_data: Option<Vec<u8>>, endpoint: &FailoverEndpoint) -> Vec<u8> {
    let mut data = user_data.unwrap_or_default();
    data.extend_from_slice(ENDPOINT_MARK);
    data.extend_from_slice(endpoint.to_string().as_bytes());
    data
}

/// What follows `mark` in `data`, if it is there.
fn after<'a>(data: &'a [u8], mark: &[u8]) -> Option<&'a [u8]> {
    let at = data.windows(mark.len()).position(|w| w == mark)?;
    Some(&data[at + mark.len()..])
}

/// The endpoint a subscription's `user_data` advertises, if any (and if it parses).
pub(crate) fn advertised(user_data: Option<&[u8]>) -> Option<FailoverEndpoint> {
    let text = std::str::from_utf8(after(user_data?, ENDPOINT_MARK)?).ok()?;
    text.parse().ok()
}

/// For each member that advertised an endpoint, the assignment `user_data` naming every other
/// one; `None` for the others (Java members, kroupier members without fast failover).
pub(crate) fn targets_by_member(members: &[GroupMember]) -> Vec<Option<Vec<u8>>> {
    let advertised: Vec<Option<Target>> = members
        .iter()
        .map(|m| {
            let subscription = Subscription::decode(&m.metadata).ok()?;
            let endpoint = advertised(subscription.user_data.as_deref())?;
            Some(Target {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                endpoint: endpoint.to_string(),
            })
        })
        .collect();
    advertised
        .iter()
        .map(|me| {
            let me = me.as_ref()?;
            let others: Vec<&Target> = advertised
                .iter()
                .flatten()
                .filter(|t| t.member_id != me.member_id)
                .collect();
            let mut data = TARGETS_MARK.to_vec();
            data.extend(serde_json::to_vec(&others).ok()?);
            Some(data)
        })
        .collect()
}

/// The members an assignment's `user_data` names to follow (none if it names none, or does not
/// decode: never a proof from garbage).
pub(crate) fn targets(user_data: Option<&[u8]>) -> Vec<FailoverTarget> {
    let Some(json) = user_data.and_then(|data| after(data, TARGETS_MARK)) else {
        return Vec::new();
    };
    let Ok(targets) = serde_json::from_slice::<Vec<Target>>(json) else {
        return Vec::new();
    };
    targets
        .into_iter()
        .filter_map(|t| {
            Some(FailoverTarget {
                member_id: t.member_id,
                group_instance_id: t.group_instance_id,
                endpoint: t.endpoint.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn endpoint(port: u16) -> FailoverEndpoint {
        FailoverEndpoint {
            addr: format!("127.0.0.1:{port}"),
            process: format!("p{port}"),
            network: Some("boot/1".into()),
        }
    }

    fn member(member_id: &str, user_data: Option<Vec<u8>>) -> GroupMember {
        let subscription = Subscription {
            topics: vec!["t".into()],
            user_data,
            owned_partitions: Vec::new(),
            generation_id: Some(3),
            rack_id: None,
        };
        GroupMember {
            member_id: member_id.into(),
            group_instance_id: None,
            metadata: Bytes::from(subscription.encode()),
        }
    }

    #[test]
    fn the_endpoint_follows_what_cooperative_sticky_writes_there() {
        let generation = 7_i32.to_be_bytes().to_vec();
        let data = advertise(Some(generation.clone()), &endpoint(1));
        assert_eq!(&data[..4], &generation[..], "Java's generation stays first");
        assert_eq!(advertised(Some(&data)), Some(endpoint(1)));
        assert_eq!(advertised(Some(&generation)), None);
        assert_eq!(advertised(None), None);
    }

    #[test]
    fn each_advertising_member_follows_every_other_and_java_members_get_nothing() {
        let members = [
            member("m-a", Some(advertise(None, &endpoint(1)))),
            member("m-java", None),
            member("m-b", Some(advertise(None, &endpoint(2)))),
        ];
        let data = targets_by_member(&members);
        assert_eq!(data[1], None, "a Java member is given nothing");
        let of_a = targets(data[0].as_deref());
        assert_eq!(
            of_a.iter()
                .map(|t| t.member_id.as_str())
                .collect::<Vec<_>>(),
            ["m-b"]
        );
        assert_eq!(of_a[0].endpoint, endpoint(2));
        let of_b = targets(data[2].as_deref());
        assert_eq!(of_b[0].member_id, "m-a");
        assert!(targets(Some(b"kroupier-failover-targets [garbage")).is_empty());
        assert!(targets(None).is_empty());
    }
}
