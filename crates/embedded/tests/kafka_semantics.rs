//! Kafka's classic-group semantics, asserted over the wire against the embedded coordinator and,
//! when `KROUPIER_KAFKA_BOOTSTRAP` names one, against Apache Kafka too (started by
//! `scripts/kafka start`, whose test settings are mirrored here: initial rebalance delay 0,
//! session timeouts 1 s ..= 300 s). The expectations are Kafka's; where the embedded coordinator
//! differs, it is wrong.

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    DescribeGroupsRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, ListGroupsRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire::{self, WireRequest};
use kroupier_embedded::EmbeddedCoordinator;
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const NONE: i16 = 0;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const REBALANCE_IN_PROGRESS: i16 = 27;
const GROUP_ID_NOT_FOUND: i16 = 69;
const MEMBER_ID_REQUIRED: i16 = 79;
const FENCED_INSTANCE_ID: i16 = 82;

const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `scenario` against the embedded coordinator, then against Kafka if one is configured.
async fn on_both<F, Fut>(name: &str, scenario: F)
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let embedded = EmbeddedCoordinator::builder()
        .max_session_timeout(Duration::from_secs(300))
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let unique = format!("{name}-{}-{}", std::process::id(), rand_suffix());
    scenario(embedded.bootstrap(), format!("{unique}-embedded")).await;
    embedded.shutdown().await;
    match std::env::var("KROUPIER_KAFKA_BOOTSTRAP") {
        Ok(kafka) if !kafka.trim().is_empty() => {
            let first = kafka
                .split(',')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            scenario(first, format!("{unique}-kafka")).await;
        }
        _ => eprintln!(
            "{name}: KROUPIER_KAFKA_BOOTSTRAP is not set; checked the embedded coordinator only"
        ),
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

struct Client {
    framed: Framed<TcpStream, LengthDelimitedCodec>,
    next: i32,
}

impl Client {
    async fn connect(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let codec = wire::frame_codec(wire::DEFAULT_MAX_RESPONSE_FRAME);
        Self {
            framed: Framed::new(stream, codec),
            next: 0,
        }
    }

    async fn send<R: WireRequest>(&mut self, req: &R, version: i16) -> (i32, i16) {
        self.next += 1;
        let frame = wire::encode_request(req, version, self.next, Some("kroupier-semantics"))
            .expect("encode");
        self.framed.send(frame).await.expect("send");
        (self.next, version)
    }

    async fn receive<R: WireRequest>(&mut self, (id, version): (i32, i16)) -> R::Response {
        let frame = tokio::time::timeout(PATIENCE, self.framed.next())
            .await
            .expect("an answer in time")
            .expect("open connection")
            .expect("a frame");
        let (header, body) =
            wire::decode_response::<R::Response>(frame.freeze(), version).expect("decode");
        assert_eq!(header.correlation_id, id);
        body
    }

    async fn call<R: WireRequest>(&mut self, req: &R, version: i16) -> R::Response {
        let sent = self.send(req, version).await;
        self.receive::<R>(sent).await
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn join(group: &str, member: &str, protocols: &[(&str, &'static [u8])]) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_protocol_type(s("kroupier"))
        .with_protocols(
            protocols
                .iter()
                .map(|(n, m)| {
                    JoinGroupRequestProtocol::default()
                        .with_name(s(n))
                        .with_metadata(Bytes::from_static(m))
                })
                .collect(),
        )
}

/// A SyncGroup v5+ must name the protocol type and protocol (`p` here; the rebalance scenario
/// sets the one the vote chose).
fn sync(
    group: &str,
    member: &str,
    generation: i32,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_protocol_type(Some(s("kroupier")))
        .with_protocol_name(Some(s("p")))
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_assignments(
            assignments
                .iter()
                .map(|(id, a)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(id))
                        .with_assignment(Bytes::from_static(a))
                })
                .collect(),
        )
}

fn heartbeat(group: &str, member: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(member))
}

/// KIP-394 join at v9: returns the (parked or immediate) answer to the second JoinGroup.
async fn join_v9(c: &mut Client, req: JoinGroupRequest) -> (i32, i16) {
    let first = c.call(&req, 9).await;
    if req.group_instance_id.is_some() {
        panic!("use join_static for static members");
    }
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    c.send(&req.with_member_id(first.member_id), 9).await
}

#[tokio::test]
async fn unknown_groups() {
    on_both("unknown", |addr, group| async move {
        let mut c = Client::connect(&addr).await;
        assert_eq!(
            c.call(&heartbeat(&group, "m-1", 1), 4).await.error_code,
            UNKNOWN_MEMBER_ID
        );
        assert_eq!(
            c.call(&sync(&group, "m-1", 1, &[]), 5).await.error_code,
            UNKNOWN_MEMBER_ID
        );
        // From v5 the protocol type and name are mandatory.
        let unnamed = sync(&group, "m-1", 1, &[]).with_protocol_name(None);
        assert_eq!(
            c.call(&unnamed, 5).await.error_code,
            INCONSISTENT_GROUP_PROTOCOL
        );
        assert_eq!(c.call(&unnamed, 4).await.error_code, UNKNOWN_MEMBER_ID);
        let r = c.call(&join(&group, "m-1", &[("p", b"")]), 9).await;
        assert_eq!(r.error_code, UNKNOWN_MEMBER_ID);
        let leave = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&group)))
            .with_members(vec![MemberIdentity::default().with_member_id(s("m-1"))]);
        let r = c.call(&leave, 5).await;
        assert_eq!(
            (r.error_code, r.members[0].error_code),
            (NONE, UNKNOWN_MEMBER_ID)
        );
        let d = c
            .call(
                &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                5,
            )
            .await;
        assert_eq!(
            (d.groups[0].error_code, d.groups[0].group_state.as_str()),
            (NONE, "Dead")
        );
        let d = c
            .call(
                &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                6,
            )
            .await;
        assert_eq!(d.groups[0].error_code, GROUP_ID_NOT_FOUND);
    })
    .await;
}

