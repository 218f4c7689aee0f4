//! The sticky placement engine shared by the `sticky` and `cooperative` assignors.
//!
//! Kinds are balanced one at a time over the members that can run them. Two paths:
//!
//! * **count** (every weight is 1, no capacity limits): exact quotas. With `n` eligible members
//!   and `T` tasks, every member gets `⌊T/n⌋` and `T mod n` of them one more. Members that
//!   already hold more than the floor keep the extra slots, so the number of tasks that change
//!   owner is the lower bound. `O(T + W log W)`, no allocation per task.
//! * **weight** (weights or capacities): keep what members hold while the kind stays balanced,
//!   else keep up to the water level; place the rest heaviest first on the least-loaded member
//!   with room; then move tasks from the most to the least loaded member until
//!   `max − min ≤ largest weight` among members with room for any task of the kind.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::prepare::{EXCLUDED, NO_CAPACITY, NO_MEMBER, NONE, Prepared, is_member};
use crate::runs::{run_end, runs};
use crate::{AssignmentInput, KindIndex};

/// How far placement may go to balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Balance each kind, taking tasks from members above their share.
    Balance,
    /// Keep every task with its owner (capacity permitting); only place the free ones, each
    /// on the least-loaded member with room. For rounds that must not revoke.
    Keep,
}

/// Fills `target` (per task: `EXCLUDED`, or the member that may keep it, or `NONE`) with each
/// task's member, or `NO_MEMBER` / `NO_CAPACITY`. `EXCLUDED` tasks stay `EXCLUDED`.
pub(crate) fn place(input: &AssignmentInput<'_>, p: &Prepared, target: &mut [u32], mode: Mode) {
    let tasks = input.tasks;
    let members = input.members.len();
    let mut total = vec![0u64; members];
    let by_count = !tasks.is_weighted() && !p.capacity_limited;
    let mut scratch = Scratch {
        count: vec![0; members],
        allow: vec![0; members],
        pool: Vec::new(),
    };
    for k in 0..tasks.kind_count() {
        let kind = KindIndex(k as u16);
        let kind_tasks = tasks.tasks_of_kind(kind);
        let eligible = &p.eligible[k];
        if eligible.is_empty() {
            for task in kind_tasks {
                let slot = &mut target[task.get()];
                if *slot != EXCLUDED {
                    *slot = NO_MEMBER;
                }
            }
            continue;
        }
        if by_count && mode == Mode::Balance {
            let kind = KindTasks {
                tasks: kind_tasks.iter().map(|t| t.0),
                // Index lists are sorted and distinct: one kind holding as many tasks as
                // there are holds them all, and the passes walk `target` itself.
                all: kind_tasks.len() == target.len(),
                eligible,
            };
            place_by_count(&kind, target, &mut total, &mut scratch);
        } else {
            let keep_all = mode == Mode::Keep;
            weighted::place_by_weight(input, kind_tasks, eligible, target, &mut total, keep_all);
        }
    }
}

/// The tasks of one kind and the members that can run it.
struct KindTasks<'a, I> {
    tasks: I,
    /// Whether `tasks` is every task, `0..target.len()`.
    all: bool,
    eligible: &'a [u32],
}

/// Buffers reused across kinds.
struct Scratch {
    count: Vec<u32>,
    allow: Vec<u32>,
    pool: Vec<u32>,
}

