//! `kroupier tasks`: add, change, pause, resume, restart, delete and list a group's tasks in
//! its task store (a compacted Kafka topic, see `docs/tasks.md`).
//!
//! Every write goes to Kafka, not to a worker, so it works while the group rebalances and
//! while no worker runs at all; the workers read the store and act on it. Each write prints
//! the version the task now has (the offset its record landed at).

use std::error::Error;
use std::path::PathBuf;
use std::time::Duration;

use kroupier_coordinator::log::LogErrorKind;
use kroupier_coordinator::observer::Observer;
use kroupier_worker::store::{
    DesiredState, StoreError, StoreView, TaskRecord, TaskStore, tasks_topic, validate_id,
};
use serde::Serialize;

use crate::actual::{self, Reports};
use crate::command_config::UsageError;
use crate::describe::{self, GroupView, On, cluster};
use crate::placement;

/// Arguments of `kroupier tasks`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

/// What to do to the store.
#[derive(Debug, clap::Subcommand)]
enum Action {
    /// List every task with its kind, desired state, version and config.
    List {
        #[command(flatten)]
        on: On,
    },
    /// Add a task, or replace its kind, config and weight (it keeps running where it runs).
    #[command(group(
        clap::ArgGroup::new("task_config").required(true).args(["config", "config_file"])
    ))]
    Put {
        /// The task id.
        id: String,
        /// The task kind (as registered by the workers).
        #[arg(long)]
        kind: String,
        /// The task's config, as JSON (`'{}'` for an empty one); this or --config-file is
        /// required.
        #[arg(long)]
        config: Option<String>,
        /// A file holding the task's config, as JSON.
        #[arg(long)]
        config_file: Option<PathBuf>,
        /// Relative cost for weight-aware assignors.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        weight: u32,
        /// Store the task paused: placed, but not started until `resume`.
        #[arg(long)]
        paused: bool,
        #[command(flatten)]
        on: On,
    },
    /// Delete a task: it stops wherever it runs.
    Delete {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
    /// Stop a task and keep it stopped (it stays assigned).
    Pause {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
    /// Start a paused task again.
    Resume {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
    /// Restart a task wherever it runs.
    Restart {
        /// The task id.
        id: String,
        #[command(flatten)]
        on: On,
    },
    /// Read a task's checkpoint, or set or reset it while the task is paused.
    #[command(subcommand)]
    Checkpoint(crate::tasks_checkpoint::Action),
}

/// An action with its input checked: what to ask of the store.
#[derive(Debug)]
enum Request {
    List,
    Put(String, TaskRecord),
    Delete(String),
    SetState(String, DesiredState, &'static str),
    Restart(String),
}

impl Request {
    /// Checks the action's input (a `put`'s kind and JSON config) before anything is sent.
    fn from_action(action: &Action) -> Result<Self, UsageError> {
        Ok(match action {
            Action::List { .. } => Request::List,
            Action::Put {
                id,
                kind,
                config,
                config_file,
                weight,
                paused,
                ..
            } => Request::Put(
                id.clone(),
                record(
                    kind,
                    config.as_deref(),
                    config_file.as_ref(),
                    *weight,
                    *paused,
                )?,
            ),
            Action::Delete { id, .. } => Request::Delete(id.clone()),
            Action::Pause { id, .. } => {
                Request::SetState(id.clone(), DesiredState::Paused, "pause")
            }
            Action::Resume { id, .. } => {
                Request::SetState(id.clone(), DesiredState::Running, "resume")
            }
            Action::Restart { id, .. } => Request::Restart(id.clone()),
            // `run` hands these to `tasks_checkpoint` before it builds a request.
            Action::Checkpoint(_) => {
                return Err(UsageError(
                    "tasks checkpoint is not a task store request".into(),
                ));
            }
        })
    }
}

impl Request {
    /// Checks what the store would refuse (the task id, a `put`'s record and its size), so
    /// that a command bound to fail fails before it opens, let alone creates, the store.
    fn check(&self) -> Result<(), StoreError> {
        match self {
            Request::List => Ok(()),
            Request::Put(id, record) => record.encode(id).map(drop),
            Request::Delete(id) | Request::SetState(id, ..) | Request::Restart(id) => {
                validate_id(id)
            }
        }
    }

    /// What to say when the group has no task store under `topic`.
    fn no_store(&self, group: &str, topic: &str) -> String {
        let id = match self {
            Request::List | Request::Put(..) => None,
            Request::Delete(id) | Request::SetState(id, ..) | Request::Restart(id) => Some(id),
        };
        let what = match id {
            Some(id) => format!("task {id:?} is not in the task store: "),
            None => String::new(),
        };
        format!(
            "{what}group `{group}` has no task store yet (no topic `{topic}`); `kroupier tasks \
             put` creates it, or pass --topic if the workers use another one"
        )
    }
}

/// One task as `kroupier tasks list --json` prints it.
#[derive(Debug, Serialize)]
struct TaskRow<'a> {
    id: &'a str,
    kind: &'a str,
    /// The generator that declared it, `null` for none.
    generated_by: Option<&'a str>,
    /// The actual state (`RUNNING`, `FAILED`, ..., `UNASSIGNED`, `UNKNOWN`).
    state: String,
    /// The desired state in the store.
    desired: DesiredState,
    /// The owner's last error for the task, when it reports one.
    error: Option<String>,
    weight: u32,
    restart: u64,
    version: i64,
    config: &'a serde_json::Value,
    /// The worker whose assignment holds it.
    owner: Option<String>,
    /// Why no worker holds it, when the leader says.
    unplaced: Option<String>,
}

/// What `kroupier tasks list --json` prints.
#[derive(Debug, Serialize)]
struct Listing<'a> {
    topic: &'a str,
    offset: i64,
    tasks: Vec<TaskRow<'a>>,
}

/// What a write prints with `--json`.
#[derive(Debug, Serialize)]
struct Written<'a> {
    task: &'a str,
    action: &'a str,
    version: i64,
}

