//! A member of a Kafka consumer group, beside Java `KafkaConsumer`s, on kroupier.
//!
//! ```text
//! consumer_group --bootstrap ADDR --group G --id ID --topic T --assignor range|cooperative-sticky
//!                [--client-rack RACK] [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
//!                [--command-config FILE]
//!                [--fast-failover [--fast-failover-listen ADDR] [--fast-failover-advertise IP]]
//! ```
//!
//! It joins group G with protocol type `consumer`, subscribes to topic T, and owns the
//! partitions the group's leader (this process or any other consumer) gives it. It fetches no
//! records and commits no offsets: owning partitions is the point. When it leads, it assigns
//! over T's partition count from a Metadata request, refreshed every few seconds (a change
//! makes the leader rebalance the group).
//!
//! Prints one JSON line per assignment it holds, flushed at once:
//! `{"ts_ms":..,"id":..,"generation":..,"partitions":[..],"leader":true|false}` — `partitions`
//! are T's partition numbers it owns after the change, `generation` is −1 once it holds none
//! (lost, or leaving). The client id is ID, so `kafka-consumer-groups --describe --members`
//! shows it under that name. On SIGTERM or ctrl-c it gives up its partitions (a last line with
//! none), leaves the group and exits 0. Logs go to stderr (`RUST_LOG`).
//!
//! With `--fast-failover`, the kroupier members of the group follow each other's endpoints
//! ([`kroupier::failover::Failover`], advertised in the consumer protocol's `user_data`, which
//! Java's assignors ignore): when a kroupier member's process ends, the others remove it and
//! rejoin at once, and its partitions move in round trips instead of after its session. Java
//! members, and a group whose leader is a Java consumer, are left to their sessions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kroupier::connection::Cluster;
use kroupier::protocol::{Member, MemberConfig};
use kroupier_examples::consumer::{Assignor, ConsumerProtocol, Ownership, partition_counts};
use kroupier_examples::member::FastFailoverArgs;
use kroupier_examples::{SessionArgs, terminated};
use tokio::sync::mpsc;

/// How often the partition counts are read again.
const METADATA_REFRESH: Duration = Duration::from_secs(3);

/// A consumer-group member that owns partitions beside Java consumers.
#[derive(Debug, Parser)]
#[command(
    name = "consumer_group",
    display_name = "kroupier consumer_group",
    version
)]
struct Args {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    bootstrap: String,
    /// The consumer group id.
    #[arg(long)]
    group: String,
    /// This member's name: its client id, and `id` in the JSON lines.
    #[arg(long)]
    id: String,
    /// The topic to subscribe to.
    #[arg(long)]
    topic: String,
    /// The partition assignor to offer: `range` (eager) or `cooperative-sticky`.
    #[arg(long, value_parser = ["range", "cooperative-sticky"])]
    assignor: String,
    /// Kafka's `client.rack`: sent in the subscription (version 3) for a Java leader's
    /// rack-aware assignors. kroupier's own assignors do not use racks.
    #[arg(long)]
    client_rack: Option<String>,
    #[command(flatten)]
    session: SessionArgs,
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
    /// `ssl.truststore.location`, ...), as Kafka's own tools take them. The connection's
    /// security and the session settings come from them (a flag given wins).
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
    #[command(flatten)]
    fast: FastFailoverArgs,
}

