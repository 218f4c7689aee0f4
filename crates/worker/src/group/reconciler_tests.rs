//! The reconciler on virtual time: the revocation gate, lagging events, losses, and held
//! starts (a static takeover's wait, lost tasks' hold).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::lease::FencingToken;
use tokio::time::Instant;

use super::*;
use crate::group::advertised::TakeoverHold;
use crate::protocol::Assignment;

const SESSION: Duration = Duration::from_secs(6);
const STOP: Duration = Duration::from_secs(6);
const MARGIN: Duration = Duration::from_secs(1);
const ABORT: Duration = Duration::from_secs(2);
const REBALANCE: Duration = Duration::from_secs(30);

fn reconciler(takeover: Takeover) -> Reconciler {
    Reconciler::new(Settings {
        stop_bound: STOP,
        session_timeout: SESSION,
        takeover,
        self_fence_margin: MARGIN,
        abort_timeout: ABORT,
        rebalance_timeout: REBALANCE,
    })
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn token(generation: i32, member: &str) -> FencingToken {
    FencingToken::new(generation, member)
}

fn set(tasks: &[&str]) -> BTreeSet<String> {
    tasks.iter().map(|t| (*t).to_owned()).collect()
}

/// The assignment of `generation` for member `m1` (led by `m0`): run `tasks`, revoke `revoked`.
fn assigned(base: Instant, generation: i32, tasks: &[&str], revoked: &[&str]) -> Assigned {
    let mut assignment = Assignment::new("m0", generation);
    assignment.tasks = set(tasks);
    assignment.revoked = set(revoked);
    assignment.member_id = Some("m1".into());
    Assigned {
        token: token(generation, "m1"),
        leader: "m0".into(),
        eager: false,
        assignment: Some(assignment),
        local: Local::default(),
        valid_until: base + SESSION,
        rejected: false,
        reads_compressed: false,
    }
}

/// Generation 3's assignment of `tasks`, of which `x` is lost, held back 700 ms.
fn with_lost_x(base: Instant, tasks: &[&str]) -> Assigned {
    let mut with_lost = assigned(base, 3, tasks, &[]);
    if let Some(a) = with_lost.assignment.as_mut() {
        a.lost = set(&["x"]);
        a.lost_hold = Some(ms(700));
    }
    with_lost
}

/// The actions that act on tasks and the group, in order: what the metadata advertises
/// ([`advertised`]) and when fast failover reads the group ([`reads_group`]) are checked on
/// their own.
fn actions(r: &mut Reconciler) -> Vec<Action> {
    std::iter::from_fn(|| r.poll_action())
        .filter(|a| !matches!(a, Action::Advertise(_) | Action::ReadGroup))
        .collect()
}

/// Whether, since the last poll, the reconciler asked fast failover to read the group, and
/// only after every apply it asked for.
fn reads_group(r: &mut Reconciler) -> bool {
    let all: Vec<Action> = std::iter::from_fn(|| r.poll_action()).collect();
    let read = all.iter().rposition(|a| *a == Action::ReadGroup);
    let last_apply = all.iter().rposition(|a| matches!(a, Action::Apply { .. }));
    match (read, last_apply) {
        (Some(read), Some(apply)) => read > apply,
        (read, _) => read.is_some(),
    }
}

/// The last snapshot the reconciler published for the metadata since the last poll, if any
/// (the other actions are dropped).
fn advertised(r: &mut Reconciler) -> Option<Arc<Advertised>> {
    std::iter::from_fn(|| r.poll_action())
        .filter_map(|a| match a {
            Action::Advertise(advertised) => Some(advertised),
            _ => None,
        })
        .last()
}

/// Takes the single Apply action, reports it applied, and returns its change.
fn applied(r: &mut Reconciler) -> (AssignmentChange, bool) {
    let actions = actions(r);
    let [
        Action::Apply {
            change,
            await_revocations,
        },
    ] = actions.as_slice()
    else {
        panic!("expected one Apply, got {actions:?}")
    };
    let token = token(change.token.generation_id, &change.token.member_id);
    r.handle_applied(&token, true);
    (change.clone(), *await_revocations)
}

#[test]
fn an_assignment_applies_at_once() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_joined(base);
    r.handle_assigned(base, assigned(base, 1, &["a", "b"], &[]));
    let (change, wait) = applied(&mut r);
    assert_eq!(change.run, set(&["a", "b"]));
    assert!(!wait);
    assert_eq!(
        r.poll_timeout(),
        None,
        "a follower without revocations owes nothing"
    );
}

