//! Member metadata: what each worker tells the group leader in JoinGroup.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kroupier_coordinator::codec::{Reader, Writer};

use super::{DecodeError, METADATA_VERSION, decode_offset, encode_offset, envelope, task_set};

/// What a worker sends in JoinGroup (spec: `docs/protocol.md`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    /// The version the sender wrote; [`METADATA_VERSION`] for messages built here.
    pub version: i16,
    /// The worker's stable, human-chosen id (not the coordinator's member id).
    pub worker_id: String,
    /// The tasks this worker runs now, each with the generation it was granted in. When two
    /// members claim a task, the higher generation wins (as Kafka's sticky assignors do).
    pub owned: BTreeMap<String, i32>,
    /// The task kinds this worker can run.
    pub kinds: BTreeSet<String>,
    /// The fingerprint of the worker's catalogue (`Catalogue::fingerprint`).
    pub catalogue_fingerprint: u64,
    /// The most total task weight this worker accepts, for capacity-aware assignors;
    /// `None` = no limit.
    pub capacity: Option<u64>,
    /// Rack or zone, for rack-aware assignors.
    pub rack: Option<String>,
    /// The worker is shutting down and has stopped every task (version 1): the leader gives it
    /// nothing, and hands what it ran to others at once (those tasks are not lost: nobody runs
    /// them). Read as `false` from version 0.
    pub leaving: bool,
    /// The worker's heartbeat interval (version 1): removed by Kafka while it can still reach
    /// the coordinator, it learns so within this interval, which is how long the next owners
    /// of its tasks hold them back. `None` from version 0.
    pub heartbeat_interval: Option<Duration>,
    /// Where the worker's status API listens, as `host:port` (version 1). When the worker
    /// vanishes from the group, a leader that finds nothing listening there any more (the
    /// connection is refused) knows the process is gone and hands its tasks over without
    /// holding them back. `None` without a status API, and from version 0.
    pub status_addr: Option<String>,
    /// The host name of the worker's machine (version 1): a loopback `status_addr` can be
    /// checked only from the same host. `None` if unknown, and from version 0.
    pub host: Option<String>,
    /// The task store offset this worker has read up to (version 2): every store record below
    /// it is in its catalogue. A leader that sees a member ahead of itself assigns what it
    /// knows and rebalances again once its own view has caught up. `None` without a task
    /// store, and from versions 0 and 1.
    pub store_offset: Option<i64>,
    /// A static worker that may have replaced a live process with its `group.instance.id`
    /// (version 4): how long, from when this metadata was built, that process may still run
    /// its tasks. While any member says so, the leader holds back every task that changes
    /// owner without a claim from a live member for this long (see `docs/reliability.md`,
    /// *Static takeover*). `None` otherwise, and from versions 0 to 3.
    pub takeover_hold: Option<Duration>,
    /// The worker's session timeout (version 5): a member removed from the group without a
    /// proof that its process ended may pass its lease checks for up to this long after the
    /// removal, so the next owners of its tasks hold them back this long (see
    /// `docs/reliability.md`, *Holds*). `None` from versions 0 to 4.
    pub session_timeout: Option<Duration>,
    /// A random identity of the worker's process (version 5), which its status API's `/watch`
    /// names: a peer's link proves it reached *this* process, not whatever answers at that
    /// address in the peer's own network. `None` when the worker's death cannot be proved by
    /// its peers (no status API, an HTTPS status API, or an advertised address that is not
    /// this host's own), and from versions 0 to 4.
    pub process_id: Option<String>,
    /// The identity of the network namespace the worker runs in (version 5): the kernel's boot
    /// id and the namespace's inode. Only a member with the same identity may probe a
    /// loopback status address, or take a refused connection without a link for a proof.
    /// `None` if unknown, and from versions 0 to 4.
    pub network_id: Option<String>,
    /// Tasks assigned to this worker whose start it holds back because their previous owner
    /// may still run them (version 5); [`hold_left`](Self::hold_left) says for how long. The
    /// leader keeps that hold on them wherever they go next. Empty from versions 0 to 4.
    pub held: BTreeSet<String>,
    /// How much of the hold on [`held`](Self::held) is left, from when this metadata was
    /// built (version 5).
    pub hold_left: Option<Duration>,
}

impl MemberMetadata {
    /// Metadata of the current version for `worker_id`, with nothing else set.
    pub fn new(worker_id: impl Into<String>) -> Self {
        MemberMetadata {
            version: METADATA_VERSION,
            worker_id: worker_id.into(),
            ..Self::default()
        }
    }

