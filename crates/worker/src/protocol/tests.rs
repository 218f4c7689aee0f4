//! Round trips, hostile bytes, forward compatibility, and the size budget of the group record.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn task_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "task-[0-9]{1,6}",
        "[a-z]{1,8}-[0-9]{1,3}",
        "[a-z0]{0,4}[0-9]{0,22}",
        "\\PC{0,12}",
    ]
}

prop_compose! {
    fn metadata()(
        worker_id in "\\PC{0,16}",
        owned in proptest::collection::btree_map(task_id(), any::<i32>(), 0..40),
        kinds in proptest::collection::btree_set("[a-z_]{1,10}", 0..5),
        catalogue_fingerprint in any::<u64>(),
        capacity in proptest::option::of(any::<u64>()),
        rack in proptest::option::of("\\PC{0,10}"),
        leaving in any::<bool>(),
        heartbeat_ms in proptest::option::of(0u64..(1 << 42)),
        status_addr in proptest::option::of("\\PC{0,24}"),
        host in proptest::option::of("\\PC{0,16}"),
        store_offset in proptest::option::of(0i64..),
    ) -> MemberMetadata {
        MemberMetadata {
            version: METADATA_VERSION,
            worker_id,
            owned,
            kinds,
            catalogue_fingerprint,
            capacity,
            rack,
            leaving,
            heartbeat_interval: heartbeat_ms.map(Duration::from_millis),
            status_addr,
            host,
            store_offset,
        }
    }
}

prop_compose! {
    fn assignment()(
        leader in "\\PC{0,40}",
        generation in any::<i32>(),
        catalogue_fingerprint in any::<u64>(),
        delay_ms in proptest::option::of(0u64..(1 << 42)),
        tasks in proptest::collection::btree_set(task_id(), 0..40),
        revoked in proptest::collection::btree_set(task_id(), 0..10),
        member_id in proptest::option::of("\\PC{0,40}"),
        lost in proptest::collection::btree_set(task_id(), 0..10),
        lost_hold_ms in proptest::option::of(0u64..(1 << 42)),
        leader_heartbeat_ms in proptest::option::of(0u64..(1 << 42)),
        leader_status_addr in proptest::option::of("\\PC{0,24}"),
        leader_host in proptest::option::of("\\PC{0,16}"),
        store_offset in proptest::option::of(0i64..),
        unplaced in proptest::collection::btree_map(
            "[a-z_]{1,20}",
            proptest::collection::btree_set(task_id(), 1..5),
            0..3,
        ),
        unplaced_count in any::<u64>(),
    ) -> Assignment {
        Assignment {
            version: ASSIGNMENT_VERSION,
            leader,
            generation,
            catalogue_fingerprint,
            rebalance_delay: delay_ms.map(Duration::from_millis),
            tasks,
            revoked,
            member_id,
            lost,
            lost_hold: lost_hold_ms.map(Duration::from_millis),
            leader_heartbeat_interval: leader_heartbeat_ms.map(Duration::from_millis),
            leader_status_addr,
            leader_host,
            store_offset,
            unplaced,
            unplaced_count,
        }
    }
}

/// Rewrites the version field and appends bytes, as a newer build would.
fn as_newer_version(mut bytes: Vec<u8>, version: i16, extra: &[u8]) -> Vec<u8> {
    bytes[..2].copy_from_slice(&version.to_be_bytes());
    bytes.extend_from_slice(extra);
    bytes
}

