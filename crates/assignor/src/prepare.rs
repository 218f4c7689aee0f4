//! Shared first step of every assignor: validate the input, resolve who owns what (double
//! claims by generation), and order the members for placement (racks interleaved).

use std::collections::HashMap;

use crate::error::Repr;
use crate::runs::{LANES, all_equal, consecutive};
use crate::{AssignmentInput, AssignorError, KindIndex, Kinds};

/// `owner[t]`: nobody claims the task.
pub(crate) const NONE: u32 = u32::MAX;
/// `owner[t]`: claimed by two members of the same generation, neither keeps it.
pub(crate) const DOUBLE_CLAIM: u32 = u32::MAX - 1;
/// `owner[t]`: claimed only by members that cannot run its kind.
pub(crate) const INELIGIBLE_CLAIM: u32 = u32::MAX - 2;
/// `target[t]`: left out of this round's placement (held back by the caller).
pub(crate) const EXCLUDED: u32 = u32::MAX - 3;
/// `target[t]`: no member can run its kind.
pub(crate) const NO_MEMBER: u32 = u32::MAX - 4;
/// `target[t]`: every eligible member is too full.
pub(crate) const NO_CAPACITY: u32 = u32::MAX - 5;

/// Values from here up are markers, never member indices (the checkers use a few more).
pub(crate) const FIRST_MARKER: u32 = u32::MAX - 15;

/// Whether `owner`/`target` value `v` names a member.
pub(crate) fn is_member(v: u32) -> bool {
    v < FIRST_MARKER
}

/// The validated input, with claims resolved.
pub(crate) struct Prepared {
    /// Per task: the member whose claim is valid, or `NONE`/`DOUBLE_CLAIM`/`INELIGIBLE_CLAIM`.
    pub owner: Vec<u32>,
    /// Per kind: the members that can run it, in placement order.
    pub eligible: Vec<Vec<u32>>,
    /// Whether any member has a capacity limit.
    pub capacity_limited: bool,
    /// Whether some claim was ever marked `DOUBLE_CLAIM` or `INELIGIBLE_CLAIM` (when false,
    /// `owner` holds no such marker).
    pub invalid_claims: bool,
}

/// Validates `input` and resolves claims.
pub(crate) fn prepare(input: &AssignmentInput<'_>) -> Result<Prepared, AssignorError> {
    prepare_with(input, true)
}

/// Validates `input` like [`prepare`] (the same errors, in the same order) but leaves `owner`
/// empty: for assignors blind to what members own.
pub(crate) fn prepare_unresolved(input: &AssignmentInput<'_>) -> Result<Prepared, AssignorError> {
    prepare_with(input, false)
}