impl Action {
    /// The store and output options the action was given (`checkpoint` has its own).
    fn on(&self) -> &On {
        match self {
            Action::Checkpoint(action) => action.on(),
            Action::List { on }
            | Action::Put { on, .. }
            | Action::Delete { on, .. }
            | Action::Pause { on, .. }
            | Action::Resume { on, .. }
            | Action::Restart { on, .. } => on,
        }
    }
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    if let Action::Checkpoint(action) = &args.action {
        return crate::tasks_checkpoint::run(action);
    }
    let on = args.action.on();
    let timeout = Duration::from_millis(on.timeout_ms);
    let security = on.target.config.security()?;
    let topic = match &on.topic {
        Some(topic) => topic.clone(),
        None => tasks_topic(&on.target.group).map_err(|e| match e.invalid_topic() {
            // The worker's advice names its property; here the flag is what to change.
            Some((group, reason)) => UsageError(format!(
                "group id {group:?} cannot name the task store's topic \
                 (kroupier-tasks-<group>): {reason}; pass --topic with the topic the workers \
                 use (their `tasks.store.topic`)"
            )),
            None => UsageError(e.to_string()),
        })?,
    };
    let request = Request::from_action(&args.action)?;
    // Everything that can be checked here is checked before the cluster is asked anything:
    // what the store would refuse is bad input (exit 2), as a bad flag is.
    request.check().map_err(|e| UsageError(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cluster = cluster(&on.target.bootstrap, security, timeout)?;
        let work = async {
            // Only `put` may create the store: the other commands need a task that is in it,
            // and a command that fails leaves nothing behind.
            let create = matches!(request, Request::Put(..));
            let store = match TaskStore::open(cluster.clone(), topic.clone(), create).await {
                Err(e) if e.log().is_some_and(|e| e.kind() == LogErrorKind::Missing) => {
                    return Err(request.no_store(&on.target.group, &topic).into());
                }
                // A --topic Kafka cannot name a topic (refused before anything is sent).
                Err(e)
                    if e.log()
                        .and_then(|e| e.kafka())
                        .is_some_and(|(code, _)| code == 17) =>
                {
                    let message = e
                        .log()
                        .and_then(|e| e.kafka())
                        .map_or("", |(_, message)| message);
                    return Err(UsageError(format!("--topic: {message}")).into());
                }
                opened => opened?,
            };
            let written = match &request {
                Request::List => {
                    let view = store.read_all().await?;
                    // Where each task runs, from DescribeGroups (the group may have no member),
                    // and in which state, from its owner's status API.
                    let observer = Observer::new(cluster.clone());
                    let (group, addrs) = describe::fetch_with_status(
                        &observer,
                        &on.target.bootstrap,
                        &on.target.group,
                        Duration::from_millis(on.timeout_ms),
                    )
                    .await?;
                    let owners = placement::owners(&view, &group);
                    let reports =
                        actual::ask(&addrs, &owners, actual::STATUS_TIMEOUT.min(timeout)).await;
                    print_listing(&topic, &view, &group, &reports, on.json)?;
                    return Ok::<(), Box<dyn Error>>(());
                }
                Request::Put(id, record) => (id, "put", store.put(id, record.clone()).await?),
                Request::Delete(id) => (id, "delete", store.delete(id).await?),
                Request::SetState(id, state, action) => {
                    (id, *action, store.set_state(id, *state).await?)
                }
                Request::Restart(id) => (id, "restart", store.restart(id).await?),
            };
            let (task, action, version) = written;
            if on.json {
                println!(
                    "{}",
                    serde_json::to_string(&Written {
                        task,
                        action,
                        version
                    })?
                );
            } else {
                println!("task `{task}`: {action} stored at version {version} in `{topic}`");
            }
            Ok(())
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

/// The record `put` writes, from its flags; bad JSON is a usage error naming the problem.
fn record(
    kind: &str,
    config: Option<&str>,
    config_file: Option<&PathBuf>,
    weight: u32,
    paused: bool,
) -> Result<TaskRecord, UsageError> {
    if kind.trim().is_empty() {
        return Err(UsageError("--kind must name a task kind".to_owned()));
    }
    let text = match (config, config_file) {
        (Some(text), _) => text.to_owned(),
        (None, Some(path)) => std::fs::read_to_string(path).map_err(|e| {
            UsageError(format!("cannot read --config-file {}: {e}", path.display()))
        })?,
        // clap requires one of them; said again here rather than storing a config no kind reads.
        (None, None) => {
            return Err(UsageError(
                "`tasks put` needs the task's config: --config JSON or --config-file FILE \
                 (--config '{}' for an empty one)"
                    .to_owned(),
            ));
        }
    };
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("the task config is not valid JSON: {e}")))?;
    Ok(TaskRecord {
        kind: kind.to_owned(),
        config,
        state: if paused {
            DesiredState::Paused
        } else {
            DesiredState::Running
        },
        weight,
        restart: 0,
        generated_by: None,
    })
}

/// Prints a store's tasks, with where each runs and in which state, as a table or as JSON.
fn print_listing(
    topic: &str,
    view: &StoreView,
    group: &GroupView,
    reports: &Reports,
    json: bool,
) -> Result<(), Box<dyn Error>> {
    let placed = placement::place(view, group, reports);
    if !json {
        print!("{}", placement::table(&placed));
        println!(
            "{} task(s) in `{topic}` up to offset {}",
            placed.len(),
            view.offset
        );
        return Ok(());
    }
    let rows: Vec<TaskRow<'_>> = view
        .tasks
        .values()
        .zip(placed)
        .map(|(task, placed)| TaskRow {
            id: &task.id,
            kind: &task.record.kind,
            generated_by: task
                .record
                .generated_by
                .as_ref()
                .map(|b| b.generator.as_str()),
            state: placed.state,
            desired: placed.desired,
            error: placed.error,
            weight: task.record.weight,
            restart: task.record.restart,
            version: task.version,
            config: &task.record.config,
            owner: placed.owner,
            unplaced: placed.unplaced,
        })
        .collect();
    let listing = Listing {
        topic,
        offset: view.offset,
        tasks: rows,
    };
    println!("{}", serde_json::to_string(&listing)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_put_record_takes_its_flags_and_refuses_bad_json() {
        let record = record("beat", Some(r#"{"every_ms":100}"#), None, 2, true).unwrap();
        assert_eq!(record.kind, "beat");
        assert_eq!(record.config, serde_json::json!({"every_ms": 100}));
        assert_eq!(record.weight, 2);
        assert_eq!(record.state, DesiredState::Paused);

        let error = record_error("beat", Some("{every_ms:"));
        assert!(error.contains("not valid JSON"), "{error}");
        let error = record_error(" ", Some("{}"));
        assert!(error.contains("--kind"), "{error}");
    }

    #[test]
    fn a_put_without_a_config_is_refused_rather_than_stored_as_null() {
        let error = record("beat", None, None, 1, false).unwrap_err().0;
        assert!(
            error.contains("--config") && error.contains("'{}'"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_config_file_is_named() {
        let path = PathBuf::from("/nonexistent/kroupier-task.json");
        let error = record("beat", None, Some(&path), 1, false).unwrap_err().0;
        assert!(error.contains("/nonexistent/kroupier-task.json"), "{error}");
    }

    fn record_error(kind: &str, config: Option<&str>) -> String {
        record(kind, config, None, 1, false).unwrap_err().0
    }
}
