//! The pure model behind `kroupier watch`: who owns each task, and each move (a task that
//! changed owner) with how long the task was unowned. No IO and no clock reads: every input
//! carries its `now`.
//!
//! A task is *unowned* from the first snapshot that shows it on nobody (or from
//! [`Tracker::mark_lost`], when the caller knows a worker died) until a snapshot shows it on a
//! worker again. DescribeGroups shows no assignments while a group rebalances, so every task
//! looks unowned for the length of a rebalance; a task that comes back to the worker that had it
//! is not a move.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::describe::GroupView;

/// Each task's owner (a worker name) in one snapshot; a task on several workers lists each.
pub(crate) type Owners = BTreeMap<String, Vec<String>>;

/// The owners a view shows: every task of every member whose tasks are known.
pub(crate) fn owners(view: &GroupView) -> Owners {
    let mut owners = Owners::new();
    for member in &view.members {
        for task in member.tasks.iter().flatten() {
            owners
                .entry(task.clone())
                .or_default()
                .push(member.name().to_owned());
        }
    }
    owners
}

/// A task that changed owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    /// The task.
    pub task: String,
    /// Its previous owner.
    pub from: String,
    /// Its new owner.
    pub to: String,
    /// When the new owner was first seen.
    pub at: Instant,
    /// How long the task had no owner.
    pub unowned_for: Duration,
}

/// A task last seen on `owner`, unowned since `since` (or still owned, when `since` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holding {
    owner: String,
    since: Option<Instant>,
}

/// Diffs successive snapshots into moves.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tracker {
    tasks: BTreeMap<String, Holding>,
    lost: BTreeMap<String, Instant>,
    moves: Vec<Move>,
}

impl Tracker {
    /// An empty tracker.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Takes the snapshot seen at `now`; returns the moves it shows (also kept in
    /// [`moves`](Self::moves)). A task seen on several workers at once counts as owned by the
    /// first (in name order).
    pub(crate) fn observe(&mut self, now: Instant, owners: &Owners) -> Vec<Move> {
        // Workers known to be dead own nothing, whatever the coordinator still shows.
        let owners: Owners = owners
            .iter()
            .filter_map(|(task, names)| {
                let live: Vec<String> = names
                    .iter()
                    .filter(|n| !self.lost.contains_key(n.as_str()))
                    .cloned()
                    .collect();
                (!live.is_empty()).then(|| (task.clone(), live))
            })
            .collect();
        let owners = &owners;
        let mut moves = Vec::new();
        for (task, holding) in &mut self.tasks {
            if holding.since.is_none() && !owners.contains_key(task) {
                holding.since = Some(now);
            }
        }
        for (task, names) in owners {
            let Some(owner) = names.iter().min() else {
                continue;
            };
            match self.tasks.get_mut(task) {
                None => {
                    self.tasks.insert(
                        task.clone(),
                        Holding {
                            owner: owner.clone(),
                            since: None,
                        },
                    );
                }
                Some(holding) => {
                    if &holding.owner != owner {
                        moves.push(Move {
                            task: task.clone(),
                            from: holding.owner.clone(),
                            to: owner.clone(),
                            at: now,
                            unowned_for: holding.since.map_or(Duration::ZERO, |since| {
                                now.saturating_duration_since(since)
                            }),
                        });
                        holding.owner = owner.clone();
                    }
                    holding.since = None;
                }
            }
        }
        self.moves.extend(moves.iter().cloned());
        moves
    }

    /// The caller knows `worker` died at `at`: its tasks are unowned from then on, whatever
    /// DescribeGroups shows until the coordinator notices.
    pub(crate) fn mark_lost(&mut self, worker: &str, at: Instant) {
        self.lost.insert(worker.to_owned(), at);
        for holding in self.tasks.values_mut() {
            if holding.owner == worker {
                holding.since = Some(holding.since.map_or(at, |since| since.min(at)));
            }
        }
    }

    /// `worker`, once given up by [`mark_lost`](Self::mark_lost), is alive after all (a new
    /// process under the same worker id): what DescribeGroups shows on it counts again, and a
    /// task it still holds did not move.
    pub(crate) fn mark_back(&mut self, worker: &str) {
        self.lost.remove(worker);
    }