fn prepare_with(input: &AssignmentInput<'_>, resolve: bool) -> Result<Prepared, AssignorError> {
    let members = input.members;
    let tasks = input.tasks;
    if u32::try_from(members.len()).map_or(true, |n| n >= FIRST_MARKER) {
        return Err(Repr::TooManyMembers.into());
    }
    for pair in members.windows(2) {
        if pair[0].id >= pair[1].id {
            return Err(Repr::MembersNotSorted {
                previous: pair[0].id.clone(),
                next: pair[1].id.clone(),
            }
            .into());
        }
    }
    let kind_count = tasks.kind_count();
    let mut can_run: Vec<Option<Vec<bool>>> = Vec::with_capacity(members.len());
    for member in members {
        match &member.kinds {
            Kinds::All => can_run.push(None),
            Kinds::Only(kinds) => {
                let mut table = vec![false; kind_count];
                for kind in kinds {
                    match table.get_mut(kind.get()) {
                        Some(slot) => *slot = true,
                        None => {
                            return Err(Repr::KindOutOfRange {
                                member: member.id.clone(),
                                index: kind.0,
                                kinds: kind_count,
                            }
                            .into());
                        }
                    }
                }
                can_run.push(Some(table));
            }
        }
    }

    if !resolve {
        for member in members {
            if let Some(task) = member.owned.iter().find(|t| t.get() >= tasks.len()) {
                return Err(Repr::TaskOutOfRange {
                    member: member.id.clone(),
                    index: task.0,
                    tasks: tasks.len(),
                }
                .into());
            }
        }
    }
    let mut owner = vec![NONE; if resolve { tasks.len() } else { 0 }];
    let mut invalid_claims = false;
    // Generation of the members in a same-generation double claim; rare, so a side map.
    let mut double_claims: HashMap<u32, i32> = HashMap::new();
    for (m, member) in members.iter().enumerate().filter(|_| resolve) {
        let m = m as u32;
        let table = &can_run[m as usize];
        let all_kinds = table.is_none();
        for block in member.owned.chunks(LANES) {
            // A block of consecutive free tasks claimed by a member that runs every kind
            // (the common case at scale): claimed at once.
            if all_kinds {
                let slots =
                    consecutive(block).and_then(|first| owner.get_mut(first..first + block.len()));
                if let Some(slots) = slots.filter(|slots| all_equal(slots, NONE)) {
                    slots.fill(m);
                    continue;
                }
            }
            for task in block {
                let t = task.get();
                let Some(slot) = owner.get_mut(t) else {
                    return Err(Repr::TaskOutOfRange {
                        member: member.id.clone(),
                        index: task.0,
                        tasks: tasks.len(),
                    }
                    .into());
                };
                // The common case first: a member that runs every kind claims a free task.
                if all_kinds && *slot == NONE {
                    *slot = m;
                    continue;
                }
                let eligible = table
                    .as_ref()
                    .is_none_or(|table| table[tasks.kind_of(t).get()]);
                let current = *slot;
                if !eligible {
                    if current == NONE {
                        *slot = INELIGIBLE_CLAIM;
                        invalid_claims = true;
                    }
                    continue;
                }
                *slot = match current {
                    NONE | INELIGIBLE_CLAIM => m,
                    DOUBLE_CLAIM => {
                        let generation = double_claims.get(&task.0).copied().unwrap_or(i32::MAX);
                        if member.generation > generation {
                            double_claims.remove(&task.0);
                            m
                        } else {
                            DOUBLE_CLAIM
                        }
                    }
                    o if o == m => m,
                    o => {
                        let theirs = members[o as usize].generation;
                        if member.generation > theirs {
                            m
                        } else if member.generation < theirs {
                            o
                        } else {
                            double_claims.insert(task.0, theirs);
                            invalid_claims = true;
                            DOUBLE_CLAIM
                        }
                    }
                };
            }
        }
    }

    let order = placement_order(input);
    let mut eligible = vec![Vec::new(); kind_count];
    for (k, list) in eligible.iter_mut().enumerate() {
        let kind = KindIndex(k as u16);
        if tasks.tasks_of_kind(kind).is_empty() {
            continue;
        }
        list.extend(
            order
                .iter()
                .copied()
                .filter(|&m| can_run[m as usize].as_ref().is_none_or(|t| t[k])),
        );
    }
    let capacity_limited = members.iter().any(|m| m.capacity.is_some());
    Ok(Prepared {
        owner,
        eligible,
        capacity_limited,
        invalid_claims,
    })
}

