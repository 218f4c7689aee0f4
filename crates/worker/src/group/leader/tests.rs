use std::collections::BTreeSet;

use kroupier_assignor::{Cooperative, Sticky};

use super::*;
use crate::catalogue::TaskSpec;

fn catalogue(specs: &[(&str, &str)]) -> Catalogue {
    Catalogue::from_specs(
        specs
            .iter()
            .map(|(id, kind)| TaskSpec::new(*id, *kind, serde_json::Value::Null)),
    )
    .unwrap()
}

fn beats(n: usize) -> Catalogue {
    let ids: Vec<String> = (0..n).map(|i| format!("task-{i}")).collect();
    let specs: Vec<(&str, &str)> = ids.iter().map(|id| (id.as_str(), "beat")).collect();
    catalogue(&specs)
}

fn member(id: &str, kinds: &[&str], owned: &[(&str, i32)], fingerprint: u64) -> GroupMember {
    let mut metadata = MemberMetadata::new(format!("worker-{id}"));
    metadata.kinds = kinds.iter().map(|k| k.to_string()).collect();
    metadata.owned = owned.iter().map(|(t, g)| (t.to_string(), *g)).collect();
    metadata.catalogue_fingerprint = fingerprint;
    GroupMember {
        member_id: id.to_owned(),
        group_instance_id: None,
        metadata: Bytes::from(metadata.encode()),
    }
}

static NONE_GONE: BTreeSet<MemberId> = BTreeSet::new();
static NO_CONTACT: LeaderContact = LeaderContact {
    heartbeat_interval: None,
    session_timeout: None,
    status_addr: None,
    network_id: None,
};

fn round<'a>(catalogue: &'a Catalogue, assignor: &'a dyn Assignor) -> Round<'a> {
    Round {
        catalogue,
        tasks: std::sync::Arc::new(task_set(catalogue).unwrap()),
        assignor,
        memory: None,
        now: Duration::from_secs(1_000),
        leader: "a".into(),
        generation: 1,
        lost_hold: None,
        gone: &NONE_GONE,
        contact: &NO_CONTACT,
        vanished_leader: None,
        store_offset: None,
    }
}