fn place_by_count<I: Iterator<Item = u32> + Clone>(
    kind: &KindTasks<'_, I>,
    target: &mut [u32],
    total: &mut [u64],
    s: &mut Scratch,
) {
    let eligible = kind.eligible;
    let placeable = count_held(kind, target, &mut s.count);
    let n = eligible.len();
    let floor = (placeable / n) as u32;
    let mut extra = placeable % n;
    // Members that hold more than the floor keep one extra task each, while extras last.
    for &m in eligible {
        let m = m as usize;
        s.allow[m] = if s.count[m] > floor && extra > 0 {
            extra -= 1;
            floor + 1
        } else {
            floor
        };
    }
    if extra > 0 {
        // The remaining extras go to the members with the least work from earlier kinds
        // (placement order breaks ties), which keeps totals even across kinds.
        let mut candidates: Vec<u32> = eligible
            .iter()
            .copied()
            .filter(|&m| s.allow[m as usize] == floor)
            .collect();
        candidates.sort_by_key(|&m| total[m as usize]);
        for &m in candidates.iter().take(extra) {
            s.allow[m as usize] += 1;
        }
    }
    // Nothing to take or hand out when every placeable task is held within its holder's quota.
    let held: usize = eligible.iter().map(|&m| s.count[m as usize] as usize).sum();
    let within = eligible
        .iter()
        .all(|&m| s.count[m as usize] <= s.allow[m as usize]);
    if held == placeable && within {
        for &m in eligible {
            let m = m as usize;
            total[m] += u64::from(s.allow[m]);
            s.count[m] = 0;
        }
        return;
    }
    for &m in eligible {
        s.count[m as usize] = 0;
    }
    s.pool.clear();
    keep_within_quota(kind, target, s);
    // Each member takes the next tasks of the pool up to its quota.
    let mut rest = &s.pool[..];
    for &m in eligible {
        let mu = m as usize;
        let wanted = s.allow[mu].saturating_sub(s.count[mu]) as usize;
        let (taken, after) = rest.split_at(wanted.min(rest.len()));
        for &t in taken {
            target[t as usize] = m;
        }
        rest = after;
        total[mu] += u64::from(s.allow[mu]);
        s.count[mu] = 0;
    }
}

/// The kind's tasks not `EXCLUDED`; adds to `count[m]` the number member `m` holds.
fn count_held<I: Iterator<Item = u32> + Clone>(
    kind: &KindTasks<'_, I>,
    target: &[u32],
    count: &mut [u32],
) -> usize {
    let mut placeable = 0usize;
    if kind.all {
        // Run by run: holders' tasks come in long runs, and one addition per run avoids a
        // chain of increments on the same counter.
        for (start, end, v) in runs(target) {
            if v == EXCLUDED {
                continue;
            }
            placeable += end - start;
            if is_member(v) {
                count[v as usize] += (end - start) as u32;
            }
        }
        return placeable;
    }
    for t in kind.tasks.clone() {
        let v = target[t as usize];
        if v == EXCLUDED {
            continue;
        }
        placeable += 1;
        if is_member(v) {
            count[v as usize] += 1;
        }
    }
    placeable
}

/// Keeps, in index order, each holder's tasks up to its `allow` (counted in `count`, which
/// starts at 0); sets the others (and the free ones) to `NONE` and pools them in index order.
fn keep_within_quota<I: Iterator<Item = u32> + Clone>(
    kind: &KindTasks<'_, I>,
    target: &mut [u32],
    s: &mut Scratch,
) {
    if kind.all {
        let mut start = 0usize;
        while start < target.len() {
            let v = target[start];
            let end = run_end(target, start);
            if v != EXCLUDED {
                let mut keep = 0usize;
                if is_member(v) {
                    let m = v as usize;
                    let room = s.allow[m].saturating_sub(s.count[m]) as usize;
                    keep = room.min(end - start);
                    s.count[m] += keep as u32;
                }
                target[start + keep..end].fill(NONE);
                s.pool.extend((start + keep) as u32..end as u32);
            }
            start = end;
        }
        return;
    }
    for t in kind.tasks.clone() {
        let v = target[t as usize];
        if v == EXCLUDED {
            continue;
        }
        if is_member(v) && s.count[v as usize] < s.allow[v as usize] {
            s.count[v as usize] += 1;
        } else {
            target[t as usize] = NONE;
            s.pool.push(t);
        }
    }
}

mod weighted {
    //! The weight path: keep, place heaviest first on the least loaded, repair.

