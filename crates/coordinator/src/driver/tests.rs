//! The driver on paused tokio time against the model coordinator of the election tests,
//! through a fake transport: joins, a blocked assignor, shutdown by drop, self-fencing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::transport::{SendFuture, Transport};
use super::{Events, Member, MemberError, MemberEvent, MemberHandle};
use crate::connection::ConnectionError;
use crate::connection::Detail;
use crate::election::model_coordinator::{Broker, HEARTBEAT, REBALANCE, SESSION};
use crate::election::{ElectionEvent, LeaderElection};
use crate::membership::{
    AssignContext, AssignError, Coordinator, GroupMember, GroupProtocol, LostReason,
    MemberAssignment, MemberState, MembershipConfig, Outgoing, ProtocolMetadata, Request,
    RequestTag, Response,
};

struct Net {
    broker: Broker,
    waiting: HashMap<(usize, RequestTag), oneshot::Sender<Response>>,
    next_tag: u64,
}

impl Net {
    fn dispatch(&mut self) {
        while let Some((owner, tag, response)) = self.broker.out.pop_front() {
            if let Some(tx) = self.waiting.remove(&(owner, tag)) {
                let _ = tx.send(response);
            }
        }
    }
}

/// The model coordinator, shared by every member's fake transport, ticked every 10 ms.
#[derive(Clone)]
struct Model(Arc<Mutex<Net>>);

impl Model {
    fn start() -> Self {
        let model = Self(Arc::new(Mutex::new(Net {
            broker: Broker::new(),
            waiting: HashMap::new(),
            next_tag: 0,
        })));
        let ticking = model.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let mut net = ticking.net();
                net.broker.tick(super::run::now());
                net.dispatch();
            }
        });
        model
    }

    fn net(&self) -> std::sync::MutexGuard<'_, Net> {
        self.0.lock().unwrap()
    }

    fn transport(&self, owner: usize) -> Arc<Fake> {
        Arc::new(Fake {
            model: self.clone(),
            owner,
            partitioned: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            sent: Mutex::new(Vec::new()),
            joins: Mutex::new(Vec::new()),
        })
    }
}

/// One member's network: requests go to the model unless partitioned, where they time out.
struct Fake {
    model: Model,
    owner: usize,
    partitioned: AtomicBool,
    /// Every connection is refused at once (nothing listens at the address).
    refused: AtomicBool,
    sent: Mutex<Vec<&'static str>>,
    /// The first protocol's metadata of every JoinGroup sent.
    joins: Mutex<Vec<Bytes>>,
}

impl Transport for Fake {
    fn send(self: Arc<Self>, request: Request, timeout: Duration) -> SendFuture {
        Box::pin(async move {
            let name = match &request {
                Request::FindCoordinator(_) => "FindCoordinator",
                Request::JoinGroup(_) => "JoinGroup",
                Request::SyncGroup(_) => "SyncGroup",
                Request::Heartbeat(_) => "Heartbeat",
                Request::LeaveGroup(_) => "LeaveGroup",
            };
            self.sent.lock().unwrap().push(name);
            if let Request::JoinGroup(join) = &request
                && let Some(first) = join.protocols.first()
            {
                self.joins.lock().unwrap().push(first.metadata.clone());
            }
            let failed = || {
                ConnectionError::from(Detail::RequestTimeout {
                    addr: "model".to_owned(),
                    api_key: kafka_protocol::messages::ApiKey::Heartbeat,
                    timeout,
                })
            };
            if self.refused.load(Ordering::SeqCst) {
                return Err(ConnectionError::from(Detail::Connect {
                    addr: "127.0.0.1:1".to_owned(),
                    reason: "Connection refused (os error 111)".to_owned(),
                }));
            }
            if self.partitioned.load(Ordering::SeqCst) {
                tokio::time::sleep(timeout).await;
                return Err(failed());
            }
            let response = {
                let mut net = self.model.net();
                net.next_tag += 1;
                let tag = RequestTag(net.next_tag);
                let (tx, rx) = oneshot::channel();
                net.waiting.insert((self.owner, tag), tx);
                let out = Outgoing {
                    tag,
                    timeout,
                    request,
                };
                net.broker.handle(super::run::now(), self.owner, &out);
                net.dispatch();
                rx
            };
            match tokio::time::timeout(timeout, response).await {
                Ok(Ok(response)) => Ok(response),
                _ => Err(failed()),
            }
        })
    }

