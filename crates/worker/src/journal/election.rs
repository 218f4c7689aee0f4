//! The `leader_election` example's events, checked like the task journals: never two leaders
//! at once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check::{ParseError, complete_lines};

/// One line the `leader_election` example prints,
/// `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}`: a change of one
/// candidate's role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleChange {
    /// When the role changed, Unix ms ([`unix_ms`](super::unix_ms)).
    pub ts_ms: u64,
    /// The candidate's id.
    pub id: String,
    /// Its new role.
    pub event: Role,
    /// The generation the role holds in (`None` when a candidate lost before any).
    pub generation: Option<i32>,
}

/// A candidate's role, as the `event` field spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// It leads: it may act, while its fencing token is valid.
    Leader,
    /// Another candidate leads.
    Follower,
    /// It may no longer lead (session possibly gone, or it resigned): it stopped acting.
    Lost,
}

impl Role {
    /// The role named as in the `event` field (`leader`, `follower`, `lost`), for callers that
    /// hold the field as a string.
    pub fn from_name(name: &str) -> Option<Role> {
        match name {
            "leader" => Some(Role::Leader),
            "follower" => Some(Role::Follower),
            "lost" => Some(Role::Lost),
            _ => None,
        }
    }
}

/// Parses one candidate's output, in order, with the journal's rule: a final line without
/// `'\n'` is ignored (the process was killed mid-write), any other line must be an event.
///
/// # Errors
/// The first complete line that is not an event.
pub fn parse_events(text: &str) -> Result<Vec<RoleChange>, ParseError> {
    complete_lines(text)
        .map(|(line, text)| {
            serde_json::from_str(text).map_err(|_| ParseError {
                line,
                text: text.to_owned(),
                expected: "`{\"ts_ms\",\"id\",\"event\",\"generation\"}`",
            })
        })
        .collect()
}

/// A time one candidate led: from its `leader` event to its next `follower` or `lost` event,
/// or to the end of its process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reign {
    /// The candidate.
    pub id: String,
    /// The generation it was elected in.
    pub generation: Option<i32>,
    /// When it became leader, Unix ms.
    pub from_ms: u64,
    /// When it stopped leading, Unix ms.
    pub until_ms: u64,
}

/// Every candidate's reigns, from events in each candidate's print order (candidates may be
/// interleaved). `ends` holds when each candidate's process ended (killed or exited), which
/// ends a reign that no event ended: a killed leader prints nothing more. A reign still open
/// for a candidate without an end lasts forever. Sorted by start time.
pub fn reigns(events: &[RoleChange], ends: &BTreeMap<String, u64>) -> Vec<Reign> {
    let mut open: BTreeMap<&str, Reign> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match e.event {
            Role::Leader => {
                open.entry(&e.id).or_insert_with(|| Reign {
                    id: e.id.clone(),
                    generation: e.generation,
                    from_ms: e.ts_ms,
                    until_ms: u64::MAX,
                });
            }
            Role::Follower | Role::Lost => {
                if let Some(mut reign) = open.remove(e.id.as_str()) {
                    reign.until_ms = e.ts_ms;
                    out.push(reign);
                }
            }
        }
    }
    for (id, mut reign) in open {
        reign.until_ms = ends.get(id).copied().unwrap_or(u64::MAX);
        out.push(reign);
    }
    out.sort_by(|a, b| (a.from_ms, a.until_ms, &a.id).cmp(&(b.from_ms, b.until_ms, &b.id)));
    out
}

/// Every pair of reigns of different candidates that overlap: two leaders at once. A reign
/// that ends in the millisecond another begins is a handover, not an overlap (the old leader
/// reported `lost` before stopping). Empty when the election is sound.
pub fn two_leaders(reigns: &[Reign]) -> Vec<(Reign, Reign)> {
    let mut out = Vec::new();
    for (i, a) in reigns.iter().enumerate() {
        for b in &reigns[i + 1..] {
            if a.id != b.id && a.from_ms < b.until_ms && b.from_ms < a.until_ms {
                out.push((a.clone(), b.clone()));
            }
        }
    }
    out
}