#[test]
fn the_revocation_is_acknowledged_only_once_revoked_tasks_stopped() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a", "b", "c"], &[]));
    applied(&mut r);
    // Generation 2 revokes c (incremental cooperative): the member waits for it to stop.
    r.handle_assigned(base + ms(100), assigned(base, 2, &["a", "b"], &["c"]));
    let (_, wait) = applied(&mut r);
    assert!(wait, "the loop awaits c's stop");
    // A rebalance starts before c stopped: the join gate stays closed.
    r.handle_revoked(2, false);
    assert!(actions(&mut r).is_empty(), "no ack while c still stops");
    assert_eq!(r.poll_timeout(), None, "no follow-up while revoking");
    // c stopped: the gate opens.
    r.handle_revocations_stopped(base + ms(900), 2);
    assert_eq!(actions(&mut r), [Action::AckRevocation { generation: 2 }]);
}

#[test]
fn cooperative_revocations_end_with_a_follow_up_rejoin() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 2, &["a"], &["c"]));
    applied(&mut r);
    r.handle_revocations_stopped(base + ms(500), 2);
    assert_eq!(r.poll_timeout(), Some(base + ms(500)));
    r.handle_timeout(base + ms(500));
    assert_eq!(
        actions(&mut r),
        [Action::Rejoin {
            generation: 2,
            reason: "revoked tasks stopped (incremental cooperative follow-up)"
        }]
    );
}

#[test]
fn an_eager_revocation_is_acknowledged_once_everything_it_cancelled_stopped() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let mut first = assigned(base, 1, &["a"], &[]);
    first.eager = true;
    r.handle_assigned(base, first);
    applied(&mut r);
    r.handle_revoked(1, true);
    assert_eq!(
        actions(&mut r),
        [Action::RevokeAll],
        "everything stops; no ack yet"
    );
    r.handle_revoked_stopped();
    assert_eq!(actions(&mut r), [Action::AckRevocation { generation: 1 }]);
}

#[test]
fn a_revocation_with_nothing_to_stop_is_acknowledged_at_once() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    applied(&mut r);
    r.handle_revoked(1, false);
    assert_eq!(actions(&mut r), [Action::AckRevocation { generation: 1 }]);
}

#[test]
fn a_loss_drops_every_wait_and_follow_up() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 2, &["a"], &["c"]));
    applied(&mut r);
    r.handle_revoked(2, true);
    r.handle_lost(base, None);
    assert_eq!(
        actions(&mut r),
        [
            Action::RevokeAll,
            Action::Lost {
                deadline: base + ABORT
            }
        ]
    );
    assert_eq!(r.poll_timeout(), None);
    r.handle_revocations_stopped(base + ms(500), 2);
    r.handle_timeout(base + Duration::from_secs(60));
    assert!(
        actions(&mut r).is_empty(),
        "nothing is owed to a lost generation"
    );
}

#[test]
fn a_lost_generation_s_apply_is_not_recorded() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 2, &["a"], &["c"]));
    assert!(matches!(actions(&mut r).as_slice(), [Action::Apply { .. }]));
    // The generation was lost before the loop applied it.
    r.handle_applied(&token(2, "m1"), false);
    assert_eq!(
        r.poll_timeout(),
        None,
        "no follow-up for an assignment never applied"
    );
}