proptest! {
    #[test]
    fn metadata_round_trips(m in metadata()) {
        prop_assert_eq!(MemberMetadata::decode(&m.encode()), Ok(m));
    }

    #[test]
    fn assignment_round_trips(a in assignment()) {
        prop_assert_eq!(Assignment::decode(&a.encode()), Ok(a));
    }

    #[test]
    fn newer_versions_decode_as_the_newest_known(
        m in metadata(),
        a in assignment(),
        version in 2i16..,
        extra in proptest::collection::vec(any::<u8>(), 0..32),
    ) {
        let decoded = MemberMetadata::decode(&as_newer_version(m.encode(), version, &extra));
        prop_assert_eq!(decoded, Ok(MemberMetadata { version, ..m }));
        let decoded = Assignment::decode(&as_newer_version(a.encode(), version, &extra));
        prop_assert_eq!(decoded, Ok(Assignment { version, ..a }));
    }

    #[test]
    fn every_strict_prefix_is_an_error(m in metadata(), a in assignment()) {
        let bytes = m.encode();
        for end in 0..bytes.len() {
            prop_assert!(MemberMetadata::decode(&bytes[..end]).is_err());
        }
        let bytes = a.encode();
        for end in 0..bytes.len() {
            prop_assert!(Assignment::decode(&bytes[..end]).is_err());
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        // Whatever decodes must survive a round trip; the rest must be a clean error.
        if let Ok(m) = MemberMetadata::decode(&bytes) {
            let again = MemberMetadata::decode(&m.encode());
            prop_assert_eq!(again, Ok(MemberMetadata { version: METADATA_VERSION, ..m }));
        }
        if let Ok(a) = Assignment::decode(&bytes) {
            let again = Assignment::decode(&a.encode());
            prop_assert_eq!(again, Ok(Assignment { version: ASSIGNMENT_VERSION, ..a }));
        }
    }

    #[test]
    fn flipped_bytes_never_panic(m in metadata(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = m.encode();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        if let Ok(decoded) = MemberMetadata::decode(&bytes) {
            prop_assert_eq!(MemberMetadata::decode(&decoded.encode()).map(|d| d.owned), Ok(decoded.owned));
        }
    }
}

#[test]
fn trailing_bytes_after_a_known_version_are_refused() {
    let mut bytes = Assignment::new("leader", 1).encode();
    bytes.push(0);
    assert_eq!(
        Assignment::decode(&bytes),
        Err(DecodeError::TrailingBytes {
            version: 2,
            count: 1
        })
    );
}

#[test]
fn version_0_messages_decode_with_the_new_fields_empty() {
    // Version 0 is version 1 without its last fields: a worker of the earlier release.
    let mut metadata = MemberMetadata::new("w1");
    metadata.owned.insert("task-1".into(), 3);
    let mut bytes = metadata.encode();
    // Version 1 appends: leaving (no), the heartbeat interval, status address and host (none);
    // version 2 the store offset (none).
    bytes.truncate(bytes.len() - 5);
    bytes[..2].copy_from_slice(&0i16.to_be_bytes());
    let decoded = MemberMetadata::decode(&bytes).expect("version 0 decodes");
    assert_eq!(
        decoded,
        MemberMetadata {
            version: 0,
            ..metadata
        }
    );

    let mut assignment = Assignment::new("leader", 4);
    assignment.tasks.insert("task-1".into());
    let mut bytes = assignment.encode();
    // Version 1 appends: member_id (null), the lost set (empty), the hold (none), the
    // leader's heartbeat interval, status address and host (none).
    let mut tail = super::codec::Writer::new();
    tail.nullable_string(None);
    super::task_set::encode(&mut tail, []);
    tail.uvarint(0);
    tail.uvarint(0);
    tail.nullable_string(None);
    tail.nullable_string(None);
    // Version 2: the store offset (none), no unplaced tasks, their count.
    tail.uvarint(0);
    tail.uvarint(0);
    tail.uvarint(0);
    bytes.truncate(bytes.len() - tail.finish().len());
    bytes[..2].copy_from_slice(&0i16.to_be_bytes());
    let decoded = Assignment::decode(&bytes).expect("version 0 decodes");
    assert_eq!(
        decoded,
        Assignment {
            version: 0,
            ..assignment
        }
    );
    assert_eq!((decoded.member_id, decoded.lost_hold), (None, None));
}

#[test]
fn version_1_messages_decode_without_a_store_offset_and_older_decoders_skip_it() {
    // A worker of the release before the task store sends version 1: no store offset.
    let mut metadata = MemberMetadata::new("w1");
    metadata.owned.insert("task-1".into(), 3);
    let mut bytes = metadata.encode();
    bytes.truncate(bytes.len() - 1);
    bytes[..2].copy_from_slice(&1i16.to_be_bytes());
    let decoded = MemberMetadata::decode(&bytes).expect("version 1 decodes");
    assert_eq!(decoded.store_offset, None);
    assert_eq!(decoded.owned, metadata.owned);

    // Version 2 only appends (older decoders skip the bytes after what they know: see
    // `newer_versions_decode_as_the_newest_known`).
    metadata.store_offset = Some(41);
    let v2 = metadata.encode();
    assert_eq!(&v2[2..bytes.len()], &bytes[2..]);
    assert_eq!(MemberMetadata::decode(&v2).unwrap().store_offset, Some(41));

    let mut assignment = Assignment::new("leader", 4);
    assignment.store_offset = Some(0);
    assignment
        .unplaced
        .insert("no_eligible_member".into(), ["s-1".to_owned()].into());
    assignment.unplaced_count = 1;
    let decoded = Assignment::decode(&assignment.encode()).unwrap();
    assert_eq!(decoded, assignment);
}

#[test]
fn negative_versions_are_refused() {
    assert_eq!(
        MemberMetadata::decode(&[0xff, 0xff]),
        Err(DecodeError::NegativeVersion(-1))
    );
}

#[test]
fn huge_counts_fail_without_allocating() {
    // version 0, empty leader, generation, fingerprint, no delay, then 2^62 groups.
    let mut bytes = vec![0, 0, 0, 0, 0, 0, 1];
    bytes.extend_from_slice(&[0; 8]);
    bytes.push(0);
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f]);
    let error = Assignment::decode(&bytes).unwrap_err();
    assert!(
        matches!(
            error,
            DecodeError::Invalid {
                field: "task_set.groups",
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn expansion_is_bounded() {
    // One numbered group with a 30,000-byte prefix and 3,000 one-byte numbers expands ~90 MB.
    let prefix = "p".repeat(30_000);
    let mut w = codec::Writer::new();
    w.i16(0);
    w.string("leader");
    w.i32(1);
    w.u64(0);
    w.uvarint(0);
    w.uvarint(1);
    w.string(&prefix);
    w.uvarint(3_000);
    for _ in 0..3_000 {
        w.uvarint(1);
    }
    w.uvarint(0);
    w.uvarint(0);
    w.uvarint(0);
    let error = Assignment::decode(&w.finish()).unwrap_err();
    assert!(matches!(error, DecodeError::TooLarge { .. }), "{error}");
}

/// Sizes of the group record (all members' metadata plus all assignments), in bytes.
fn group_record(tasks: usize, workers: usize, owner: impl Fn(usize) -> usize) -> (usize, usize) {
    let mut owned: Vec<BTreeMap<String, i32>> = vec![BTreeMap::new(); workers];
    for task in 0..tasks {
        owned[owner(task)].insert(format!("task-{task}"), 41);
    }
    let mut metadata_bytes = 0;
    let mut assignment_bytes = 0;
    for (w, owned) in owned.into_iter().enumerate() {
        let mut m = MemberMetadata::new(format!("worker-{w}"));
        m.kinds = BTreeSet::from(["copy".to_owned(), "index".to_owned()]);
        m.catalogue_fingerprint = 0xfeed_beef;
        m.capacity = Some(4);
        m.rack = Some("zone-a".into());
        let mut a = Assignment::new(format!("worker-0-{}", "f".repeat(36)), 42);
        a.catalogue_fingerprint = 0xfeed_beef;
        a.tasks = owned.keys().cloned().collect();
        m.owned = owned;
        metadata_bytes += m.encode().len();
        assignment_bytes += a.encode().len();
    }
    (metadata_bytes, assignment_bytes)
}

#[test]
fn group_record_for_100k_tasks_over_100_workers_fits_in_1_mib() {
    const TASKS: usize = 100_000;
    const WORKERS: usize = 100;
    // Round-robin: every worker holds every hundredth task.
    let round_robin = group_record(TASKS, WORKERS, |t| t % WORKERS);
    // Contiguous ranges, as a range-style assignor would give.
    let ranges = group_record(TASKS, WORKERS, |t| t / (TASKS / WORKERS));
    // Scattered by a fixed hash, as after many sticky moves.
    let scattered = group_record(TASKS, WORKERS, |t| {
        ((t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize % WORKERS
    });
    for (name, (metadata, assignments)) in [
        ("round-robin", round_robin),
        ("ranges", ranges),
        ("scattered", scattered),
    ] {
        let total = metadata + assignments;
        println!(
            "{name}: metadata {metadata} B, assignments {assignments} B, total {total} B, \
             {:.2} B/task",
            total as f64 / TASKS as f64
        );
        assert!(total < 1 << 20, "{name}: {total} bytes");
    }
}
