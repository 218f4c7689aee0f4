//! `kroupier describe`: one group's members, leader, generation, protocol and each member's
//! tasks, from DescribeGroups alone; only the task store's section of the table asks the
//! workers that hold stored tasks for their states (see [`crate::actual`]).
//!
//! DescribeGroups carries no generation and no leader; for kroupier groups both are decoded
//! from the members' assignments (see `docs/protocol.md`), and each member's tasks are the full
//! target set its assignment carries. The table and the JSON object are documented in
//! `docs/operations.md` ("The `kroupier` command line"):
//!
//! ```text
//! {"group","state","generation","protocol_type","protocol","leader",
//!  "members":[{"member_id","instance_id","client_id","host","tasks":[...]}]}
//! ```
//!
//! - `generation` and `leader` (a member id) are `null` when no assignment records them: the
//!   group rebalances, is empty, or is not a kroupier group.
//! - `protocol_type` and `protocol` are `null` when the coordinator reports them empty (a group
//!   that is rebalancing, or one DescribeGroups shows as `Dead` while ListGroups lists it).
//! - `tasks` is a sorted list for each member of a kroupier group (`[]` while the group
//!   rebalances: Kafka shows assignments only once the group is stable), and `null` when the
//!   tasks are unknown: a group of another protocol type (not decoded), or a member whose bytes
//!   do not decode as kroupier's.
//! - A group that does not exist is no answer: the command exits 1 with the reason on stderr
//!   and prints nothing on stdout (docs/operations.md, "Exit codes").
//! - A KIP-848 `consumer` group (ListGroups names its type; DescribeGroups shows it `Dead`) is
//!   described with ConsumerGroupDescribe instead, in a shape of its own (see [`consumer`]); a
//!   group of another type (`share`, `streams`) exits 1 saying it cannot be shown.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig, Security};
use kroupier_coordinator::observer::{GroupDescription, GroupListing, Observer};
use kroupier_worker::protocol::PROTOCOL_TYPE;

use crate::command_config::{CommandConfig, UsageError};
pub(crate) use crate::group_view::{GroupView, build_view};

/// The group a command looks at, and how to reach its cluster: what `describe`, `watch` and
/// `console` take alike.
#[derive(Debug, clap::Args)]
pub(crate) struct GroupTarget {
    /// Kafka bootstrap servers (or a `kroupier coordinator`), `host:port[,host:port...]`.
    #[arg(long)]
    pub bootstrap: String,
    /// The group id.
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub group: String,
    #[command(flatten)]
    pub config: CommandConfig,
}

/// Where the store is, and how to answer: what every `kroupier tasks` command takes.
#[derive(Debug, clap::Args)]
pub(crate) struct On {
    #[command(flatten)]
    pub target: GroupTarget,
    /// The task store's topic; default `kroupier-tasks-<group>` (the workers' default).
    #[arg(long)]
    pub topic: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up when the cluster has not answered within this many milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: u64,
}

/// Arguments of `kroupier describe`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: GroupTarget,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Give up when the cluster has not answered within this many milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
}

/// A connection to the cluster at `bootstrap`, secured by `security`, that gives up on a
/// coordinator after `timeout`.
///
/// # Errors
/// A [`UsageError`] when `bootstrap` names no server or a certificate or key does not load.
pub(crate) fn cluster(
    bootstrap: &str,
    security: Security,
    timeout: Duration,
) -> Result<Arc<Cluster>, UsageError> {
    let mut config = ClusterConfig::new(bootstrap);
    config.connection.client_id = "kroupier-cli".to_owned();
    config.coordinator_lookup_timeout = timeout;
    config.connection.connect_timeout = config.connection.connect_timeout.min(timeout);
    config.connection.request_timeout = config.connection.request_timeout.min(timeout);
    config.security = security;
    Cluster::new(config)
        .map(Arc::new)
        .map_err(|e| UsageError(e.to_string()))
}

/// An observer of the cluster at `bootstrap` (see [`cluster`]).
///
/// # Errors
/// As [`cluster`].
pub(crate) fn observer(
    bootstrap: &str,
    security: Security,
    timeout: Duration,
) -> Result<Observer, UsageError> {
    Ok(Observer::new(cluster(bootstrap, security, timeout)?))
}

/// Describes `group` through `observer`, within `timeout`.
///
/// # Errors
/// A clear message when the cluster does not answer in time or answers with an error.
pub(crate) async fn fetch(
    observer: &Observer,
    bootstrap: &str,
    group: &str,
    timeout: Duration,
) -> Result<GroupView, String> {
    describe_group(observer, bootstrap, group, timeout)
        .await
        .map(build_view)
}