#[test]
fn a_static_takeover_starts_nothing_until_the_old_process_lease_has_ended() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    // Kafka handed this new process the old one's assignment, computed for member m-old.
    let mut takeover = assigned(base, 5, &["a", "b"], &[]);
    if let Some(a) = takeover.assignment.as_mut() {
        a.member_id = Some("m-old".into());
    }
    r.handle_assigned(base + ms(20), takeover);
    assert!(actions(&mut r).is_empty(), "nothing starts yet");
    assert_eq!(r.poll_timeout(), Some(base + SESSION));
    let claims: BTreeSet<_> = r.held_claims().into_iter().collect();
    assert_eq!(
        claims,
        [("a".to_owned(), 5), ("b".to_owned(), 5)].into(),
        "still claimed"
    );
    r.handle_timeout(base + SESSION - ms(1));
    assert!(actions(&mut r).is_empty());
    r.handle_timeout(base + SESSION);
    let (change, _) = applied(&mut r);
    assert_eq!(change.run, set(&["a", "b"]));
    assert!(r.held_claims().is_empty());
}

#[test]
fn a_takeover_wait_also_holds_a_newer_generation() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    let mut takeover = assigned(base, 5, &["a"], &[]);
    if let Some(a) = takeover.assignment.as_mut() {
        a.member_id = None; // an assignment from a leader of the earlier release
    }
    r.handle_assigned(base + ms(20), takeover);
    // A rebalance during the wait: generation 6 keeps a (claimed) here.
    r.handle_revoked(5, false);
    assert_eq!(actions(&mut r), [Action::AckRevocation { generation: 5 }]);
    r.handle_assigned(base + ms(500), assigned(base, 6, &["a"], &[]));
    assert!(
        actions(&mut r).is_empty(),
        "still within the old process's lease"
    );
    r.handle_timeout(base + SESSION);
    let (change, _) = applied(&mut r);
    assert_eq!(change.token.generation_id, 6);
}

#[test]
fn an_assignment_computed_for_this_member_still_waits_out_the_replaced_lease() {
    // A rebalance was in progress when this member replaced a live process: the leader
    // computed the assignment for this member's own id, yet it holds the old process's tasks.
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    assert_eq!(r.takeover_until(), Some(base + SESSION));
    r.handle_assigned(base + ms(40), assigned(base, 5, &["a"], &[]));
    assert!(actions(&mut r).is_empty(), "nothing starts yet");
    r.handle_timeout(base + SESSION - ms(1));
    assert!(actions(&mut r).is_empty());
    r.handle_timeout(base + SESSION);
    assert_eq!(applied(&mut r).0.run, set(&["a"]));
}

#[test]
fn an_empty_first_assignment_does_not_end_a_takeover_wait() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    r.handle_assigned(base + ms(10), assigned(base, 5, &[], &[]));
    // A rejoin is no new first join: the wait still counts from the first.
    r.handle_joined(base + ms(600));
    assert_eq!(r.takeover_until(), Some(base + SESSION));
    // The next generation gives this member the old process's tasks, within the wait.
    r.handle_assigned(base + ms(900), assigned(base, 6, &["a", "b"], &[]));
    assert!(
        actions(&mut r)
            .iter()
            .all(|a| !matches!(a, Action::Apply { change, .. } if !change.run.is_empty())),
        "nothing starts within the old process's lease"
    );
    r.handle_timeout(base + SESSION);
    let (change, _) = applied(&mut r);
    assert_eq!(change.run, set(&["a", "b"]));
}

#[test]
fn a_clean_takeover_starts_at_once() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_joined(base);
    let mut takeover = assigned(base, 5, &["a"], &[]);
    if let Some(a) = takeover.assignment.as_mut() {
        a.member_id = Some("m-old".into());
    }
    r.handle_assigned(base, takeover);
    assert_eq!(applied(&mut r).0.run, set(&["a"]));
}

#[test]
fn lost_tasks_start_after_the_hold_and_the_others_at_once() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let with_lost = with_lost_x(base, &["a", "b", "x"]);
    r.handle_assigned(base, with_lost);
    assert_eq!(applied(&mut r).0.run, set(&["a", "b"]));
    assert_eq!(r.poll_timeout(), Some(base + ms(700)));
    r.handle_timeout(base + ms(700));
    assert_eq!(applied(&mut r).0.run, set(&["a", "b", "x"]));
}

