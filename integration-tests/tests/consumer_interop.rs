//! kroupier's `consumer_group` example in one consumer group with Java `KafkaConsumer`s
//! (kafka-clients of the broker's version), for the `range` and `cooperative-sticky`
//! assignors, with a Rust leader and with a Java leader.
//!
//! Each test starts a leader on one side, then: a member of the other side joins, one of the
//! leader's side joins, a second one of the other side joins, the first of the other side
//! leaves, the second of the leader's side leaves. After each step the live members' latest
//! lines must settle on one generation whose partition sets are disjoint, balanced and cover
//! the topic. Over the whole run no partition is owned twice in any generation, nor at any
//! moment of the members' own clocks (the cooperative rule: a partition is revoked before it
//! is assigned again). Kafka's `kafka-consumer-groups --describe --members --verbose` must show
//! the kroupier member with its partitions. The kroupier members run with `--fast-failover`,
//! which adds their endpoints to the consumer protocol's `user_data`: Java's assignors must
//! not mind.
//!
//! Among kroupier members alone, with fast failover, at Kafka's default session (10 s) and
//! heartbeat (3 s): SIGKILL of a member → the survivors own all partitions within round trips.
//!
//! The Java program (`integration-tests/java/consumer-interop`) is built with Maven on first
//! use, into cargo's target directory. These tests need a real Kafka (topics, Metadata, Java
//! clients): they run when `KROUPIER_KAFKA_STATE` names the state directory of the broker at
//! `KROUPIER_KAFKA_BOOTSTRAP` (`scripts/test` sets both for its Kafka phases) and print a skip
//! line otherwise, e.g. against the embedded coordinator, which has no topics.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::protocol::StrBytes;
use kroupier_integration_tests::java::{Kafka, java_class, java_program, real_kafka};
use kroupier_integration_tests::journal::unix_ms;
use kroupier_integration_tests::process::binary;
use kroupier_integration_tests::wire::Connection;
use serde_json::Value;

const PARTITIONS: i32 = 6;
/// The Java side's session and heartbeat; the Rust side uses the same.
const SESSION_MS: u64 = 6000;
const HEARTBEAT_MS: u64 = 500;
/// How long one step may take to settle (JVM start, a join, and with cooperative-sticky two
/// rebalances).
const SETTLE: Duration = Duration::from_secs(45);

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    format!("{name}-{nanos}")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Creates `topic` with `partitions` (CreateTopics v5) and waits until Metadata shows them.
fn create_topic(kafka: &Kafka, topic: &str, partitions: i32) {
    runtime().block_on(async {
        let mut connection = Connection::connect(&kafka.bootstrap)
            .await
            .expect("connect to Kafka");
        let name = TopicName(StrBytes::from_string(topic.to_owned()));
        let request = CreateTopicsRequest::default()
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(name.clone())
                    .with_num_partitions(partitions)
                    .with_replication_factor(1),
            ])
            .with_timeout_ms(30_000);
        let response = connection.send(&request, 5).await.expect("CreateTopics");
        let code = response.topics.first().map_or(-1, |t| t.error_code);
        assert_eq!(code, 0, "CreateTopics {topic}: error {code}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let request = MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name.clone())),
            ]));
            let response = connection.send(&request, 12).await.expect("Metadata");
            let seen = response
                .topics
                .first()
                .filter(|t| t.error_code == 0)
                .map_or(0, |t| t.partitions.len());
            if seen == partitions as usize {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "topic {topic} never showed {partitions} partitions"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Rust,
    Java,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Rust => Side::Java,
            Side::Java => Side::Rust,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Side::Rust => "rust",
            Side::Java => "java",
        }
    }
}

/// One JSON line a member printed.
#[derive(Debug, Clone)]
struct Line {
    ts_ms: u64,
    id: String,
    generation: i64,
    partitions: BTreeSet<i32>,
    leader: Option<bool>,
}

fn parse(line: &str) -> Option<Line> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(Line {
        ts_ms: v["ts_ms"].as_u64()?,
        id: v["id"].as_str()?.to_owned(),
        generation: v["generation"].as_i64()?,
        partitions: v["partitions"]
            .as_array()?
            .iter()
            .map(|p| p.as_i64().and_then(|p| i32::try_from(p).ok()))
            .collect::<Option<_>>()?,
        leader: v["leader"].as_bool(),
    })
}