/// As [`fetch`], with the status API address each worker advertises, by worker id (see
/// [`status_addrs`]).
///
/// # Errors
/// As [`fetch`].
pub(crate) async fn fetch_with_status(
    observer: &Observer,
    bootstrap: &str,
    group: &str,
    timeout: Duration,
) -> Result<(GroupView, BTreeMap<String, String>), String> {
    let description = describe_group(observer, bootstrap, group, timeout).await?;
    let addrs = status_addrs(&description);
    Ok((build_view(description), addrs))
}

async fn describe_group(
    observer: &Observer,
    bootstrap: &str,
    group: &str,
    timeout: Duration,
) -> Result<GroupDescription, String> {
    match tokio::time::timeout(timeout, observer.describe_group(group)).await {
        Ok(Ok(description)) => Ok(description),
        Ok(Err(e)) => Err(format!(
            "cannot describe group `{group}` at {bootstrap}: {e}"
        )),
        Err(_) => Err(format!(
            "no answer from {bootstrap} within {} ms: is a Kafka broker (or `kroupier \
             coordinator`) running there?",
            timeout.as_millis()
        )),
    }
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let timeout = Duration::from_millis(args.timeout_ms);
    let security = args.target.config.security()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let view = runtime.block_on(async {
        let cluster = cluster(&args.target.bootstrap, security, timeout)?;
        // One round over the bootstrap servers first: an unreachable cluster fails at once
        // instead of after the coordinator lookup's retries.
        match tokio::time::timeout(timeout, cluster.any_broker()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("cannot reach {}: {e}", args.target.bootstrap).into()),
            Err(_) => {
                return Err(format!(
                    "no answer from {} within {} ms",
                    args.target.bootstrap, args.timeout_ms
                )
                .into());
            }
        }
        let observer = Observer::new(cluster.clone());
        let (view, addrs) = fetch_with_status(
            &observer,
            &args.target.bootstrap,
            &args.target.group,
            timeout,
        )
        .await
        .map_err(Box::<dyn Error>::from)?;
        // DescribeGroups shows classic groups only: a `consumer` group (KIP-848) is `Dead` to
        // it, and ListGroups tells which it is.
        let listed = listed_elsewhere(&observer, &view, &args.target.bootstrap).await?;
        match listed.as_ref().and_then(|l| l.group_type.as_deref()) {
            Some("consumer") => {
                let group = &args.target.group;
                let described =
                    tokio::time::timeout(timeout, observer.describe_consumer_group(group))
                        .await
                        .map_err(|_| {
                            format!(
                                "no answer to ConsumerGroupDescribe from {} within {} ms",
                                args.target.bootstrap, args.timeout_ms
                            )
                        })?
                        .map_err(|e| format!("cannot describe consumer group `{group}`: {e}"))?;
                return Ok(Shown::Consumer(consumer::view(described)));
            }
            Some(other) if other != "classic" => {
                return Err(format!(
                    "group `{}` is a `{other}` group (ListGroups): kroupier describe shows \
                     classic groups (DescribeGroups) and KIP-848 consumer groups \
                     (ConsumerGroupDescribe), not this type's members",
                    args.target.group
                )
                .into());
            }
            _ => {}
        }
        // The task store's tasks, where each runs and why some run nowhere (table only: the
        // JSON object is a contract).
        let stored = if args.json || view.protocol_type.as_deref() != Some(PROTOCOL_TYPE) {
            None
        } else {
            stored_tasks(cluster, &args.target.group, &view, &addrs, timeout).await
        };
        Ok::<_, Box<dyn Error>>(Shown::Classic(view, stored))
    })?;
    let (view, stored) = match view {
        Shown::Classic(view, stored) => (view, stored),
        Shown::Consumer(view) => {
            if args.json {
                println!("{}", serde_json::to_string(&view)?);
            } else {
                print!("{}", consumer::table(&view));
            }
            return Ok(());
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", table(&view));
        if let Some(stored) = stored {
            print!("{stored}");
        }
    }
    Ok(())
}

