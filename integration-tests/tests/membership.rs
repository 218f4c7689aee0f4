//! The tokio driver of a group member against real Kafka: joins, leaves, crashes, a leader's
//! death, static membership, and 200 members in one process.
//!
//! Each test uses its own group id and short timeouts (the test broker allows sessions from
//! 1 s and has `group.initial.rebalance.delay.ms=0`). Every test prints `MEASURE name=ms`
//! lines with what it measured (`cargo test -- --nocapture` shows them).
//!
//! The broker-restart and 3-broker coordinator-failover tests run only when
//! `KROUPIER_KAFKA_CLUSTER=1` says that `scripts/kafka start --brokers 3` is up (with
//! `KROUPIER_KAFKA_STATE` pointing at its state directory); `scripts/test` starts one broker,
//! where they print a skip line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kroupier_coordinator::driver::{Member, MemberConfig, MemberEvent, MemberHandle};
use kroupier_coordinator::membership::{
    AssignContext, AssignError, GroupMember, GroupProtocol, MemberAssignment, MemberState,
    ProtocolMetadata,
};
use kroupier_integration_tests::kafka_bootstrap;
use kroupier_integration_tests::topics::kafka_script;
use tokio::task::JoinHandle;

const SESSION: Duration = Duration::from_millis(2000);
const HEARTBEAT: Duration = Duration::from_millis(300);

fn unique_group(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kroupier-it-{test}-{}-{nanos}", std::process::id())
}

fn config(bootstrap: &str, group: &str, session: Duration, heartbeat: Duration) -> MemberConfig {
    let mut config = MemberConfig::new(bootstrap, group).with_timeouts(session, heartbeat);
    config.membership.min_session_timeout = Duration::from_secs(1);
    config.membership.rebalance_timeout = Duration::from_secs(10);
    config.cluster.retry_backoff = Duration::from_millis(50);
    config.cluster.connection.request_timeout = Duration::from_secs(10);
    config
}

/// A protocol whose plan gives every member the sorted names of all members, so that equal
/// assignments prove one plan.
struct Roster {
    name: String,
}

impl GroupProtocol for Roster {
    fn protocol_type(&self) -> &str {
        "kroupier-it"
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        vec![ProtocolMetadata::new(
            "roster",
            self.name.clone().into_bytes(),
        )]
    }

    fn assign(
        &self,
        _context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        let mut names: Vec<String> = members
            .iter()
            .map(|m| String::from_utf8_lossy(&m.metadata).into_owned())
            .collect();
        names.sort();
        let plan = Bytes::from(names.join(","));
        Ok(members
            .iter()
            .map(|m| MemberAssignment::new(m.member_id.clone(), plan.clone()))
            .collect())
    }
}

struct Running {
    name: String,
    handle: MemberHandle,
    driver: JoinHandle<()>,
}

fn start(config: MemberConfig, name: &str) -> Running {
    let protocol = Arc::new(Roster {
        name: name.to_owned(),
    });
    let (handle, driver) = Member::new(config, protocol).expect("valid member");
    let driver = tokio::spawn(async move {
        if let Err(e) = driver.await {
            eprintln!("member driver ended: {e}");
        }
    });
    Running {
        name: name.to_owned(),
        handle,
        driver,
    }
}

/// One stable generation of all `members`: (generation id, leader's member id).
#[derive(Debug, PartialEq)]
struct Stable {
    generation: i32,
    leader: String,
}

fn stable_view(members: &[&Running]) -> Option<Stable> {
    let mut names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    let plan = names.join(",");
    let mut view: Option<Stable> = None;
    for m in members {
        let status = m.handle.current();
        let generation = status.generation.as_ref()?;
        if status.state != MemberState::Stable || status.assignment.as_deref()? != plan.as_bytes() {
            return None;
        }
        let this = Stable {
            generation: generation.generation_id,
            leader: generation.leader_id.clone(),
        };
        match &view {
            Some(v) if *v != this => return None,
            _ => view = Some(this),
        }
    }
    view
}

