//! The kroupier wire format: what a worker puts in JoinGroup (member metadata) and what the
//! leader hands out in SyncGroup (assignments). `docs/protocol.md` is the spec.
//!
//! - protocol type: [`PROTOCOL_TYPE`] (`kroupier`); protocol names are assignor names.
//! - [`MemberMetadata`]: version, worker id, owned tasks with the generation each was granted
//!   in, the task kinds the worker can run, its catalogue fingerprint, optional capacity and rack.
//! - [`Assignment`]: version, leader member id, generation, the leader's catalogue fingerprint,
//!   the follow-up rebalance delay, the member's full target set, and what it must revoke.
//!
//! Both are versioned and forward compatible: a decoder reads a newer version as the newest it
//! knows and ignores the bytes it does not know. Malformed bytes give a [`DecodeError`], never a
//! panic, and every count is checked against the bytes left before anything is allocated.
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
pub(crate) mod codec;
mod metadata;
mod task_set;

pub use assignment::Assignment;
pub use metadata::MemberMetadata;

/// The `protocol_type` of kroupier groups in JoinGroup.
pub const PROTOCOL_TYPE: &str = "kroupier";

/// The newest member metadata version this build writes and fully reads.
pub const METADATA_VERSION: i16 = 1;

/// The newest assignment version this build writes and fully reads.
pub const ASSIGNMENT_VERSION: i16 = 1;

/// Why bytes from the group could not be decoded. The member that sent them runs an
/// incompatible or broken kroupier build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The message ends before a field does.
    #[error(
        "kroupier message truncated at byte {offset} reading `{field}` ({needed} more bytes \
         needed); the sender wrote a cut or corrupt message: check its kroupier version"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: usize,
    },
    /// A field holds an impossible value.
    #[error(
        "invalid kroupier message at byte {offset}, field `{field}`: {reason}; the sender runs \
         an incompatible or broken kroupier build"
    )]
    Invalid {
        /// The field being read.
        field: &'static str,
        /// Where the reader stood.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A negative version: not a kroupier message.
    #[error("kroupier message version {0} is negative; the group holds a non-kroupier member")]
    NegativeVersion(i16),
    /// Bytes follow a message of a version this build knows completely.
    #[error(
        "{count} unexpected bytes after a complete kroupier message of version {version}; the \
         sender is broken"
    )]
    TrailingBytes {
        /// The message's version.
        version: i16,
        /// How many bytes follow it.
        count: usize,
    },
    /// Decoding would produce more than the allowed amount of data.
    #[error("kroupier message expands past {limit} bytes at `{field}`; refused")]
    TooLarge {
        /// The field being read.
        field: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// Reads the version the sender wrote. Fields of versions above the newest this build knows
/// come after the known ones and are skipped by [`finish`].
fn read_version(r: &mut codec::Reader<'_>) -> Result<i16, DecodeError> {
    let version = r.i16("version")?;
    if version < 0 {
        return Err(DecodeError::NegativeVersion(version));
    }
    Ok(version)
}

/// Refuses trailing bytes after a message whose version this build knows completely.
fn finish(r: &codec::Reader<'_>, sent: i16, newest: i16) -> Result<(), DecodeError> {
    if sent <= newest && r.remaining() > 0 {
        return Err(DecodeError::TrailingBytes {
            version: sent,
            count: r.remaining(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