/// A member process; killed when dropped, so a failing test leaves nothing behind.
struct Running {
    id: String,
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One group under test: its members and every line they printed.
struct Group {
    kafka: Kafka,
    java: PathBuf,
    group: String,
    topic: String,
    assignor: &'static str,
    tx: Sender<Line>,
    rx: Receiver<Line>,
    lines: Vec<Line>,
    /// The members' session timeout and heartbeat interval, in ms.
    session: (u64, u64),
}

impl Group {
    fn start(&mut self, side: Side, role: &str) -> Running {
        let id = format!("{}-{role}", side.name());
        let common = [
            "--bootstrap".to_owned(),
            self.kafka.bootstrap.clone(),
            "--group".to_owned(),
            self.group.clone(),
            "--id".to_owned(),
            id.clone(),
            "--topic".to_owned(),
            self.topic.clone(),
            "--assignor".to_owned(),
            self.assignor.to_owned(),
            "--session-timeout-ms".to_owned(),
            self.session.0.to_string(),
            "--heartbeat-interval-ms".to_owned(),
            self.session.1.to_string(),
        ];
        let mut command = match side {
            Side::Rust => {
                let mut c = Command::new(binary("consumer_group"));
                // Subscription v3's rack field, read by a Java leader; the endpoint in
                // `user_data`, which Java's assignors ignore.
                c.args(["--client-rack", "rack-a", "--fast-failover"]);
                c
            }
            Side::Java => java_class(&self.java, "96m", "dev.kroupier.interop.ConsumerInterop"),
        };
        let mut child = command
            .args(common)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {id}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(line) = parse(&line) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        });
        Running { id, child }
    }

    fn pump(&mut self) {
        while let Ok(line) = self.rx.try_recv() {
            self.lines.push(line);
        }
    }

    fn latest(&self, id: &str) -> Option<&Line> {
        self.lines.iter().rev().find(|l| l.id == id)
    }

    fn dump(&self) -> String {
        self.lines
            .iter()
            .map(|l| format!("{l:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until the `live` members' latest lines share one generation whose partition sets
    /// are disjoint, balanced and cover the topic; returns that generation.
    fn settle(&mut self, live: &[&Running], step: &str) -> i64 {
        let deadline = Instant::now() + SETTLE;
        loop {
            self.pump();
            if let Some(generation) = self.settled(live) {
                return generation;
            }
            assert!(
                Instant::now() < deadline,
                "{step}: the group did not settle within {SETTLE:?}; lines so far:\n{}",
                self.dump()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn settled(&self, live: &[&Running]) -> Option<i64> {
        let latest: Vec<&Line> = live
            .iter()
            .map(|m| self.latest(&m.id))
            .collect::<Option<_>>()?;
        let generation = latest[0].generation;
        if generation < 0 || latest.iter().any(|l| l.generation != generation) {
            return None;
        }
        let mut union = BTreeSet::new();
        for l in &latest {
            if !l.partitions.iter().all(|p| union.insert(*p)) {
                return None;
            }
        }
        let sizes: Vec<usize> = latest.iter().map(|l| l.partitions.len()).collect();
        let balanced = sizes.iter().max()? - sizes.iter().min()? <= 1;
        (union == (0..PARTITIONS).collect() && balanced).then_some(generation)
    }

    /// SIGTERM: the member gives up its partitions, leaves and exits 0.
    fn leave(&mut self, mut member: Running) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(member.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        let code = loop {
            if let Some(status) = member.child.try_wait().expect("wait") {
                break status.code();
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit after SIGTERM",
                member.id
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(code, Some(0), "{} exit code", member.id);
        std::thread::sleep(Duration::from_millis(200));
        self.pump();
        let last = self.latest(&member.id).expect("the member printed");
        assert!(
            last.partitions.is_empty(),
            "{} left still owning {:?}",
            member.id,
            last.partitions
        );
    }

    /// No partition is held by two members in one generation, and — replaying every line by
    /// its timestamp, revocations first on a tie — none is owned by two members at once.
    ///
    /// A member holds in generation G what it printed in G *and* what it brought into G (its
    /// set before its first line of G): a cooperative member keeps its partitions while G
    /// forms and revokes the ones G's assignment leaves out only when that assignment
    /// arrives, so a leader that gave one of them to another member in G itself is caught.
    /// An eager member brings nothing: it printed its revocation before rejoining.
    fn assert_never_owned_twice(&self) {
        let mut by_generation: BTreeMap<i64, BTreeMap<&str, BTreeSet<i32>>> = BTreeMap::new();
        let mut state: BTreeMap<&str, (i64, BTreeSet<i32>)> = BTreeMap::new();
        for l in &self.lines {
            let (last_generation, current) = state.entry(&l.id).or_default();
            if l.generation >= 0 {
                let held = by_generation
                    .entry(l.generation)
                    .or_default()
                    .entry(&l.id)
                    .or_default();
                if *last_generation != l.generation {
                    held.extend(current.iter());
                }
                held.extend(&l.partitions);
            }
            *last_generation = l.generation;
            *current = l.partitions.clone();
        }
        for (generation, members) in &by_generation {
            let mut seen: BTreeMap<i32, &str> = BTreeMap::new();
            for (id, partitions) in members {
                for p in partitions {
                    if let Some(other) = seen.insert(*p, id) {
                        panic!(
                            "partition {p} owned by {other} and {id} in generation {generation}:\n{}",
                            self.dump()
                        );
                    }
                }
            }
        }
        // Shrinking lines first on equal timestamps: a member revokes before it rejoins.
        let mut previous: BTreeMap<&str, &BTreeSet<i32>> = BTreeMap::new();
        let mut ordered: Vec<(u64, bool, &Line)> = Vec::new();
        for l in &self.lines {
            let grows = previous
                .insert(&l.id, &l.partitions)
                .is_none_or(|before| !l.partitions.is_subset(before));
            ordered.push((l.ts_ms, grows, l));
        }
        ordered.sort_by_key(|(ts, grows, _)| (*ts, *grows));
        let mut owned: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
        for (_, _, l) in ordered {
            owned.insert(&l.id, l.partitions.clone());
            let mut seen = BTreeSet::new();
            for p in owned.values().flatten() {
                assert!(
                    seen.insert(*p),
                    "partition {p} owned twice at {} ms:\n{}",
                    l.ts_ms,
                    self.dump()
                );
            }
        }
    }

    /// `kafka-consumer-groups --describe --members --verbose` (Kafka's own tool, from the
    /// broker's jars and kafka-tools of the same version).
    fn describe(&self) -> String {
        let classpath = format!(
            "{}/*:{}",
            self.kafka.libs.display(),
            self.java
                .join(format!("lib/kafka-tools-{}.jar", self.kafka.version))
                .display()
        );
        let output = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
            ])
            .arg(classpath)
            .arg("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand")
            .args(["--bootstrap-server", &self.kafka.bootstrap])
            .args([
                "--describe",
                "--group",
                &self.group,
                "--members",
                "--verbose",
            ])
            .output()
            .expect("run kafka-consumer-groups");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Kafka's tool shows `member` as a consumer with `partitions` of the topic.
    fn assert_described(&self, member: &Running, partitions: &BTreeSet<i32>) {
        let assignment = format!(
            "{}:{}",
            self.topic,
            partitions
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut output = String::new();
        for _ in 0..5 {
            output = self.describe();
            let row = output.lines().find(|row| {
                row.split_whitespace().any(|t| t == member.id) && row.contains(&self.group)
            });
            if let Some(row) = row {
                let tokens: Vec<&str> = row.split_whitespace().collect();
                if tokens.contains(&assignment.as_str())
                    && tokens.contains(&partitions.len().to_string().as_str())
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        panic!(
            "kafka-consumer-groups does not show {} with {assignment}:\n{output}",
            member.id
        );
    }
}

fn scenario(test: &str, leader_side: Side, assignor: &'static str) {
    let Some(kafka) = real_kafka(test) else {
        return;
    };
    let java = java_program(&kafka, Path::new(env!("CARGO_TARGET_TMPDIR")));
    let started = Instant::now();
    let topic = unique("interop");
    create_topic(&kafka, &topic, PARTITIONS);
    let (tx, rx) = channel();
    let mut g = Group {
        kafka,
        java,
        group: unique(test),
        topic,
        assignor,
        tx,
        rx,
        lines: Vec::new(),
        session: (SESSION_MS, HEARTBEAT_MS),
    };
    let other = leader_side.other();

    let l1 = g.start(leader_side, "L1");
    g.settle(&[&l1], "the leader alone");
    let o1 = g.start(other, "O1");
    g.settle(&[&l1, &o1], "a join on the other side");
    let l2 = g.start(leader_side, "L2");
    g.settle(&[&l1, &o1, &l2], "a join on the leader's side");
    let o2 = g.start(other, "O2");
    g.settle(&[&l1, &o1, &l2, &o2], "a second join on the other side");
    g.leave(o1);
    g.settle(&[&l1, &l2, &o2], "a leave on the other side");
    g.leave(l2);
    let generation = g.settle(&[&l1, &o2], "a leave on the leader's side");

    // The leader is the side the test says: the Rust members say whether they lead.
    let rust_leads = g
        .lines
        .iter()
        .any(|l| l.generation == generation && l.leader == Some(true));
    assert_eq!(
        rust_leads,
        leader_side == Side::Rust,
        "who led generation {generation}:\n{}",
        g.dump()
    );
    g.assert_never_owned_twice();
    let rust = if leader_side == Side::Rust { &l1 } else { &o2 };
    let java_member = if leader_side == Side::Rust { &o2 } else { &l1 };
    let rust_partitions = g.latest(&rust.id).expect("printed").partitions.clone();
    let java_partitions = g
        .latest(&java_member.id)
        .expect("printed")
        .partitions
        .clone();
    g.assert_described(rust, &rust_partitions);
    g.assert_described(java_member, &java_partitions);
    println!(
        "MEASURE {test}_ms={} generations={}",
        started.elapsed().as_millis(),
        generation
    );
}

#[test]
fn range_with_a_rust_leader_and_java_followers() {
    scenario(
        "range_with_a_rust_leader_and_java_followers",
        Side::Rust,
        "range",
    );
}

#[test]
fn range_with_a_java_leader_and_rust_followers() {
    scenario(
        "range_with_a_java_leader_and_rust_followers",
        Side::Java,
        "range",
    );
}

#[test]
fn cooperative_sticky_with_a_rust_leader_and_java_followers() {
    scenario(
        "cooperative_sticky_with_a_rust_leader_and_java_followers",
        Side::Rust,
        "cooperative-sticky",
    );
}

#[test]
fn cooperative_sticky_with_a_java_leader_and_rust_followers() {
    scenario(
        "cooperative_sticky_with_a_java_leader_and_rust_followers",
        Side::Java,
        "cooperative-sticky",
    );
}

/// `kroupier describe` of a KIP-848 `consumer` group shows its member and partitions (it used
/// to say `Dead`, no members, exit 0).
#[test]
fn describe_shows_a_kip_848_consumer_group() {
    let Some(kafka) = real_kafka("describe_shows_a_kip_848_consumer_group") else {
        return;
    };
    let java = java_program(&kafka, Path::new(env!("CARGO_TARGET_TMPDIR")));
    let topic = unique("kip848-topic");
    let group = unique("kip848-group");
    create_topic(&kafka, &topic, 3);
    let child = java_class(&java, "96m", "dev.kroupier.interop.ConsumerInterop")
        .args(["--bootstrap", &kafka.bootstrap, "--group", &group])
        .args(["--id", "java-kip848", "--topic", &topic])
        .args(["--assignor", "uniform", "--group-protocol", "consumer"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Java consumer");
    let _consumer = Running {
        id: "java-kip848".into(),
        child,
    };
    let describe = |json: bool| {
        let mut command = Command::new(binary("kroupier"));
        command.args([
            "describe",
            "--bootstrap",
            &kafka.bootstrap,
            "--group",
            &group,
        ]);
        if json {
            command.arg("--json");
        }
        command.output().expect("run kroupier describe")
    };
    let deadline = Instant::now() + SETTLE;
    let view = loop {
        let output = describe(true);
        let view: Option<Value> = serde_json::from_slice(&output.stdout).ok();
        let settled = view.as_ref().is_some_and(|v| {
            v["state"] == "Stable"
                && v["members"][0]["assignment"].as_array().map(Vec::len) == Some(3)
        });
        if settled {
            assert_eq!(output.status.code(), Some(0));
            break view.expect("settled");
        }
        assert!(
            Instant::now() < deadline,
            "the KIP-848 group did not show its member with 3 partitions: exit {:?}, {}{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(view["group"], group.as_str(), "{view}");
    assert_eq!(view["group_type"], "consumer", "{view}");
    assert_eq!(view["assignor"], "uniform", "{view}");
    assert!(
        view["group_epoch"].as_i64().is_some_and(|e| e > 0),
        "{view}"
    );
    let member = &view["members"][0];
    assert_eq!(member["client_id"], "java-kip848", "{view}");
    assert_eq!(
        member["subscribed_topics"],
        serde_json::json!([topic]),
        "{view}"
    );
    let partitions: Vec<String> = (0..3).map(|p| format!("{topic}-{p}")).collect();
    assert_eq!(
        member["assignment"],
        serde_json::json!(partitions),
        "{view}"
    );
    assert_eq!(member["target_assignment"], member["assignment"], "{view}");

    let output = describe(false);
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{table}");
    assert!(
        table.starts_with(&format!("group {group}  type consumer  state Stable")),
        "{table}"
    );
    assert!(table.contains("java-kip848"), "{table}");
    assert!(table.contains("no leader and no generation"), "{table}");
    assert!(!table.contains("Dead"), "{table}");
}

#[test]
fn with_fast_failover_a_killed_member_s_partitions_move_in_round_trips() {
    let test = "with_fast_failover_a_killed_member_s_partitions_move_in_round_trips";
    let Some(kafka) = real_kafka(test) else {
        return;
    };
    /// Kafka's defaults (`session.timeout.ms` before 3.0, `heartbeat.interval.ms`).
    const DEFAULT_SESSION: (u64, u64) = (10_000, 3_000);
    /// Well under the session, so that only a proof can make it: generous for a busy machine.
    const BOUND_MS: u64 = 2_000;
    let topic = unique("fast");
    create_topic(&kafka, &topic, PARTITIONS);
    let (tx, rx) = channel();
    let mut g = Group {
        kafka,
        java: PathBuf::new(),
        group: unique(test),
        topic,
        assignor: "range",
        tx,
        rx,
        lines: Vec::new(),
        session: DEFAULT_SESSION,
    };
    let a = g.start(Side::Rust, "A");
    g.settle(&[&a], "one member");
    let b = g.start(Side::Rust, "B");
    g.settle(&[&a, &b], "two members");
    let mut c = g.start(Side::Rust, "C");
    let before = g.settle(&[&a, &b, &c], "three members");
    // Every member has linked to the others' endpoints (one round trip after the assignment).
    std::thread::sleep(Duration::from_millis(300));

    let killed_at = unix_ms();
    c.child.kill().expect("SIGKILL");
    let _ = c.child.wait();
    let after = g.settle(&[&a, &b], "after the kill");
    assert!(after > before, "a new generation: {before} -> {after}");
    let moved_at = [&a, &b]
        .iter()
        .map(|m| g.latest(&m.id).expect("printed").ts_ms)
        .max()
        .expect("two members");
    let moved = moved_at.saturating_sub(killed_at);
    println!(
        "MEASURE consumer_fast_failover_kill_to_partitions_owned_ms={moved} (session {} ms)",
        DEFAULT_SESSION.0
    );
    assert!(
        moved < BOUND_MS,
        "the survivors owned every partition {moved} ms after the kill, bound {BOUND_MS} ms \
         (session {} ms); lines:\n{}",
        DEFAULT_SESSION.0,
        g.dump()
    );
}