fn print(id: &str, topic: &str, change: &Ownership) {
    let partitions: Vec<i32> = change
        .partitions
        .iter()
        .filter(|tp| tp.topic == topic)
        .map(|tp| tp.partition)
        .collect();
    // The keys in the contract's order (serde_json's maps sort them).
    let line = format!(
        "{{\"ts_ms\":{},\"id\":{},\"generation\":{},\"partitions\":{},\"leader\":{}}}",
        change.at_ms,
        serde_json::Value::from(id),
        change.generation,
        serde_json::Value::from(partitions),
        change.leader,
    );
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the member; the next line will fail the same way.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    if let Some(error) = &change.error {
        eprintln!("consumer_group: the leader's assignment did not decode: {error}");
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    kroupier_examples::init_logs();
    let args = Args::parse();
    let Some(assignor) = Assignor::from_name(&args.assignor) else {
        eprintln!("consumer_group: unknown assignor {:?}", args.assignor);
        return ExitCode::from(2);
    };
    // The session settings: a flag given, else the file's, else the defaults; the connection's
    // security from the file.
    let file = match args.session.worker_config(args.command_config.as_deref()) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("consumer_group: {e}");
            return ExitCode::from(2);
        }
    };
    let membership = &file.member.membership;
    let mut config = MemberConfig::new(&args.bootstrap, &args.group)
        .with_timeouts(membership.session_timeout, membership.heartbeat_interval);
    // The broker checks the session timeout against its own bounds, and its error names them.
    config.membership.min_session_timeout = Duration::ZERO;
    config.cluster.connection.client_id = args.id.clone();
    config.cluster.security = file.member.cluster.security;
    let cluster = match Cluster::new(config.cluster.clone()) {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("consumer_group: {e}");
            return ExitCode::from(2);
        }
    };

    let failover = match args.fast.bind() {
        Ok(failover) => failover,
        Err(e) => {
            eprintln!("consumer_group: {e}");
            return ExitCode::from(2);
        }
    };
    let (changes_tx, mut changes) = mpsc::unbounded_channel();
    let mut protocol = ConsumerProtocol::new(
        [args.topic.clone()],
        vec![assignor],
        args.client_rack.clone().filter(|r| !r.is_empty()),
        changes_tx,
    );
    if let Some(failover) = &failover {
        protocol = protocol.with_failover(failover.clone());
    }
    let protocol = Arc::new(protocol);
    // The partition counts before the first JoinGroup, so a first leader assigns real ones.
    match partition_counts(&cluster, [args.topic.as_str()]).await {
        Ok(counts) => {
            if !counts.contains_key(&args.topic) {
                eprintln!("consumer_group: topic {} does not exist (yet)", args.topic);
            }
            protocol.set_partition_counts(counts);
        }
        Err(e) => eprintln!("consumer_group: reading the partition counts: {e}"),
    }
    let (member, driver) = match Member::new(config.clone(), protocol.clone()) {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("consumer_group: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = FastFailoverArgs::spawn(failover.as_ref(), &member, &config) {
        eprintln!("consumer_group: {e}");
        return ExitCode::from(2);
    }
    protocol.attach_events(member.events());
    let mut driver = tokio::spawn(protocol.clone().with_events(driver));
    let mut refresh = tokio::time::interval(METADATA_REFRESH);
    refresh.tick().await;
    let mut leading = false;
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            Some(change) = changes.recv() => {
                print(&args.id, &args.topic, &change);
                leading = change.leader;
                // Cooperative: what was revoked can move only in a later generation, which
                // this member's rejoin starts.
                if protocol.is_cooperative() && !change.revoked.is_empty() && change.generation >= 0 {
                    let _ = member.rejoin("revoked partitions for another member").await;
                }
            }
            _ = refresh.tick() => {
                if let Ok(counts) = partition_counts(&cluster, [args.topic.as_str()]).await {
                    if protocol.set_partition_counts(counts) && leading {
                        let _ = member.rejoin("the subscribed topics' partition counts changed").await;
                    }
                }
            }
            () = &mut stop => {
                protocol.close();
                member.leave("the consumer was closed").await;
                while let Ok(change) = changes.try_recv() {
                    print(&args.id, &args.topic, &change);
                }
                return ExitCode::SUCCESS;
            }
            ended = &mut driver => {
                while let Ok(change) = changes.try_recv() {
                    print(&args.id, &args.topic, &change);
                }
                return kroupier_examples::member::driver_exit("consumer_group", ended);
            }
        }
    }
}
