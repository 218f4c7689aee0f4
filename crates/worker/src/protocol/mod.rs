//! The kroupier wire format: what a worker puts in JoinGroup (member metadata) and what the
//! leader hands out in SyncGroup (assignments). `docs/protocol.md` is the spec.
//!
//! - protocol type: [`PROTOCOL_TYPE`] (`kroupier`); protocol names are assignor names.
//! - [`MemberMetadata`]: version, worker id, owned tasks with the generation each was granted
//!   in, the task kinds the worker can run, its catalogue fingerprint, optional capacity and
//!   rack, and the task store offset it has read.
//! - [`Assignment`]: version, leader member id, generation, the leader's catalogue fingerprint,
//!   the follow-up rebalance delay, the member's full target set, what it must revoke, the task
//!   store offset the leader assigned from, and the tasks nobody could take.
//!
//! Large messages may travel in a compressed envelope (deflate), to readers that said they
//! read it: at a million tasks the group's record would not fit Kafka's default 1 MiB
//! otherwise.
//!
//! Both are versioned and forward compatible: a decoder reads a newer version as the newest it
//! knows and ignores the bytes it does not know. Malformed bytes give a [`DecodeError`], never a
//! panic, and every count is checked against the bytes left before anything is allocated: both
//! are read and written by [`kroupier_coordinator::codec`], the codec leader election uses too.
//!
//! # Examples
//!
//! ```
//! use kroupier_worker::protocol::{Assignment, MemberMetadata};
//!
//! let mut metadata = MemberMetadata::new("worker-1");
//! metadata.owned.insert("task-3".into(), 7);
//! metadata.kinds.insert("copy".into());
//! let bytes = metadata.encode();
//! assert_eq!(MemberMetadata::decode(&bytes).unwrap(), metadata);
//!
//! let mut assignment = Assignment::new("member-leader", 8);
//! assignment.tasks.insert("task-3".into());
//! assert_eq!(Assignment::decode(&assignment.encode()).unwrap(), assignment);
//! ```

mod assignment;
mod envelope;
mod metadata;
mod task_set;

pub use assignment::{Assignment, MAX_UNPLACED_LISTED};
pub use kroupier_coordinator::codec::DecodeError;
pub use metadata::MemberMetadata;

/// The `protocol_type` of kroupier groups in JoinGroup.
pub const PROTOCOL_TYPE: &str = "kroupier";

/// The newest member metadata version this build writes and fully reads. Version 3 has the
/// fields of version 2 and says that its sender reads compressed envelopes; version 4 adds a
/// static worker's takeover hold ([`MemberMetadata::takeover_hold`]); version 5 what a sound
/// proof of the worker's death and the holds on its tasks need
/// ([`MemberMetadata::session_timeout`], [`MemberMetadata::process_id`],
/// [`MemberMetadata::network_id`], [`MemberMetadata::held`]).
pub const METADATA_VERSION: i16 = 5;

/// The newest assignment version this build writes and fully reads. Version 3 has the fields
/// of version 2 and says that its sender (the leader) reads compressed envelopes; version 4
/// adds the leader's session timeout and network identity
/// ([`Assignment::leader_session_timeout`], [`Assignment::leader_network_id`]).
pub const ASSIGNMENT_VERSION: i16 = 4;

/// Whether the sender of `message` (member metadata or an assignment, as it arrived) reads
/// the compressed envelope ([`MemberMetadata::encode_compressed`],
/// [`Assignment::encode_compressed`]): version 3 or above, or an envelope itself.
pub fn sender_reads_compressed(message: &[u8]) -> bool {
    envelope::sender_reads_envelopes(message)
}

/// A task store offset on the wire: 0 = none; n + 1 = offset n (offsets are never negative;
/// a negative one is written as none).
fn encode_offset(offset: Option<i64>) -> u64 {
    offset
        .and_then(|o| u64::try_from(o).ok())
        .map_or(0, |o| o.saturating_add(1))
}

fn decode_offset(encoded: u64) -> Option<i64> {
    match encoded {
        0 => None,
        n => Some(i64::try_from(n - 1).unwrap_or(i64::MAX)),
    }
}

#[cfg(test)]
use kroupier_coordinator::codec;
#[cfg(test)]
mod tests;
