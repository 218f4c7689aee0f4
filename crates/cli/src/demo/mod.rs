//! `kroupier demo`: watch kroupier fail over, with nothing but this binary.
//!
//! Without `--bootstrap` it starts the embedded coordinator in this process; with it,
//! `--command-config FILE` secures the connections (the demo's and its workers'). It launches N
//! worker processes (this binary's hidden `worker` subcommand) sharing T `beat` tasks, waits
//! until every task runs, SIGKILLs the worker with the most tasks once `--kill-after` seconds
//! have passed since the launch, and waits until the killed worker's tasks run elsewhere. It
//! shows the watch view while stdout is a terminal, plain progress lines otherwise, and ends
//! with a summary: which tasks moved where, and the failover time (from the kill to the last
//! moved task's first journal beat on its new owner). The web console (`kroupier console`)
//! shows the same group while the demo runs; its URL is one of the progress lines.
//!
//! Exit 0 only when every task ran again exactly once: the group (DescribeGroups) shows every
//! task on exactly one live worker, and the journals show no task on two workers at once, each
//! of the killed worker's tasks resumed on exactly one other worker, and every task beating on
//! its final owner only. The whole run is bounded by `--timeout`; every worker process is
//! killed on any exit path (ctrl-c included).

mod journal;
mod runtime_task;
mod workers;

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use kroupier_coordinator::connection::Security;
use kroupier_coordinator::observer::Observer;
use kroupier_embedded::EmbeddedCoordinator;
use kroupier_worker::journal::unix_ms;

use crate::command_config::{CommandConfig, UsageError};
use crate::describe::{self, GroupView};
use crate::watch::lines::Changes;
use crate::watch::model::{self, Move, Tracker};
use crate::watch::view::{Screen, Ui};
use workers::{Launch, Workers};

/// Arguments of `kroupier demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// How many worker processes to launch (one is killed).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(2..=64))]
    workers: u16,
    /// How many tasks the workers share.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..=1000))]
    tasks: u16,
    /// Seconds from the launch to the kill (later if the tasks are not all running by then).
    #[arg(long, default_value_t = 5)]
    kill_after: u64,
    /// Use this Kafka cluster (or `kroupier coordinator`) instead of an embedded coordinator.
    #[arg(long)]
    bootstrap: Option<String>,
    /// The group id (default: `kroupier-demo-<pid>`).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    group: Option<String>,
    /// The workers' session timeout: how soon the killed worker's tasks move with
    /// `--no-fast-failover` (with fast failover, its peers see its process end at once).
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(1..))]
    session_timeout_ms: u64,
    /// Turn the workers' fast failover off: the killed worker's tasks move after its session
    /// timeout, as on Kafka's group protocol without kroupier's peer links.
    #[arg(long)]
    no_fast_failover: bool,
    /// Skip the last step, which adds a task at run time through the group's task store and
    /// deletes it (the store is a compacted topic, `kroupier-tasks-<group>`, created on use).
    #[arg(long)]
    no_runtime_task: bool,
    /// The workers' heartbeat interval.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    heartbeat_interval_ms: u64,
    /// Fail when the demo has not finished within this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Plain progress lines even when stdout is a terminal.
    #[arg(long)]
    plain: bool,
    /// Where to serve the web console (`kroupier console`) while the demo runs.
    #[arg(long, default_value = "127.0.0.1:0")]
    console_listen: std::net::SocketAddr,
    #[command(flatten)]
    config: CommandConfig,
}

/// Gap between beats (every 100 ms) that still counts as one uninterrupted run.
const MAX_GAP_MS: u64 = 300;
/// How long the group must look settled, and the journals beat, before the final checks.
const SETTLE: Duration = Duration::from_secs(1);
/// How long the terminal view stays up after the checks passed.
const HOLD: Duration = Duration::from_secs(4);

