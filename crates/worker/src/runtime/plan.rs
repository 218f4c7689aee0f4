//! What an assignment asks of the supervisor: which held tasks stop, which keep running, which
//! start. Computed by walking the held tasks and the assignment's sets side by side, all sorted
//! by id, so its cost is one comparison per task rather than a lookup per task in the other
//! sets.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A task of the new target set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Run<'a> {
    /// Held here under this membership: it keeps running (the supervisor's copy of its id).
    Kept(Arc<str>),
    /// Held here under an earlier membership: stopped, then started again under the new token.
    Regranted(Arc<str>),
    /// Not held here: it starts.
    New(&'a String),
}

/// The stops and the target set of one assignment.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan<'a> {
    /// Held tasks to stop: revoked, missing from the target set, or granted to an earlier
    /// membership. Sorted.
    pub(crate) stop: Vec<Arc<str>>,
    /// The target set (the tasks to run less the revoked ones), sorted.
    pub(crate) run: Vec<Run<'a>>,
}

impl<'a> Plan<'a> {
    /// The plan for `held` (sorted by id, each with whether it was granted to another member
    /// id) given the tasks to `run` and to `revoke`.
    pub(crate) fn new(
        held: Vec<(Arc<str>, bool)>,
        run: &'a BTreeSet<String>,
        revoke: &'a BTreeSet<String>,
    ) -> Self {
        let mut plan = Plan {
            run: Vec::with_capacity(run.len()),
            ..Plan::default()
        };
        // The ids below are visited in increasing order, so the revoked set is walked once.
        let mut revoked = revoke.iter().map(String::as_str).peekable();
        let mut is_revoked = |id: &str| {
            while revoked.next_if(|r| *r < id).is_some() {}
            revoked.peek() == Some(&id)
        };
        let mut held = held.into_iter().peekable();
        let mut run = run.iter().peekable();
        loop {
            let order = match (held.peek(), run.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((held, _)), Some(run)) => (**held).cmp(run.as_str()),
            };
            match order {
                Ordering::Less => {
                    if let Some((id, _)) = held.next() {
                        plan.stop.push(id);
                    }
                }
                Ordering::Greater => {
                    let Some(id) = run.next() else { break };
                    if !is_revoked(id) {
                        plan.run.push(Run::New(id));
                    }
                }
                Ordering::Equal => {
                    let (Some((id, stale)), Some(wanted)) = (held.next(), run.next()) else {
                        break;
                    };
                    if is_revoked(wanted) {
                        plan.stop.push(id);
                    } else if stale {
                        plan.stop.push(id.clone());
                        plan.run.push(Run::Regranted(id));
                    } else {
                        plan.run.push(Run::Kept(id));
                    }
                }
            }
        }
        plan
    }
}

/// The tasks of `run` not in `before` (started) and of `before` not in `run` (stopped), both
/// sorted by id, found in one walk over the two sorted lists.
pub(crate) fn started_and_stopped(
    run: &BTreeSet<String>,
    before: &[Arc<str>],
) -> (Vec<String>, Vec<String>) {
    let (mut started, mut stopped) = (Vec::new(), Vec::new());
    let mut before = before.iter().peekable();
    for id in run {
        while let Some(gone) = before.next_if(|held| ***held < **id) {
            stopped.push(gone.to_string());
        }
        if before.next_if(|held| ***held == **id).is_none() {
            started.push(id.clone());
        }
    }
    stopped.extend(before.map(|gone| gone.to_string()));
    (started, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    fn held(ids: &[(&str, bool)]) -> Vec<(Arc<str>, bool)> {
        ids.iter()
            .map(|(id, stale)| (Arc::from(*id), *stale))
            .collect()
    }

    #[test]
    fn held_tasks_missing_revoked_or_stale_stop_and_the_rest_keep_running() {
        let run = set(&["a", "b", "c", "e", "f"]);
        let revoke = set(&["b", "d", "f"]);
        let plan = Plan::new(
            held(&[
                ("a", false),
                ("b", false),
                ("c", true),
                ("d", false),
                ("x", false),
            ]),
            &run,
            &revoke,
        );
        let stop: Vec<&str> = plan.stop.iter().map(|id| &**id).collect();
        assert_eq!(stop, ["b", "c", "d", "x"]);
        let e = "e".to_owned();
        assert_eq!(
            plan.run,
            [
                Run::Kept("a".into()),
                Run::Regranted("c".into()),
                Run::New(&e),
            ]
        );
    }

    #[test]
    fn started_and_stopped_are_the_two_differences() {
        let before: Vec<Arc<str>> = ["a", "c", "d", "z"].into_iter().map(Arc::from).collect();
        let (started, stopped) = started_and_stopped(&set(&["b", "c", "e"]), &before);
        assert_eq!(started, ["b", "e"]);
        assert_eq!(stopped, ["a", "d", "z"]);
    }

    proptest! {
        #[test]
        fn started_and_stopped_match_set_differences(
            run in proptest::collection::btree_set("[a-e]{1,2}", 0..20),
            before in proptest::collection::btree_set("[a-e]{1,2}", 0..20),
        ) {
            let shared: Vec<Arc<str>> = before.iter().map(|id| Arc::from(id.as_str())).collect();
            let (started, stopped) = started_and_stopped(&run, &shared);
            prop_assert_eq!(started, run.difference(&before).cloned().collect::<Vec<_>>());
            prop_assert_eq!(stopped, before.difference(&run).cloned().collect::<Vec<_>>());
        }

        /// The walk decides what lookups in each set would: a held task stops when it is
        /// revoked, not to run, or stale; a task to run that is not revoked is in the target
        /// set, kept, regranted or new as it is held here, held under another member id, or not
        /// held.
        #[test]
        fn the_walk_matches_a_lookup_per_task(
            held_ids in proptest::collection::btree_map("[a-e]{1,2}", any::<bool>(), 0..20),
            run in proptest::collection::btree_set("[a-e]{1,2}", 0..20),
            revoke in proptest::collection::btree_set("[a-e]{1,2}", 0..10),
        ) {
            let held: Vec<(Arc<str>, bool)> =
                held_ids.iter().map(|(id, stale)| (Arc::from(id.as_str()), *stale)).collect();
            let plan = Plan::new(held, &run, &revoke);
            let stop: Vec<String> = plan.stop.iter().map(|id| id.to_string()).collect();
            let expected_stop: Vec<String> = held_ids
                .iter()
                .filter(|(id, stale)| revoke.contains(*id) || !run.contains(*id) || **stale)
                .map(|(id, _)| id.clone())
                .collect();
            prop_assert_eq!(stop, expected_stop);
            let expected_run: Vec<Run> = run
                .iter()
                .filter(|id| !revoke.contains(*id))
                .map(|id| match held_ids.get(id) {
                    Some(false) => Run::Kept(id.as_str().into()),
                    Some(true) => Run::Regranted(id.as_str().into()),
                    None => Run::New(id),
                })
                .collect();
            prop_assert_eq!(plan.run, expected_run);
        }
    }
}