    use super::*;
    use crate::TaskIndex;

    /// Loads of one kind while it is being placed.
    struct Loads<'a, 'i> {
        input: &'a AssignmentInput<'i>,
        /// Weight of this kind per member.
        load: Vec<u64>,
        /// Weight of earlier kinds per member.
        total: &'a [u64],
        /// Tasks of this kind per member: kept first, then placed.
        held: Vec<Vec<u32>>,
    }

    impl Loads<'_, '_> {
        fn room(&self, m: usize) -> u64 {
            let cap = self.input.members[m].capacity.unwrap_or(u64::MAX);
            cap.saturating_sub(self.total[m] + self.load[m])
        }

        fn take(&mut self, m: usize, t: u32) {
            self.load[m] += u64::from(self.input.tasks.weight_of(t as usize));
            self.held[m].push(t);
        }
    }

    pub(super) fn place_by_weight(
        input: &AssignmentInput<'_>,
        kind_tasks: &[TaskIndex],
        eligible: &[u32],
        target: &mut [u32],
        total: &mut [u64],
        keep_all: bool,
    ) {
        let tasks = input.tasks;
        let keep: Vec<u32> = kind_tasks.iter().map(|t| target[t.get()]).collect();
        let mut min_weight = u64::MAX;
        let mut kind_weight = 0u64;
        let mut max_weight = 0u64;
        for (i, t) in kind_tasks.iter().enumerate() {
            if keep[i] != EXCLUDED {
                let w = u64::from(tasks.weight_of(t.get()));
                min_weight = min_weight.min(w);
                max_weight = max_weight.max(w);
                kind_weight += w;
            }
        }
        if kind_weight == 0 {
            return;
        }
        let members = input.members.len();
        let mut loads = Loads {
            input,
            load: vec![0; members],
            total,
            held: vec![Vec::new(); members],
        };
        // First try: keep everything that fits; accept if that is balanced.
        fill(
            &mut loads,
            kind_tasks,
            &keep,
            u64::MAX,
            eligible,
            target,
            min_weight,
        );
        if !keep_all && !balanced(&loads, eligible, max_weight) {
            for &m in eligible {
                loads.load[m as usize] = 0;
                loads.held[m as usize].clear();
            }
            let level = water_level(&loads, eligible, kind_weight);
            fill(
                &mut loads, kind_tasks, &keep, level, eligible, target, min_weight,
            );
            repair(&mut loads, eligible, max_weight, target);
            // Repair frees room on the most loaded members: retry what did not fit.
            loop {
                let left: Vec<u32> = kind_tasks
                    .iter()
                    .map(|t| t.0)
                    .filter(|&t| target[t as usize] == NO_CAPACITY)
                    .collect();
                let before = left.len();
                if before == 0 {
                    break;
                }
                greedy(&mut loads, left, eligible, target, min_weight);
                let after = kind_tasks
                    .iter()
                    .filter(|t| target[t.get()] == NO_CAPACITY)
                    .count();
                if after == before {
                    break;
                }
                repair(&mut loads, eligible, max_weight, target);
            }
        }
        let added: Vec<u64> = eligible.iter().map(|&m| loads.load[m as usize]).collect();
        for (&m, add) in eligible.iter().zip(added) {
            total[m as usize] += add;
        }
    }

    /// Keeps owned tasks while the member's kind load stays ≤ `limit` and within capacity,
    /// then places the rest, heaviest first, on the least-loaded member with room.
    fn fill(
        loads: &mut Loads<'_, '_>,
        kind_tasks: &[TaskIndex],
        keep: &[u32],
        limit: u64,
        eligible: &[u32],
        target: &mut [u32],
        min_weight: u64,
    ) {
        let tasks = loads.input.tasks;
        let mut pool = Vec::new();
        for (i, task) in kind_tasks.iter().enumerate() {
            let (t, v) = (task.get(), keep[i]);
            if v == EXCLUDED {
                continue;
            }
            let w = u64::from(tasks.weight_of(t));
            if is_member(v) {
                let m = v as usize;
                if loads.load[m] + w <= limit && loads.room(m) >= w {
                    loads.take(m, task.0);
                    target[t] = v;
                    continue;
                }
            }
            target[t] = NONE;
            pool.push(task.0);
        }
        greedy(loads, pool, eligible, target, min_weight);
    }

