//! Which peers a worker watches: all of them in a small group, its successors in member order
//! in a large one (so that every worker is watched by a few, and nobody watches everyone).

use kroupier_coordinator::observer::GroupDescription;

use crate::protocol::MemberMetadata;

/// Up to this many peers, a worker watches every one of them (each death is seen by every
/// survivor, which rejoins at once by itself).
pub(crate) const WATCH_ALL_UP_TO: usize = 16;

/// In a larger group, how many successors in member order each worker watches: a death goes
/// unseen only if all of them die with it.
pub(crate) const SUCCESSORS: usize = 3;

/// A member of the group as fast failover sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Peer {
    /// Its member id.
    pub(crate) member_id: String,
    /// Its `group.instance.id`, if static.
    pub(crate) group_instance_id: Option<String>,
    /// Its status API address, from its metadata.
    pub(crate) status_addr: String,
    /// Its host name, from its metadata.
    pub(crate) host: Option<String>,
}

/// Every other member of a described group whose metadata advertises a status API, sorted by
/// member id. Members whose metadata does not decode (or says nothing) are left out: nothing
/// can be proved about them, so they fall back to their session timeout.
pub(crate) fn from_description(group: &GroupDescription, own_member_id: &str) -> Vec<Peer> {
    let mut peers: Vec<Peer> = group
        .members
        .iter()
        .filter(|m| m.member_id != own_member_id)
        .filter_map(|m| {
            let metadata = MemberMetadata::decode_without_tasks(&m.metadata).ok()?;
            Some(Peer {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                status_addr: metadata.status_addr?,
                host: metadata.host,
            })
        })
        .collect();
    peers.sort();
    peers
}

/// The peers to keep a link to: all of `peers` (sorted, without this member) in a small group,
/// else the [`SUCCESSORS`] that follow `own_member_id` in member order, wrapping around.
pub(crate) fn watched<'a>(peers: &'a [Peer], own_member_id: &str) -> Vec<&'a Peer> {
    if peers.len() <= WATCH_ALL_UP_TO {
        return peers.iter().collect();
    }
    let first = peers.partition_point(|p| p.member_id.as_str() < own_member_id);
    (0..SUCCESSORS)
        .map(|i| &peers[(first + i) % peers.len()])
        .collect()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kroupier_coordinator::observer::{GroupState, MemberDescription};

    use super::*;

    fn peer(id: &str) -> Peer {
        Peer {
            member_id: id.to_owned(),
            group_instance_id: None,
            status_addr: "127.0.0.1:1".to_owned(),
            host: None,
        }
    }

    fn ids(peers: &[&Peer]) -> Vec<String> {
        peers.iter().map(|p| p.member_id.clone()).collect()
    }

    #[test]
    fn a_small_group_watches_everyone() {
        let peers: Vec<Peer> = (0..WATCH_ALL_UP_TO)
            .map(|i| peer(&format!("m-{i:02}")))
            .collect();
        assert_eq!(watched(&peers, "m-99").len(), WATCH_ALL_UP_TO);
    }

    #[test]
    fn a_large_group_watches_its_successors_in_a_ring() {
        let peers: Vec<Peer> = (0..40)
            .filter(|i| *i != 20)
            .map(|i| peer(&format!("m-{i:02}")))
            .collect();
        assert_eq!(ids(&watched(&peers, "m-20")), ["m-21", "m-22", "m-23"]);
        let without_38: Vec<Peer> = (0..40)
            .filter(|i| *i != 38)
            .map(|i| peer(&format!("m-{i:02}")))
            .collect();
        assert_eq!(ids(&watched(&without_38, "m-38")), ["m-39", "m-00", "m-01"]);
        // Every member is watched by SUCCESSORS others.
        let mut all: Vec<Peer> = (0..40).map(|i| peer(&format!("m-{i:02}"))).collect();
        all.sort();
        for target in &all {
            let watchers = all
                .iter()
                .filter(|w| {
                    let others: Vec<Peer> = all.iter().filter(|p| p != w).cloned().collect();
                    watched(&others, &w.member_id).contains(&target)
                })
                .count();
            assert_eq!(watchers, SUCCESSORS, "{}", target.member_id);
        }
    }

    #[test]
    fn peers_come_from_the_described_metadata_without_this_member() {
        let metadata = |addr: Option<&str>| {
            let mut m = MemberMetadata::new("w".to_owned());
            m.status_addr = addr.map(str::to_owned);
            m.host = Some("h".to_owned());
            Bytes::from(m.encode())
        };
        let member = |id: &str, metadata: Bytes| MemberDescription {
            member_id: id.to_owned(),
            group_instance_id: None,
            client_id: String::new(),
            client_host: String::new(),
            metadata,
            assignment: Bytes::new(),
        };
        let group = GroupDescription {
            group_id: "g".to_owned(),
            state: GroupState::Stable,
            protocol_type: "kroupier".to_owned(),
            protocol: "sticky".to_owned(),
            members: vec![
                member("m-3", metadata(Some("127.0.0.1:3"))),
                member("m-1", metadata(Some("127.0.0.1:1"))),
                member("me", metadata(Some("127.0.0.1:9"))),
                member("m-2", metadata(None)),
                member("m-4", Bytes::from_static(b"garbage")),
            ],
        };
        let peers = from_description(&group, "me");
        assert_eq!(
            peers
                .iter()
                .map(|p| p.member_id.as_str())
                .collect::<Vec<_>>(),
            ["m-1", "m-3"]
        );
        assert_eq!(peers[0].status_addr, "127.0.0.1:1");
        assert_eq!(peers[0].host.as_deref(), Some("h"));
    }
}