fn decode(outcome: &Outcome) -> Vec<(String, Assignment)> {
    outcome
        .assignments
        .iter()
        .map(|a| {
            (
                a.member_id.clone(),
                Assignment::decode(&a.assignment).unwrap(),
            )
        })
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn cold_start_spreads_every_task_once() {
    let cat = beats(12);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let members: Vec<GroupMember> = ["a", "b", "c"]
        .iter()
        .map(|id| member(id, &["beat"], &[], fp))
        .collect();
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let decoded = decode(&outcome);
    let mut all = BTreeSet::new();
    for (_, a) in &decoded {
        assert_eq!(a.tasks.len(), 4);
        assert!(a.revoked.is_empty());
        assert_eq!(a.leader, "a");
        assert_eq!(a.catalogue_fingerprint, fp);
        for t in &a.tasks {
            assert!(all.insert(t.clone()), "{t} assigned twice");
        }
    }
    assert_eq!(all.len(), 12);
    assert!(outcome.mismatched.is_empty());
    assert_eq!(outcome.memory.previous.len(), 3);
}

#[test]
fn a_joining_member_gets_its_share_only_in_the_follow_up_round() {
    let cat = beats(6);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let a_owned: Vec<(&str, i32)> = ["task-0", "task-1", "task-2"]
        .iter()
        .map(|t| (*t, 1))
        .collect();
    let b_owned: Vec<(&str, i32)> = ["task-3", "task-4", "task-5"]
        .iter()
        .map(|t| (*t, 1))
        .collect();
    let members = vec![
        member("a", &["beat"], &a_owned, fp),
        member("b", &["beat"], &b_owned, fp),
        member("c", &["beat"], &[], fp),
    ];
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let decoded = decode(&outcome);
    assert_eq!(decoded[0].1.revoked.len() + decoded[1].1.revoked.len(), 2);
    assert!(
        decoded[2].1.tasks.is_empty(),
        "never in the round it is revoked"
    );
    assert_eq!(decoded[0].1.rebalance_delay, Some(Duration::ZERO));

    // Follow-up: a and b report what they kept; c gets the two revoked tasks.
    let keep =
        |a: &Assignment| -> Vec<(String, i32)> { a.tasks.iter().map(|t| (t.clone(), 1)).collect() };
    let (ka, kb) = (keep(&decoded[0].1), keep(&decoded[1].1));
    let ka: Vec<(&str, i32)> = ka.iter().map(|(t, g)| (t.as_str(), *g)).collect();
    let kb: Vec<(&str, i32)> = kb.iter().map(|(t, g)| (t.as_str(), *g)).collect();
    let members = vec![
        member("a", &["beat"], &ka, fp),
        member("b", &["beat"], &kb, fp),
        member("c", &["beat"], &[], fp),
    ];
    let mut next = round(&cat, &assignor);
    next.memory = Some(&outcome.memory);
    next.generation = 2;
    let outcome = assign(&next, &members).unwrap();
    let decoded = decode(&outcome);
    assert_eq!(decoded[2].1.tasks.len(), 2);
    assert!(decoded.iter().all(|(_, a)| a.revoked.is_empty()));
    assert_eq!(decoded[0].1.tasks.len(), 2);
}

#[test]
fn tasks_go_only_to_workers_that_know_their_kind() {
    // The leader knows kind `new`; worker b runs an older build without it.
    let cat = catalogue(&[("old-0", "old"), ("old-1", "old"), ("new-0", "new")]);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let members = vec![
        member("a", &["old", "new"], &[], fp),
        member("b", &["old"], &[("new-0", 4)], fp ^ 1),
    ];
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let decoded = decode(&outcome);
    assert!(!decoded[1].1.tasks.contains("new-0"));
    assert_eq!(outcome.mismatched, vec![("worker-b".to_owned(), fp ^ 1)]);
    // b's ineligible claim is revoked; a gets the task in the follow-up round.
    assert_eq!(decoded[1].1.revoked, set(&["new-0"]));
    assert!(!decoded[0].1.tasks.contains("new-0"));
    // A kind nobody runs stays unplaced rather than bouncing.
    let cat = catalogue(&[("x-0", "x")]);
    let outcome = assign(&round(&cat, &assignor), &[member("a", &["old"], &[], 0)]).unwrap();
    assert_eq!(outcome.unplaced.len(), 1);
}

#[test]
fn double_claims_are_resolved_by_generation() {
    let cat = beats(2);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    // task-0: b's claim (generation 5) beats a's (3). task-1: a tie, revoked from both.
    let members = vec![
        member("a", &["beat"], &[("task-0", 3), ("task-1", 5)], fp),
        member("b", &["beat"], &[("task-0", 5), ("task-1", 5)], fp),
    ];
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let decoded = decode(&outcome);
    assert!(decoded[1].1.tasks.contains("task-0"));
    assert!(!decoded[0].1.tasks.contains("task-0"));
    assert!(decoded.iter().all(|(_, a)| !a.tasks.contains("task-1")));
    assert!(decoded.iter().all(|(_, a)| a.revoked.contains("task-1")));
}

#[test]
fn broken_metadata_and_unknown_claims_never_fail_the_round() {
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Sticky;
    let broken = GroupMember {
        member_id: "b".into(),
        group_instance_id: None,
        metadata: Bytes::from_static(b"\xff\xff garbage"),
    };
    let members = vec![member("a", &["beat"], &[("gone-7", 2)], fp), broken];
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let decoded = decode(&outcome);
    assert_eq!(decoded[0].1.tasks.len(), 4);
    assert!(decoded[1].1.tasks.is_empty());
}

#[test]
fn static_members_are_keyed_by_instance_id() {
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    // Member ids sort b < z, instance ids the other way round: assignments still match.
    let mut x = member("z", &["beat"], &[("task-0", 1), ("task-1", 1)], fp);
    x.group_instance_id = Some("alpha".into());
    let mut y = member("b", &["beat"], &[("task-2", 1), ("task-3", 1)], fp);
    y.group_instance_id = Some("omega".into());
    let outcome = assign(&round(&cat, &assignor), &[y, x]).unwrap();
    let decoded = decode(&outcome);
    assert_eq!(decoded[0].0, "b");
    assert_eq!(decoded[0].1.tasks, set(&["task-2", "task-3"]));
    assert_eq!(decoded[1].1.tasks, set(&["task-0", "task-1"]));
}

/// 6 s sessions (the leader's, for owners that do not say) plus a 200 ms round trip.
const HOLD: LostHold = LostHold {
    round_trip: Duration::from_millis(200),
    session_timeout: Duration::from_secs(6),
};

/// A round over `a`, `b`, `c` with 6 beats, then `c` vanishes (or leaves, with `leaving`).
fn after_c_is_gone(leaving: bool) -> Vec<(String, Assignment)> {
    let cat = beats(6);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let members: Vec<GroupMember> = ["a", "b", "c"]
        .iter()
        .map(|id| member(id, &["beat"], &[], fp))
        .collect();
    let mut first = round(&cat, &assignor);
    first.lost_hold = Some(HOLD);
    let outcome = assign(&first, &members).unwrap();
    let owned: Vec<Vec<(String, i32)>> = decode(&outcome)
        .iter()
        .map(|(_, a)| a.tasks.iter().map(|t| (t.clone(), 1)).collect())
        .collect();
    let claims =
        |i: usize| -> Vec<(&str, i32)> { owned[i].iter().map(|(t, g)| (t.as_str(), *g)).collect() };
    let mut members = vec![
        member("a", &["beat"], &claims(0), fp),
        member("b", &["beat"], &claims(1), fp),
    ];
    if leaving {
        // c stopped everything and says so before it leaves.
        let mut metadata = MemberMetadata::new("worker-c");
        metadata.kinds = set(&["beat"]);
        metadata.catalogue_fingerprint = fp;
        metadata.leaving = true;
        members.push(GroupMember {
            member_id: "c".into(),
            group_instance_id: None,
            metadata: Bytes::from(metadata.encode()),
        });
    }
    let mut next = round(&cat, &assignor);
    next.memory = Some(&outcome.memory);
    next.generation = 2;
    next.lost_hold = Some(HOLD);
    decode(&assign(&next, &members).unwrap())
}

#[test]
fn the_tasks_of_a_vanished_member_are_marked_lost_with_the_hold() {
    let decoded = after_c_is_gone(false);
    let lost: BTreeSet<String> = decoded.iter().flat_map(|(_, a)| a.lost.clone()).collect();
    assert_eq!(lost.len(), 2, "c's two tasks: {decoded:?}");
    for (_, a) in &decoded {
        assert!(a.lost.is_subset(&a.tasks));
        let expected = (!a.lost.is_empty()).then_some(Duration::from_millis(6_200));
        assert_eq!(a.lost_hold, expected);
    }
    assert_eq!(decoded[0].1.member_id.as_deref(), Some("a"));
}

#[test]
fn the_tasks_of_a_member_that_left_after_stopping_them_are_not_lost() {
    let decoded = after_c_is_gone(true);
    assert!(
        decoded.iter().all(|(_, a)| a.lost.is_empty()),
        "{decoded:?}"
    );
    let moved: usize = decoded[..2].iter().map(|(_, a)| a.tasks.len()).sum();
    assert_eq!(moved, 6, "a and b run everything at once");
    assert!(
        decoded[2].1.tasks.is_empty(),
        "the leaving member gets nothing"
    );
}

#[test]
fn a_leader_without_memory_suspects_only_unclaimed_tasks_of_a_running_group() {
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let mut with_hold = round(&cat, &assignor);
    with_hold.lost_hold = Some(HOLD);
    // A cold start: nobody claims anything, nothing is held.
    let cold: Vec<GroupMember> = ["a", "b"]
        .iter()
        .map(|id| member(id, &["beat"], &[], fp))
        .collect();
    let decoded = decode(&assign(&with_hold, &cold).unwrap());
    assert!(decoded.iter().all(|(_, a)| a.lost.is_empty()));
    // A new leader after the old one vanished: b claims two tasks, the other two were its.
    let running = vec![
        member("a", &["beat"], &[], fp),
        member("b", &["beat"], &[("task-2", 1), ("task-3", 1)], fp),
    ];
    let decoded = decode(&assign(&with_hold, &running).unwrap());
    let lost: BTreeSet<String> = decoded.iter().flat_map(|(_, a)| a.lost.clone()).collect();
    assert_eq!(lost, set(&["task-0", "task-1"]));
}

#[test]
fn a_new_leader_holds_a_vanished_leader_s_tasks_for_its_session_unless_it_is_gone() {
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    // The old leader (absent) ran task-0 and task-1; b claims the rest.
    let running = vec![
        member("a", &["beat"], &[], fp),
        member("b", &["beat"], &[("task-2", 1), ("task-3", 1)], fp),
    ];
    let mut next = round(&cat, &assignor);
    next.lost_hold = Some(HOLD);
    next.vanished_leader = Some(VanishedLeader {
        gone: false,
        session_timeout: Some(Duration::from_secs(30)),
    });
    let decoded = decode(&assign(&next, &running).unwrap());
    let holds: BTreeSet<Duration> = decoded.iter().filter_map(|(_, a)| a.lost_hold).collect();
    assert_eq!(
        holds,
        BTreeSet::from([Duration::from_millis(30_200)]),
        "its 30 s session, not the new leader's 6 s: {decoded:?}"
    );
    next.vanished_leader = Some(VanishedLeader {
        gone: true,
        session_timeout: Some(Duration::from_secs(30)),
    });
    let decoded = decode(&assign(&next, &running).unwrap());
    assert!(
        decoded.iter().all(|(_, a)| a.lost.is_empty()),
        "gone: nothing is held"
    );
}

#[test]
fn every_assignment_says_how_to_reach_its_leader() {
    let cat = beats(2);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let contact = LeaderContact {
        heartbeat_interval: Some(Duration::from_millis(500)),
        session_timeout: Some(Duration::from_secs(10)),
        status_addr: Some("127.0.0.1:8083".into()),
        network_id: Some("boot/4026531840".into()),
    };
    let mut with_contact = round(&cat, &assignor);
    with_contact.contact = &contact;
    let members = vec![
        member("a", &["beat"], &[], fp),
        member("b", &["beat"], &[], fp),
    ];
    for (_, a) in decode(&assign(&with_contact, &members).unwrap()) {
        assert_eq!(a.leader_heartbeat_interval, contact.heartbeat_interval);
        assert_eq!(a.leader_status_addr, contact.status_addr);
        assert_eq!(a.leader_session_timeout, contact.session_timeout);
        assert_eq!(a.leader_network_id, contact.network_id);
        assert_eq!(a.leader_host, None, "a host name proves nothing");
    }
}

/// A member that read the task store up to `offset`.
fn member_at(id: &str, kinds: &[&str], fingerprint: u64, offset: i64) -> GroupMember {
    let mut metadata = MemberMetadata::new(format!("worker-{id}"));
    metadata.kinds = kinds.iter().map(|k| k.to_string()).collect();
    metadata.catalogue_fingerprint = fingerprint;
    metadata.store_offset = Some(offset);
    GroupMember {
        member_id: id.to_owned(),
        group_instance_id: None,
        metadata: Bytes::from(metadata.encode()),
    }
}

#[test]
fn assignments_carry_the_store_offset_and_the_tasks_nobody_can_take() {
    let cat = catalogue(&[("task-0", "beat"), ("s-1", "unknown-kind")]);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let mut r = round(&cat, &assignor);
    r.store_offset = Some(7);
    let members = vec![
        member_at("a", &["beat"], fp, 7),
        // Behind the leader: its catalogue differs, which is not a mismatch.
        member_at("b", &["beat"], 0xdead, 5),
    ];
    let outcome = assign(&r, &members).unwrap();
    assert!(outcome.mismatched.is_empty(), "{:?}", outcome.mismatched);
    assert_eq!(outcome.ahead, None);
    assert_eq!(outcome.unplaced.len(), 1);
    for (_, a) in decode(&outcome) {
        assert_eq!(a.store_offset, Some(7));
        assert_eq!(
            a.unplaced,
            [("no_eligible_member".to_owned(), set(&["s-1"]))].into()
        );
        assert_eq!(a.unplaced_count, 1);
        assert!(!a.tasks.contains("s-1"));
    }

    // A member ahead of the leader: the leader assigns what it knows and learns how far to
    // read before it rebalances again; a member at the same offset with another catalogue is
    // a real mismatch.
    let members = vec![
        member_at("a", &["beat"], fp, 7),
        member_at("b", &["beat"], 0xdead, 9),
        member_at("c", &["beat"], 0xbeef, 7),
    ];
    let outcome = assign(&r, &members).unwrap();
    assert_eq!(outcome.ahead, Some(9));
    assert_eq!(outcome.mismatched, [("worker-c".to_owned(), 0xbeef)]);
}

proptest::proptest! {
    /// Claims resolve as a map from task to its best generation's claimants would: the highest
    /// generation wins, every claimant tied at it keeps the claim, unknown ids are dropped.
    #[test]
    fn claims_resolve_to_the_best_generation_s_claimants(
        claims in proptest::collection::vec(
            proptest::collection::btree_map(0usize..12, 0i32..4, 0..12),
            0..5,
        ),
    ) {
        let cat = beats(10); // task-10 and task-11 are unknown to the leader
        let decoded: Vec<Decoded> = claims
            .iter()
            .enumerate()
            .map(|(m, owned)| {
                let mut metadata = MemberMetadata::new(format!("w{m}"));
                metadata.owned = owned.iter().map(|(t, g)| (format!("task-{t}"), *g)).collect();
                Decoded { key: MemberId::from(format!("m{m}").as_str()), member_id: format!("m{m}"), metadata: Some(metadata) }
            })
            .collect();
        let tasks = task_set(&cat).unwrap();
        let mut expected = vec![Vec::new(); claims.len()];
        for task in 0..10 {
            let best = claims.iter().filter_map(|owned| owned.get(&task)).max();
            for (m, owned) in claims.iter().enumerate() {
                if best.is_some() && owned.get(&task) == best {
                    expected[m].push(tasks.index_of(&format!("task-{task}")).unwrap());
                }
            }
        }
        for list in &mut expected {
            list.sort();
        }
        proptest::prop_assert_eq!(resolve_claims(&tasks, &decoded), expected);
    }
}

/// A static member `x` (instance `pod-x`) whose metadata says it waits out a takeover of
/// `hold`, claiming `owned`.
fn waiting_static(owned: &[(&str, i32)], hold: Option<Duration>, fp: u64) -> GroupMember {
    let mut metadata = MemberMetadata::new("worker-x");
    metadata.kinds = set(&["beat"]);
    metadata.owned = owned.iter().map(|(t, g)| (t.to_string(), *g)).collect();
    metadata.catalogue_fingerprint = fp;
    metadata.takeover_hold = hold;
    GroupMember {
        member_id: "x-new".into(),
        group_instance_id: Some("pod-x".into()),
        metadata: Bytes::from(metadata.encode()),
    }
}

const TAKEOVER: Duration = Duration::from_secs(3);

/// A round with memory: `a` ran task-0..2, the replaced process of `pod-x` task-3..5; now `a`
/// claims its three, the new process of `pod-x` nothing, and `b` joins.
fn round_after_a_takeover(hold: Option<Duration>) -> Vec<(String, Assignment)> {
    let cat = beats(6);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let mut old_x = member("x-old", &["beat"], &[], fp);
    old_x.group_instance_id = Some("pod-x".into());
    let mut first = round(&cat, &assignor);
    first.lost_hold = Some(HOLD);
    let outcome = assign(&first, &[member("a", &["beat"], &[], fp), old_x]).unwrap();
    let a_tasks: Vec<String> = decode(&outcome)[0].1.tasks.iter().cloned().collect();
    let claims: Vec<(&str, i32)> = a_tasks.iter().map(|t| (t.as_str(), 1)).collect();
    let members = vec![
        member("a", &["beat"], &claims, fp),
        member("b", &["beat"], &[], fp),
        waiting_static(&[], hold, fp),
    ];
    let mut next = round(&cat, &assignor);
    next.memory = Some(&outcome.memory);
    next.generation = 2;
    next.lost_hold = Some(HOLD);
    decode(&assign(&next, &members).unwrap())
}

#[test]
fn while_a_member_waits_out_a_takeover_unclaimed_tasks_wait_as_long_wherever_they_go() {
    let decoded = round_after_a_takeover(Some(TAKEOVER));
    let x_tasks: BTreeSet<String> = ["task-3", "task-4", "task-5"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let mut held = BTreeSet::new();
    for (member, a) in &decoded {
        // a's own claims stay with it and start at once.
        if member == "a" {
            assert!(a.lost.iter().all(|t| x_tasks.contains(t)), "{a:?}");
        }
        if !a.lost.is_empty() {
            // The takeover's wait, or the replaced process's session if longer (the leader
            // remembers its member id: `x-new` replaced it).
            assert_eq!(
                a.lost_hold,
                Some(TAKEOVER.max(HOLD.session_timeout) + HOLD.round_trip),
                "{member}: {a:?}"
            );
        }
        held.extend(a.lost.iter().cloned());
        // Every task of the replaced process that this member got is held back.
        for task in a.tasks.intersection(&x_tasks) {
            assert!(
                a.lost.contains(task),
                "{member} starts {task} at once: {a:?}"
            );
        }
    }
    let placed: BTreeSet<String> = decoded
        .iter()
        .flat_map(|(_, a)| a.tasks.iter().cloned())
        .collect();
    assert!(x_tasks.is_subset(&placed), "{decoded:?}");
    assert_eq!(held, x_tasks, "{decoded:?}");
}

#[test]
fn without_a_takeover_wait_a_replaced_static_member_s_old_tasks_still_wait_its_session() {
    // The same round, but pod-x's new process advertises no wait (nobody held the instance id
    // when it asked: a third party removed the old process, which may still run). The leader
    // remembers the old member id: its tasks wait for its session wherever they go.
    let decoded = round_after_a_takeover(None);
    let held: BTreeSet<String> = decoded.iter().flat_map(|(_, a)| a.lost.clone()).collect();
    assert_eq!(held, set(&["task-3", "task-4", "task-5"]), "{decoded:?}");
    for (_, a) in decoded.iter().filter(|(_, a)| !a.lost.is_empty()) {
        assert_eq!(a.lost_hold, Some(HOLD.session_timeout + HOLD.round_trip));
    }
}

#[test]
fn a_task_a_waiting_member_claims_waits_in_another_member_but_not_in_it() {
    let cat = beats(4);
    let fp = cat.fingerprint();
    // Sticky without memory: x keeps what it claims (held by its own wait, not by the leader);
    // what nobody claims waits in whoever gets it; a's claims start at once.
    let assignor = Sticky;
    let members = vec![
        member("a", &["beat"], &[("task-0", 4)], fp),
        waiting_static(&[("task-1", 4), ("task-2", 4)], Some(TAKEOVER), fp),
    ];
    let decoded = decode(&assign(&round(&cat, &assignor), &members).unwrap());
    let (a, x) = (&decoded[0].1, &decoded[1].1);
    assert!(
        a.tasks.contains("task-0") && !a.lost.contains("task-0"),
        "{a:?}"
    );
    for task in x
        .tasks
        .iter()
        .filter(|t| ["task-1", "task-2"].contains(&t.as_str()))
    {
        assert!(!x.lost.contains(task), "x's own claim is no move: {x:?}");
    }
    for (member, assignment) in &decoded {
        if assignment.tasks.contains("task-3") {
            assert!(
                assignment.lost.contains("task-3"),
                "{member}: {assignment:?}"
            );
        }
    }
    // The waiting member's claim, handed to another member: held there.
    let takers = vec![
        member("a", &["beat"], &[("task-0", 4)], fp),
        waiting_static(&[("task-1", 4)], Some(TAKEOVER), fp),
    ];
    let mut leaving_x = takers;
    let mut metadata = MemberMetadata::decode(&leaving_x[1].metadata).unwrap();
    metadata.leaving = true;
    leaving_x[1].metadata = Bytes::from(metadata.encode());
    let decoded = decode(&assign(&round(&cat, &assignor), &leaving_x).unwrap());
    let a = &decoded[0].1;
    assert!(a.tasks.contains("task-1"), "{a:?}");
    assert!(a.lost.contains("task-1"), "{a:?}");
    assert_eq!(a.lost_hold, Some(TAKEOVER));
}

/// A member with `session` as its session timeout, claiming `owned` (generation 1), and
/// holding back `held` for `hold_left`.
fn member_with(
    id: &str,
    fingerprint: u64,
    owned: &[&str],
    session: Duration,
    held: (&[&str], Option<Duration>),
) -> GroupMember {
    let mut metadata = MemberMetadata::new(format!("worker-{id}"));
    metadata.kinds = set(&["beat"]);
    metadata.catalogue_fingerprint = fingerprint;
    metadata.owned = owned.iter().map(|t| (t.to_string(), 1)).collect();
    metadata.session_timeout = Some(session);
    metadata.heartbeat_interval = Some(Duration::from_millis(500));
    metadata.held = held.0.iter().map(|t| t.to_string()).collect();
    metadata.hold_left = held.1;
    GroupMember {
        member_id: id.to_owned(),
        group_instance_id: None,
        metadata: Bytes::from(metadata.encode()),
    }
}

/// Who got `task`, and the hold on it (`None`: not held).
fn holder_of(decoded: &[(String, Assignment)], task: &str) -> (String, Option<Duration>) {
    let (member, a) = decoded
        .iter()
        .find(|(_, a)| a.tasks.contains(task))
        .unwrap_or_else(|| panic!("{task} is assigned: {decoded:?}"));
    let hold = a.lost.contains(task).then_some(a.lost_hold).flatten();
    (member.clone(), hold)
}

#[test]
fn a_removed_member_s_tasks_are_held_for_its_session_not_its_heartbeat() {
    // A paused member with a 30 s session and 500 ms heartbeats, removed by a third party: it
    // passes its lease checks until 30 s (less its margin) after its last heartbeat, whatever
    // its heartbeat interval says.
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let session = Duration::from_secs(30);
    let members = vec![
        member_with("a", fp, &[], Duration::from_secs(6), (&[], None)),
        member_with("c", fp, &[], session, (&[], None)),
    ];
    let mut first = round(&cat, &assignor);
    first.lost_hold = Some(HOLD);
    let outcome = assign(&first, &members).unwrap();
    let c_tasks: Vec<String> = decode(&outcome)[1].1.tasks.iter().cloned().collect();
    assert_eq!(c_tasks.len(), 2);
    let a_tasks: Vec<String> = decode(&outcome)[0].1.tasks.iter().cloned().collect();
    let claims: Vec<&str> = a_tasks.iter().map(String::as_str).collect();
    let mut next = round(&cat, &assignor);
    next.memory = Some(&outcome.memory);
    next.generation = 2;
    next.lost_hold = Some(HOLD);
    let survivors = [member_with(
        "a",
        fp,
        &claims,
        Duration::from_secs(6),
        (&[], None),
    )];
    let decoded = decode(&assign(&next, &survivors).unwrap());
    for task in &c_tasks {
        assert_eq!(
            holder_of(&decoded, task),
            ("a".to_owned(), Some(session + HOLD.round_trip)),
            "{decoded:?}"
        );
    }
    // Proved gone: no hold at all.
    let gone = BTreeSet::from([MemberId::from("c")]);
    next.gone = &gone;
    let decoded = decode(&assign(&next, &survivors).unwrap());
    assert!(
        decoded.iter().all(|(_, a)| a.lost.is_empty()),
        "{decoded:?}"
    );
}

#[test]
fn a_hold_travels_with_its_task_through_later_rounds() {
    // Round 1: a and c; round 2: c vanished, a gets c's tasks with a 10 s hold; round 3 (2 s
    // later, same leader): d joins and an eager assignor moves some of them to d, who must
    // wait what is left of the hold, not start them at once.
    let cat = beats(6);
    let fp = cat.fingerprint();
    let eager = kroupier_assignor::RoundRobin;
    let session = Duration::from_secs(10);
    let mut r1 = round(&cat, &eager);
    r1.lost_hold = Some(HOLD);
    let one = vec![
        member_with("a", fp, &[], session, (&[], None)),
        member_with("c", fp, &[], session, (&[], None)),
    ];
    let out1 = assign(&r1, &one).unwrap();
    let c_tasks: BTreeSet<String> = decode(&out1)[1].1.tasks.clone();
    let mut r2 = round(&cat, &eager);
    r2.memory = Some(&out1.memory);
    r2.generation = 2;
    r2.lost_hold = Some(HOLD);
    let out2 = assign(&r2, &[member_with("a", fp, &[], session, (&[], None))]).unwrap();
    let held: Vec<String> = c_tasks.iter().cloned().collect();
    let held: Vec<&str> = held.iter().map(String::as_str).collect();
    let mut r3 = round(&cat, &eager);
    r3.memory = Some(&out2.memory);
    r3.generation = 3;
    r3.lost_hold = Some(HOLD);
    r3.now = r2.now + Duration::from_secs(2);
    let three = vec![
        // a still claims them while it holds them back (its held claims).
        member_with(
            "a",
            fp,
            &held,
            session,
            (&held, Some(Duration::from_secs(8))),
        ),
        member_with("d", fp, &[], session, (&[], None)),
    ];
    let decoded = decode(&assign(&r3, &three).unwrap());
    let mut moved = 0;
    for task in &c_tasks {
        let (owner, hold) = holder_of(&decoded, task);
        let hold = hold.unwrap_or_else(|| panic!("{task} on {owner} unheld: {decoded:?}"));
        assert!(
            hold >= Duration::from_secs(8),
            "{task} on {owner}: {hold:?}"
        );
        moved += usize::from(owner == "d");
    }
    assert!(
        moved > 0,
        "round-robin moved some of them to d: {decoded:?}"
    );

    // A new leader without memory sees the hold in a's metadata only.
    let mut fresh = round(&cat, &eager);
    fresh.lost_hold = Some(HOLD);
    let decoded = decode(&assign(&fresh, &three).unwrap());
    for task in &c_tasks {
        let (owner, hold) = holder_of(&decoded, task);
        assert!(
            hold.is_some_and(|h| h >= Duration::from_secs(8)),
            "{task} on {owner}: {hold:?} {decoded:?}"
        );
    }
}

#[test]
fn only_proofs_not_host_names_make_a_vanished_owner_gone() {
    let cat = beats(2);
    let fp = cat.fingerprint();
    let assignor = Cooperative::default();
    let with_contact = |id: &str, addr: &str, network: Option<&str>| {
        let mut metadata = MemberMetadata::new(format!("worker-{id}"));
        metadata.kinds = set(&["beat"]);
        metadata.catalogue_fingerprint = fp;
        metadata.status_addr = Some(addr.to_owned());
        metadata.network_id = network.map(str::to_owned);
        metadata.host = Some("localhost".to_owned());
        GroupMember {
            member_id: id.to_owned(),
            group_instance_id: None,
            metadata: Bytes::from(metadata.encode()),
        }
    };
    let members = vec![
        with_contact("a", "127.0.0.1:1", Some("net-a")),
        with_contact("b", "127.0.0.1:2", Some("net-b")),
        with_contact("c", "10.0.0.3:3", None),
    ];
    let outcome = assign(&round(&cat, &assignor), &members).unwrap();
    let now = std::slice::from_ref(&members[0]);
    // Nothing proved, nothing nearby: nobody is gone.
    let none = gone_owners(&outcome.memory, now, |_| false, |_, _| false);
    assert!(none.is_empty());
    // b is in this worker's network and its address refuses; c was proved by a link.
    let found = gone_owners(
        &outcome.memory,
        now,
        |member| member == "c",
        |addr, network| addr == "127.0.0.1:2" && network == Some("net-b"),
    );
    assert_eq!(
        found,
        BTreeSet::from([MemberId::from("b"), MemberId::from("c")])
    );
}

#[test]
fn a_static_member_back_under_another_member_id_gets_its_old_tasks_held() {
    // KIP-345's recipe for a stuck static member: a third party removes it while it is paused,
    // and a new process joins with its instance id in the same rebalance. The old process may
    // resume inside its lease: its tasks wait for that lease, even on its own successor.
    let cat = beats(4);
    let fp = cat.fingerprint();
    let assignor = Sticky;
    let session = Duration::from_secs(20);
    let statik = |member_id: &str, owned: &[&str]| {
        let mut m = member_with(member_id, fp, owned, session, (&[], None));
        m.group_instance_id = Some("pod-1".into());
        m
    };
    let mut r1 = round(&cat, &assignor);
    r1.lost_hold = Some(HOLD);
    let out1 = assign(
        &r1,
        &[
            statik("m-old", &[]),
            member_with("m-b", fp, &[], session, (&[], None)),
        ],
    )
    .unwrap();
    let decoded = decode(&out1);
    let pod_tasks: Vec<String> = decoded[0].1.tasks.iter().cloned().collect();
    let b_tasks: Vec<String> = decoded[1].1.tasks.iter().cloned().collect();
    let b_claims: Vec<&str> = b_tasks.iter().map(String::as_str).collect();
    let mut r2 = round(&cat, &assignor);
    r2.memory = Some(&out1.memory);
    r2.generation = 2;
    r2.lost_hold = Some(HOLD);
    let b = member_with("m-b", fp, &b_claims, session, (&[], None));
    let decoded = decode(&assign(&r2, &[statik("m-new", &[]), b.clone()]).unwrap());
    for task in &pod_tasks {
        let (_, hold) = holder_of(&decoded, task);
        assert_eq!(hold, Some(session + HOLD.round_trip), "{task}: {decoded:?}");
    }
    // The same member id (a rebalance the static member went through itself): nothing held.
    let pod_claims: Vec<&str> = pod_tasks.iter().map(String::as_str).collect();
    let decoded = decode(&assign(&r2, &[statik("m-old", &pod_claims), b]).unwrap());
    assert!(
        decoded.iter().all(|(_, a)| a.lost.is_empty()),
        "{decoded:?}"
    );
}
