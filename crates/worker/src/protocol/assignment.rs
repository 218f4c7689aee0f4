//! Assignments: what the group leader hands each member in SyncGroup.

use std::collections::BTreeSet;
use std::time::Duration;

use super::codec::{Reader, Writer};
use super::{ASSIGNMENT_VERSION, DecodeError, finish, read_version, task_set};

/// What the leader sends one member in SyncGroup (spec: `docs/protocol.md`).
///
/// `tasks` is the member's *full* target set, so DescribeGroups alone shows who owns what.
/// `revoked` lists what the member holds and must stop before it rejoins; a revoked task is
/// never in `tasks`, and goes to its new owner only in a later generation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// The version the sender wrote; [`ASSIGNMENT_VERSION`] for messages built here.
    pub version: i16,
    /// The leader's member id.
    pub leader: String,
    /// The generation this assignment belongs to.
    pub generation: i32,
    /// The leader's catalogue fingerprint; differs from the member's during a rolling upgrade.
    pub catalogue_fingerprint: u64,
    /// Rejoin after this delay (a scheduled follow-up rebalance: lost-task delay, cooperative
    /// second round); `None` = no follow-up. Whole milliseconds on the wire.
    pub rebalance_delay: Option<Duration>,
    /// Every task the member should run in this generation.
    pub tasks: BTreeSet<String>,
    /// Tasks the member must stop now.
    pub revoked: BTreeSet<String>,
}

impl Assignment {
    /// An empty assignment of the current version.
    pub fn new(leader: impl Into<String>, generation: i32) -> Self {
        Assignment {
            version: ASSIGNMENT_VERSION,
            leader: leader.into(),
            generation,
            ..Self::default()
        }
    }

    /// Encodes as the current version (whatever `version` says).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.i16(ASSIGNMENT_VERSION);
        w.string(&self.leader);
        w.i32(self.generation);
        w.u64(self.catalogue_fingerprint);
        // 0 = none; n + 1 = a delay of n ms.
        let delay_ms = self.rebalance_delay.map_or(0, |d| {
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1) + 1
        });
        w.uvarint(delay_ms);
        task_set::encode(&mut w, self.tasks.iter().map(String::as_str));
        task_set::encode(&mut w, self.revoked.iter().map(String::as_str));
        w.finish()
    }

    /// Decodes any version; newer versions are read as the newest this build knows.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = read_version(&mut r)?;
        let leader = r.string("leader")?;
        let generation = r.i32("generation")?;
        let catalogue_fingerprint = r.u64("catalogue_fingerprint")?;
        let rebalance_delay = match r.uvarint("rebalance_delay_ms")? {
            0 => None,
            n => Some(Duration::from_millis(n - 1)),
        };
        let mut tasks = BTreeSet::new();
        task_set::decode(&mut r, |_, task| {
            tasks.insert(task);
            Ok(())
        })?;
        let mut revoked = BTreeSet::new();
        task_set::decode(&mut r, |_, task| {
            revoked.insert(task);
            Ok(())
        })?;
        finish(&r, version, ASSIGNMENT_VERSION)?;
        Ok(Assignment {
            version,
            leader,
            generation,
            catalogue_fingerprint,
            rebalance_delay,
            tasks,
            revoked,
        })
    }
}