    /// Encodes as the current version (whatever `version` says).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.i16(METADATA_VERSION);
        w.string(&self.worker_id);
        w.u64(self.catalogue_fingerprint);
        match self.capacity {
            None => w.uvarint(0),
            Some(capacity) => {
                w.uvarint(1);
                w.uvarint(capacity);
            }
        }
        w.nullable_string(self.rack.as_deref());
        w.uvarint(self.kinds.len() as u64);
        for kind in &self.kinds {
            w.string(kind);
        }
        let mut by_generation: BTreeMap<i32, Vec<&str>> = BTreeMap::new();
        for (task, generation) in &self.owned {
            by_generation.entry(*generation).or_default().push(task);
        }
        w.uvarint(by_generation.len() as u64);
        for (generation, tasks) in by_generation {
            w.i32(generation);
            task_set::encode(&mut w, tasks);
        }
        w.uvarint(u64::from(self.leaving));
        w.uvarint(encode_millis(self.heartbeat_interval));
        w.nullable_string(self.status_addr.as_deref());
        w.nullable_string(self.host.as_deref());
        w.uvarint(encode_offset(self.store_offset));
        w.uvarint(encode_millis(self.takeover_hold));
        w.uvarint(encode_millis(self.session_timeout));
        w.nullable_string(self.process_id.as_deref());
        w.nullable_string(self.network_id.as_deref());
        task_set::encode(&mut w, self.held.iter().map(String::as_str));
        w.uvarint(encode_millis(self.hold_left));
        w.finish()
    }

    /// Encodes as the current version, in a compressed envelope when that is shorter: only
    /// for a leader that reads it (an assignment of version 3 or above came from it, see
    /// [`sender_reads_compressed`](super::sender_reads_compressed)). Older builds refuse the
    /// envelope with a [`DecodeError`].
    pub fn encode_compressed(&self) -> Vec<u8> {
        envelope::wrap(self.encode())
    }

    /// Decodes any version, plain or in a compressed envelope; newer versions are read as the
    /// newest this build knows.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::read(bytes, true)
    }

    /// Everything but the owned tasks (left empty): for readers that only need to know who a
    /// member is and how to reach it (fast failover reads every member's metadata after each
    /// rebalance; at 100,000 tasks building the owned map cost a worker 10 % of its CPU). The
    /// tasks are still checked as [`decode`](Self::decode) checks them, except for duplicates.
    pub(crate) fn decode_without_tasks(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::read(bytes, false)
    }

    fn read(bytes: &[u8], with_tasks: bool) -> Result<Self, DecodeError> {
        let plain = envelope::unwrap(bytes)?;
        let mut r = Reader::new(&plain);
        let version = r.version()?;
        let worker_id = r.string("worker_id")?;
        let catalogue_fingerprint = r.u64("catalogue_fingerprint")?;
        let capacity = match r.uvarint("capacity")? {
            0 => None,
            1 => Some(r.uvarint("capacity")?),
            _ => return Err(r.invalid("capacity", "presence flag is neither 0 nor 1")),
        };
        let rack = r.nullable_string("rack")?;
        let kind_count = r.count("kinds", 1)?;
        let mut kinds = BTreeSet::new();
        for _ in 0..kind_count {
            kinds.insert(r.string("kinds")?);
        }
        let groups = r.count("owned", 6)?;
        // Collected, then sorted and built at once (ids come in encoding order, and inserting
        // them one by one into the map cost tens of milliseconds at 100,000 tasks).
        let mut claims: Vec<(String, i32)> = Vec::new();
        for _ in 0..groups {
            let generation = r.i32("owned.generation")?;
            if !with_tasks {
                task_set::skip(&mut r)?;
                continue;
            }
            task_set::decode(&mut r, |_, task| {
                claims.push((task, generation));
                Ok(())
            })?;
        }
        claims.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if claims.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err(r.invalid("owned", "a task is listed twice"));
        }
        let owned: BTreeMap<String, i32> = claims.into_iter().collect();
        let (leaving, heartbeat_interval, status_addr, host) = if version >= 1 {
            let leaving = match r.uvarint("leaving")? {
                0 => false,
                1 => true,
                _ => return Err(r.invalid("leaving", "flag is neither 0 nor 1")),
            };
            let heartbeat_interval = decode_millis(r.uvarint("heartbeat_interval_ms")?);
            let status_addr = r.nullable_string("status_addr")?;
            let host = r.nullable_string("host")?;
            (leaving, heartbeat_interval, status_addr, host)
        } else {
            (false, None, None, None)
        };
        let store_offset = if version >= 2 {
            decode_offset(r.uvarint("store_offset")?)
        } else {
            None
        };
        let takeover_hold = if version >= 4 {
            decode_millis(r.uvarint("takeover_hold_ms")?)
        } else {
            None
        };
        let mut session_timeout = None;
        let mut process_id = None;
        let mut network_id = None;
        let mut held = BTreeSet::new();
        let mut hold_left = None;
        if version >= 5 {
            session_timeout = decode_millis(r.uvarint("session_timeout_ms")?);
            process_id = r.nullable_string("process_id")?;
            network_id = r.nullable_string("network_id")?;
            held = task_set::decode_set(&mut r)?;
            hold_left = decode_millis(r.uvarint("hold_left_ms")?);
        }
        r.end(version, METADATA_VERSION)?;
        Ok(MemberMetadata {
            store_offset,
            takeover_hold,
            session_timeout,
            process_id,
            network_id,
            held,
            hold_left,
            leaving,
            heartbeat_interval,
            status_addr,
            host,
            version,
            worker_id,
            owned,
            kinds,
            catalogue_fingerprint,
            capacity,
            rack,
        })
    }
}

/// An optional duration on the wire, in milliseconds: 0 = none; n + 1 = n ms.
fn encode_millis(duration: Option<Duration>) -> u64 {
    duration.map_or(0, |d| {
        u64::try_from(d.as_millis())
            .unwrap_or(u64::MAX - 1)
            .min(u64::MAX - 1)
            + 1
    })
}

fn decode_millis(encoded: u64) -> Option<Duration> {
    match encoded {
        0 => None,
        n => Some(Duration::from_millis(n - 1)),
    }
}
