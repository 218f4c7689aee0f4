//! Round trips, hostile bytes, forward compatibility, and the size budget of the group record.

use std::collections::BTreeSet;
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

/// The fields of metadata version 5.
type Version5 = (
    Option<u64>,
    Option<String>,
    Option<String>,
    BTreeSet<String>,
    Option<u64>,
);

prop_compose! {
    fn version_5()(
        session_ms in proptest::option::of(0u64..(1 << 42)),
        process_id in proptest::option::of("\\PC{0,24}"),
        network_id in proptest::option::of("\\PC{0,48}"),
        held in proptest::collection::btree_set(task_id(), 0..10),
        hold_left_ms in proptest::option::of(0u64..(1 << 42)),
    ) -> Version5 {
        (session_ms, process_id, network_id, held, hold_left_ms)
    }
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
        takeover_hold_ms in proptest::option::of(0u64..(1 << 42)),
        v5 in version_5(),
    ) -> MemberMetadata {
        let (session_ms, process_id, network_id, held, hold_left_ms) = v5;
        MemberMetadata {
            session_timeout: session_ms.map(Duration::from_millis),
            process_id,
            network_id,
            held,
            hold_left: hold_left_ms.map(Duration::from_millis),
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
            takeover_hold: takeover_hold_ms.map(Duration::from_millis),
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
        leader_v4 in (
            proptest::option::of(0u64..(1 << 42)),
            proptest::option::of("\\PC{0,48}"),
        ),
    ) -> Assignment {
        Assignment {
            leader_session_timeout: leader_v4.0.map(Duration::from_millis),
            leader_network_id: leader_v4.1,
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

/// The bytes metadata version 5 appends when its fields are empty.
fn empty_metadata_v5_tail() -> usize {
    let mut tail = super::codec::Writer::new();
    tail.uvarint(0);
    tail.nullable_string(None);
    tail.nullable_string(None);
    super::task_set::encode(&mut tail, []);
    tail.uvarint(0);
    tail.finish().len()
}

/// The bytes assignment version 4 appends when its fields are empty.
fn empty_assignment_v4_tail() -> usize {
    let mut tail = super::codec::Writer::new();
    tail.uvarint(0);
    tail.nullable_string(None);
    tail.finish().len()
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
    fn metadata_without_tasks_is_the_metadata_less_its_tasks(m in metadata(), compressed: bool) {
        let bytes = if compressed { m.encode_compressed() } else { m.encode() };
        let without = MemberMetadata::decode_without_tasks(&bytes);
        prop_assert_eq!(without, Ok(MemberMetadata { owned: Default::default(), ..m }));
        for end in 0..bytes.len() {
            prop_assert!(MemberMetadata::decode_without_tasks(&bytes[..end]).is_err());
        }
    }

    #[test]
    fn compressed_messages_round_trip(m in metadata(), a in assignment()) {
        prop_assert_eq!(MemberMetadata::decode(&m.encode_compressed()), Ok(m));
        prop_assert_eq!(Assignment::decode(&a.encode_compressed()), Ok(a));
    }

    #[test]
    fn assignment_round_trips(a in assignment()) {
        prop_assert_eq!(Assignment::decode(&a.encode()), Ok(a));
    }

    #[test]
    fn newer_versions_decode_as_the_newest_known(
        m in metadata(),
        a in assignment(),
        // Newer than both messages' own versions: a version one of them already has is not
        // "newer" for it, and its trailing bytes would rightly be an error.
        version in (METADATA_VERSION.max(ASSIGNMENT_VERSION) + 1)..,
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
            version: ASSIGNMENT_VERSION,
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
    // version 2 the store offset (none); version 4 the takeover hold (none); version 5 its
    // fields.
    bytes.truncate(bytes.len() - empty_metadata_v5_tail() - 6);
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
    bytes.truncate(bytes.len() - tail.finish().len() - empty_assignment_v4_tail());
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
    // Version 4 ends with the store offset and the takeover hold, one byte each here.
    bytes.truncate(bytes.len() - empty_metadata_v5_tail() - 2);
    bytes[..2].copy_from_slice(&1i16.to_be_bytes());
    let decoded = MemberMetadata::decode(&bytes).expect("version 1 decodes");
    assert_eq!(decoded.store_offset, None);
    assert_eq!(decoded.owned, metadata.owned);

    // Version 2 only appends (older decoders skip the bytes after what they know: see
    // `newer_versions_decode_as_the_newest_known`).
    metadata.store_offset = Some(41);
    let v5 = metadata.encode();
    assert_eq!(&v5[2..bytes.len()], &bytes[2..]);
    assert_eq!(MemberMetadata::decode(&v5).unwrap().store_offset, Some(41));

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
fn version_3_metadata_decodes_without_a_takeover_hold_and_version_4_only_appends_it() {
    let mut metadata = MemberMetadata::new("w1");
    metadata.owned.insert("task-1".into(), 3);
    metadata.store_offset = Some(7);
    let mut v3 = metadata.encode();
    v3.truncate(v3.len() - empty_metadata_v5_tail());
    assert_eq!(v3.pop(), Some(0), "no takeover hold: one zero byte");
    v3[..2].copy_from_slice(&3i16.to_be_bytes());
    let decoded = MemberMetadata::decode(&v3).expect("version 3 decodes");
    assert_eq!(decoded.takeover_hold, None);
    assert_eq!(
        (decoded.owned, decoded.store_offset),
        (metadata.owned.clone(), Some(7))
    );

    metadata.takeover_hold = Some(Duration::from_millis(2_500));
    let v4 = metadata.encode();
    assert_eq!(&v4[2..v3.len()], &v3[2..], "version 4 appends");
    let v4 = &v4[..v4.len() - empty_metadata_v5_tail()];
    let mut v4 = v4.to_vec();
    v4[..2].copy_from_slice(&4i16.to_be_bytes());
    assert_eq!(
        MemberMetadata::decode(&v4).unwrap().takeover_hold,
        Some(Duration::from_millis(2_500))
    );

    // Version 5 appends the session timeout, the process and network identities and the
    // held tasks with what is left of their hold.
    metadata.session_timeout = Some(Duration::from_secs(10));
    metadata.process_id = Some("p-1".into());
    metadata.network_id = Some("boot/4026531840".into());
    metadata.held = ["task-2".to_owned()].into();
    metadata.hold_left = Some(Duration::from_millis(900));
    let v5 = metadata.encode();
    assert_eq!(&v5[2..v4.len()], &v4[2..], "version 5 appends");
    assert_eq!(MemberMetadata::decode(&v5).unwrap(), metadata);
}

#[test]
fn a_task_claimed_in_two_generations_is_refused() {
    let mut m = MemberMetadata::new("w1".to_owned());
    m.owned = [("task-1".to_owned(), 1), ("task-2".to_owned(), 2)].into();
    let mut bytes = m.encode();
    // Generation 2's group lists `task-` with one number, 2: make it 1, which generation 1's
    // group lists too.
    let at = bytes
        .windows(5)
        .rposition(|w| w == b"task-")
        .expect("the second group's prefix");
    assert_eq!(&bytes[at + 5..at + 7], &[1, 2], "one number, 2");
    bytes[at + 6] = 1;
    let error = MemberMetadata::decode(&bytes).expect_err("a task listed twice");
    assert!(error.to_string().contains("listed twice"), "{error}");
    assert!(
        MemberMetadata::decode_without_tasks(&bytes).is_ok(),
        "not read there"
    );
}

#[test]
fn negative_versions_are_refused() {
    assert_eq!(
        MemberMetadata::decode(&[0xff, 0xfe]),
        Err(DecodeError::NegativeVersion(-2))
    );
    // -1 marks a compressed envelope: a bare marker is a truncated one.
    assert!(matches!(
        MemberMetadata::decode(&[0xff, 0xff]),
        Err(DecodeError::Truncated {
            field: "envelope.plain_length",
            ..
        })
    ));
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

/// Sizes of the group record (all members' metadata plus all assignments), in bytes, plain
/// and as sent between builds that read the compressed envelope.
#[derive(Debug, Clone, Copy)]
struct RecordSize {
    plain: usize,
    compressed: usize,
}

/// The group record of `owners` (each member's tasks, granted in one generation), plain and
/// compressed; with `check`, every compressed message is checked to decode back to what was
/// encoded.
fn record_of(owners: &[BTreeSet<String>], check: bool) -> RecordSize {
    let mut size = RecordSize {
        plain: 0,
        compressed: 0,
    };
    for (w, owned) in owners.iter().enumerate() {
        let mut m = MemberMetadata::new(format!("worker-{w}"));
        m.kinds = BTreeSet::from(["copy".to_owned(), "index".to_owned()]);
        m.catalogue_fingerprint = 0xfeed_beef;
        m.capacity = Some(4);
        m.rack = Some("zone-a".into());
        m.owned = owned.iter().map(|t| (t.clone(), 41)).collect();
        let mut a = Assignment::new(format!("worker-0-{}", "f".repeat(36)), 42);
        a.catalogue_fingerprint = 0xfeed_beef;
        a.tasks = owned.clone();
        let (m_plain, a_plain) = (m.encode(), a.encode());
        let (m_compressed, a_compressed) = (m.encode_compressed(), a.encode_compressed());
        if check {
            assert_eq!(MemberMetadata::decode(&m_compressed).unwrap(), m);
            assert_eq!(Assignment::decode(&a_compressed).unwrap(), a);
        }
        size.plain += m_plain.len() + a_plain.len();
        size.compressed += m_compressed.len() + a_compressed.len();
    }
    size
}

/// `tasks` tasks `task-0..` placed on `workers` members by `owner`.
fn placed(tasks: usize, workers: usize, owner: impl Fn(usize) -> usize) -> Vec<BTreeSet<String>> {
    named(tasks, workers, owner, |task| format!("task-{task}"))
}

/// `tasks` tasks named by `id` placed on `workers` members by `owner`.
fn named(
    tasks: usize,
    workers: usize,
    owner: impl Fn(usize) -> usize,
    id: impl Fn(usize) -> String,
) -> Vec<BTreeSet<String>> {
    let mut owners = vec![BTreeSet::new(); workers];
    for task in 0..tasks {
        owners[owner(task)].insert(id(task));
    }
    owners
}

fn scattered(task: usize, workers: usize) -> usize {
    ((task as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize % workers
}

#[test]
fn group_record_for_100k_tasks_over_100_workers_fits_in_1_mib() {
    const TASKS: usize = 100_000;
    const WORKERS: usize = 100;
    for (name, owner) in [
        // Round-robin: every worker holds every hundredth task.
        ("round-robin", placed(TASKS, WORKERS, |t| t % WORKERS)),
        // Contiguous ranges, as a range-style assignor would give.
        ("ranges", placed(TASKS, WORKERS, |t| t / (TASKS / WORKERS))),
        // Scattered by a fixed hash, as after many sticky moves.
        (
            "scattered",
            placed(TASKS, WORKERS, |t| scattered(t, WORKERS)),
        ),
        // Zero-padded numbers (`task-0000017`), front-coded, in ranges.
        (
            "padded ranges",
            named(
                TASKS,
                WORKERS,
                |t| t / (TASKS / WORKERS),
                |t| format!("task-{t:07}"),
            ),
        ),
        // Ids with no structure (16 hex digits of a hash), round robin.
        (
            "hashed ids",
            named(
                TASKS,
                WORKERS,
                |t| t % WORKERS,
                |t| format!("{:016x}", (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            ),
        ),
    ] {
        let size = record_of(&owner, true);
        println!(
            "{name}: plain {} B ({:.2} B/task), compressed {} B ({:.3} B/task)",
            size.plain,
            size.plain as f64 / TASKS as f64,
            size.compressed,
            size.compressed as f64 / TASKS as f64
        );
        assert!(size.compressed <= size.plain, "{name}: {size:?}");
        if name != "hashed ids" {
            // Builds before the envelope read only plain messages: those must fit too.
            assert!(size.plain < 1 << 20, "{name}: {size:?}");
        }
    }
}

/// Members owning what `plan` gave them.
fn owners_of(
    tasks: &kroupier_assignor::TaskSet,
    plan: &kroupier_assignor::Plan,
) -> Vec<BTreeSet<String>> {
    plan.assignments
        .iter()
        .map(|a| {
            a.assigned
                .iter()
                .map(|t| tasks.id(*t).unwrap().to_owned())
                .collect()
        })
        .collect()
}

/// A million tasks on 100 workers, placed by kroupier's cooperative assignor from cold, after a
/// join and after a leave: the group record Kafka stores must fit a stock broker's 1 MiB
/// (`message.max.bytes`), which only the compressed envelope achieves (a plain record needs
/// about 2 bytes per task).
#[test]
fn group_record_for_a_million_tasks_fits_in_1_mib_compressed() {
    use kroupier_assignor::{AssignmentInput, MemberId, MemberInput, TaskSet, by_name};
    const TASKS: usize = 1_000_000;
    const WORKERS: usize = 100;
    let mut tasks = TaskSet::new();
    for t in 0..TASKS {
        tasks.push(format!("task-{t}"), "copy", 1).unwrap();
    }
    let assignor = by_name("cooperative").unwrap();
    let id = |i: usize| MemberId::from(format!("worker-{i:03}"));
    let fresh: Vec<MemberInput> = (0..WORKERS).map(|i| MemberInput::new(id(i))).collect();
    let cold = assignor
        .assign(&AssignmentInput::new(&tasks, &fresh))
        .unwrap();
    let owning = |plan: &kroupier_assignor::Plan, skip: Option<usize>| -> Vec<MemberInput> {
        plan.assignments
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .map(|(_, a)| MemberInput::new(a.member_id.clone()).with_owned(1, a.assigned.clone()))
            .collect()
    };
    // One member joins: the first round revokes, the second places what was revoked.
    let mut joined = owning(&cold, None);
    joined.push(MemberInput::new(id(WORKERS)));
    let mut join = assignor
        .assign(&AssignmentInput::new(&tasks, &joined))
        .unwrap();
    for _ in 0..3 {
        if join.rebalance_delay != Some(Duration::ZERO) {
            break;
        }
        let members = owning(&join, None);
        let previous = join.to_previous();
        join = assignor
            .assign(
                &AssignmentInput::new(&tasks, &members)
                    .with_previous(&previous)
                    .with_state(join.state),
            )
            .unwrap();
    }
    // The middle member leaves.
    let left = owning(&cold, Some(WORKERS / 2));
    let leave = assignor
        .assign(&AssignmentInput::new(&tasks, &left))
        .unwrap();
    for (name, plan) in [("cold", &cold), ("join", &join), ("leave", &leave)] {
        let owners = owners_of(&tasks, plan);
        assert_eq!(
            owners.iter().map(BTreeSet::len).sum::<usize>(),
            TASKS,
            "{name}"
        );
        // Decoding a million ids is slow in a debug build: checked once.
        let size = record_of(&owners, name == "leave");
        println!(
            "1M tasks, 100 workers, {name}: plain {} B ({:.2} B/task), compressed {} B \
             ({:.4} B/task)",
            size.plain,
            size.plain as f64 / TASKS as f64,
            size.compressed,
            size.compressed as f64 / TASKS as f64
        );
        assert!(size.compressed < 1 << 20, "{name}: {size:?}");
    }
}

#[test]
fn damaged_envelopes_never_panic() {
    let mut m = MemberMetadata::new("worker-1");
    m.owned = (0..5_000).map(|t| (format!("task-{}", t * 3), 7)).collect();
    let bytes = m.encode_compressed();
    assert!(bytes.len() < m.encode().len() / 4, "{} bytes", bytes.len());
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            // Either an error or a message; never a panic.
            let _ = MemberMetadata::decode(&damaged);
            let _ = Assignment::decode(&damaged);
        }
    }
    for cut in 0..bytes.len() {
        assert!(
            MemberMetadata::decode(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
}
