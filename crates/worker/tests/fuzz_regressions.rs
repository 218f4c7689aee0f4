//! Inputs the fuzz targets in `crates/worker/fuzz` fail on, kept as tests.
//!
//! The decoders charge every decoded task id against a 64 MiB budget, but not the same way in
//! both task-set encodings: a front-coded id costs its length, a numbered id (`prefix` + number)
//! costs `prefix.len() + 20`. An id such as `aaa…a1000` sent front-coded therefore costs up to
//! 19 bytes less than the same id once `encode` has moved it to a numbered group, so a message
//! just under the budget decodes, and the message its value re-encodes to is refused with
//! `TooLarge`. The decoder now charges both encodings the id's exact length.

use kroupier_worker::protocol::{ASSIGNMENT_VERSION, Assignment, METADATA_VERSION, MemberMetadata};

/// Unsigned LEB128, as the wire format writes counts and lengths.
fn uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A task set with no numbered groups and 2,048 front-coded ids of 32,767 bytes each (32,763
/// `a`s, then 1000 to 3047): 2048 × 32,767 = 67,106,816 decoded bytes, 2,048 under the budget.
/// Numbered, the same ids cost 2048 × (32,763 + 20) plus the prefix, over it.
fn front_coded_ids_at_the_budget(out: &mut Vec<u8>) {
    let prefix = "a".repeat(32_763);
    uvarint(out, 0); // numbered groups
    uvarint(out, 2_048); // front-coded ids
    for (i, number) in (1_000..3_048).enumerate() {
        let (shared, suffix) = if i == 0 {
            (0, format!("{prefix}{number}"))
        } else {
            (prefix.len(), number.to_string())
        };
        uvarint(out, shared as u64);
        uvarint(out, suffix.len() as u64);
        out.extend_from_slice(suffix.as_bytes());
    }
}

fn empty_task_set(out: &mut Vec<u8>) {
    uvarint(out, 0);
    uvarint(out, 0);
}

#[test]
fn assignment_just_under_the_decoded_budget_round_trips() {
    let mut bytes = ASSIGNMENT_VERSION.to_be_bytes().to_vec();
    uvarint(&mut bytes, 0); // leader ""
    bytes.extend_from_slice(&1i32.to_be_bytes()); // generation
    bytes.extend_from_slice(&0u64.to_be_bytes()); // catalogue fingerprint
    uvarint(&mut bytes, 0); // no rebalance delay
    front_coded_ids_at_the_budget(&mut bytes); // tasks
    empty_task_set(&mut bytes); // revoked
    uvarint(&mut bytes, 0); // member_id: null
    empty_task_set(&mut bytes); // lost
    uvarint(&mut bytes, 0); // no lost hold
    uvarint(&mut bytes, 0); // leader's heartbeat interval: unknown
    uvarint(&mut bytes, 0); // leader's status address: null
    uvarint(&mut bytes, 0); // leader's host: null
    uvarint(&mut bytes, 0); // no task store offset
    uvarint(&mut bytes, 0); // no unplaced tasks
    uvarint(&mut bytes, 0); // unplaced count
    uvarint(&mut bytes, 0); // leader's session timeout: unknown
    uvarint(&mut bytes, 0); // leader's network: null

    let assignment = Assignment::decode(&bytes).expect("under the budget, so it decodes");
    assert_eq!(assignment.tasks.len(), 2_048);
    assert_eq!(Assignment::decode(&assignment.encode()), Ok(assignment));
}

#[test]
fn metadata_just_under_the_decoded_budget_round_trips() {
    let mut bytes = METADATA_VERSION.to_be_bytes().to_vec();
    uvarint(&mut bytes, 0); // worker_id ""
    bytes.extend_from_slice(&0u64.to_be_bytes()); // catalogue fingerprint
    uvarint(&mut bytes, 0); // no capacity
    uvarint(&mut bytes, 0); // rack: null
    uvarint(&mut bytes, 0); // no kinds
    uvarint(&mut bytes, 1); // one generation of owned tasks
    bytes.extend_from_slice(&7i32.to_be_bytes());
    front_coded_ids_at_the_budget(&mut bytes);
    uvarint(&mut bytes, 0); // not leaving
    uvarint(&mut bytes, 0); // no heartbeat interval
    uvarint(&mut bytes, 0); // status_addr: null
    uvarint(&mut bytes, 0); // host: null
    uvarint(&mut bytes, 0); // no task store offset
    uvarint(&mut bytes, 0); // no takeover hold
    uvarint(&mut bytes, 0); // no session timeout
    uvarint(&mut bytes, 0); // process_id: null
    uvarint(&mut bytes, 0); // network_id: null
    empty_task_set(&mut bytes); // nothing held
    uvarint(&mut bytes, 0); // no hold left

    let metadata = MemberMetadata::decode(&bytes).expect("under the budget, so it decodes");
    assert_eq!(metadata.owned.len(), 2_048);
    assert_eq!(MemberMetadata::decode(&metadata.encode()), Ok(metadata));
}