#[tokio::test]
async fn join_validation() {
    on_both("validation", |addr, group| async move {
        let mut c = Client::connect(&addr).await;
        let short = join(&group, "", &[("p", b"")]).with_session_timeout_ms(999);
        assert_eq!(c.call(&short, 9).await.error_code, INVALID_SESSION_TIMEOUT);
        let long = join(&group, "", &[("p", b"")]).with_session_timeout_ms(300_001);
        assert_eq!(c.call(&long, 9).await.error_code, INVALID_SESSION_TIMEOUT);
        let no_type = join(&group, "", &[("p", b"")]).with_protocol_type(s(""));
        assert_eq!(
            c.call(&no_type, 5).await.error_code,
            INCONSISTENT_GROUP_PROTOCOL
        );
        // A member in, then one of another protocol type and one with no common protocol.
        let first = c.call(&join(&group, "", &[("p", b"")]), 3).await;
        assert_eq!(first.error_code, NONE);
        let mut d = Client::connect(&addr).await;
        let other_type = join(&group, "", &[("p", b"")]).with_protocol_type(s("consumer"));
        assert_eq!(
            d.call(&other_type, 5).await.error_code,
            INCONSISTENT_GROUP_PROTOCOL
        );
        assert_eq!(
            d.call(&join(&group, "", &[("q", b"")]), 5).await.error_code,
            INCONSISTENT_GROUP_PROTOCOL
        );
    })
    .await;
}