#[test]
fn a_newer_assignment_or_a_loss_cancels_a_hold() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let with_lost = with_lost_x(base, &["a", "x"]);
    r.handle_assigned(base, with_lost.clone());
    applied(&mut r);
    r.handle_lost(base, Some(base + ms(100)));
    assert_eq!(
        actions(&mut r),
        [Action::Lost {
            deadline: base + ms(100) + MARGIN
        }]
    );
    r.handle_timeout(base + ms(700));
    assert!(
        actions(&mut r).is_empty(),
        "x never starts for a lost generation"
    );

    r.handle_assigned(base + ms(800), with_lost);
    applied(&mut r);
    r.handle_assigned(base + ms(900), assigned(base, 4, &["a"], &[]));
    assert_eq!(applied(&mut r).0.token.generation_id, 4);
    r.handle_timeout(base + ms(2000));
    assert!(
        actions(&mut r).is_empty(),
        "x went elsewhere in generation 4"
    );
}

#[test]
fn lost_tasks_keep_their_hold_in_a_later_round_that_no_longer_marks_them_lost() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let with_lost = with_lost_x(base, &["a", "x"]);
    r.handle_assigned(base, with_lost);
    assert_eq!(applied(&mut r).0.run, set(&["a"]));
    // The cooperative follow-up round: this member claims x meanwhile, so the leader no
    // longer marks it lost; it still waits out the hold.
    r.handle_assigned(base + ms(300), assigned(base, 4, &["a", "x"], &[]));
    assert_eq!(applied(&mut r).0.run, set(&["a"]));
    assert_eq!(r.poll_timeout(), Some(base + ms(700)));
    r.handle_timeout(base + ms(699));
    assert!(actions(&mut r).is_empty());
    r.handle_timeout(base + ms(700));
    let (change, _) = applied(&mut r);
    assert_eq!(
        (change.run, change.token.generation_id),
        (set(&["a", "x"]), 4)
    );
}

#[test]
fn lost_tasks_keep_their_hold_after_an_eager_revocation() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let mut with_lost = with_lost_x(base, &["a", "x"]);
    with_lost.eager = true;
    r.handle_assigned(base, with_lost);
    applied(&mut r);
    r.handle_revoked(3, false);
    let _ = actions(&mut r);
    let mut again = assigned(base, 4, &["a", "x"], &[]);
    again.eager = true;
    r.handle_assigned(base + ms(200), again);
    assert_eq!(applied(&mut r).0.run, set(&["a"]), "x waits out its hold");
    r.handle_timeout(base + ms(700));
    assert_eq!(applied(&mut r).0.run, set(&["a", "x"]));
}

#[test]
fn an_eager_revocation_cancels_held_starts() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let mut with_lost = with_lost_x(base, &["a", "x"]);
    with_lost.eager = true;
    r.handle_assigned(base, with_lost);
    applied(&mut r);
    r.handle_revoked(3, true);
    r.handle_timeout(base + ms(700));
    assert_eq!(actions(&mut r), [Action::RevokeAll], "nothing held starts");
}

#[test]
fn a_leader_without_revocations_keeps_a_guard_follow_up() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let mut leading = assigned(base, 2, &["a"], &[]);
    leading.leader = "m1".into();
    if let Some(a) = leading.assignment.as_mut() {
        a.rebalance_delay = Some(Duration::ZERO);
    }
    r.handle_assigned(base, leading);
    applied(&mut r);
    let guard = base + STOP + Duration::from_secs(1);
    assert_eq!(r.poll_timeout(), Some(guard));
    r.handle_timeout(guard);
    assert!(matches!(
        actions(&mut r).as_slice(),
        [Action::Rejoin {
            generation: 2,
            reason: "follow-up rebalance guard"
        }]
    ));
}