/// Members in the order new work is handed out: sorted by id, but with racks interleaved
/// (first member of each rack, then the second of each, ...), so a kind with fewer tasks than
/// members still spreads over racks. Members without a rack form one more group.
pub(crate) fn placement_order(input: &AssignmentInput<'_>) -> Vec<u32> {
    let members = input.members;
    if members.iter().all(|m| m.rack.is_none()) {
        return (0..members.len() as u32).collect();
    }
    let mut racks: Vec<(Option<&str>, Vec<u32>)> = Vec::new();
    let mut by_rack: HashMap<Option<&str>, usize> = HashMap::new();
    for (m, member) in members.iter().enumerate() {
        let rack = member.rack.as_deref();
        let slot = *by_rack.entry(rack).or_insert_with(|| {
            racks.push((rack, Vec::new()));
            racks.len() - 1
        });
        racks[slot].1.push(m as u32);
    }
    racks.sort_by(|a, b| a.0.cmp(&b.0));
    let mut order = Vec::with_capacity(members.len());
    let longest = racks.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for i in 0..longest {
        order.extend(racks.iter().filter_map(|r| r.1.get(i).copied()));
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindIndex, MemberInput, TaskIndex, TaskSet};

    #[test]
    fn double_claims_resolve_by_generation() {
        let tasks = TaskSet::uniform(3, "k");
        let members = vec![
            MemberInput::new("a").with_owned(5, vec![TaskIndex(0), TaskIndex(1)]),
            MemberInput::new("b").with_owned(5, vec![TaskIndex(1)]),
            MemberInput::new("c").with_owned(6, vec![TaskIndex(0), TaskIndex(1)]),
        ];
        let p = prepare(&AssignmentInput::new(&tasks, &members)).unwrap();
        // Task 0: a (gen 5) loses to c (gen 6). Task 1: a and b tie at 5, then c (6) wins.
        assert_eq!(p.owner, vec![2, 2, NONE]);
        let members = &members[..2];
        let p = prepare(&AssignmentInput::new(&tasks, members)).unwrap();
        assert_eq!(p.owner, vec![0, DOUBLE_CLAIM, NONE]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// Claims resolve the same whether a member lists them in ascending runs (claimed a
        /// block at a time) or in reverse (task by task): a member's claims do not depend on
        /// their order.
        #[test]
        fn block_claims_resolve_like_single_claims(
            specs in proptest::collection::vec(
                (0i32..3, proptest::collection::vec((0u32..150, 1u32..80), 0..4), 0u8..4),
                1..5,
            ),
        ) {
            let tasks = {
                let mut set = TaskSet::new();
                for t in 0..200 {
                    set.push(format!("t{t}"), if t % 50 == 7 { "b" } else { "a" }, 1).unwrap();
                }
                set
            };
            let members: Vec<MemberInput> = specs
                .iter()
                .enumerate()
                .map(|(i, (generation, ranges, kinds))| {
                    let owned: Vec<TaskIndex> = ranges
                        .iter()
                        .flat_map(|&(first, len)| (first..(first + len).min(200)).map(TaskIndex))
                        .collect();
                    let m = MemberInput::new(format!("m{i}")).with_owned(*generation, owned);
                    match kinds {
                        0 => m.with_kinds(Kinds::Only(vec![KindIndex(0)])),
                        _ => m,
                    }
                })
                .collect();
            let reversed: Vec<MemberInput> = members
                .iter()
                .map(|m| MemberInput {
                    owned: m.owned.iter().rev().copied().collect(),
                    ..m.clone()
                })
                .collect();
            let blocks = prepare(&AssignmentInput::new(&tasks, &members)).unwrap();
            let single = prepare(&AssignmentInput::new(&tasks, &reversed)).unwrap();
            proptest::prop_assert_eq!(blocks.owner, single.owner);
            proptest::prop_assert!(!single.invalid_claims || blocks.invalid_claims);
        }
    }

    #[test]
    fn rejects_unsorted_members_and_bad_indices() {
        let tasks = TaskSet::uniform(1, "k");
        let unsorted = vec![MemberInput::new("b"), MemberInput::new("a")];
        assert!(matches!(
            prepare(&AssignmentInput::new(&tasks, &unsorted)).map_err(|e| e.0),
            Err(Repr::MembersNotSorted { .. })
        ));
        let bad = vec![MemberInput::new("a").with_owned(1, vec![TaskIndex(7)])];
        assert!(matches!(
            prepare(&AssignmentInput::new(&tasks, &bad)).map_err(|e| e.0),
            Err(Repr::TaskOutOfRange { index: 7, .. })
        ));
    }

    #[test]
    fn racks_interleave() {
        let tasks = TaskSet::uniform(1, "k");
        let members = vec![
            MemberInput::new("a").with_rack("r1"),
            MemberInput::new("b").with_rack("r1"),
            MemberInput::new("c").with_rack("r2"),
            MemberInput::new("d").with_rack("r2"),
        ];
        let input = AssignmentInput::new(&tasks, &members);
        assert_eq!(placement_order(&input), vec![0, 2, 1, 3]);
    }
}