#[tokio::test]
async fn rebalance_rules() {
    on_both("rebalance", |addr, group| async move {
        let (mut a, mut b) = (Client::connect(&addr).await, Client::connect(&addr).await);
        let sent = join_v9(&mut a, join(&group, "", &[("range", b"a"), ("rr", b"a")])).await;
        let ja: JoinGroupResponse = a.receive::<JoinGroupRequest>(sent).await;
        let (a_id, g1) = (ja.member_id.to_string(), ja.generation_id);
        assert_eq!(ja.leader.as_str(), a_id);
        let first =
            sync(&group, &a_id, g1, &[(&a_id, b"A1")]).with_protocol_name(ja.protocol_name.clone());
        assert_eq!(a.call(&first, 5).await.error_code, NONE);

        // B prefers rr: the vote is a tie; both are supported by both, so any of the two is fine,
        // but both members must see the same one.
        let b_sent = join_v9(&mut b, join(&group, "", &[("rr", b"b"), ("range", b"b")])).await;
        // Requests on different connections race: wait until B's join is in before A rejoins.
        heartbeat_until(&mut a, &group, &a_id, g1, REBALANCE_IN_PROGRESS).await;
        let ja = a
            .call(&join(&group, &a_id, &[("range", b"a"), ("rr", b"a")]), 9)
            .await;
        let jb = b.receive::<JoinGroupRequest>(b_sent).await;
        let g2 = ja.generation_id;
        assert_eq!((g2, jb.generation_id), (g1 + 1, g1 + 1));
        assert_eq!(ja.protocol_name, jb.protocol_name);
        assert_eq!(ja.members.len(), 2);
        assert!(jb.members.is_empty());
        let b_id = jb.member_id.to_string();

        // SyncGroup checks before it parks.
        let wrong_name = sync(&group, &b_id, g2, &[]).with_protocol_name(Some(s("nope")));
        assert_eq!(
            b.call(&wrong_name, 5).await.error_code,
            INCONSISTENT_GROUP_PROTOCOL
        );
        let chosen = ja.protocol_name.clone();
        let wrong_generation = sync(&group, &b_id, g2 + 5, &[]).with_protocol_name(chosen.clone());
        assert_eq!(
            b.call(&wrong_generation, 5).await.error_code,
            ILLEGAL_GENERATION
        );
        // B waits for the leader, who leaves B out: B gets an empty assignment.
        let b_sync = b
            .send(
                &sync(&group, &b_id, g2, &[]).with_protocol_name(chosen.clone()),
                5,
            )
            .await;
        let leader = sync(&group, &a_id, g2, &[(&a_id, b"A2")]).with_protocol_name(chosen.clone());
        assert_eq!(a.call(&leader, 5).await.error_code, NONE);
        let sb = b.receive::<SyncGroupRequest>(b_sync).await;
        assert_eq!((sb.error_code, sb.assignment.len()), (NONE, 0));

        // A follower rejoining with the same metadata keeps the generation.
        let again = b
            .call(&join(&group, &b_id, &[("rr", b"b"), ("range", b"b")]), 9)
            .await;
        assert_eq!((again.error_code, again.generation_id), (NONE, g2));
        assert_eq!(
            a.call(&heartbeat(&group, &a_id, g2), 4).await.error_code,
            NONE
        );
        let d = a
            .call(
                &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                5,
            )
            .await;
        assert_eq!(d.groups[0].group_state.as_str(), "Stable");
        assert_eq!(Some(&d.groups[0].protocol_data), chosen.as_ref());
        let described_a = d.groups[0]
            .members
            .iter()
            .find(|m| m.member_id.as_str() == a_id)
            .expect("A is described");
        assert_eq!(
            (
                &described_a.member_metadata[..],
                &described_a.member_assignment[..]
            ),
            (&b"a"[..], &b"A2"[..])
        );
        let consumers = ListGroupsRequest::default().with_types_filter(vec![s("consumer")]);
        let l = a.call(&consumers, 5).await;
        assert!(
            l.groups.iter().all(|g| g.group_id.as_str() != group),
            "a classic group is not a consumer group"
        );
        let l = a
            .call(
                &ListGroupsRequest::default().with_states_filter(vec![s("Stable")]),
                5,
            )
            .await;
        assert!(
            l.groups
                .iter()
                .any(|g| g.group_id.as_str() == group && g.group_type.as_str() == "classic")
        );

        // The leader leaves: B rejoins alone and leads.
        let leave = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&group)))
            .with_members(vec![
                MemberIdentity::default().with_member_id(s(&a_id)),
                MemberIdentity::default().with_member_id(s("nobody")),
            ]);
        let r = a.call(&leave, 5).await;
        let codes: Vec<_> = r.members.iter().map(|m| m.error_code).collect();
        assert_eq!(codes, vec![NONE, UNKNOWN_MEMBER_ID]);
        assert_eq!(
            b.call(&heartbeat(&group, &b_id, g2), 4).await.error_code,
            REBALANCE_IN_PROGRESS
        );
        let jb = b
            .call(&join(&group, &b_id, &[("rr", b"b"), ("range", b"b")]), 9)
            .await;
        assert_eq!(
            (jb.generation_id, jb.leader.as_str(), jb.members.len()),
            (g2 + 1, b_id.as_str(), 1)
        );
        let d = b
            .call(
                &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                5,
            )
            .await;
        assert_eq!(
            (
                d.groups[0].group_state.as_str(),
                d.groups[0].protocol_data.as_str()
            ),
            ("CompletingRebalance", "")
        );
    })
    .await;
}

fn join_static(group: &str, instance: &str, member: &str) -> JoinGroupRequest {
    join(group, member, &[("p", b"m")]).with_group_instance_id(Some(s(instance)))
}

