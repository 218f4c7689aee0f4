//! `kroupier tasks checkpoint get|set|reset ID`: read a task's newest checkpoint, or set or
//! reset it while the task is paused (Kafka Connect's offset management, KIP-875).
//!
//! `set` and `reset` are refused (exit 2, with why) unless the task's desired state in the
//! task store is paused and no worker reports it running (its owner's status API is asked, as
//! `tasks list` does). The write goes to the checkpoint topic directly, under the task's
//! highest generation there or the generation its owner reports it was granted the task in,
//! whichever is higher, so that no older owner can overwrite it and the task's owner, once
//! resumed, wins with its next save (docs/tasks.md, *Checkpoint administration*).
//! While the group rebalances (the paused task moving to another worker), they wait up to
//! 10 s for the group to settle and the new owner to report its generation.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::log::LogErrorKind;
use kroupier_coordinator::observer::Observer;
use kroupier_worker::checkpoint::Checkpoints;
use kroupier_worker::store::{
    DesiredState, TaskStore, checkpoints_topic, tasks_topic, validate_id,
};

use crate::command_config::UsageError;
use crate::describe::On;
use crate::describe::{self, cluster};

/// How long a `set` or `reset` waits for a rebalancing group to name the task's owner and its
/// generation (at most half the command's timeout).
const SETTLE: Duration = Duration::from_secs(10);
/// How often it asks meanwhile.
const SETTLE_POLL: Duration = Duration::from_millis(200);
use crate::{actual, placement};

/// What to do to a task's checkpoint.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Print the task's newest checkpoint (its generation, offset, writer and state).
    Get {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
    /// Set a paused task's checkpoint: it starts from this value when resumed.
    Set {
        /// The task id.
        id: String,
        /// The checkpoint's value, as JSON (what the task's `last_checkpoint` reads).
        #[arg(long)]
        value: String,
        #[command(flatten)]
        on: On,
    },
    /// Reset a paused task's checkpoint: it starts with none when resumed.
    Reset {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
}

impl Action {
    /// The store and output options.
    pub(crate) fn on(&self) -> &On {
        self.parts().1
    }

    fn parts(&self) -> (&str, &On) {
        match self {
            Action::Get { id, on } | Action::Set { id, on, .. } | Action::Reset { id, on } => {
                (id, on)
            }
        }
    }
}

/// Runs the command.
pub(crate) fn run(action: &Action) -> Result<(), Box<dyn Error>> {
    let (id, on) = action.parts();
    validate_id(id).map_err(|e| UsageError(e.to_string()))?;
    let value = match action {
        Action::Set { value, .. } => Some(
            serde_json::from_str::<serde_json::Value>(value)
                .map_err(|e| UsageError(format!("--value is not valid JSON: {e}")))?,
        ),
        _ => None,
    };
    let group = &on.target.group;
    let topic = match &on.topic {
        Some(topic) => topic.clone(),
        None => tasks_topic(group).map_err(|e| UsageError(e.to_string()))?,
    };
    let checkpoint_topic = checkpoints_topic(group).map_err(|e| UsageError(e.to_string()))?;
    let timeout = Duration::from_millis(on.timeout_ms);
    let security = on.target.config.security()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cluster = cluster(&on.target.bootstrap, security, timeout)?;
        let work = async {
            let granted = if matches!(action, Action::Get { .. }) {
                None
            } else {
                refuse_unless_paused(&cluster, on, &topic, id, timeout).await?
            };
            let checkpoints =
                match Checkpoints::open(cluster.clone(), checkpoint_topic.clone()).await {
                    Err(e) if e.log().is_some_and(|e| e.kind() == LogErrorKind::Missing) => {
                        return Err(format!(
                            "group `{group}` has no checkpoint topic (`{checkpoint_topic}`): its \
                         workers have not run with the task store"
                        )
                        .into());
                    }
                    opened => opened?,
                };
            print(action, id, &checkpoints, value, granted, on.json).await
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no answer from {} within {} ms: is a Kafka broker (or `kroupier coordinator`) \
                 running there?",
                on.target.bootstrap, on.timeout_ms
            )
            .into()),
        }
    })
}