    /// Places `pool`, heaviest first, each on the least-loaded member with room for it
    /// (`NO_CAPACITY` if none has). Once a weight fits nowhere, heavier or equal ones are not
    /// tried again: rooms only shrink.
    fn greedy(
        loads: &mut Loads<'_, '_>,
        mut pool: Vec<u32>,
        eligible: &[u32],
        target: &mut [u32],
        min_weight: u64,
    ) {
        let tasks = loads.input.tasks;
        pool.sort_by_key(|&t| (Reverse(tasks.weight_of(t as usize)), t));
        let mut heap: BinaryHeap<Reverse<(u64, u64, usize, u32)>> = BinaryHeap::new();
        for (pos, &m) in eligible.iter().enumerate() {
            if loads.room(m as usize) >= min_weight {
                let mu = m as usize;
                heap.push(Reverse((loads.load[mu], loads.total[mu], pos, m)));
            }
        }
        let mut aside = Vec::new();
        let mut fits_nowhere = u64::MAX;
        for t in pool {
            let w = u64::from(tasks.weight_of(t as usize));
            target[t as usize] = NO_CAPACITY;
            if w >= fits_nowhere {
                continue;
            }
            fits_nowhere = w;
            while let Some(Reverse(entry)) = heap.pop() {
                let m = entry.3 as usize;
                let room = loads.room(m);
                if room < w {
                    aside.push(entry);
                    continue;
                }
                loads.take(m, t);
                target[t as usize] = entry.3;
                fits_nowhere = u64::MAX;
                if room - w >= min_weight {
                    heap.push(Reverse((loads.load[m], loads.total[m], entry.2, entry.3)));
                }
                break;
            }
            heap.extend(aside.drain(..).map(Reverse));
        }
    }