#[tokio::test]
async fn static_members() {
    on_both("static", |addr, group| async move {
        let (mut a, mut b) = (Client::connect(&addr).await, Client::connect(&addr).await);
        let ja = a.call(&join_static(&group, "i0", ""), 9).await;
        assert_eq!(
            ja.error_code, NONE,
            "static members skip MEMBER_ID_REQUIRED"
        );
        let a_id = ja.member_id.to_string();
        a.call(&sync(&group, &a_id, ja.generation_id, &[]), 5).await;
        let b_sent = b.send(&join_static(&group, "i1", ""), 9).await;
        heartbeat_until(
            &mut a,
            &group,
            &a_id,
            ja.generation_id,
            REBALANCE_IN_PROGRESS,
        )
        .await;
        let ja = a.call(&join_static(&group, "i0", &a_id), 9).await;
        let jb = b.receive::<JoinGroupRequest>(b_sent).await;
        let (b_id, generation) = (jb.member_id.to_string(), jb.generation_id);
        assert_eq!(ja.generation_id, generation);
        let b_sync = b.send(&sync(&group, &b_id, generation, &[]), 5).await;
        a.call(
            &sync(&group, &a_id, generation, &[(&a_id, b"A"), (&b_id, b"B")]),
            5,
        )
        .await;
        b.receive::<SyncGroupRequest>(b_sync).await;

        // i1 restarts: a new member id, the same generation, its old assignment; the old id is fenced.
        let mut b2 = Client::connect(&addr).await;
        let rb = b2.call(&join_static(&group, "i1", ""), 9).await;
        assert_eq!(
            (rb.error_code, rb.generation_id, rb.skip_assignment),
            (NONE, generation, false)
        );
        assert_ne!(rb.member_id.as_str(), b_id);
        let sb = b2
            .call(
                &sync(&group, rb.member_id.as_str(), generation, &[])
                    .with_group_instance_id(Some(s("i1"))),
                5,
            )
            .await;
        assert_eq!(&sb.assignment[..], b"B");
        let stale = heartbeat(&group, &b_id, generation).with_group_instance_id(Some(s("i1")));
        assert_eq!(b.call(&stale, 4).await.error_code, FENCED_INSTANCE_ID);

        // The static leader restarts: it leads under its new id and is told to skip the assignment.
        let mut a2 = Client::connect(&addr).await;
        let ra = a2.call(&join_static(&group, "i0", ""), 9).await;
        assert_eq!((ra.error_code, ra.generation_id), (NONE, generation));
        assert_eq!(ra.leader, ra.member_id);
        assert!(ra.skip_assignment);
        assert_eq!(ra.members.len(), 2);

        // Admin removal by instance id (no member id).
        let leave = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&group)))
            .with_members(vec![
                MemberIdentity::default().with_group_instance_id(Some(s("i1"))),
            ]);
        let r = a2.call(&leave, 5).await;
        assert_eq!(r.members[0].error_code, NONE);
    })
    .await;
}

