//! Assignments: what the group leader hands each member in SyncGroup.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kroupier_coordinator::codec::{Reader, Writer};

use super::{ASSIGNMENT_VERSION, DecodeError, decode_offset, encode_offset, envelope, task_set};

/// The most unplaced task ids one assignment lists (the rest are only counted): the list is
/// for status pages, and must not multiply a large group's record by its member count.
pub const MAX_UNPLACED_LISTED: usize = 100;

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
    /// The member id the leader computed this assignment for (version 1). A static member that
    /// receives an assignment computed for another member id took over from an earlier process
    /// with its `group.instance.id` without a rebalance: that process may still hold its lease.
    /// `None` from version 0.
    pub member_id: Option<String>,
    /// Tasks of `tasks` whose previous owner left the group without handing them over (removed
    /// by its session timeout, by a third party, or by a rebalance timeout), version 1.
    pub lost: BTreeSet<String>,
    /// How long after receiving this assignment the member waits before starting `lost`
    /// (version 1): long enough for a previous owner that was removed while still connected to
    /// learn it at its next heartbeat. `None` = start them at once.
    pub lost_hold: Option<Duration>,
    /// How to tell whether the leader that computed this is gone, should it vanish (version 1):
    /// its heartbeat interval and its status API address and host. A member that leads the
    /// next round has no memory of this one; these let it hold back the old leader's tasks for
    /// as long as the old leader may take to learn it was removed, or not at all once its
    /// process is provably gone. `None`s from version 0.
    pub leader_heartbeat_interval: Option<Duration>,
    /// The leader's status API address (see `leader_heartbeat_interval`).
    pub leader_status_addr: Option<String>,
    /// The leader's host name (see `leader_heartbeat_interval`).
    pub leader_host: Option<String>,
    /// The task store offset the leader assigned from (version 2): its catalogue held every
    /// store record below it. A member whose own view is behind and that is assigned a task it
    /// does not know yet waits (bounded) for its view to reach this offset before starting
    /// it. `None` without a task store, and from versions 0 and 1.
    pub store_offset: Option<i64>,
    /// Tasks no member could take, by reason (`no_eligible_member`: no member registers its
    /// kind; `no_capacity`), at most [`MAX_UNPLACED_LISTED`] ids in all (version 2). Empty
    /// from versions 0 and 1.
    pub unplaced: BTreeMap<String, BTreeSet<String>>,
    /// How many tasks were unplaced in all, listed or not (version 2).
    pub unplaced_count: u64,
    /// The leader's session timeout (version 4): should the leader vanish without a proof
    /// that its process ended, the member that leads next holds back its tasks this long.
    /// `None` from versions 0 to 3.
    pub leader_session_timeout: Option<Duration>,
    /// The leader's network identity (see
    /// [`MemberMetadata::network_id`](super::MemberMetadata::network_id)), version 4: only a
    /// member in the same network may probe its status address without a link. `None` from
    /// versions 0 to 3.
    pub leader_network_id: Option<String>,
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
        w.uvarint(encode_delay(self.rebalance_delay));
        task_set::encode(&mut w, self.tasks.iter().map(String::as_str));
        task_set::encode(&mut w, self.revoked.iter().map(String::as_str));
        w.nullable_string(self.member_id.as_deref());
        task_set::encode(&mut w, self.lost.iter().map(String::as_str));
        w.uvarint(encode_delay(self.lost_hold));
        w.uvarint(encode_delay(self.leader_heartbeat_interval));
        w.nullable_string(self.leader_status_addr.as_deref());
        w.nullable_string(self.leader_host.as_deref());
        w.uvarint(encode_offset(self.store_offset));
        w.uvarint(self.unplaced.len() as u64);
        for (reason, tasks) in &self.unplaced {
            w.string(reason);
            task_set::encode(&mut w, tasks.iter().map(String::as_str));
        }
        w.uvarint(self.unplaced_count);
        w.uvarint(encode_delay(self.leader_session_timeout));
        w.nullable_string(self.leader_network_id.as_deref());
        w.finish()
    }

    /// Encodes as the current version, in a compressed envelope when that is shorter: only
    /// for a member that reads it (its metadata is of version 3 or above, see
    /// [`sender_reads_compressed`](super::sender_reads_compressed)). Older builds refuse the
    /// envelope with a [`DecodeError`].
    pub fn encode_compressed(&self) -> Vec<u8> {
        envelope::wrap(self.encode())
    }

    /// Decodes any version, plain or in a compressed envelope; newer versions are read as the
    /// newest this build knows.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let plain = envelope::unwrap(bytes)?;
        let mut r = Reader::new(&plain);
        let version = r.version()?;
        let leader = r.string("leader")?;
        let generation = r.i32("generation")?;
        let catalogue_fingerprint = r.u64("catalogue_fingerprint")?;
        let rebalance_delay = decode_delay(r.uvarint("rebalance_delay_ms")?);
        let tasks = task_set::decode_set(&mut r)?;
        let revoked = task_set::decode_set(&mut r)?;
        let mut member_id = None;
        let mut lost = BTreeSet::new();
        let mut lost_hold = None;
        let mut leader_heartbeat_interval = None;
        let mut leader_status_addr = None;
        let mut leader_host = None;
        if version >= 1 {
            member_id = r.nullable_string("member_id")?;
            lost = task_set::decode_set(&mut r)?;
            lost_hold = decode_delay(r.uvarint("lost_hold_ms")?);
            leader_heartbeat_interval = decode_delay(r.uvarint("leader_heartbeat_interval_ms")?);
            leader_status_addr = r.nullable_string("leader_status_addr")?;
            leader_host = r.nullable_string("leader_host")?;
        }
        let mut store_offset = None;
        let mut unplaced = BTreeMap::new();
        let mut unplaced_count = 0;
        if version >= 2 {
            store_offset = decode_offset(r.uvarint("store_offset")?);
            let reasons = r.count("unplaced", 3)?;
            for _ in 0..reasons {
                let reason = r.string("unplaced.reason")?;
                unplaced.insert(reason, task_set::decode_set(&mut r)?);
            }
            unplaced_count = r.uvarint("unplaced_count")?;
        }
        let mut leader_session_timeout = None;
        let mut leader_network_id = None;
        if version >= 4 {
            leader_session_timeout = decode_delay(r.uvarint("leader_session_timeout_ms")?);
            leader_network_id = r.nullable_string("leader_network_id")?;
        }
        r.end(version, ASSIGNMENT_VERSION)?;
        Ok(Assignment {
            leader_session_timeout,
            leader_network_id,
            store_offset,
            unplaced,
            unplaced_count,
            member_id,
            lost,
            lost_hold,
            leader_heartbeat_interval,
            leader_status_addr,
            leader_host,
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

/// A delay on the wire: 0 = none; n + 1 = a delay of n whole milliseconds.
fn encode_delay(delay: Option<Duration>) -> u64 {
    delay.map_or(0, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1) + 1
    })
}

fn decode_delay(encoded: u64) -> Option<Duration> {
    match encoded {
        0 => None,
        n => Some(Duration::from_millis(n - 1)),
    }
}