/// Refuses (exit 2, with why) unless task `id` is paused in the store and no worker reports
/// it running. Returns the generation its owner was granted it in, when the owner says: the
/// operator's record goes at least that high, so that no save of an earlier owner (one from
/// before the task moved, still in flight) can outrank it.
async fn refuse_unless_paused(
    cluster: &Arc<kroupier_coordinator::connection::Cluster>,
    on: &On,
    topic: &str,
    id: &str,
    timeout: Duration,
) -> Result<Option<i32>, Box<dyn Error>> {
    let store = match TaskStore::open(cluster.clone(), topic.to_owned(), false).await {
        Err(e) if e.log().is_some_and(|e| e.kind() == LogErrorKind::Missing) => {
            return Err(UsageError(format!(
                "task {id:?} is not in the task store: group `{}` has no task store (no topic \
                 `{topic}`)",
                on.target.group
            ))
            .into());
        }
        opened => opened?,
    };
    let view = store.read_all().await?;
    let Some(task) = view.tasks.get(id) else {
        return Err(UsageError(format!("task {id:?} is not in the task store `{topic}`")).into());
    };
    if task.record.state != DesiredState::Paused {
        return Err(UsageError(format!(
            "task {id:?} is not paused (its desired state is {}): its owner would overwrite the \
             checkpoint; run `kroupier tasks pause {id}` first, then this command again",
            task.record.state
        ))
        .into());
    }
    let observer = Observer::new(cluster.clone());
    // A group in a rebalance (the task moving, as after its owner stopped) names no owner, or
    // an owner that has not been granted it yet: wait for the owner's word, a while, so that
    // the record goes under its generation.
    let settle_until = tokio::time::Instant::now() + SETTLE.min(timeout / 2);
    loop {
        let (group, addrs) =
            describe::fetch_with_status(&observer, &on.target.bootstrap, &on.target.group, timeout)
                .await?;
        let owners = placement::owners(&view, &group);
        let reports = actual::ask(&addrs, &owners, actual::STATUS_TIMEOUT.min(timeout)).await;
        let placed = placement::place(&view, &group, &reports);
        let Some(p) = placed.iter().find(|p| p.id == id) else {
            return Ok(None);
        };
        let granted = p
            .owner
            .as_deref()
            .and_then(|owner| reports.get(owner)?.get(id)?.generation);
        let state = p.state.as_str();
        if matches!(state, "RUNNING" | "STARTING" | "RESTARTING" | "STOPPING") {
            return Err(UsageError(format!(
                "task {id:?} is paused in the store but still {state} on {}; retry once it is \
                 PAUSED",
                p.owner.as_deref().unwrap_or("its owner")
            ))
            .into());
        }
        let settled = group.state == "Stable" && (granted.is_some() || p.owner.is_none());
        if settled || tokio::time::Instant::now() >= settle_until {
            if state == placement::UNKNOWN {
                eprintln!(
                    "kroupier: task {id:?}'s owner did not report its state; going on, since it \
                     is paused in the store"
                );
            }
            return Ok(granted);
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

async fn print(
    action: &Action,
    id: &str,
    checkpoints: &Checkpoints,
    value: Option<serde_json::Value>,
    granted: Option<i32>,
    json: bool,
) -> Result<(), Box<dyn Error>> {
    let (what, offset) = match action {
        Action::Get { .. } => {
            let newest = checkpoints.newest_record(id).await?;
            let Some(c) = newest else {
                if json {
                    println!("{}", serde_json::json!({"id": id, "checkpoint": null}));
                } else {
                    println!("task `{id}` has no checkpoint");
                }
                return Ok(());
            };
            let body = serde_json::json!({
                "id": id, "generation": c.generation, "offset": c.offset,
                "member": c.member, "state": *c.state,
            });
            if json {
                println!("{body}");
            } else {
                println!(
                    "task `{id}`: checkpoint {} (generation {}, offset {}, written by {})",
                    c.state, c.generation, c.offset, c.member
                );
            }
            return Ok(());
        }
        Action::Set { .. } => (
            "set",
            checkpoints
                .set(id, value.unwrap_or(serde_json::Value::Null), granted)
                .await?,
        ),
        Action::Reset { .. } => ("reset", checkpoints.reset(id, granted).await?),
    };
    if json {
        println!(
            "{}",
            serde_json::json!({"id": id, "checkpoint": what, "offset": offset})
        );
    } else {
        println!(
            "task `{id}`: checkpoint {what} at offset {offset} of `{}`; resume the task to use it",
            checkpoints.topic()
        );
    }
    Ok(())
}
