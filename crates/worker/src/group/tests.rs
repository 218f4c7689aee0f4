//! Workers on the embedded coordinator (Kafka's wire protocol on a local socket, real time):
//! what the leader writes into the kroupier assignment matches what SyncGroup delivered, and a
//! revoked worker rejoins only after its tasks stopped (the join gate).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use kroupier_coordinator::membership::MemberState;

use crate::protocol::Assignment;
use crate::{Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerEvent, WorkerHandle};
use test_support::{config, embedded};

#[derive(serde::Deserialize)]
struct Idle {}

impl Task for Idle {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        ctx.cancelled().await;
        Ok(())
    }
}

/// How many instances of each task run right now, and the most ever seen at once.
static RUNNING: Mutex<BTreeMap<String, (usize, usize)>> = Mutex::new(BTreeMap::new());

/// Takes 800 ms to stop after it is revoked, and counts its running instances.
#[derive(serde::Deserialize)]
struct SlowStop {}

impl Task for SlowStop {
    async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
        let id = ctx.task_id().to_owned();
        {
            let mut running = RUNNING.lock().unwrap();
            let (now, max) = running.entry(id.clone()).or_default();
            *now += 1;
            *max = (*max).max(*now);
        }
        ctx.cancelled().await;
        tokio::time::sleep(Duration::from_millis(800)).await;
        RUNNING.lock().unwrap().entry(id).or_default().0 -= 1;
        Ok(())
    }
}

async fn worker(bootstrap: &str, id: &str) -> WorkerHandle {
    let config = config(bootstrap, "assign-context", id);
    let mut builder = WorkerBuilder::new(config).register::<Idle>("idle");
    for i in 0..4 {
        builder = builder.task(TaskSpec::new(
            format!("t-{i}"),
            "idle",
            serde_json::json!({}),
        ));
    }
    builder.spawn().await.expect("the worker starts")
}

/// Waits (up to 20 s of real time) until the worker's member is stable; returns its
/// generation, leader and assignment bytes.
async fn stable(worker: &WorkerHandle) -> (i32, String, bytes::Bytes) {
    for _ in 0..400 {
        let status = worker.member().current();
        if let (MemberState::Stable, Some(generation), Some(assignment)) =
            (status.state, status.generation, status.assignment)
        {
            return (generation.generation_id, generation.leader_id, assignment);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the worker never became stable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decoded_assignment_names_the_generation_and_leader_of_sync_group() {
    let coordinator = embedded().await;
    let bootstrap = coordinator.bootstrap();

    // A first worker forms a generation and leaves: the group's generation counter moves on.
    let first = worker(&bootstrap, "w1").await;
    let (g1, _, _) = stable(&first).await;
    first.shutdown().await.expect("clean shutdown");

    // A fresh worker, which saw no earlier generation, leads the next one.
    let second = worker(&bootstrap, "w2").await;
    let (generation, leader, bytes) = stable(&second).await;
    assert!(generation > g1, "{generation} after {g1}");
    let decoded = Assignment::decode(&bytes).expect("a kroupier assignment");
    assert_eq!(decoded.generation, generation, "the SyncGroup's generation");
    assert_eq!(decoded.leader, leader, "the JoinGroup's leader");
    assert_eq!(decoded.tasks.len(), 4);
    second.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eager_worker_rejoins_only_after_its_revoked_tasks_stopped() {
    let coordinator = embedded().await;
    let bootstrap = coordinator.bootstrap();
    let spawn = |id: &'static str| {
        let mut config = config(&bootstrap, "join-gate", id);
        config.tasks.graceful_stop_timeout = Duration::from_secs(3);
        let mut builder = WorkerBuilder::new(config)
            .assignor(kroupier_assignor::Sticky)
            .register::<SlowStop>("slow");
        for i in 0..4 {
            builder = builder.task(TaskSpec::new(
                format!("gate-{i}"),
                "slow",
                serde_json::json!({}),
            ));
        }
        builder.spawn()
    };
    let first = spawn("g1").await.expect("the worker starts");
    let (g1, _, _) = stable(&first).await;

    // A second worker joins: the eager first one revokes everything. Its tasks take 800 ms to
    // stop, and the gate holds its JoinGroup (hence the new generation) until they have.
    let second = spawn("g2").await.expect("the worker starts");
    let mut settled = false;
    for _ in 0..400 {
        let (a, b) = (first.member().current(), second.member().current());
        let generation = |s: &kroupier_coordinator::driver::MemberStatus| {
            s.generation.as_ref().map(|g| g.generation_id)
        };
        if a.state == MemberState::Stable
            && b.state == MemberState::Stable
            && generation(&a) == generation(&b)
            && generation(&a) > Some(g1)
            && first.runtime().owned().len() + second.runtime().owned().len() == 4
        {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = RUNNING.lock().unwrap().clone();
    for (task, (_, max)) in &running {
        assert_eq!(*max, 1, "{task} ran twice at once");
    }
    assert!(settled, "the two workers never shared the tasks");
    assert_eq!(second.runtime().owned().len(), 2);
    assert_eq!(running.len(), 4, "{running:?}");
    first.shutdown().await.expect("clean shutdown");
    second.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn the_status_port_stays_bound_while_the_loop_holds_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (served, guard) = super::start::hold_port(listener).unwrap();
    drop(served);
    // The server stopped, the loop lives: the port is still bound (nobody accepts, the kernel
    // queues the connection), so nobody takes this process for gone.
    assert!(std::net::TcpStream::connect(addr).is_ok());
    drop(guard);
    let refused = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[cfg(test)]
#[path = "test_support.rs"]
mod test_support;

#[cfg(test)]
#[path = "store_tests.rs"]
mod store_tests;

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod secrets_tests;

#[cfg(test)]
#[path = "checkpoint_admin_tests.rs"]
mod checkpoint_admin_tests;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assigned_event_says_where_the_rebalance_time_went() {
    let coordinator = embedded().await;
    let bootstrap = coordinator.bootstrap();
    let first = worker(&bootstrap, "w1").await;
    stable(&first).await;
    let mut events = first.events();

    // A second worker joins: the first one rejoins, leads the round and gives up two tasks.
    let second = worker(&bootstrap, "w2").await;
    let mut led = None;
    while led.is_none() {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("an assignment within 20 s")
            .expect("the worker's events");
        let WorkerEvent::Assigned { leader, times, .. } = event else {
            continue;
        };
        let rebalance = times.member.rebalance.expect("the rebalance's length");
        let join = times.member.join.expect("the JoinGroup's round trip");
        let sync = times.member.sync.expect("the SyncGroup's round trip");
        assert!(join + sync <= rebalance, "{times:?}");
        assert!(times.apply < Duration::from_secs(5), "{times:?}");
        if leader {
            let assign = times.member.assign.expect("the leader's assign time");
            assert!(join + assign + sync <= rebalance, "{times:?}");
            led = Some(times);
        } else {
            assert_eq!(
                times.member.assign, None,
                "only the leader assigns: {times:?}"
            );
        }
    }
    second.shutdown().await.expect("clean shutdown");
    first.shutdown().await.expect("clean shutdown");
}

#[cfg(test)]
#[path = "generator_tests.rs"]
mod generator_tests;

#[cfg(test)]
#[path = "exactly_once_tests.rs"]
mod exactly_once_tests;