/// Runs the command.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    if args.heartbeat_interval_ms >= args.session_timeout_ms {
        return Err(UsageError(
            "--heartbeat-interval-ms must be below --session-timeout-ms".to_owned(),
        )
        .into());
    }
    if args.config.command_config.is_some() && args.bootstrap.is_none() {
        return Err(UsageError(
            "--command-config needs --bootstrap: the embedded coordinator speaks PLAINTEXT only"
                .to_owned(),
        )
        .into());
    }
    let security = args.config.security()?;
    if let Some(bootstrap) = &args.bootstrap {
        // A --bootstrap that names no server is bad input, found before any worker starts.
        describe::cluster(bootstrap, security.clone(), Duration::from_secs(5))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let interactive = !args.plain && std::io::stdout().is_terminal();
    let dir = std::env::temp_dir().join(format!(
        "kroupier-demo-{}-{}",
        std::process::id(),
        unix_ms()
    ));
    std::fs::create_dir_all(&dir)?;
    let outcome = runtime.block_on(async {
        let (bootstrap, coordinator) = match &args.bootstrap {
            Some(bootstrap) => (bootstrap.clone(), None),
            None => {
                let coordinator = EmbeddedCoordinator::builder()
                    .min_session_timeout(Duration::from_millis(500))
                    .bind("127.0.0.1:0")
                    .await?;
                (coordinator.bootstrap(), Some(coordinator))
            }
        };
        let result = tokio::select! {
            result = demo(args, &bootstrap, security, coordinator.is_some(), &dir, interactive) => result,
            signal = crate::signal::terminated() => match signal {
                Ok(()) => Err("interrupted; every worker process was killed".to_owned()),
                Err(e) => Err(format!("cannot wait for ctrl-c: {e}")),
            },
        };
        if let Some(coordinator) = coordinator {
            coordinator.shutdown().await;
        }
        Ok::<_, Box<dyn Error>>(result)
    })?;
    match outcome {
        Ok(summary) => {
            print!("{summary}");
            let _ = std::fs::remove_dir_all(&dir);
            Ok(())
        }
        Err(e) => Err(format!("{e}\n(journals and worker logs kept in {})", dir.display()).into()),
    }
}

/// Where the demo shows its progress: the watch view or plain lines.
struct Progress {
    ui: Option<Ui>,
    start: Instant,
    title: String,
    notes: Vec<String>,
    changes: Changes,
}

impl Progress {
    fn note(&mut self, text: String) {
        let line = format!("+{:>5.1}s {text}", self.start.elapsed().as_secs_f64());
        if self.ui.is_some() {
            self.notes.push(line);
            if self.notes.len() > 6 {
                self.notes.remove(0);
            }
        } else {
            println!("{line}");
        }
    }

    fn show(
        &mut self,
        view: Option<&GroupView>,
        error: Option<&str>,
        tracker: &Tracker,
        fresh: &[Move],
    ) -> Result<(), String> {
        let now = Instant::now();
        if let Some(ui) = &mut self.ui {
            ui.draw(&Screen {
                title: self.title.clone(),
                view,
                error,
                moves: tracker.moves(),
                unowned: &tracker.unowned(now),
                notes: &self.notes,
                now,
            })
            .map_err(|e| format!("cannot draw: {e}"))?;
            if ui.quit_requested().map_err(|e| e.to_string())? {
                return Err("stopped (q); every worker process was killed".into());
            }
            return Ok(());
        }
        for line in self.changes.plain(view, error, fresh) {
            self.note(line);
        }
        Ok(())
    }
}

/// The group as the demo follows it.
struct Follow<'a> {
    observer: Observer,
    bootstrap: &'a str,
    group: &'a str,
    tracker: Tracker,
    latest: Option<GroupView>,
    progress: Progress,
    deadline: Instant,
    workers: Workers,
}