#[test]
fn a_rejected_assignment_runs_nothing_and_rejoins_soon() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    applied(&mut r);
    let mut garbage = assigned(base, 2, &[], &[]);
    garbage.assignment = None;
    garbage.rejected = true;
    r.handle_assigned(base + ms(10), garbage);
    let (change, _) = applied(&mut r);
    assert!(
        change.run.is_empty(),
        "nothing runs on bytes that did not decode"
    );
    assert_eq!(
        r.poll_timeout(),
        Some(base + ms(10) + REJECTED_REJOIN_DELAY)
    );
    r.handle_timeout(base + ms(10) + REJECTED_REJOIN_DELAY);
    assert!(matches!(
        actions(&mut r).as_slice(),
        [Action::Rejoin { generation: 2, .. }]
    ));
}

#[test]
fn a_loss_stops_every_task_by_the_deadline_the_group_allows() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    applied(&mut r);
    // Self-fenced: the group may hand the tasks over once the margin after the deadline is
    // over.
    r.handle_lost(base + ms(50), Some(base + ms(40)));
    assert_eq!(
        actions(&mut r),
        [Action::Lost {
            deadline: base + ms(40) + MARGIN
        }]
    );
    // Reset by the coordinator: the work may be elsewhere already; abort at once.
    r.handle_assigned(base + ms(60), assigned(base, 2, &["a"], &[]));
    applied(&mut r);
    r.handle_lost(base + ms(70), None);
    assert_eq!(
        actions(&mut r),
        [Action::Lost {
            deadline: base + ms(70) + ABORT
        }]
    );
}

#[test]
fn only_the_live_generation_is_applied_and_extended() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_lease(&token(1, "m1"), base + SESSION);
    assert!(actions(&mut r).is_empty(), "nothing assigned yet");
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    applied(&mut r);
    r.handle_lease(&token(1, "m1"), base + SESSION + ms(10));
    assert_eq!(
        actions(&mut r),
        [Action::ExtendLease {
            valid_until: base + SESSION + ms(10)
        }]
    );
    r.handle_lease(&token(1, "m2"), base + SESSION + ms(20));
    assert!(actions(&mut r).is_empty(), "another member's lease");
    // Lost: nothing of the generation applies or extends any more.
    r.handle_lost(base + ms(30), None);
    let _ = actions(&mut r);
    r.handle_lease(&token(1, "m1"), base + SESSION + ms(40));
    assert!(actions(&mut r).is_empty(), "never after a loss");
}

#[test]
fn an_assignment_held_back_does_not_apply_once_its_generation_is_lost() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    r.handle_assigned(base + ms(10), assigned(base, 6, &["a"], &[]));
    assert!(actions(&mut r).is_empty(), "held: a takeover's wait");
    r.handle_lost(base + ms(20), None);
    let _ = actions(&mut r);
    r.handle_timeout(base + SESSION + ms(10));
    assert!(
        actions(&mut r).is_empty(),
        "the loop applies nothing of generation 6"
    );
}

#[test]
fn an_eager_revocation_stops_everything_and_a_cooperative_one_nothing() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 3, &["a"], &[]));
    applied(&mut r);
    r.handle_revoked(3, false);
    assert_eq!(actions(&mut r), [Action::AckRevocation { generation: 3 }]);
    r.handle_assigned(base, assigned(base, 4, &["a"], &[]));
    applied(&mut r);
    r.handle_revoked(4, true);
    assert_eq!(actions(&mut r), [Action::RevokeAll]);
}

#[test]
fn a_held_start_is_claimed_in_the_metadata_until_it_applies() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::MustWait);
    r.handle_joined(base);
    let joined = advertised(&mut r).expect("the takeover's wait is advertised");
    assert_eq!(joined.takeover, Some(TakeoverHold::Until(base + SESSION)));
    r.handle_assigned(base + ms(10), assigned(base, 2, &["a", "b"], &[]));
    let held = advertised(&mut r).expect("the held start is claimed");
    assert_eq!(
        held.held_claims.iter().collect::<Vec<_>>(),
        [(&"a".to_owned(), &2), (&"b".to_owned(), &2)]
    );
    r.handle_timeout(base + SESSION);
    let started = advertised(&mut r).expect("claimed no more once started");
    assert!(started.held_claims.is_empty());
    assert_eq!(started.takeover, None, "the wait is over");
}

