//! Walking per-task arrays a block at a time.
//!
//! At scale the per-task arrays hold long runs: a member's tasks sit next to each other in
//! `target` and `owner`, and a member's claim list is mostly consecutive indices. Comparing a
//! block of [`LANES`] values at once (a fold without early exit, which the compiler turns into
//! vector instructions) costs a few instructions where a task-by-task loop costs a branch per
//! task. Every helper falls back to single values where a block does not qualify, so the
//! results are those of the task-by-task loops.

use crate::TaskIndex;

/// Values compared at once.
pub(crate) const LANES: usize = 32;

/// Whether every value of `block` is `v`.
pub(crate) fn all_equal(block: &[u32], v: u32) -> bool {
    block.iter().fold(true, |same, &x| same & (x == v))
}

/// The end of the run of equal values that starts at `start` (`start < values.len()`).
pub(crate) fn run_end(values: &[u32], start: usize) -> usize {
    let v = values[start];
    let mut i = start + 1;
    // Short runs (tasks dealt in turn) end within a few values: look at those one by one.
    let few = values.len().min(start + 8);
    while i < few {
        if values[i] != v {
            return i;
        }
        i += 1;
    }
    while let Some(block) = values.get(i..i + LANES) {
        if !all_equal(block, v) {
            break;
        }
        i += LANES;
    }
    while i < values.len() && values[i] == v {
        i += 1;
    }
    i
}

/// The runs of equal values of `values`, in order: `(start, end, value)`.
pub(crate) fn runs(values: &[u32]) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= values.len() {
            return None;
        }
        let end = run_end(values, start);
        let run = (start, end, values[start]);
        start = end;
        Some(run)
    })
}

/// The first index of `block` when it lists consecutive indices (`first, first + 1, ..`).
pub(crate) fn consecutive(block: &[TaskIndex]) -> Option<usize> {
    let first = block.first()?.0;
    // Cheap necessary condition first (lists dealt in turn fail it).
    if block.last()?.0.wrapping_sub(first) as usize != block.len() - 1 {
        return None;
    }
    let ok = block
        .iter()
        .zip(0u32..)
        .fold(true, |ok, (t, j)| ok & (t.0 == first.wrapping_add(j)));
    ok.then_some(first as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn runs_are_the_runs_of_equal_values(
            spec in prop::collection::vec((0u32..4, 1usize..80), 0..12),
        ) {
            let values: Vec<u32> = spec
                .iter()
                .flat_map(|&(v, len)| std::iter::repeat_n(v, len))
                .collect();
            let mut start = 0;
            let expected: Vec<(usize, usize, u32)> = values
                .chunk_by(|a, b| a == b)
                .map(|run| {
                    start += run.len();
                    (start - run.len(), start, run[0])
                })
                .collect();
            prop_assert_eq!(runs(&values).collect::<Vec<_>>(), expected);
        }

        #[test]
        fn consecutive_blocks(first in 0u32..100, len in 1usize..40, bump in 1usize..40) {
            let mut block: Vec<TaskIndex> = (first..first + len as u32).map(TaskIndex).collect();
            prop_assert_eq!(consecutive(&block), Some(first as usize));
            if bump < len {
                block[bump].0 += 1;
                prop_assert_eq!(consecutive(&block), None);
            }
        }
    }
}