    /// The smallest per-member level `L` with Σ min(room, L) ≥ the kind's weight.
    fn water_level(loads: &Loads<'_, '_>, eligible: &[u32], kind_weight: u64) -> u64 {
        let rooms: Vec<u64> = eligible.iter().map(|&m| loads.room(m as usize)).collect();
        let (mut lo, mut hi) = (0u64, kind_weight);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let filled: u64 = rooms
                .iter()
                .map(|&r| r.min(mid))
                .fold(0, u64::saturating_add);
            if filled >= kind_weight {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// The most loaded member and the least loaded one with room for any task of the kind.
    fn extremes(
        loads: &Loads<'_, '_>,
        eligible: &[u32],
        max_weight: u64,
    ) -> Option<(usize, usize)> {
        let mut most: Option<usize> = None;
        let mut least: Option<usize> = None;
        for &m in eligible {
            let m = m as usize;
            if most.is_none_or(|x| loads.load[m] > loads.load[x]) {
                most = Some(m);
            }
            if loads.room(m) >= max_weight && least.is_none_or(|y| loads.load[m] < loads.load[y]) {
                least = Some(m);
            }
        }
        Some((most?, least?))
    }

    fn balanced(loads: &Loads<'_, '_>, eligible: &[u32], max_weight: u64) -> bool {
        extremes(loads, eligible, max_weight)
            .is_none_or(|(x, y)| loads.load[x] <= loads.load[y] + max_weight)
    }

    /// Moves tasks from the most to the least loaded member until balanced. Each move lowers
    /// the sum of squared loads, so this ends; the cap is a guard.
    fn repair(loads: &mut Loads<'_, '_>, eligible: &[u32], max_weight: u64, target: &mut [u32]) {
        let tasks = loads.input.tasks;
        let guard = loads.held.iter().map(Vec::len).sum::<usize>() * 4 + 16;
        for _ in 0..guard {
            let Some((x, y)) = extremes(loads, eligible, max_weight) else {
                return;
            };
            if loads.load[x] <= loads.load[y] + max_weight {
                return;
            }
            let Some(t) = loads.held[x].pop() else {
                return;
            };
            let w = u64::from(tasks.weight_of(t as usize));
            loads.load[x] -= w;
            loads.take(y, t);
            target[t as usize] = y as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::prepare;
    use crate::{MemberInput, TaskIndex, TaskSet};

    fn targets(tasks: &TaskSet, members: &[MemberInput]) -> Vec<u32> {
        let input = AssignmentInput::new(tasks, members);
        let p = prepare(&input).unwrap();
        let mut target: Vec<u32> = p
            .owner
            .iter()
            .map(|&o| if is_member(o) { o } else { NONE })
            .collect();
        place(&input, &p, &mut target, Mode::Balance);
        target
    }

    #[test]
    fn count_path_keeps_extras_with_owners() {
        let tasks = TaskSet::uniform(7, "k");
        let owned = |r: std::ops::Range<u32>| r.map(TaskIndex).collect::<Vec<_>>();
        let members = vec![
            MemberInput::new("a").with_owned(1, owned(0..4)),
            MemberInput::new("b").with_owned(1, owned(4..7)),
            MemberInput::new("c"),
        ];
        // floor 2, one extra: a keeps 3 (it held more), b keeps 2, c gets 1 from a + 1 from b.
        assert_eq!(targets(&tasks, &members), vec![0, 0, 0, 2, 1, 1, 2]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The run-by-run passes over a kind holding every task place exactly as the
        /// task-by-task passes do.
        #[test]
        fn runs_place_like_single_tasks(
            runs in proptest::collection::vec((0u32..9, 1usize..8), 0..20),
            eligible in proptest::sample::subsequence(vec![0u32, 1, 2, 3, 4], 1..=5),
            earlier in proptest::collection::vec(0u64..4, 5),
        ) {
            // Runs of 0..5: members; 5, 6: free; 7, 8: excluded.
            let mut target: Vec<u32> = runs
                .iter()
                .flat_map(|&(v, len)| std::iter::repeat_n(v, len))
                .map(|v| match v {
                    0..5 if eligible.contains(&v) => v,
                    0..7 => NONE,
                    _ => EXCLUDED,
                })
                .collect();
            let mut reference = target.clone();
            let n = target.len() as u32;
            let run = |all: bool, target: &mut [u32]| {
                let mut total = earlier.clone();
                let mut s = Scratch { count: vec![0; 5], allow: vec![0; 5], pool: Vec::new() };
                let kind = KindTasks { tasks: 0..n, all, eligible: &eligible };
                place_by_count(&kind, target, &mut total, &mut s);
                total
            };
            let totals = run(true, &mut target);
            proptest::prop_assert_eq!(totals, run(false, &mut reference));
            proptest::prop_assert_eq!(target, reference);
        }
    }

    #[test]
    fn weight_path_balances_by_weight_within_capacity() {
        let mut tasks = TaskSet::new();
        for (i, w) in [5, 1, 1, 1, 1, 1].iter().enumerate() {
            tasks.push(format!("t{i}"), "k", *w).unwrap();
        }
        let members = vec![
            MemberInput::new("a").with_capacity(5),
            MemberInput::new("b"),
        ];
        let target = targets(&tasks, &members);
        let load = |m: u32| -> u32 {
            (0..6)
                .filter(|&t| target[t] == m)
                .map(|t| tasks.weight(TaskIndex(t as u32)).unwrap())
                .sum()
        };
        assert_eq!(load(0) + load(1), 10);
        assert!(load(0) <= 5);
        assert!(load(0).abs_diff(load(1)) <= 5);
    }
}
