//! Kafka's `ConsumerProtocol` payloads, versions 0 to 3, byte for byte as Java writes them.
//!
//! Both payloads are an `int16` version and a body in Kafka's classic encoding: `string` is an
//! `int16` length and UTF-8 (−1 for null), `bytes` an `int32` length (−1 for null), an array
//! an `int32` count. No tagged fields. Each version only appends fields:
//!
//! | subscription field | since | |
//! |---|---|---|
//! | topics `[string]` | v0 | sorted |
//! | user data `bytes?` | v0 | the assignor's own |
//! | owned partitions `[{topic, [int32]}]` | v1 | sorted, grouped per topic |
//! | generation `int32` | v2 | the generation the owned partitions came in; −1 for none |
//! | rack `string?` | v3 | an empty rack reads as none |
//!
//! An assignment is `[{topic, [int32]}]` then user data `bytes?`, the same body in every
//! version. Like Java, a decoder reads a newer version as version 3 and ignores what follows
//! the fields it knows; a negative version or a count the bytes cannot hold is an error,
//! never a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The newest version this module writes and reads completely (Java's
/// `ConsumerProtocol.HIGHEST_SUPPORTED_VERSION`).
pub const CONSUMER_PROTOCOL_VERSION: i16 = 3;

/// One partition of one topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// Partition `partition` of `topic`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A member's JoinGroup metadata under protocol type `consumer`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    /// The topics it subscribes to.
    pub topics: Vec<String>,
    /// Assignor-specific data (`cooperative-sticky`: the generation as an `int32`).
    pub user_data: Option<Vec<u8>>,
    /// The partitions it owns now (v1+).
    pub owned_partitions: Vec<TopicPartition>,
    /// The generation it got them in (v2+); `None` for none (−1 on the wire).
    pub generation_id: Option<i32>,
    /// Its rack (v3+).
    pub rack_id: Option<String>,
}

/// The leader's SyncGroup assignment for one member under protocol type `consumer`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// The partitions the member owns in the new generation.
    pub partitions: Vec<TopicPartition>,
    /// Assignor-specific data.
    pub user_data: Option<Vec<u8>>,
}

/// Why a consumer-protocol payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The payload ends inside a field.
    #[error("consumer protocol payload truncated reading `{field}` at byte {offset}")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// A field holds an impossible value.
    #[error("invalid consumer protocol payload, field `{field}` at byte {offset}: {reason}")]
    Invalid {
        /// The field being read.
        field: &'static str,
        /// Where the reader stood.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The version is negative: not a consumer-protocol payload.
    #[error("consumer protocol version {0} is negative; the member does not speak it")]
    NegativeVersion(i16),
}

/// Groups partitions per topic, sorted, as Java writes them.
fn by_topic(partitions: &[TopicPartition]) -> BTreeMap<&str, BTreeSet<i32>> {
    let mut map: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    for tp in partitions {
        map.entry(tp.topic.as_str())
            .or_default()
            .insert(tp.partition);
    }
    map
}

struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn len(&mut self, n: usize) {
        // Counts come from in-memory collections; Kafka's limits are far below i32::MAX.
        self.i32(i32::try_from(n).unwrap_or(i32::MAX));
    }
    fn string(&mut self, s: &str) {
        self.i16(i16::try_from(s.len()).unwrap_or(i16::MAX));
        self.0.extend_from_slice(s.as_bytes());
    }
    fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None => self.i16(-1),
        }
    }
    fn nullable_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => {
                self.len(b.len());
                self.0.extend_from_slice(b);
            }
            None => self.i32(-1),
        }
    }
    fn partitions(&mut self, partitions: &[TopicPartition]) {
        let grouped = by_topic(partitions);
        self.len(grouped.len());
        for (topic, numbers) in grouped {
            self.string(topic);
            self.len(numbers.len());
            for n in numbers {
                self.i32(n);
            }
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() - self.pos < n {
            return Err(WireError::Truncated {
                field,
                offset: self.pos,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }
    fn i16(&mut self, field: &'static str) -> Result<i16, WireError> {
        let b = self.take(field, 2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self, field: &'static str) -> Result<i32, WireError> {
        let b = self.take(field, 4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn invalid(&self, field: &'static str, reason: &'static str) -> WireError {
        WireError::Invalid {
            field,
            offset: self.pos,
            reason,
        }
    }
    /// An array count whose items (each at least `min_item` bytes) fit in what is left.
    fn count(&mut self, field: &'static str, min_item: usize) -> Result<usize, WireError> {
        let n = self.i32(field)?;
        let n = usize::try_from(n).map_err(|_| self.invalid(field, "negative count"))?;
        if n.saturating_mul(min_item) > self.buf.len() - self.pos {
            return Err(self.invalid(field, "count larger than the payload can hold"));
        }
        Ok(n)
    }
    fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, WireError> {
        let n = self.i16(field)?;
        if n < 0 {
            return Ok(None);
        }
        let bytes = self.take(field, n as usize)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| self.invalid(field, "not UTF-8"))
    }
    fn string(&mut self, field: &'static str) -> Result<String, WireError> {
        self.nullable_string(field)?
            .ok_or_else(|| self.invalid(field, "null where a string is required"))
    }
    fn nullable_bytes(&mut self, field: &'static str) -> Result<Option<Vec<u8>>, WireError> {
        let n = self.i32(field)?;
        if n < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(field, n as usize)?.to_vec()))
    }
    fn partitions(&mut self, field: &'static str) -> Result<Vec<TopicPartition>, WireError> {
        let topics = self.count(field, 6)?;
        let mut out = Vec::new();
        for _ in 0..topics {
            let topic = self.string(field)?;
            let n = self.count(field, 4)?;
            for _ in 0..n {
                out.push(TopicPartition::new(topic.clone(), self.i32(field)?));
            }
        }
        Ok(out)
    }
    /// The version, clamped to the newest this module knows.
    fn version(&mut self) -> Result<i16, WireError> {
        let v = self.i16("version")?;
        if v < 0 {
            return Err(WireError::NegativeVersion(v));
        }
        Ok(v.min(CONSUMER_PROTOCOL_VERSION))
    }
}

impl Subscription {
    /// The version-3 bytes (Java writes version 3): topics sorted, owned partitions sorted and
    /// grouped per topic.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.i16(CONSUMER_PROTOCOL_VERSION);
        let topics: BTreeSet<&str> = self.topics.iter().map(String::as_str).collect();
        w.len(topics.len());
        for t in topics {
            w.string(t);
        }
        w.nullable_bytes(self.user_data.as_deref());
        w.partitions(&self.owned_partitions);
        w.i32(self.generation_id.unwrap_or(-1));
        w.nullable_string(self.rack_id.as_deref());
        w.0
    }

    /// Reads a subscription of any version (newer ones as version 3).
    ///
    /// # Errors
    /// [`WireError`] for a negative version or bytes that do not hold the fields.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader { buf: bytes, pos: 0 };
        let version = r.version()?;
        let n = r.count("topics", 2)?;
        let mut topics = Vec::with_capacity(n);
        for _ in 0..n {
            topics.push(r.string("topics")?);
        }
        let user_data = r.nullable_bytes("user_data")?;
        let mut subscription = Subscription {
            topics,
            user_data,
            ..Subscription::default()
        };
        if version >= 1 {
            subscription.owned_partitions = r.partitions("owned_partitions")?;
        }
        if version >= 2 {
            let generation = r.i32("generation_id")?;
            subscription.generation_id = (generation >= 0).then_some(generation);
        }
        if version >= 3 {
            subscription.rack_id = r.nullable_string("rack_id")?.filter(|r| !r.is_empty());
        }
        Ok(subscription)
    }
}

impl Assignment {
    /// The version-3 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.i16(CONSUMER_PROTOCOL_VERSION);
        w.partitions(&self.partitions);
        w.nullable_bytes(self.user_data.as_deref());
        w.0
    }

    /// Reads an assignment of any version; no bytes at all (what the broker hands a member
    /// the leader left out) is the empty assignment.
    ///
    /// # Errors
    /// [`WireError`] for a negative version or bytes that do not hold the fields.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        if bytes.is_empty() {
            return Ok(Self::default());
        }
        let mut r = Reader { buf: bytes, pos: 0 };
        r.version()?;
        let partitions = r.partitions("assigned_partitions")?;
        let user_data = r.nullable_bytes("user_data")?;
        Ok(Self {
            partitions,
            user_data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    /// The bytes Java's `ConsumerProtocol.serializeSubscription` writes for topics [a, b],
    /// user data [0,0,0,7], owned a-1, generation 7, rack "r1" (laid out by hand from the
    /// schema).
    #[test]
    fn subscription_v3_layout() {
        let s = Subscription {
            topics: vec!["b".into(), "a".into()],
            user_data: Some(vec![0, 0, 0, 7]),
            owned_partitions: vec![tp("a", 1)],
            generation_id: Some(7),
            rack_id: Some("r1".into()),
        };
        let expected: Vec<u8> = [
            &[0, 3][..],
            &[0, 0, 0, 2, 0, 1, b'a', 0, 1, b'b'],
            &[0, 0, 0, 4, 0, 0, 0, 7],
            &[0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 1, 0, 0, 0, 1],
            &[0, 0, 0, 7],
            &[0, 2, b'r', b'1'],
        ]
        .concat();
        assert_eq!(s.encode(), expected);
        let back = Subscription::decode(&expected).unwrap();
        assert_eq!(back.topics, vec!["a", "b"]);
        assert_eq!(back.generation_id, Some(7));
        assert_eq!(back.rack_id.as_deref(), Some("r1"));
    }

    #[test]
    fn old_versions_read_as_far_as_they_go() {
        // v0: topics and user data only.
        let v0 = [
            &[0, 0][..],
            &[0, 0, 0, 1, 0, 1, b't'],
            &[255, 255, 255, 255],
        ]
        .concat();
        let s = Subscription::decode(&v0).unwrap();
        assert_eq!(s.topics, vec!["t"]);
        assert_eq!((s.user_data, s.generation_id), (None, None));
        // v2 with generation −1 means none.
        let v2 = [
            &[0, 2][..],
            &[0, 0, 0, 0],
            &[255, 255, 255, 255],
            &[0, 0, 0, 0],
            &[255, 255, 255, 255],
        ]
        .concat();
        assert_eq!(Subscription::decode(&v2).unwrap().generation_id, None);
    }

    #[test]
    fn newer_versions_read_as_v3_and_ignore_the_tail() {
        let mut bytes = Subscription {
            topics: vec!["t".into()],
            ..Default::default()
        }
        .encode();
        bytes[1] = 9;
        bytes.extend_from_slice(&[1, 2, 3]);
        assert_eq!(Subscription::decode(&bytes).unwrap().topics, vec!["t"]);
        let mut a = Assignment {
            partitions: vec![tp("t", 0)],
            user_data: None,
        }
        .encode();
        a[1] = 4;
        a.push(0);
        assert_eq!(Assignment::decode(&a).unwrap().partitions, vec![tp("t", 0)]);
    }

    #[test]
    fn an_empty_rack_is_no_rack_and_empty_bytes_no_assignment() {
        let s = Subscription {
            rack_id: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(Subscription::decode(&s.encode()).unwrap().rack_id, None);
        assert_eq!(Assignment::decode(&[]).unwrap(), Assignment::default());
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(
            Subscription::decode(&[255, 255]),
            Err(WireError::NegativeVersion(-1))
        );
        assert!(matches!(
            Subscription::decode(&[0, 0, 127, 255, 255, 255]),
            Err(WireError::Invalid { .. })
        ));
        assert!(matches!(
            Assignment::decode(&[0, 3, 0, 0]),
            Err(WireError::Truncated { .. })
        ));
    }

    fn partitions() -> impl Strategy<Value = Vec<TopicPartition>> {
        proptest::collection::btree_set(("[a-c]{1,3}", 0..50i32), 0..20).prop_map(|s| {
            s.into_iter()
                .map(|(t, p)| TopicPartition::new(t, p))
                .collect()
        })
    }

    proptest! {
        #[test]
        fn subscriptions_round_trip(
            topics in proptest::collection::btree_set("[a-z.]{1,8}", 0..5),
            user_data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
            owned in partitions(),
            generation in proptest::option::of(0..i32::MAX),
            rack in proptest::option::of("[a-z]{1,4}"),
        ) {
            let s = Subscription {
                topics: topics.into_iter().collect(),
                user_data,
                owned_partitions: owned,
                generation_id: generation,
                rack_id: rack,
            };
            prop_assert_eq!(Subscription::decode(&s.encode()).unwrap(), s);
        }

        #[test]
        fn assignments_round_trip(partitions in partitions(), user_data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8))) {
            let a = Assignment { partitions, user_data };
            prop_assert_eq!(Assignment::decode(&a.encode()).unwrap(), a);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Subscription::decode(&bytes);
            let _ = Assignment::decode(&bytes);
        }
    }
}