#[test]
fn an_eager_revocation_keeps_its_claims_until_the_next_assignment_or_a_loss() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 3, &["a"], &[]));
    applied(&mut r);
    r.handle_revoked(3, true);
    assert_eq!(actions(&mut r), [Action::RevokeAll]);
    r.handle_revoked_all([("a".to_owned(), 3)].into());
    let revoked = advertised(&mut r).expect("the eager claims are advertised");
    assert_eq!(
        revoked.eager_previous.as_deref(),
        Some(&[("a".to_owned(), 3)].into())
    );
    r.handle_assigned(base + ms(100), assigned(base, 4, &["a"], &[]));
    let next = advertised(&mut r).expect("the new assignment ends them");
    assert_eq!(next.eager_previous, None);
    r.handle_revoked(4, true);
    r.handle_revoked_all([("a".to_owned(), 4)].into());
    let _ = advertised(&mut r);
    r.handle_lost(base + ms(200), None);
    assert_eq!(advertised(&mut r).expect("lost").eager_previous, None);
}

#[test]
fn the_metadata_travels_compressed_only_after_a_leader_that_reads_it_and_never_after_a_loss() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let mut from_new_leader = assigned(base, 1, &["a"], &[]);
    from_new_leader.reads_compressed = true;
    r.handle_assigned(base, from_new_leader);
    assert!(advertised(&mut r).expect("changed").leader_reads_compressed);
    r.handle_assigned(base + ms(10), assigned(base, 2, &["a"], &[]));
    assert!(!advertised(&mut r).expect("changed").leader_reads_compressed);
    let mut again = assigned(base, 3, &["a"], &[]);
    again.reads_compressed = true;
    r.handle_assigned(base + ms(20), again);
    let _ = advertised(&mut r);
    r.handle_lost(base + ms(30), None);
    assert!(!advertised(&mut r).expect("lost").leader_reads_compressed);
}

#[test]
fn the_metadata_is_published_only_when_it_changes() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    assert!(advertised(&mut r).is_some(), "the first snapshot");
    r.handle_applied(&token(1, "m1"), true);
    r.handle_lease(&token(1, "m1"), base + SESSION);
    r.handle_timeout(base + ms(10));
    assert_eq!(advertised(&mut r), None, "nothing changed");
}

/// Generation 1's assignment of `tasks`, revoking `revoked`, checked against `local`.
fn assigned_with(base: Instant, tasks: &[&str], revoked: &[&str], local: Local) -> Assigned {
    let mut a = assigned(base, 1, tasks, revoked);
    a.local = local;
    a
}

#[test]
fn tasks_the_catalogue_lacks_do_not_start() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let local = Local {
        missing: set(&["ghost"]),
        ..Local::default()
    };
    r.handle_assigned(base, assigned_with(base, &["a", "ghost"], &[], local));
    assert_eq!(applied(&mut r).0.run, set(&["a"]));
}

#[test]
fn a_task_both_assigned_and_revoked_is_revoked_and_revocations_of_tasks_not_held_ask_nothing() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let local = Local {
        not_held: set(&["c"]),
        ..Local::default()
    };
    r.handle_assigned(base, assigned_with(base, &["a", "b"], &["b", "c"], local));
    let (change, await_revocations) = applied(&mut r);
    assert_eq!(change.run, set(&["a"]));
    assert_eq!(change.revoke, set(&["b"]), "c is not held here");
    assert!(await_revocations, "b stops before the follow-up");
}

#[test]
fn tasks_from_further_in_the_store_wait_for_this_worker_s_view() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let local = Local {
        missing: set(&["new"]),
        offset: Some(4),
        fingerprint: 7,
        ..Local::default()
    };
    let mut from_ahead = assigned_with(base, &["a", "new"], &[], local);
    if let Some(a) = from_ahead.assignment.as_mut() {
        a.store_offset = Some(9);
    }
    r.handle_assigned(base, from_ahead);
    let (change, _) = applied(&mut r);
    assert_eq!(
        change.run,
        set(&["a", "new"]),
        "kept: it starts once the view has it"
    );
    assert_eq!(
        change.leader_catalogue_fingerprint,
        Some(7),
        "another point of the store is no catalogue mismatch"
    );
    assert_eq!(
        r.poll_timeout(),
        Some(base + REBALANCE),
        "the wait is bounded"
    );
    r.handle_store_offset(base + ms(100), Some(8));
    assert_eq!(r.poll_timeout(), Some(base + REBALANCE), "not there yet");
    r.handle_store_offset(base + ms(200), Some(9));
    assert_eq!(r.poll_timeout(), None, "caught up");
}