/// Heartbeats `member` every 100 ms until the answer is `code`; fails after [`PATIENCE`].
async fn heartbeat_until(c: &mut Client, group: &str, member: &str, generation: i32, code: i16) {
    let seen = tokio::time::timeout(PATIENCE, async {
        loop {
            let got = c
                .call(&heartbeat(group, member, generation), 4)
                .await
                .error_code;
            if got == code {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(seen.is_ok(), "heartbeat never answered {code}");
}

#[tokio::test]
async fn session_expiry_and_join_deadline() {
    on_both("timers", |addr, group| async move {
        let (mut a, mut b) = (Client::connect(&addr).await, Client::connect(&addr).await);
        let slow = |member: &str, session_ms: i32| {
            join(&group, member, &[("p", b"")])
                .with_session_timeout_ms(session_ms)
                .with_rebalance_timeout_ms(2_000)
        };
        let ja = a.call(&slow("", 30_000), 3).await;
        let a_id = ja.member_id.to_string();
        a.call(&sync(&group, &a_id, ja.generation_id, &[]), 5).await;
        let b_sent = b.send(&slow("", 1_000), 3).await;
        heartbeat_until(
            &mut a,
            &group,
            &a_id,
            ja.generation_id,
            REBALANCE_IN_PROGRESS,
        )
        .await;
        let ja = a.call(&slow(&a_id, 30_000), 3).await;
        let jb = b.receive::<JoinGroupRequest>(b_sent).await;
        let generation = ja.generation_id;
        let b_sync = b
            .send(&sync(&group, jb.member_id.as_str(), generation, &[]), 5)
            .await;
        a.call(&sync(&group, &a_id, generation, &[]), 5).await;
        b.receive::<SyncGroupRequest>(b_sync).await;
        drop(b);
        // B's 1 s session expires: A learns of the rebalance and rejoins alone.
        heartbeat_until(&mut a, &group, &a_id, generation, REBALANCE_IN_PROGRESS).await;
        let ja = a.call(&slow(&a_id, 30_000), 3).await;
        assert_eq!((ja.generation_id, ja.members.len()), (generation + 1, 1));
        a.call(&sync(&group, &a_id, ja.generation_id, &[]), 5).await;

        // C joins; A keeps heartbeating but never rejoins: at the 2 s rebalance timeout A is
        // removed and C leads the next generation alone.
        let mut c = Client::connect(&addr).await;
        let c_sent = c.send(&slow("", 30_000), 3).await;
        heartbeat_until(&mut a, &group, &a_id, ja.generation_id, UNKNOWN_MEMBER_ID).await;
        let jc = c.receive::<JoinGroupRequest>(c_sent).await;
        assert_eq!(
            (jc.generation_id, jc.members.len()),
            (ja.generation_id + 1, 1)
        );
        assert_eq!(jc.leader, jc.member_id);
    })
    .await;
}

#[tokio::test]
async fn member_ids_hosts_and_old_versions() {
    on_both("details", |addr, group| async move {
        let mut c = Client::connect(&addr).await;
        let first = c.call(&join(&group, "", &[("p", b"m")]), 4).await;
        assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
        assert!(
            first.member_id.starts_with("kroupier-semantics-"),
            "client id, dash, uuid: {}",
            first.member_id.as_str()
        );
        assert_eq!(first.member_id.len(), "kroupier-semantics-".len() + 36);
        // v0 joins without KIP-394 and without a rebalance timeout.
        let mut old = Client::connect(&addr).await;
        let j0 = old
            .call(
                &join(&group, "", &[("p", b"m")]).with_rebalance_timeout_ms(-1),
                0,
            )
            .await;
        assert_eq!(j0.error_code, NONE);
        // The member told MEMBER_ID_REQUIRED above is only pending: it does not hold up the
        // first generation.
        assert_eq!(j0.generation_id, 1);
        let d = c
            .call(
                &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(&group))]),
                0,
            )
            .await;
        assert!(
            d.groups[0]
                .members
                .iter()
                .all(|m| m.client_host.as_str() == "/127.0.0.1")
        );
        assert!(
            d.groups[0]
                .members
                .iter()
                .all(|m| m.client_id.as_str() == "kroupier-semantics")
        );
        // LeaveGroup v0 reports the member's error at the top level.
        let leave = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&group)))
            .with_member_id(s("nobody"));
        assert_eq!(c.call(&leave, 0).await.error_code, UNKNOWN_MEMBER_ID);
        let l = c
            .call(
                &ListGroupsRequest::default()
                    .with_states_filter(vec![s("completingrebalance"), s("STABLE")]),
                4,
            )
            .await;
        assert!(
            l.groups.iter().any(|g| g.group_id.as_str() == group),
            "state filters ignore case"
        );
    })
    .await;
}

#[tokio::test]
async fn members_that_never_sync_are_removed_at_the_sync_deadline() {
    on_both("sync-deadline", |addr, group| async move {
        let (mut a, mut b) = (Client::connect(&addr).await, Client::connect(&addr).await);
        let quick =
            |member: &str| join(&group, member, &[("p", b"")]).with_rebalance_timeout_ms(2_000);
        let ja = a.call(&quick(""), 3).await;
        let a_id = ja.member_id.to_string();
        a.call(&sync(&group, &a_id, ja.generation_id, &[]), 5).await;
        let b_sent = b.send(&quick(""), 3).await;
        heartbeat_until(
            &mut a,
            &group,
            &a_id,
            ja.generation_id,
            REBALANCE_IN_PROGRESS,
        )
        .await;
        let ja = a.call(&quick(&a_id), 3).await;
        let jb = b.receive::<JoinGroupRequest>(b_sent).await;
        // A rejoining during CompletingRebalance with the same metadata gets the generation again.
        let again = a.call(&quick(&a_id), 3).await;
        assert_eq!(
            (again.error_code, again.generation_id, again.members.len()),
            (NONE, ja.generation_id, 2)
        );
        // A syncs; B heartbeats but never syncs: at the 2 s deadline B is removed.
        a.call(&sync(&group, &a_id, ja.generation_id, &[]), 5).await;
        heartbeat_until(
            &mut b,
            &group,
            jb.member_id.as_str(),
            jb.generation_id,
            UNKNOWN_MEMBER_ID,
        )
        .await;
        heartbeat_until(
            &mut a,
            &group,
            &a_id,
            ja.generation_id,
            REBALANCE_IN_PROGRESS,
        )
        .await;
    })
    .await;
}