/// What ListGroups says of a group DescribeGroups shows `Dead` with no members: `None` for any
/// other view; the group's listing (its type tells a KIP-848 `consumer` group, which
/// DescribeGroups does not show) when ListGroups lists it; an error when it does not exist.
async fn listed_elsewhere(
    observer: &Observer,
    view: &GroupView,
    bootstrap: &str,
) -> Result<Option<GroupListing>, String> {
    if view.state != "Dead" || !view.members.is_empty() {
        return Ok(None);
    }
    let group = &view.group;
    match observer.list_groups().await {
        Ok(groups) => match groups.into_iter().find(|g| &g.group_id == group) {
            Some(listing) => Ok(Some(listing)),
            None => Err(format!(
                "group `{group}` does not exist at {bootstrap}: no member has joined it, or it \
                 was deleted; check --group (a group exists from its first member's JoinGroup)"
            )),
        },
        Err(e) => Err(format!(
            "group `{group}` is Dead with no members at {bootstrap}: it does not exist, unless it \
             is of a type DescribeGroups cannot show, and ListGroups, which would tell, failed: {e}"
        )),
    }
}

/// What `describe` shows: a classic group (with its task store's section), or a `consumer` one.
enum Shown {
    Classic(GroupView, Option<String>),
    Consumer(consumer::ConsumerGroupView),
}

/// The task store's section of `describe`'s table: every stored task with its actual state (as
/// its owner's status API reports it), desired state and owner, or why none; `None` when the
/// group has no task store under the default topic.
async fn stored_tasks(
    cluster: Arc<Cluster>,
    group: &str,
    view: &GroupView,
    addrs: &BTreeMap<String, String>,
    timeout: Duration,
) -> Option<String> {
    let topic = kroupier_worker::store::tasks_topic(group).ok()?;
    let read = async {
        let store = kroupier_worker::store::TaskStore::open(cluster, topic.clone(), false).await?;
        store.read_all().await
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(store)) => {
            let owners = crate::placement::owners(&store, view);
            let wait = crate::actual::STATUS_TIMEOUT.min(timeout);
            let reports = crate::actual::ask(addrs, &owners, wait).await;
            Some(format!(
                "\ntask store `{topic}` (offset {}):\n{}",
                store.offset,
                crate::placement::table(&crate::placement::place(&store, view, &reports))
            ))
        }
        Ok(Err(e))
            if e.log()
                .is_some_and(|e| e.kind() == kroupier_coordinator::log::LogErrorKind::Missing) =>
        {
            None
        }
        Ok(Err(e)) => Some(format!("\ntask store `{topic}`: {e}\n")),
        Err(_) => Some(format!("\ntask store `{topic}`: no answer in time\n")),
    }
}

/// The human-readable form of a view: a line of the group's facts, then a table of its members
/// (cells as [`crate::table`] writes them). `LEADER` marks the leader's row with `*`; `TASKS`
/// counts a member's tasks and `TASK_IDS` lists them, both `-` when the tasks are unknown (a
/// member of another protocol type, or bytes that do not decode).
pub(crate) fn table(view: &GroupView) -> String {
    use crate::table::{cell, list, optional};
    let mut out = format!(
        "group {}  state {}  protocol {}/{}  generation {}  leader {}\n",
        cell(&view.group),
        cell(&view.state),
        optional(view.protocol_type.as_deref()),
        optional(view.protocol.as_deref()),
        view.generation
            .map_or_else(|| "-".to_owned(), |g| g.to_string()),
        optional(view.leader.as_deref()),
    );
    if view.members.is_empty() {
        out.push_str("no members\n");
        return out;
    }
    let rows: Vec<[String; 8]> = view
        .members
        .iter()
        .map(|m| {
            let leader = view.leader.as_deref() == Some(m.member_id.as_str());
            let (count, ids) = match &m.tasks {
                Some(tasks) => (
                    tasks.len().to_string(),
                    list(tasks.iter().map(String::as_str)),
                ),
                None => ("-".to_owned(), "-".to_owned()),
            };
            [
                cell(m.name()),
                cell(&m.member_id),
                cell(&m.client_id),
                cell(&m.host),
                optional(m.instance_id.as_deref()),
                (if leader { "*" } else { "-" }).to_owned(),
                count,
                ids,
            ]
        })
        .collect();
    out.push_str(&crate::table::render(
        [
            "WORKER",
            "MEMBER_ID",
            "CLIENT_ID",
            "HOST",
            "INSTANCE_ID",
            "LEADER",
            "TASKS",
            "TASK_IDS",
        ],
        &rows,
    ));
    out
}

pub(crate) use status_addrs::status_addrs;

mod consumer;
mod status_addrs;
#[cfg(test)]
mod tests;