/// Waits until `members` are exactly the group, in one stable generation with one plan.
async fn wait_stable(members: &[&Running], within: Duration) -> Stable {
    let deadline = Instant::now() + within;
    loop {
        if let Some(view) = stable_view(members) {
            return view;
        }
        assert!(
            Instant::now() < deadline,
            "no stable generation of {} members within {within:?}: {:?}",
            members.len(),
            members
                .iter()
                .map(|m| (m.name.clone(), m.handle.current().state))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn measure(name: &str, elapsed: Duration) {
    println!("MEASURE {name}={}ms", elapsed.as_millis());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_members_agree_on_one_leader_and_assignment() {
    let Some(bootstrap) = kafka_bootstrap("five_members_agree_on_one_leader_and_assignment") else {
        return;
    };
    let group = unique_group("five");
    let conf = || config(&bootstrap, &group, SESSION, HEARTBEAT);

    let t0 = Instant::now();
    let first = start(conf(), "m0");
    let mut events = first.handle.events();
    wait_stable(&[&first], Duration::from_secs(15)).await;
    measure("first_join", t0.elapsed());
    let mut saw = Vec::new();
    while let Some(event) = events.try_recv() {
        // A fresh broker may still move the coordinator once while `__consumer_offsets` loads.
        if !matches!(event, MemberEvent::CoordinatorChanged { .. }) {
            saw.push(event);
        }
    }
    assert!(
        matches!(
            saw.as_slice(),
            [
                MemberEvent::Joined { generation },
                MemberEvent::Assigned { .. }
            ] if generation.is_leader()
        ),
        "events of a lone member: {saw:?}"
    );

    let t1 = Instant::now();
    let mut members = vec![first];
    for i in 1..5 {
        members.push(start(conf(), &format!("m{i}")));
    }
    let refs: Vec<&Running> = members.iter().collect();
    let view = wait_stable(&refs, Duration::from_secs(20)).await;
    measure("five_members_to_stable", t1.elapsed());
    let leaders = members
        .iter()
        .filter(|m| m.handle.current().is_leader())
        .count();
    assert_eq!(leaders, 1, "exactly one member leads {view:?}");
    for m in &members {
        assert!(m.handle.current().metrics.rebalances_total >= 1);
        assert!(
            m.handle
                .current()
                .lease
                .is_some_and(|l| m.handle.is_token_valid(&l.token))
        );
    }
    for m in members {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_leaves_and_a_new_generation_forms_within_a_second() {
    let Some(bootstrap) = kafka_bootstrap("a_follower_leaves_and_a_new_generation_forms") else {
        return;
    };
    let group = unique_group("leave");
    let members: Vec<Running> = (0..4)
        .map(|i| {
            start(
                config(&bootstrap, &group, SESSION, HEARTBEAT),
                &format!("m{i}"),
            )
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    let before = wait_stable(&refs, Duration::from_secs(20)).await;

    let (followers, mut stay): (Vec<Running>, Vec<Running>) = {
        let mut leaving = None;
        let mut rest = Vec::new();
        for m in members {
            if leaving.is_none() && !m.handle.current().is_leader() {
                leaving = Some(m);
            } else {
                rest.push(m);
            }
        }
        (leaving.into_iter().collect(), rest)
    };
    let t0 = Instant::now();
    for f in &followers {
        f.handle.leave("the test stops this follower").await;
    }
    let refs: Vec<&Running> = stay.iter().collect();
    let after = wait_stable(&refs, Duration::from_secs(5)).await;
    let elapsed = t0.elapsed();
    measure("leave_to_new_generation", elapsed);
    assert!(after.generation > before.generation);
    assert_eq!(after.leader, before.leader, "the leader stays");
    assert!(
        elapsed < Duration::from_secs(1),
        "new generation after {elapsed:?}"
    );
    for f in followers {
        assert!(f.handle.current().stopped);
    }
    for m in stay.drain(..) {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_dropped_without_leaving_is_removed_after_the_session_timeout() {
    let Some(bootstrap) = kafka_bootstrap("a_member_dropped_without_leaving_is_removed") else {
        return;
    };
    let group = unique_group("crash");
    let mut members: Vec<Running> = (0..3)
        .map(|i| {
            start(
                config(&bootstrap, &group, SESSION, HEARTBEAT),
                &format!("m{i}"),
            )
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    let before = wait_stable(&refs, Duration::from_secs(20)).await;

    let index = members
        .iter()
        .position(|m| !m.handle.current().is_leader())
        .expect("a follower");
    let crashed = members.remove(index);
    let t0 = Instant::now();
    crashed.driver.abort();
    let refs: Vec<&Running> = members.iter().collect();
    let after = wait_stable(&refs, SESSION * 4).await;
    let elapsed = t0.elapsed();
    measure("crash_to_new_generation", elapsed);
    assert!(after.generation > before.generation);
    // The broker counts the session from the last heartbeat it received, at most one
    // interval before the crash.
    assert!(
        elapsed >= SESSION - HEARTBEAT - Duration::from_millis(100),
        "removed after {elapsed:?}, before its session timeout"
    );
    for m in members {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_is_killed_and_another_member_leads() {
    let Some(bootstrap) = kafka_bootstrap("the_leader_is_killed_and_another_member_leads") else {
        return;
    };
    let group = unique_group("leader-kill");
    let mut members: Vec<Running> = (0..3)
        .map(|i| {
            start(
                config(&bootstrap, &group, SESSION, HEARTBEAT),
                &format!("m{i}"),
            )
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    let before = wait_stable(&refs, Duration::from_secs(20)).await;

    let index = members
        .iter()
        .position(|m| m.handle.current().is_leader())
        .expect("a leader");
    let leader = members.remove(index);
    let t0 = Instant::now();
    leader.driver.abort();
    let refs: Vec<&Running> = members.iter().collect();
    let after = wait_stable(&refs, SESSION * 4).await;
    measure("leader_kill_to_new_leader", t0.elapsed());
    assert!(after.generation > before.generation);
    assert_ne!(after.leader, before.leader);
    assert_eq!(
        members
            .iter()
            .filter(|m| m.handle.current().is_leader())
            .count(),
        1
    );
    for m in members {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_member_restarts_within_its_session_without_a_rebalance() {
    let Some(bootstrap) = kafka_bootstrap("a_static_member_restarts_without_a_rebalance") else {
        return;
    };
    let group = unique_group("static");
    let conf = |i: usize| {
        let mut c = config(
            &bootstrap,
            &group,
            Duration::from_secs(6),
            Duration::from_millis(500),
        );
        c.membership.group_instance_id = Some(format!("instance-{i}"));
        c
    };
    let mut members: Vec<Running> = (0..3).map(|i| start(conf(i), &format!("m{i}"))).collect();
    let refs: Vec<&Running> = members.iter().collect();
    let before = wait_stable(&refs, Duration::from_secs(20)).await;
    let mut watch: Vec<_> = members.iter().map(|m| m.handle.events()).collect();
    // Forget how the group formed (the first members may have led a smaller generation).
    for events in &mut watch {
        while events.try_recv().is_some() {}
    }

    // Restart a follower: its driver dies (a static member sends no LeaveGroup anyway), a new
    // process with the same instance id and metadata joins.
    let index = members
        .iter()
        .position(|m| !m.handle.current().is_leader())
        .expect("a follower");
    let old = members.remove(index);
    let old_assignment = old.handle.current().assignment;
    old.driver.abort();
    let t0 = Instant::now();
    let restarted = start(conf(index), &old.name);
    members.insert(index, restarted);
    let refs: Vec<&Running> = members.iter().collect();
    let after = wait_stable(&refs, Duration::from_secs(5)).await;
    measure("static_restart_to_assigned", t0.elapsed());
    assert_eq!(after, before, "same generation and leader: no rebalance");
    assert_eq!(members[index].handle.current().assignment, old_assignment);
    // Nobody else was revoked meanwhile.
    for (i, events) in watch.iter_mut().enumerate() {
        if i == index {
            continue;
        }
        while let Some(event) = events.try_recv() {
            assert!(
                !matches!(
                    event,
                    MemberEvent::Revoked { .. } | MemberEvent::Lost { .. }
                ),
                "member {i} saw {event:?}"
            );
        }
    }
    for m in members {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_with_the_same_instance_id_fences_the_first() {
    let Some(bootstrap) = kafka_bootstrap("a_second_process_with_the_same_instance_id_fences")
    else {
        return;
    };
    let group = unique_group("fenced");
    let conf = || {
        let mut c = config(&bootstrap, &group, SESSION, HEARTBEAT);
        c.membership.group_instance_id = Some("the-only-one".to_owned());
        c
    };
    let protocol = || {
        Arc::new(Roster {
            name: "m0".to_owned(),
        })
    };
    let (first, first_driver) = Member::new(conf(), protocol()).expect("valid member");
    let mut first_events = first.events();
    let first_driver = tokio::spawn(first_driver);
    let mut status = first.status();
    tokio::time::timeout(
        Duration::from_secs(15),
        status.wait_for(|s| s.state == MemberState::Stable),
    )
    .await
    .expect("the first process joins")
    .expect("its driver runs");

    let second = start(conf(), "m0");
    let result = tokio::time::timeout(Duration::from_secs(15), first_driver)
        .await
        .expect("the first driver stops")
        .expect("no panic");
    assert_eq!(
        result,
        Err(kroupier_coordinator::driver::MemberError::Fenced {
            group_instance_id: Some("the-only-one".to_owned())
        })
    );
    let mut saw_fenced = false;
    while let Some(event) = first_events.try_recv() {
        saw_fenced |= matches!(event, MemberEvent::Fenced { .. });
    }
    assert!(saw_fenced, "the first process was told it is fenced");
    assert!(
        first
            .current()
            .lease
            .is_none_or(|l| !first.is_token_valid(&l.token))
    );
    wait_stable(&[&second], Duration::from_secs(10)).await;
    second.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_members_in_one_process_reach_one_stable_generation() {
    let Some(bootstrap) = kafka_bootstrap("two_hundred_members_reach_one_stable_generation") else {
        return;
    };
    let group = unique_group("two-hundred");
    let t0 = Instant::now();
    let members: Vec<Running> = (0..200)
        .map(|i| {
            let mut c = config(
                &bootstrap,
                &group,
                Duration::from_secs(10),
                Duration::from_secs(1),
            );
            c.membership.rebalance_timeout = Duration::from_secs(30);
            c.cluster.connection.request_timeout = Duration::from_secs(40);
            start(c, &format!("m{i:03}"))
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    let view = wait_stable(&refs, Duration::from_secs(90)).await;
    measure("two_hundred_to_stable", t0.elapsed());
    assert_eq!(
        members
            .iter()
            .filter(|m| m.handle.current().is_leader())
            .count(),
        1,
        "{view:?}"
    );
    // Leave all at once.
    let closing: Vec<_> = members
        .into_iter()
        .map(|m| tokio::spawn(m.handle.close()))
        .collect();
    for c in closing {
        c.await.expect("close");
    }
}

/// Whether the cluster tests may kill and restart brokers: only when `KROUPIER_KAFKA_CLUSTER=1`
/// says the cluster at the bootstrap address is theirs (`scripts/kafka start --brokers 3`, with
/// `KROUPIER_KAFKA_STATE` naming its state directory if it is not `.kafka`).
fn cluster_tests(test: &str) -> Option<String> {
    let bootstrap = kafka_bootstrap(test)?;
    if std::env::var("KROUPIER_KAFKA_CLUSTER").is_ok_and(|v| v.trim() == "1") {
        Some(bootstrap)
    } else {
        eprintln!(
            "SKIP {test}: it kills brokers; set KROUPIER_KAFKA_CLUSTER=1 with a cluster of its own \
             (scripts/kafka start --brokers 3)"
        );
        None
    }
}

fn coordinator_node(members: &[&Running]) -> i32 {
    members[0]
        .handle
        .current()
        .coordinator
        .expect("a coordinator")
        .node_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_recover_when_the_coordinator_broker_restarts() {
    let Some(bootstrap) = cluster_tests("members_recover_when_the_coordinator_broker_restarts")
    else {
        return;
    };
    let group = unique_group("broker-restart");
    let members: Vec<Running> = (0..3)
        .map(|i| {
            start(
                config(&bootstrap, &group, SESSION, HEARTBEAT),
                &format!("m{i}"),
            )
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    wait_stable(&refs, Duration::from_secs(20)).await;
    let node = coordinator_node(&refs).to_string();

    let t0 = Instant::now();
    kafka_script(&["kill-node", &node]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    kafka_script(&["start-node", &node]);
    wait_stable(&refs, Duration::from_secs(60)).await;
    measure("coordinator_restart_to_stable", t0.elapsed());
    for m in members {
        m.handle.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_find_the_new_coordinator_when_its_broker_dies() {
    let Some(bootstrap) = cluster_tests("members_find_the_new_coordinator_when_its_broker_dies")
    else {
        return;
    };
    if bootstrap.split(',').count() < 3 {
        eprintln!("SKIP members_find_the_new_coordinator_when_its_broker_dies: needs 3 brokers");
        return;
    }
    let group = unique_group("coordinator-failover");
    let members: Vec<Running> = (0..3)
        .map(|i| {
            start(
                config(&bootstrap, &group, SESSION, HEARTBEAT),
                &format!("m{i}"),
            )
        })
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    wait_stable(&refs, Duration::from_secs(20)).await;
    let node = coordinator_node(&refs);

    let t0 = Instant::now();
    kafka_script(&["kill-node", &node.to_string()]);
    // The controller fences the dead broker after `broker.session.timeout.ms` (9 s), then the
    // offsets partition, and with it the group, moves.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let moved = refs.iter().all(|m| {
            m.handle
                .current()
                .coordinator
                .is_some_and(|c| c.node_id != node)
        });
        if moved && stable_view(&refs).is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the members did not move to a new coordinator"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    measure("coordinator_failover_to_stable", t0.elapsed());
    kafka_script(&["start-node", &node.to_string()]);
    for m in members {
        m.handle.close().await;
    }
}