#[test]
fn a_catch_up_wait_past_the_rebalance_timeout_is_reported_once() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    let local = Local {
        missing: set(&["new"]),
        offset: Some(4),
        ..Local::default()
    };
    let mut from_ahead = assigned_with(base, &["new"], &[], local);
    if let Some(a) = from_ahead.assignment.as_mut() {
        a.store_offset = Some(9);
    }
    r.handle_assigned(base, from_ahead);
    applied(&mut r);
    r.handle_timeout(base + REBALANCE);
    assert_eq!(r.poll_timeout(), None, "reported, then no longer timed");
    assert!(actions(&mut r).is_empty());
}

#[test]
fn fast_failover_reads_the_group_after_an_apply_but_not_after_one_that_revokes() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, assigned(base, 1, &["a"], &[]));
    assert!(reads_group(&mut r), "after the apply");
    r.handle_applied(&token(1, "m1"), true);
    r.handle_assigned(base + ms(10), assigned(base, 2, &["a"], &["b"]));
    assert!(
        !reads_group(&mut r),
        "the follow-up round replaces it a moment later"
    );
    r.handle_applied(&token(2, "m1"), true);
    let mut eager = assigned(base, 3, &["a"], &["b"]);
    eager.eager = true;
    r.handle_assigned(base + ms(20), eager);
    assert!(
        reads_group(&mut r),
        "eager assignors hand tasks over within one round"
    );
}

#[test]
fn a_held_start_applies_with_the_lease_heartbeats_extended_since() {
    let base = Instant::now();
    let mut r = reconciler(Takeover::Clean);
    r.handle_assigned(base, with_lost_x(base, &["a", "x"]));
    applied(&mut r);
    r.handle_lease(&token(3, "m1"), base + SESSION + ms(500));
    let _ = actions(&mut r);
    r.handle_timeout(base + ms(700));
    let (change, _) = applied(&mut r);
    assert_eq!(change.run, set(&["a", "x"]));
    assert_eq!(change.valid_until, base + SESSION + ms(500));
}

#[test]
fn the_leader_rebalances_once_per_generation_when_the_store_moves_placement() {
    let from = AssignedFrom {
        generation: 4,
        placement: 11,
        store_offset: Some(3),
        ahead: None,
    };
    let mut r = reconciler(Takeover::Clean);
    r.handle_placement(Some(from), Some(4), 11, Some(3));
    assert!(actions(&mut r).is_empty(), "the placement it assigned from");
    r.handle_placement(Some(from), None, 12, Some(5));
    assert!(actions(&mut r).is_empty(), "not the leader (or not stable)");
    r.handle_placement(Some(from), Some(5), 12, Some(5));
    assert!(
        actions(&mut r).is_empty(),
        "another generation than the round it led"
    );
    r.handle_placement(Some(from), Some(4), 12, Some(5));
    assert!(matches!(
        actions(&mut r).as_slice(),
        [Action::Rejoin { generation: 4, .. }]
    ));
    r.handle_placement(Some(from), Some(4), 13, Some(6));
    assert!(actions(&mut r).is_empty(), "once per generation");
}

#[test]
fn a_rejoin_is_due_only_while_the_member_is_stable_in_its_generation() {
    assert!(rejoin_still_due(7, Some(7), true));
    assert!(
        !rejoin_still_due(7, Some(7), false),
        "another rebalance began"
    );
    assert!(
        !rejoin_still_due(7, Some(8), true),
        "a newer generation came"
    );
    assert!(!rejoin_still_due(7, None, false), "the generation was lost");
}
