//! Writes seed corpora for the three targets: a few valid messages of every version each
//! decoder reads (the current one, the earlier one where there is one, and a newer one with
//! bytes appended), so fuzzing starts inside valid messages.
//!
//! Usage: `cargo run --bin seed_corpus -- corpus` (writes `corpus/<target>/seed-NNNN`)

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kroupier_coordinator::codec::Versioned;
use kroupier_coordinator::election::{ElectionAssignment, ElectionMetadata};
use kroupier_worker::protocol::{Assignment, MemberMetadata};

/// Bytes versions 1 and 2 of the member metadata append to version 0 when their new fields are
/// empty: `leaving`, heartbeat interval, status address, host; the store offset.
const METADATA_EMPTY_TAIL: usize = 5;

/// Bytes versions 1 and 2 of the assignment append to version 0 when their new fields are
/// empty: `member_id`, the empty `lost` set (two counts), the hold, the leader's heartbeat
/// interval, status address and host; the store offset, the unplaced reasons and their count.
const ASSIGNMENT_EMPTY_TAIL: usize = 10;

/// The same message as a newer build would write it: a higher version, a field appended.
fn newer(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes[..2].copy_from_slice(&7i16.to_be_bytes());
    bytes.extend_from_slice(&[0x03, b'n', b'e', b'w']);
    bytes
}

/// The same message as version 0, if its later fields (`tail` bytes) are all empty.
fn version_0(mut bytes: Vec<u8>, tail: usize) -> Vec<u8> {
    bytes.truncate(bytes.len() - tail);
    bytes[..2].copy_from_slice(&0i16.to_be_bytes());
    bytes
}

fn metadata_seeds() -> Vec<Vec<u8>> {
    let empty = MemberMetadata::new("worker-1");
    let mut v0 = MemberMetadata::new("worker-2");
    v0.owned = BTreeMap::from([("task-1".into(), 3), ("task-4".into(), 3)]);
    v0.kinds = BTreeSet::from(["copy".into()]);
    let mut full = MemberMetadata::new("worker-3");
    full.owned = (0..40)
        .map(|i| (format!("task-{}", i * 7), 5 + i % 3))
        .chain([
            ("orders".into(), 2),
            ("orders-eu".into(), 2),
            ("task-007".into(), 6),
            ("é-1".into(), 6),
        ])
        .collect();
    full.kinds = BTreeSet::from(["copy".into(), "index".into()]);
    full.catalogue_fingerprint = 0xfeed_beef;
    full.capacity = Some(12);
    full.rack = Some("zone-a".into());
    full.heartbeat_interval = Some(Duration::from_secs(3));
    full.status_addr = Some("127.0.0.1:9464".into());
    full.host = Some("host-3".into());
    full.store_offset = Some(1_234);
    let mut leaving = MemberMetadata::new("worker-4");
    leaving.leaving = true;
    vec![
        empty.encode(),
        version_0(v0.encode(), METADATA_EMPTY_TAIL),
        v0.encode(),
        full.encode(),
        newer(full.encode()),
        leaving.encode(),
    ]
}

fn assignment_seeds() -> Vec<Vec<u8>> {
    let empty = Assignment::new("member-leader", 1);
    let mut v0 = Assignment::new("member-leader", 4);
    v0.tasks = BTreeSet::from(["task-1".into(), "task-2".into(), "reports".into()]);
    v0.revoked = BTreeSet::from(["task-9".into()]);
    v0.rebalance_delay = Some(Duration::from_millis(250));
    let mut full = Assignment::new("member-leader", 42);
    full.catalogue_fingerprint = 0xfeed_beef;
    full.tasks = (0..50).map(|i| format!("task-{}", i * 100 + 7)).collect();
    full.tasks
        .extend(["orders".into(), "orders-eu".into(), "task-007".into()]);
    full.revoked = BTreeSet::from(["task-3".into(), "x1".into(), String::new()]);
    full.member_id = Some("member-2".into());
    full.lost = BTreeSet::from(["task-7".into(), "task-107".into()]);
    full.lost_hold = Some(Duration::from_millis(3_500));
    full.store_offset = Some(1_234);
    full.unplaced = BTreeMap::from([(
        "no_eligible_member".into(),
        BTreeSet::from(["exotic-1".into()]),
    )]);
    full.unplaced_count = 1;
    vec![
        empty.encode(),
        version_0(v0.encode(), ASSIGNMENT_EMPTY_TAIL),
        v0.encode(),
        full.encode(),
        newer(full.encode()),
    ]
}

fn election_seeds() -> Vec<Vec<u8>> {
    let metadata = |id: &str, eligible, led_generation| {
        ElectionMetadata {
            id: id.into(),
            eligible,
            led_generation,
            endpoint: None,
        }
        .encode()
        .to_vec()
    };
    let assignment = |member: Option<&str>, id: Option<&str>| {
        ElectionAssignment {
            leader_member_id: member.map(Into::into),
            leader_id: id.map(Into::into),
            leader_group_instance_id: None,
            leader_endpoint: None,
        }
        .encode()
        .to_vec()
    };
    let mut newer_metadata = metadata("node-3", true, 9);
    newer_metadata[..2].copy_from_slice(&2i16.to_be_bytes());
    newer_metadata.extend_from_slice(&[0, 0, 0, 1, b'x']);
    vec![
        metadata("node-1", true, -1),
        metadata("node-2", false, 17),
        newer_metadata,
        assignment(Some("member-1"), Some("node-1")),
        assignment(None, None),
    ]
}

fn main() -> std::io::Result<()> {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus".to_string());
    let decodes: [(&str, Vec<Vec<u8>>, fn(&[u8]) -> bool); 3] = [
        ("member_metadata", metadata_seeds(), |b| {
            MemberMetadata::decode(b).is_ok()
        }),
        ("assignment", assignment_seeds(), |b| {
            Assignment::decode(b).is_ok()
        }),
        ("election_payloads", election_seeds(), |b| {
            ElectionMetadata::decode(b).is_ok() || ElectionAssignment::decode(b).is_ok()
        }),
    ];
    for (target, seeds, decodes) in decodes {
        let dir = format!("{root}/{target}");
        std::fs::create_dir_all(&dir)?;
        for (n, seed) in seeds.iter().enumerate() {
            assert!(decodes(seed), "{target} seed {n} does not decode");
            std::fs::write(format!("{dir}/seed-{n:04}"), seed)?;
        }
        println!("wrote {} seeds to {dir}", seeds.len());
    }
    Ok(())
}
