//! `kroupier watch`: a live view of a group's members and their tasks.
//!
//! Every 250 ms the group is described (as `kroupier describe` does); the [`model`] diffs
//! successive snapshots into moves (a task that changed owner) and times how long each task
//! was unowned. On a terminal the [`view`] draws it with ratatui (`q`, `Esc` or ctrl-c quits);
//! with `--plain`, or when stdout is not a terminal, it prints a line per change instead, and with
//! `--json` a JSON object per change ([`lines`]). SIGTERM and ctrl-c end it with exit 0, the
//! terminal restored.
//!
//! The unowned time `watch` can see starts when DescribeGroups stops showing the task on its
//! old owner: for a crashed worker that is when the coordinator expires its session, so the
//! session timeout itself is not included (`kroupier demo` knows when it killed the worker and
//! includes it). A handover that falls between two polls (the group rebalanced within 250 ms)
//! shows as "handed over between two polls".

pub(crate) mod lines;
pub(crate) mod model;
pub(crate) mod view;

use std::error::Error;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kroupier_coordinator::observer::Observer;
use kroupier_worker::journal::unix_ms;
use lines::Changes;
use model::Tracker;
use view::{Screen, Ui};

use crate::describe::{self, GroupTarget, GroupView};

/// How often the group is described.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// Arguments of `kroupier watch`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: GroupTarget,
    /// A line per change instead of the full-screen view (the default when stdout is not a
    /// terminal).
    #[arg(long)]
    plain: bool,
    /// A JSON object per change, one a line (docs/operations.md).
    #[arg(long, conflicts_with = "plain")]
    json: bool,
}

/// Runs the command until the user quits, ctrl-c or SIGTERM.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let security = args.target.config.security()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Short, so that the view (and q) stays responsive while the cluster is unreachable.
    let timeout = Duration::from_secs(2);
    let observer = describe::observer(&args.target.bootstrap, security, timeout)?;
    let watch = Watch {
        observer,
        target: &args.target,
        timeout,
    };
    runtime.block_on(async {
        // Installed before the view takes the terminal: a SIGTERM from now on restores it.
        let signals = crate::signal::signals()?;
        if args.json || args.plain || !std::io::stdout().is_terminal() {
            watch.lines(signals, args.json).await
        } else {
            watch.screen(signals).await
        }
    })
}

/// What `watch` polls.
struct Watch<'a> {
    observer: Observer,
    target: &'a GroupTarget,
    timeout: Duration,
}

impl Watch<'_> {
    /// Describes the group once, feeding `tracker`: the view (or the error) and the fresh moves.
    async fn poll(&self, tracker: &mut Tracker) -> (Result<GroupView, String>, Vec<model::Move>) {
        let fetched = describe::fetch(
            &self.observer,
            &self.target.bootstrap,
            &self.target.group,
            self.timeout,
        )
        .await;
        let fresh = match &fetched {
            Ok(view) => tracker.observe(Instant::now(), &model::owners(view)),
            Err(_) => Vec::new(),
        };
        (fetched, fresh)
    }

    /// The full-screen view, until q, Esc, ctrl-c or a signal.
    async fn screen(
        &self,
        mut signals: impl Stream<Item = ()> + Unpin,
    ) -> Result<(), Box<dyn Error>> {
        let mut ui = Ui::start().map_err(|e| {
            format!("cannot start the terminal view ({e}); --plain or --json print lines instead")
        })?;
        let mut tracker = Tracker::new();
        let mut latest = None;
        let mut next_poll = Instant::now();
        let title = format!("group {} at {}", self.target.group, self.target.bootstrap);
        loop {
            if ui.quit_requested()? {
                return Ok(());
            }
            if Instant::now() >= next_poll {
                next_poll = Instant::now() + POLL;
                let (fetched, _) = tokio::select! {
                    _ = signals.next() => return Ok(()),
                    polled = self.poll(&mut tracker) => polled,
                };
                let error = match fetched {
                    Ok(view) => {
                        latest = Some(view);
                        None
                    }
                    Err(e) => Some(e),
                };
                let now = Instant::now();
                ui.draw(&Screen {
                    title: title.clone(),
                    view: latest.as_ref(),
                    error: error.as_deref(),
                    moves: tracker.moves(),
                    unowned: &tracker.unowned(now),
                    notes: &[],
                    now,
                })?;
            }
            tokio::select! {
                _ = signals.next() => return Ok(()),
                () = tokio::time::sleep(Duration::from_millis(30)) => {}
            }
        }
    }

    /// A line per change on stdout, plain or JSON, until a signal (or stdout closes).
    async fn lines(
        &self,
        mut signals: impl Stream<Item = ()> + Unpin,
        json: bool,
    ) -> Result<(), Box<dyn Error>> {
        let start = Instant::now();
        let mut tracker = Tracker::new();
        let mut changes = Changes::new();
        let mut latest = None;
        if !json {
            println!("group {} at {}", self.target.group, self.target.bootstrap);
        }
        loop {
            let (fetched, fresh) = tokio::select! {
                _ = signals.next() => return Ok(()),
                polled = self.poll(&mut tracker) => polled,
            };
            let error = match fetched {
                Ok(view) => {
                    latest = Some(view);
                    None
                }
                Err(e) => Some(e),
            };
            let lines = if json {
                changes.json(unix_ms(), latest.as_ref(), error.as_deref(), &fresh)?
            } else {
                let at = start.elapsed().as_secs_f64();
                changes
                    .plain(latest.as_ref(), error.as_deref(), &fresh)
                    .into_iter()
                    .map(|line| format!("+{at:>5.1}s {line}"))
                    .collect()
            };
            let mut out = std::io::stdout().lock();
            for line in lines {
                match writeln!(out, "{line}").and_then(|()| out.flush()) {
                    Ok(()) => {}
                    // The reader is gone (`| head`): nothing left to do.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
            }
            drop(out);
            tokio::select! {
                _ = signals.next() => return Ok(()),
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}
