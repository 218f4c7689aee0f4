//! The topic catalogue: which topics exist, with their ids and configs. With a data directory it
//! is one file, `topics.catalogue`, of framed entries (see [`frame`](super::frame)), one per
//! topic created, each written before CreateTopics is answered.
//!
//! Entry payload, all integers big-endian:
//!
//! ```text
//! format u8 (1) | kind u8 (1 = topic created) | topic id [16] | name: u16 length, UTF-8
//! | config count u32 | per config: key (u16 length, UTF-8), value (i32 length or -1 for null, UTF-8)
//! ```

use std::collections::BTreeMap;

use bytes::{Buf, BufMut};
use uuid::Uuid;

/// The file name of the catalogue inside the data directory.
pub(crate) const FILE_NAME: &str = "topics.catalogue";

const FORMAT: u8 = 1;
const TOPIC_CREATED: u8 = 1;

/// One topic as the catalogue keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicEntry {
    /// The topic's name.
    pub(crate) name: String,
    /// Its id (Metadata v10+, Fetch v13+, Produce v13).
    pub(crate) id: Uuid,
    /// The configs it was created with, as given (values unchecked except those the store uses).
    pub(crate) configs: BTreeMap<String, Option<String>>,
}

impl TopicEntry {
    /// The entry as a catalogue payload.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u8(FORMAT);
        out.put_u8(TOPIC_CREATED);
        out.put_slice(self.id.as_bytes());
        put_short_str(&mut out, &self.name);
        out.put_u32(u32::try_from(self.configs.len()).unwrap_or(u32::MAX));
        for (key, value) in &self.configs {
            put_short_str(&mut out, key);
            match value {
                None => out.put_i32(-1),
                Some(v) => {
                    out.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
                    out.put_slice(v.as_bytes());
                }
            }
        }
        out
    }

    /// An entry read back.
    ///
    /// # Errors
    /// Why the payload is not an entry this version wrote.
    pub(crate) fn decode(mut payload: &[u8]) -> Result<Self, String> {
        let buf = &mut payload;
        let format = take_u8(buf)?;
        if format != FORMAT {
            return Err(format!(
                "catalogue entry format {format}, expected {FORMAT}"
            ));
        }
        let kind = take_u8(buf)?;
        if kind != TOPIC_CREATED {
            return Err(format!("unknown catalogue entry kind {kind}"));
        }
        let id = Uuid::from_bytes(take(buf, 16)?.try_into().map_err(|_| "short id")?);
        let name = take_short_str(buf)?;
        if buf.remaining() < 4 {
            return Err("truncated config count".to_string());
        }
        let count = buf.get_u32();
        let mut configs = BTreeMap::new();
        for _ in 0..count {
            let key = take_short_str(buf)?;
            if buf.remaining() < 4 {
                return Err("truncated config value".to_string());
            }
            let value = match buf.get_i32() {
                -1 => None,
                len => Some(take_str(
                    buf,
                    usize::try_from(len).map_err(|_| "bad length")?,
                )?),
            };
            configs.insert(key, value);
        }
        if buf.has_remaining() {
            return Err(format!("{} bytes after the entry", buf.remaining()));
        }
        Ok(Self { name, id, configs })
    }
}

fn put_short_str(out: &mut Vec<u8>, s: &str) {
    // Names and keys are short (topic names at most 249 bytes); longer ones are cut, which
    // CreateTopics' validation rules out before anything is written.
    let len = s.len().min(usize::from(u16::MAX));
    out.put_u16(u16::try_from(len).unwrap_or(u16::MAX));
    out.put_slice(&s.as_bytes()[..len]);
}

fn take_u8(buf: &mut &[u8]) -> Result<u8, String> {
    if buf.has_remaining() {
        Ok(buf.get_u8())
    } else {
        Err("truncated entry".to_string())
    }
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if buf.len() < n {
        return Err("truncated entry".to_string());
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

fn take_str(buf: &mut &[u8], n: usize) -> Result<String, String> {
    let bytes = take(buf, n)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| "a name that is not UTF-8".to_string())
}

fn take_short_str(buf: &mut &[u8]) -> Result<String, String> {
    if buf.remaining() < 2 {
        return Err("truncated entry".to_string());
    }
    let n = usize::from(buf.get_u16());
    take_str(buf, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_damage_is_an_error() {
        let entry = TopicEntry {
            name: "kroupier-tasks-demo".to_string(),
            id: Uuid::from_u128(0x1234),
            configs: BTreeMap::from([
                ("cleanup.policy".to_string(), Some("compact".to_string())),
                ("retention.ms".to_string(), None),
            ]),
        };
        let bytes = entry.encode();
        assert_eq!(TopicEntry::decode(&bytes), Ok(entry));
        for cut in 0..bytes.len() {
            assert!(TopicEntry::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TopicEntry::decode(&longer).is_err());
    }
}