impl Follow<'_> {
    /// Describes the group once (after [`POLL`](crate::watch::POLL)) and shows it.
    async fn poll(&mut self, what: &str) -> Result<(), String> {
        tokio::time::sleep(crate::watch::POLL).await;
        if Instant::now() > self.deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        if let Some(exit) = self.workers.exited() {
            return Err(format!(
                "{exit} (see its .stderr log; on a real Kafka the session timeout must lie within \
                 the broker's group.min.session.timeout.ms, 6000 by default, and \
                 group.max.session.timeout.ms: see --session-timeout-ms)"
            ));
        }
        let fetched = describe::fetch(
            &self.observer,
            self.bootstrap,
            self.group,
            Duration::from_secs(5),
        )
        .await;
        let (error, fresh) = match fetched {
            Ok(view) => {
                let fresh = self.tracker.observe(Instant::now(), &model::owners(&view));
                self.latest = Some(view);
                (None, fresh)
            }
            Err(e) => (Some(e), Vec::new()),
        };
        self.progress.show(
            self.latest.as_ref(),
            error.as_deref(),
            &self.tracker,
            &fresh,
        )
    }

    /// Polls until every task runs on exactly one of `members` live workers.
    async fn settle(
        &mut self,
        members: usize,
        tasks: usize,
        what: &str,
    ) -> Result<GroupView, String> {
        loop {
            self.poll(what).await?;
            if let Some(view) = &self.latest
                && settled(view, members, tasks)
            {
                return Ok(view.clone());
            }
        }
    }
}

/// Whether the group is stable with `members` members and each of `tasks` tasks on exactly one.
fn settled(view: &GroupView, members: usize, tasks: usize) -> bool {
    let owners = model::owners(view);
    view.state == "Stable"
        && view.members.len() == members
        && owners.len() == tasks
        && owners.values().all(|o| o.len() == 1)
        && (0..tasks).all(|i| owners.contains_key(&format!("task-{i}")))
}

