//! Which peers a worker watches: all of them in a small group, its successors in member order
//! in a large one (so that every worker is watched by a few, and nobody watches everyone).

use kroupier_coordinator::observer::GroupDescription;

use crate::group::proof;
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
    /// Its process identity, from its metadata: what its `/watch` must name.
    pub(crate) process_id: String,
}

/// Every other member of a described group whose death this worker can prove (see
/// `proof.rs`), sorted by member id: its metadata advertises a status API and a process
/// identity, and a loopback address only to a worker in its own network (`own_network`).
/// Members whose metadata does not decode, says nothing, or names another network's loopback
/// are left out: nothing can be proved about them, so they fall back to their session timeout.
pub(crate) fn from_description(
    group: &GroupDescription,
    own_member_id: &str,
    own_network: Option<&str>,
) -> Vec<Peer> {
    let mut peers: Vec<Peer> = group
        .members
        .iter()
        .filter(|m| m.member_id != own_member_id)
        .filter_map(|m| {
            let metadata = MemberMetadata::decode_without_tasks(&m.metadata).ok()?;
            let status_addr = metadata.status_addr?;
            if proof::is_local_only(&status_addr)
                && (own_network.is_none() || metadata.network_id.as_deref() != own_network)
            {
                return None;
            }
            Some(Peer {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                status_addr,
                process_id: metadata.process_id?,
            })
        })
        .collect();
    peers.sort();
    peers
}

/// The peers to keep a link to: all of `peers` (sorted, without this member) in a small group
/// or when this member leads (`all`: the leader decides which vanished members' tasks need no
/// hold, and only its own links prove it), else the [`SUCCESSORS`] that follow
/// `own_member_id` in member order, wrapping around.
pub(crate) fn watched<'a>(peers: &'a [Peer], own_member_id: &str, all: bool) -> Vec<&'a Peer> {
    if all || peers.len() <= WATCH_ALL_UP_TO {
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
            process_id: format!("p-{id}"),
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
        assert_eq!(watched(&peers, "m-99", false).len(), WATCH_ALL_UP_TO);
    }

    #[test]
    fn a_large_group_watches_its_successors_in_a_ring() {
        let peers: Vec<Peer> = (0..40)
            .filter(|i| *i != 20)
            .map(|i| peer(&format!("m-{i:02}")))
            .collect();
        assert_eq!(
            ids(&watched(&peers, "m-20", false)),
            ["m-21", "m-22", "m-23"]
        );
        assert_eq!(
            watched(&peers, "m-20", true).len(),
            39,
            "a leader watches everyone"
        );
        let without_38: Vec<Peer> = (0..40)
            .filter(|i| *i != 38)
            .map(|i| peer(&format!("m-{i:02}")))
            .collect();
        assert_eq!(
            ids(&watched(&without_38, "m-38", false)),
            ["m-39", "m-00", "m-01"]
        );
        // Every member is watched by SUCCESSORS others.
        let mut all: Vec<Peer> = (0..40).map(|i| peer(&format!("m-{i:02}"))).collect();
        all.sort();
        for target in &all {
            let watchers = all
                .iter()
                .filter(|w| {
                    let others: Vec<Peer> = all.iter().filter(|p| p != w).cloned().collect();
                    watched(&others, &w.member_id, false).contains(&target)
                })
                .count();
            assert_eq!(watchers, SUCCESSORS, "{}", target.member_id);
        }
    }

    #[test]
    fn peers_are_the_members_whose_death_this_worker_can_prove() {
        let metadata = |addr: Option<&str>, process: Option<&str>, network: Option<&str>| {
            let mut m = MemberMetadata::new("w".to_owned());
            m.status_addr = addr.map(str::to_owned);
            m.process_id = process.map(str::to_owned);
            m.network_id = network.map(str::to_owned);
            m.host = Some("same-host-name".to_owned());
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
        let here = Some("boot/1");
        let group = GroupDescription {
            group_id: "g".to_owned(),
            state: GroupState::Stable,
            protocol_type: "kroupier".to_owned(),
            protocol: "sticky".to_owned(),
            members: vec![
                member("m-3", metadata(Some("10.0.0.3:3"), Some("p-3"), None)),
                member("m-1", metadata(Some("127.0.0.1:1"), Some("p-1"), here)),
                member("me", metadata(Some("127.0.0.1:9"), Some("p-9"), here)),
                member("m-2", metadata(None, Some("p-2"), here)),
                member("m-4", Bytes::from_static(b"garbage")),
                // Another network's loopback, whatever its host name says.
                member(
                    "m-5",
                    metadata(Some("127.0.0.1:5"), Some("p-5"), Some("boot/2")),
                ),
                member("m-6", metadata(Some("127.0.0.1:6"), Some("p-6"), None)),
                // An earlier release, or an address that is not its own: no process identity.
                member("m-7", metadata(Some("10.0.0.7:7"), None, None)),
            ],
        };
        let peers = from_description(&group, "me", here);
        let ids: Vec<&str> = peers.iter().map(|p| p.member_id.as_str()).collect();
        assert_eq!(ids, ["m-1", "m-3"]);
        assert_eq!(peers[0].status_addr, "127.0.0.1:1");
        assert_eq!(peers[0].process_id, "p-1");
        let elsewhere = from_description(&group, "me", None);
        let ids: Vec<&str> = elsewhere.iter().map(|p| p.member_id.as_str()).collect();
        assert_eq!(ids, ["m-3"], "without a network identity, no loopback peer");
    }
}
