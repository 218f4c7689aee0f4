//! The compact encoding of a set of task ids (spec: `docs/protocol.md`, "Task sets").
//!
//! Ids that end in a canonical decimal number (`task-17`, `orders-3`) are grouped by their
//! prefix, and each group stores its sorted numbers as varint gaps: about one byte per task when
//! a worker holds every hundredth task of `task-0..task-99999`. Other ids are front-coded in
//! sorted order (bytes shared with the previous id, then the rest).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use kroupier_coordinator::codec::{MAX_STRING, Reader, Writer};

use super::DecodeError;

/// Splits `orders-17` into (`orders-`, 17); `None` unless the id ends in a canonical decimal
/// number (no leading zero) that fits in a `u64`.
fn split_number(id: &str) -> Option<(&str, u64)> {
    let digits = id.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let (prefix, number) = id.split_at(id.len() - digits);
    if number.len() > 1 && number.starts_with('0') {
        return None;
    }
    Some((prefix, number.parse().ok()?))
}

/// Writes a set of ids. `ids` may come in any order; duplicates are written once.
pub(crate) fn encode<'a>(w: &mut Writer, ids: impl IntoIterator<Item = &'a str>) {
    let mut numbered: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut others: Vec<&str> = Vec::new();
    for id in ids {
        match split_number(id) {
            Some((prefix, number)) => numbered.entry(prefix).or_default().push(number),
            None => others.push(id),
        }
    }
    w.uvarint(numbered.len() as u64);
    for (prefix, mut numbers) in numbered {
        numbers.sort_unstable();
        numbers.dedup();
        w.string(prefix);
        w.uvarint(numbers.len() as u64);
        let mut previous = 0;
        for (i, number) in numbers.into_iter().enumerate() {
            w.uvarint(if i == 0 { number } else { number - previous });
            previous = number;
        }
    }
    others.sort_unstable();
    others.dedup();
    w.uvarint(others.len() as u64);
    let mut previous: &[u8] = b"";
    for id in others {
        let id = id.as_bytes();
        let shared = previous.iter().zip(id).take_while(|(a, b)| a == b).count();
        w.uvarint(shared as u64);
        w.bytes(&id[shared..]);
        previous = id;
    }
}

/// Reads a set of ids, calling `each` once per id in encoding order.
pub(crate) fn decode(
    r: &mut Reader<'_>,
    mut each: impl FnMut(&Reader<'_>, String) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    walk(r, |r, id| each(r, id.to_owned()))
}

/// Reads a set of ids into a sorted set (an id listed twice is kept once). Collected first and
/// built at once: ids come in encoding order (`task-9` before `task-10`), and inserting 100,000
/// of them one by one cost a worker tens of milliseconds per assignment.
pub(crate) fn decode_set(r: &mut Reader<'_>) -> Result<BTreeSet<String>, DecodeError> {
    let mut ids = Vec::new();
    decode(r, |_, id| {
        ids.push(id);
        Ok(())
    })?;
    Ok(ids.into_iter().collect())
}

/// Reads past a set of ids, checking it as [`decode`] does, without keeping them.
pub(crate) fn skip(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    walk(r, |_, _| Ok(()))
}

/// Reads a set of ids, lending `each` one id at a time (built in one reused buffer: no
/// allocation per id).
fn walk(
    r: &mut Reader<'_>,
    mut each: impl FnMut(&Reader<'_>, &str) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut numbered = String::new();
    let groups = r.count("task_set.groups", 2)?;
    for _ in 0..groups {
        // Not charged itself: every id of the group is charged its whole length below, as a
        // front-coded id is, so a set costs the same however it is encoded.
        let prefix = std::str::from_utf8(r.bytes("task_set.prefix")?)
            .map_err(|_| r.invalid("task_set.prefix", "not UTF-8"))?
            .to_owned();
        if prefix.ends_with(|c: char| c.is_ascii_digit()) {
            return Err(r.invalid("task_set.prefix", "a numbered prefix ends in a digit"));
        }
        let count = r.count("task_set.numbers", 1)?;
        let mut number = 0u64;
        for i in 0..count {
            let value = r.uvarint("task_set.numbers")?;
            number = if i == 0 {
                value
            } else if value == 0 {
                return Err(r.invalid("task_set.numbers", "numbers are not increasing"));
            } else {
                number
                    .checked_add(value)
                    .ok_or_else(|| r.invalid("task_set.numbers", "number overflows u64"))?
            };
            // The id's exact length, as a front-coded id is charged: a set re-encoded the other
            // way costs the same.
            let digits = number.checked_ilog10().map_or(1, |d| d as usize + 1);
            r.charge("task_set.numbers", prefix.len() + digits)?;
            numbered.clear();
            numbered.push_str(&prefix);
            // Writing to a String cannot fail.
            let _ = write!(numbered, "{number}");
            each(r, &numbered)?;
        }
    }
    let others = r.count("task_set.others", 2)?;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..others {
        let shared = r.uvarint("task_set.shared")?;
        let shared = usize::try_from(shared)
            .ok()
            .filter(|&n| n <= previous.len())
            .ok_or_else(|| r.invalid("task_set.shared", "shares more than the previous id"))?;
        let suffix = r.bytes("task_set.suffix")?;
        if shared + suffix.len() > MAX_STRING {
            return Err(r.invalid("task_set.suffix", "task id longer than 32767 bytes"));
        }
        r.charge("task_set.suffix", shared + suffix.len())?;
        previous.truncate(shared);
        previous.extend_from_slice(suffix);
        let id = std::str::from_utf8(&previous)
            .map_err(|_| r.invalid("task_set.suffix", "task id is not UTF-8"))?;
        each(r, id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn round_trip(ids: &[&str]) -> (Vec<u8>, BTreeSet<String>) {
        let mut w = Writer::new();
        encode(&mut w, ids.iter().copied());
        let bytes = w.finish();
        let mut r = Reader::new(&bytes);
        let mut out = BTreeSet::new();
        decode(&mut r, |_, id| {
            out.insert(id);
            Ok(())
        })
        .unwrap();
        assert_eq!(r.remaining(), 0);
        (bytes, out)
    }

    #[test]
    fn splits_only_canonical_numbers() {
        assert_eq!(split_number("task-17"), Some(("task-", 17)));
        assert_eq!(split_number("0"), Some(("", 0)));
        assert_eq!(split_number("task-007"), None);
        assert_eq!(split_number("task"), None);
        assert_eq!(split_number("t99999999999999999999"), None);
    }

    #[test]
    fn mixed_ids_round_trip() {
        let ids = [
            "task-0",
            "task-10",
            "task-9",
            "orders",
            "orders-eu",
            "task-007",
            "é-1",
            "x1",
            "",
        ];
        let (_, out) = round_trip(&ids);
        let expected: BTreeSet<String> = ids.iter().map(|s| s.to_string()).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn strided_numbers_take_about_a_byte_each() {
        let ids: Vec<String> = (0..1000).map(|i| format!("task-{}", i * 100 + 7)).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (bytes, out) = round_trip(&refs);
        assert_eq!(out.len(), 1000);
        assert!(bytes.len() < 1020, "{} bytes", bytes.len());
    }
}