async fn demo(
    args: &Args,
    bootstrap: &str,
    security: Security,
    embedded: bool,
    dir: &Path,
    interactive: bool,
) -> Result<String, String> {
    let start = Instant::now();
    let group = args
        .group
        .clone()
        .unwrap_or_else(|| format!("kroupier-demo-{}", std::process::id()));
    let (n, t) = (usize::from(args.workers), usize::from(args.tasks));
    let where_ = if embedded {
        format!("embedded coordinator at {bootstrap}")
    } else {
        format!("Kafka at {bootstrap}")
    };
    let title = format!("kroupier demo: {n} workers, {t} tasks, group {group}, {where_}");
    let ui = if interactive {
        Some(Ui::start().map_err(|e| format!("cannot start the terminal view: {e}"))?)
    } else {
        println!("{title}");
        None
    };
    let session = Duration::from_millis(args.session_timeout_ms);
    let launch = Launch {
        bootstrap,
        group: &group,
        tasks: t,
        dir,
        session_timeout: session,
        heartbeat_interval: Duration::from_millis(args.heartbeat_interval_ms),
        command_config: args.config.command_config.as_deref(),
        fast_failover: !args.no_fast_failover,
        task_store: !args.no_runtime_task,
    };
    let workers = Workers::spawn(n, &launch).map_err(|e| format!("cannot start a worker: {e}"))?;
    let observer = describe::observer(bootstrap, security.clone(), Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    // The web console watches the same group while the demo runs (dropped with it).
    let console =
        crate::console::spawn(args.console_listen, observer.clone(), bootstrap, &group).await?;
    let mut follow = Follow {
        observer,
        bootstrap,
        group: &group,
        tracker: Tracker::new(),
        latest: None,
        progress: Progress {
            ui,
            start,
            title,
            notes: Vec::new(),
            changes: Changes::new(),
        },
        deadline: start + Duration::from_secs(args.timeout),
        workers,
    };
    follow.progress.note(format!("launched {n} workers"));
    follow.progress.note(format!(
        "web console: {} (while the demo runs)",
        console.url()
    ));

    let spread = follow.settle(n, t, "the tasks to spread").await?;
    follow.progress.note(format!(
        "all {t} tasks running on {n} workers (generation {})",
        spread.generation.map_or("-".into(), |g| g.to_string())
    ));
    while start.elapsed() < Duration::from_secs(args.kill_after) {
        follow.poll("the kill").await?;
    }
    let before = follow.latest.clone().unwrap_or(spread);
    let victim = before
        .members
        .iter()
        .max_by_key(|m| {
            (
                m.tasks.as_ref().map_or(0, Vec::len),
                std::cmp::Reverse(m.name().to_owned()),
            )
        })
        .ok_or("the group has no members")?;
    let victim_name = victim.name().to_owned();
    let victim_tasks: BTreeSet<String> = victim.tasks.iter().flatten().cloned().collect();
    let kill_at = Instant::now();
    let signal_ms = unix_ms();
    let pid = follow
        .workers
        .kill(&victim_name)
        .await
        .map_err(|e| format!("cannot kill {victim_name}: {e}"))?;
    let reaped_ms = unix_ms();
    follow.tracker.mark_lost(&victim_name, kill_at);
    let kill_offset = kill_at.duration_since(start);
    follow.progress.note(format!(
        "SIGKILL {victim_name} (pid {}), which ran {}",
        pid.map_or("?".into(), |p| p.to_string()),
        join(&victim_tasks)
    ));

    let after = follow
        .settle(n - 1, t, "the killed worker's tasks to run elsewhere")
        .await?;
    let settled_at = Instant::now();
    let settled_ms = unix_ms();
    follow.progress.note(format!(
        "every task running on the {} survivors (generation {})",
        n - 1,
        after.generation.map_or("-".into(), |g| g.to_string())
    ));
    // Let the journals show every task at work since the group settled (however loaded the
    // machine), and the group stay put.
    let journals = loop {
        follow
            .poll("every task's journal to show it running")
            .await?;
        if settled_at.elapsed() < SETTLE {
            continue;
        }
        let journals = read_journals(&dir.join("journals"))?;
        let beating = |task: &String| {
            journals
                .get(task)
                .is_some_and(|beats| beats.iter().any(|b| b.unix_ms >= settled_ms))
        };
        if (0..t)
            .map(|i| format!("task-{i}"))
            .all(|task| beating(&task))
        {
            break journals;
        }
    };
    let last = follow.latest.clone().unwrap_or(after);
    if !settled(&last, n - 1, t) || last.members.iter().any(|m| m.name() == victim_name) {
        return Err("the group changed again after the failover".into());
    }
    let final_owners: BTreeMap<String, String> = model::owners(&last)
        .into_iter()
        .filter_map(|(task, owners)| owners.into_iter().next().map(|o| (task, o)))
        .collect();
    let failover = journal::check(
        &journals,
        journal::Kill {
            worker: &victim_name,
            signal_ms,
            reaped_ms,
        },
        &victim_tasks,
        &final_owners,
        settled_ms,
        MAX_GAP_MS,
    )
    .map_err(|problems| format!("the checks failed:\n  {}", problems.join("\n  ")))?;
    let runtime_task = if args.no_runtime_task {
        None
    } else {
        Some(runtime_task::add_and_delete(&mut follow, security).await?)
    };
    if follow.progress.ui.is_some() {
        follow.progress.note(format!(
            "all checks passed, failover {} ms; the summary follows (q: now)",
            failover.time_ms()
        ));
        let hold = Instant::now();
        // q (an error from poll) only cuts the hold short: the demo has succeeded.
        while hold.elapsed() < HOLD && follow.poll("the summary").await.is_ok() {}
    }
    // Moves among the survivors (a sticky or cooperative assignor makes none).
    let others: Vec<Move> = follow
        .tracker
        .moves()
        .iter()
        .filter(|m| m.at >= kill_at && m.from != victim_name)
        .cloned()
        .collect();
    drop(follow);

    let mut out = String::new();
    out.push_str(&format!(
        "\nkroupier demo: {n} workers, {t} tasks, {where_}, session timeout {:.1} s, fast \
         failover {}\n",
        session.as_secs_f64(),
        if args.no_fast_failover { "off" } else { "on" }
    ));
    out.push_str(&format!(
        "killed {victim_name} (SIGKILL) at +{:.1} s; its {} tasks moved:\n",
        kill_offset.as_secs_f64(),
        victim_tasks.len()
    ));
    for (task, (owner, ms)) in &failover.resumed {
        out.push_str(&format!(
            "  {task:<10} {victim_name} → {owner:<10} running again {ms} ms after the kill\n"
        ));
    }
    for m in &others {
        out.push_str(&format!(
            "  {:<10} {} → {:<10} (rebalanced among the survivors)\n",
            m.task, m.from, m.to
        ));
    }
    let why = if !args.no_fast_failover {
        format!(
            "fast failover: the survivors saw its process end and removed it at once, without \
             waiting for its {:.1} s session timeout",
            session.as_secs_f64()
        )
    } else {
        format!(
            "fast failover off: the coordinator expires a dead worker {:.1} s, the session \
             timeout, after its last heartbeat (then the leader, in the same network, sees its \
             port refuse: its tasks need no hold)",
            session.as_secs_f64()
        )
    };
    out.push_str(&format!(
        "failover time: {} ms (SIGKILL sent → the last moved task running again; {why})\n",
        failover.time_ms(),
    ));
    if let Some(added) = &runtime_task {
        out.push_str(&format!(
            "task {} added at run time through the task store ({}): running on {} after {:.2} \
             s; deleted: on no worker {:.2} s later (no worker restarted)\n",
            runtime_task::TASK,
            added.topic,
            added.owner,
            added.placed.as_secs_f64(),
            added.removed.as_secs_f64()
        ));
    }
    out.push_str(&format!(
        "checked: all {t} tasks running, each on exactly one worker (DescribeGroups and \
         journals); no task ran on two workers at once (journals)\ntotal {:.1} s: OK\n",
        start.elapsed().as_secs_f64()
    ));
    Ok(out)
}

fn join(tasks: &BTreeSet<String>) -> String {
    tasks
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_journals(dir: &Path) -> Result<journal::Journals, String> {
    journal::read_dir(dir).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_view::MemberView;

    fn view(state: &str, members: &[(&str, &[&str])]) -> GroupView {
        GroupView {
            group: "g".into(),
            state: state.into(),
            generation: Some(2),
            protocol_type: Some("kroupier".into()),
            protocol: Some("cooperative".into()),
            leader: None,
            members: members
                .iter()
                .map(|(id, tasks)| MemberView {
                    member_id: format!("m-{id}"),
                    instance_id: None,
                    client_id: String::new(),
                    host: String::new(),
                    tasks: Some(tasks.iter().map(|t| t.to_string()).collect()),
                    worker_id: Some(id.to_string()),
                })
                .collect(),
            unplaced: Default::default(),
        }
    }

    #[test]
    fn settled_needs_a_stable_group_with_every_task_on_exactly_one_member() {
        let ok = view(
            "Stable",
            &[("a", &["task-0", "task-2"]), ("b", &["task-1"])],
        );
        assert!(settled(&ok, 2, 3));
        assert!(!settled(&ok, 3, 3), "a member is missing");
        assert!(!settled(&ok, 2, 4), "task-3 is not running");
        let rebalancing = view(
            "PreparingRebalance",
            &[("a", &["task-0", "task-1", "task-2"])],
        );
        assert!(!settled(&rebalancing, 1, 3));
        let twice = view(
            "Stable",
            &[("a", &["task-0", "task-1"]), ("b", &["task-1"])],
        );
        assert!(!settled(&twice, 2, 2), "task-1 on two members");
        let other = view("Stable", &[("a", &["task-0", "job-9"])]);
        assert!(!settled(&other, 1, 2), "a task outside the catalogue");
    }
}