    fn set_coordinator(&self, _coordinator: Option<&Coordinator>) {}
}

fn config() -> MembershipConfig {
    let mut config = MembershipConfig::new("driven");
    config.session_timeout = SESSION;
    config.heartbeat_interval = HEARTBEAT;
    config.rebalance_timeout = REBALANCE;
    config.min_session_timeout = Duration::from_secs(1);
    config
}

fn start<P: GroupProtocol>(
    model: &Model,
    owner: usize,
    protocol: Arc<P>,
) -> (MemberHandle, Arc<Fake>, JoinHandle<Result<(), MemberError>>) {
    start_with(config(), model, owner, protocol)
}

fn start_with<P: GroupProtocol>(
    config: MembershipConfig,
    model: &Model,
    owner: usize,
    protocol: Arc<P>,
) -> (MemberHandle, Arc<Fake>, JoinHandle<Result<(), MemberError>>) {
    let transport = model.transport(owner);
    let (handle, driver) =
        Member::with_transport(config, protocol, transport.clone()).expect("valid member");
    (handle, transport, tokio::spawn(driver))
}

fn drain(events: &mut Events<MemberEvent>) -> Vec<MemberEvent> {
    let mut out = Vec::new();
    while let Some(event) = events.try_recv() {
        out.push(event);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn three_members_join_and_exactly_one_leads() {
    let model = Model::start();
    let members: Vec<_> = ["b", "a", "c"]
        .iter()
        .enumerate()
        .map(|(i, id)| start(&model, i, Arc::new(LeaderElection::new(*id, true))))
        .collect();
    let mut events: Vec<_> = members.iter().map(|m| m.0.events()).collect();
    tokio::time::sleep(SESSION).await;

    let statuses: Vec<_> = members.iter().map(|m| m.0.current()).collect();
    let generation = statuses[0].generation.clone().expect("a generation");
    for s in &statuses {
        assert_eq!(s.state, MemberState::Stable);
        assert_eq!(
            s.generation.as_ref().map(|g| g.generation_id),
            Some(generation.generation_id)
        );
        assert!(s.metrics.heartbeats_sent > 0);
        assert!(s.metrics.last_rebalance_latency.is_some());
    }
    assert_eq!(statuses.iter().filter(|s| s.is_leader()).count(), 1);
    for e in &mut events {
        let seen = drain(e);
        assert!(
            matches!(seen.first(), Some(MemberEvent::CoordinatorChanged { .. })),
            "{seen:?}"
        );
        assert!(seen.iter().any(|e| matches!(e, MemberEvent::Joined { .. })));
        let last = seen
            .iter()
            .rev()
            .find(|e| matches!(e, MemberEvent::Assigned { .. }));
        assert!(
            matches!(last, Some(MemberEvent::Assigned { generation: g, .. }) if g.generation_id == generation.generation_id)
        );
    }
    for m in &members {
        let lease = m.0.current().lease.expect("a lease");
        assert!(m.0.is_token_valid(&lease.token));
    }
}

/// The election, with an assignor that waits until the test lets it go.
struct GatedAssignor {
    inner: LeaderElection,
    entered: std::sync::mpsc::Sender<()>,
    gate: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl GroupProtocol for GatedAssignor {
    fn protocol_type(&self) -> &str {
        self.inner.protocol_type()
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        self.inner.protocols()
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        let _ = self.entered.send(());
        let _ = self.gate.lock().unwrap().recv();
        self.inner.assign(context, members)
    }
}

/// Lets the runtime's tasks run, without moving virtual time, until `done` (up to 5 s of real
/// time, for the assignor's thread).
async fn wait_real(mut done: impl FnMut() -> bool, what: &str) {
    for _ in 0..5_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("{what}");
}

async fn advance(by: Duration) {
    let step = Duration::from_millis(10);
    let mut left = by;
    while !left.is_zero() {
        let d = step.min(left);
        tokio::time::advance(d).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        left -= d;
    }
}

#[tokio::test(start_paused = true)]
async fn heartbeats_go_on_while_the_assignor_blocks() {
    let model = Model::start();
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, gate) = std::sync::mpsc::channel();
    let protocol = Arc::new(GatedAssignor {
        inner: LeaderElection::new("a", true),
        entered: entered_tx,
        gate: Mutex::new(gate),
    });
    let (handle, _net, _driver) = start(&model, 0, protocol);
    let mut events = handle.events();
    // The join needs no timer: let the tasks run (in real time) until the assignor blocks.
    wait_real(|| entered.try_recv().is_ok(), "the assignor never ran").await;
    let before = handle.current().metrics.heartbeats_sent;
    // Three session timeouts pass while the assignor blocks its thread.
    advance(SESSION * 3).await;
    let status = handle.current();
    assert_eq!(status.state, MemberState::AwaitingAssignment);
    let sent = status.metrics.heartbeats_sent - before;
    assert!(sent >= 15, "only {sent} heartbeats in 18 s");
    assert!(
        !drain(&mut events)
            .iter()
            .any(|e| matches!(e, MemberEvent::Lost { .. })),
        "the member fenced itself while its heartbeats succeeded"
    );
    release.send(()).unwrap();
    wait_real(
        || handle.current().state == MemberState::Stable,
        "no SyncGroup after the assignment",
    )
    .await;
    // The assigned event says where the rebalance's time went: the blocked assignor, not the
    // protocol's waits.
    let seen = drain(&mut events);
    let Some(MemberEvent::Assigned { times, .. }) = seen
        .iter()
        .find(|e| matches!(e, MemberEvent::Assigned { .. }))
    else {
        panic!("no assigned event: {seen:?}");
    };
    let assign = times.assign.expect("the leader's assign time");
    assert!(assign >= SESSION * 3, "{times:?}");
    let (join, sync) = (times.join.expect("join"), times.sync.expect("sync"));
    assert!(join < SESSION && sync < SESSION, "{times:?}");
    assert!(
        times.rebalance.expect("rebalance") >= join + assign,
        "{times:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_leaves_the_group_and_ends_the_driver() {
    let model = Model::start();
    let (handle, net, driver) = start(&model, 0, Arc::new(LeaderElection::new("a", true)));
    tokio::time::sleep(SESSION).await;
    assert_eq!(handle.current().state, MemberState::Stable);
    assert_eq!(model.net().broker.members.len(), 1);
    let status = handle.status();
    drop(handle);
    assert_eq!(driver.await.expect("no panic"), Ok(()));
    assert!(net.sent.lock().unwrap().contains(&"LeaveGroup"));
    assert!(model.net().broker.members.is_empty(), "the member left");
    assert!(status.borrow().stopped);
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_member_reports_lost_before_its_session_can_expire() {
    let model = Model::start();
    let (handle, net, _driver) = start(&model, 0, Arc::new(LeaderElection::new("a", true)));
    tokio::time::sleep(SESSION).await;
    let lease = handle.current().lease.expect("a lease");
    let mut events = handle.events();
    drain(&mut events);

    net.partitioned.store(true, Ordering::SeqCst);
    let cut = tokio::time::Instant::now().into_std();
    let lost = loop {
        match events.recv().await.expect("events") {
            MemberEvent::Lost { reason, .. } => break reason,
            _ => continue,
        }
    };
    let at = tokio::time::Instant::now().into_std();
    assert!(
        matches!(lost, LostReason::HeartbeatTimeout { .. }),
        "{lost:?}"
    );
    // The lease ended at its deadline, which is before the broker's session ends (it counts
    // from the later receipt of the last heartbeat).
    assert!(
        at >= lease.valid_until,
        "lost before the lease it held ended"
    );
    assert!(at - cut < SESSION, "lost {:?} after the cut", at - cut);
    assert!(!handle.is_token_valid(&lease.token));
}

#[tokio::test(start_paused = true)]
async fn a_member_that_reaches_no_broker_says_why_after_3_s_and_stops_once_one_answers() {
    let model = Model::start();
    let transport = model.transport(0);
    transport.refused.store(true, Ordering::SeqCst);
    let election = Arc::new(LeaderElection::new("a", true));
    let (handle, driver) =
        Member::with_transport(config(), election, transport.clone()).expect("valid member");
    let _driver = tokio::spawn(driver);
    tokio::time::sleep(Duration::from_millis(2900)).await;
    assert_eq!(handle.current().unreachable, None, "too early");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let why = handle.current().unreachable.expect("unreachable after 3 s");
    assert!(
        why.starts_with("no usable connection to Kafka for 3 s"),
        "{why}"
    );
    assert!(
        why.contains("could not connect to broker 127.0.0.1:1: Connection refused"),
        "{why}"
    );
    assert!(
        why.contains("security.protocol") && why.contains("bootstrap"),
        "{why}"
    );
    // A broker answers: the member joins and the reason is gone.
    transport.refused.store(false, Ordering::SeqCst);
    tokio::time::sleep(SESSION).await;
    let status = handle.current();
    assert_eq!(status.state, MemberState::Stable);
    assert_eq!(status.unreachable, None);
}

#[tokio::test(start_paused = true)]
async fn a_resigned_elector_reports_lost_and_never_leads_again() {
    let model = Model::start();
    let election = Arc::new(LeaderElection::new("a", true));
    let (handle, _net, _driver) = start(&model, 0, election.clone());
    // The election's owner: it hands the member's events to the election.
    let mut events = handle.events();
    let feed = |events: &mut Events<MemberEvent>| {
        while let Some(event) = events.try_recv() {
            election.handle_event(&event);
        }
    };
    tokio::time::sleep(SESSION).await;
    feed(&mut events);
    assert!(matches!(
        election.poll_event(),
        Some(ElectionEvent::Leader { .. })
    ));
    election.resign();
    assert!(matches!(
        election.poll_event(),
        Some(ElectionEvent::Lost { .. })
    ));
    handle
        .rejoin("a new generation after the resignation")
        .await
        .unwrap();
    tokio::time::sleep(SESSION).await;
    feed(&mut events);
    assert_eq!(handle.current().state, MemberState::Stable);
    assert_eq!(
        election.poll_event(),
        None,
        "a resigned member takes no role"
    );
}

/// The election with a metadata nonce the test can bump, a count of revocations (both
/// appended to the metadata), and an assignor that fails once. The revocations are counted
/// from the member's event stream (once the test hands it over), caught up on right before
/// each JoinGroup.
struct Changing {
    inner: LeaderElection,
    nonce: std::sync::atomic::AtomicU8,
    revocations: std::sync::atomic::AtomicU8,
    fail_once: AtomicBool,
    events: Mutex<Option<Events<MemberEvent>>>,
}

impl Changing {
    fn new(id: &str, fail_once: bool) -> Self {
        Self {
            inner: LeaderElection::new(id, true),
            nonce: std::sync::atomic::AtomicU8::new(0),
            revocations: std::sync::atomic::AtomicU8::new(0),
            fail_once: AtomicBool::new(fail_once),
            events: Mutex::new(None),
        }
    }

    /// Counts the revocations the member's stream delivered so far.
    fn catch_up(&self) {
        if let Some(events) = self.events.lock().unwrap().as_mut() {
            while let Some(event) = events.try_recv() {
                if matches!(event, MemberEvent::Revoked { .. }) {
                    self.revocations.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}

impl GroupProtocol for Changing {
    fn protocol_type(&self) -> &str {
        self.inner.protocol_type()
    }

    fn protocols(&self) -> Vec<ProtocolMetadata> {
        self.catch_up();
        let mut protocols = self.inner.protocols();
        let mut metadata = protocols[0].metadata.to_vec();
        metadata.push(self.nonce.load(Ordering::SeqCst));
        metadata.push(self.revocations.load(Ordering::SeqCst));
        protocols[0].metadata = metadata.into();
        protocols
    }

    fn assign(
        &self,
        context: &AssignContext,
        members: &[GroupMember],
    ) -> Result<Vec<MemberAssignment>, AssignError> {
        if self.fail_once.swap(false, Ordering::SeqCst) {
            return Err(AssignError::Failed("the first plan is refused".to_owned()));
        }
        self.inner.assign(context, members)
    }
}

#[tokio::test(start_paused = true)]
async fn changed_metadata_makes_a_follower_start_a_rebalance() {
    let model = Model::start();
    let protocols = [
        Arc::new(Changing::new("a", false)),
        Arc::new(Changing::new("b", false)),
    ];
    let handles: Vec<MemberHandle> = protocols
        .iter()
        .enumerate()
        .map(|(i, p)| start(&model, i, p.clone()).0)
        .collect();
    tokio::time::sleep(SESSION).await;
    let before = handles[0]
        .current()
        .generation
        .expect("joined")
        .generation_id;
    let follower = handles
        .iter()
        .position(|h| !h.current().is_leader())
        .expect("a follower");

    // Unchanged metadata: no rejoin, no rebalance.
    handles[follower].update_metadata().await.unwrap();
    tokio::time::sleep(SESSION).await;
    for h in &handles {
        assert_eq!(
            h.current().generation.map(|g| g.generation_id),
            Some(before)
        );
    }

    protocols[follower].nonce.store(1, Ordering::SeqCst);
    handles[follower].update_metadata().await.unwrap();
    tokio::time::sleep(SESSION).await;
    for h in &handles {
        let status = h.current();
        assert_eq!(status.state, MemberState::Stable);
        assert!(status.generation.expect("joined").generation_id > before);
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_assignment_is_reported_and_the_leader_rejoins() {
    let model = Model::start();
    let (handle, _, _driver) = start(&model, 0, Arc::new(Changing::new("a", true)));
    let mut events = handle.events();
    tokio::time::sleep(SESSION).await;
    let seen = drain(&mut events);
    assert!(
        seen.iter()
            .any(|e| matches!(e, MemberEvent::AssignmentFailed { .. })),
        "{seen:?}"
    );
    assert_eq!(handle.current().state, MemberState::Stable);
    assert_eq!(handle.current().metrics.rebalances_total, 1);
}

#[tokio::test(start_paused = true)]
async fn the_rejoin_after_a_revocation_carries_the_metadata_of_the_revoked_event() {
    let model = Model::start();
    let first = Arc::new(Changing::new("a", false));
    let (handle, net, _driver) = start(&model, 0, first.clone());
    *first.events.lock().unwrap() = Some(handle.events());
    tokio::time::sleep(SESSION).await;
    assert_eq!(handle.current().state, MemberState::Stable);
    // MEMBER_ID_REQUIRED, then the join with the member id (KIP-394).
    let before = net.joins.lock().unwrap().len();

    // A second member joins: the first one's heartbeat gets REBALANCE_IN_PROGRESS, it revokes
    // and rejoins in the same step of its driver.
    let (_other, _, _other_driver) = start(&model, 1, Arc::new(Changing::new("b", false)));
    tokio::time::sleep(SESSION).await;
    assert_eq!(handle.current().state, MemberState::Stable);
    assert_eq!(first.revocations.load(Ordering::SeqCst), 1);
    let joins = net.joins.lock().unwrap().clone();
    assert_eq!(joins.len(), before + 1, "one rejoin");
    assert_eq!(joins[before - 1].last(), Some(&0));
    assert_eq!(
        joins[before].last(),
        Some(&1),
        "the JoinGroup was built after the Revoked event was delivered"
    );
}

#[tokio::test(start_paused = true)]
async fn with_the_join_gate_the_rejoin_waits_for_revocations_done() {
    let model = Model::start();
    let mut gated = config();
    gated.await_revocation = true;
    let (handle, net, _driver) = start_with(gated, &model, 0, Arc::new(Changing::new("a", false)));
    tokio::time::sleep(SESSION).await;
    let generation = handle.current().generation.expect("joined").generation_id;
    let joins = net.joins.lock().unwrap().len();
    let mut events = handle.events();

    let (other, _, _other_driver) = start(&model, 1, Arc::new(Changing::new("b", false)));
    let revoked = loop {
        match events.recv().await.expect("events") {
            MemberEvent::Revoked { generation, .. } => break generation.generation_id,
            _ => continue,
        }
    };
    assert_eq!(revoked, generation);
    // Two seconds of revocation work: heartbeats go on, the JoinGroup waits.
    let heartbeats = handle.current().metrics.heartbeats_sent;
    advance(Duration::from_secs(2)).await;
    assert_eq!(
        net.joins.lock().unwrap().len(),
        joins,
        "no JoinGroup before the ack"
    );
    assert!(handle.current().metrics.heartbeats_sent >= heartbeats + 2);
    assert_eq!(handle.current().state, MemberState::Unjoined);
    assert_eq!(handle.current().join_held, Some(revoked));

    handle.revocations_done(revoked).await.unwrap();
    advance(SESSION).await;
    assert_eq!(net.joins.lock().unwrap().len(), joins + 1);
    for h in [&handle, &other] {
        let status = h.current();
        assert_eq!(status.state, MemberState::Stable);
        assert!(status.generation.expect("joined").generation_id > generation);
    }
    assert!(
        !drain(&mut events)
            .iter()
            .any(|e| matches!(e, MemberEvent::Lost { .. })),
        "the held generation stayed alive"
    );
}