    /// Every move so far, oldest first.
    pub(crate) fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Tasks that have no owner now, with the time since they lost it.
    pub(crate) fn unowned(&self, now: Instant) -> Vec<(String, Duration)> {
        self.tasks
            .iter()
            .filter_map(|(task, h)| {
                h.since
                    .map(|since| (task.clone(), now.saturating_duration_since(since)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(pairs: &[(&str, &str)]) -> Owners {
        let mut owners = Owners::new();
        for (task, owner) in pairs {
            owners
                .entry(task.to_string())
                .or_default()
                .push(owner.to_string());
        }
        owners
    }

    #[test]
    fn first_sight_is_not_a_move() {
        let t0 = Instant::now();
        let mut tracker = Tracker::new();
        assert!(
            tracker
                .observe(t0, &snapshot(&[("t0", "a"), ("t1", "b")]))
                .is_empty()
        );
        assert!(tracker.moves().is_empty());
    }

    #[test]
    fn a_direct_handover_is_a_move_with_no_unowned_time() {
        let t0 = Instant::now();
        let mut tracker = Tracker::new();
        tracker.observe(t0, &snapshot(&[("t0", "a")]));
        let moves = tracker.observe(t0 + Duration::from_millis(250), &snapshot(&[("t0", "b")]));
        assert_eq!(moves.len(), 1);
        assert_eq!((moves[0].from.as_str(), moves[0].to.as_str()), ("a", "b"));
        assert_eq!(moves[0].unowned_for, Duration::ZERO);
    }

    #[test]
    fn unowned_time_runs_from_the_first_snapshot_without_an_owner() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut tracker = Tracker::new();
        tracker.observe(t0, &snapshot(&[("t0", "a"), ("t1", "b")]));
        tracker.observe(ms(250), &snapshot(&[("t1", "b")]));
        assert_eq!(
            tracker.unowned(ms(400)),
            vec![("t0".into(), Duration::from_millis(150))]
        );
        tracker.observe(ms(500), &snapshot(&[("t1", "b")]));
        let moves = tracker.observe(ms(1000), &snapshot(&[("t0", "b"), ("t1", "b")]));
        assert_eq!(moves[0].unowned_for, Duration::from_millis(750));
        assert!(tracker.unowned(ms(1000)).is_empty());
    }

    #[test]
    fn coming_back_to_the_same_owner_after_a_rebalance_is_not_a_move() {
        let t0 = Instant::now();
        let mut tracker = Tracker::new();
        tracker.observe(t0, &snapshot(&[("t0", "a")]));
        tracker.observe(t0 + Duration::from_millis(250), &Owners::new());
        let moves = tracker.observe(t0 + Duration::from_millis(500), &snapshot(&[("t0", "a")]));
        assert!(moves.is_empty());
        assert!(tracker.moves().is_empty());
    }

    #[test]
    fn a_lost_worker_starts_the_clock_before_the_coordinator_notices() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut tracker = Tracker::new();
        tracker.observe(t0, &snapshot(&[("t0", "a"), ("t1", "b")]));
        tracker.mark_lost("a", ms(100));
        // The dead member is still listed until its session expires.
        tracker.observe(ms(2000), &snapshot(&[("t0", "a"), ("t1", "b")]));
        assert_eq!(
            tracker.unowned(ms(2000)),
            vec![("t0".into(), Duration::from_millis(1900))]
        );
        let moves = tracker.observe(ms(3100), &snapshot(&[("t0", "b"), ("t1", "b")]));
        assert_eq!(moves.len(), 1);
        assert_eq!(moves[0].unowned_for, Duration::from_millis(3000));
        assert_eq!(tracker.moves().len(), 1);
    }

    #[test]
    fn a_worker_back_after_mark_lost_owns_its_tasks_again() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut tracker = Tracker::new();
        tracker.observe(t0, &snapshot(&[("t0", "a")]));
        tracker.mark_lost("a", ms(100));
        tracker.mark_back("a");
        let moves = tracker.observe(ms(300), &snapshot(&[("t0", "a")]));
        assert!(moves.is_empty());
        assert!(tracker.unowned(ms(300)).is_empty());
    }

    #[test]
    fn owners_lists_known_tasks_by_worker_name() {
        use crate::group_view::MemberView;
        let member = |id: &str, worker: Option<&str>, tasks: Option<&[&str]>| MemberView {
            member_id: id.into(),
            instance_id: None,
            client_id: String::new(),
            host: String::new(),
            tasks: tasks.map(|t| t.iter().map(|s| s.to_string()).collect()),
            worker_id: worker.map(str::to_owned),
        };
        let view = GroupView {
            group: "g".into(),
            state: "Stable".into(),
            generation: Some(1),
            protocol_type: Some("kroupier".into()),
            protocol: Some("sticky".into()),
            leader: None,
            members: vec![
                member("m1", Some("w1"), Some(&["t0", "t1"])),
                member("m2", None, Some(&["t1"])),
                member("m3", Some("w3"), None),
            ],
            unplaced: Default::default(),
        };
        let owners = owners(&view);
        assert_eq!(owners["t0"], vec!["w1".to_string()]);
        assert_eq!(owners["t1"], vec!["w1".to_string(), "m2".to_string()]);
        assert_eq!(owners.len(), 2);
    }
}
