//! `kroupier watch`: a live terminal view of a group's members and their tasks.
//!
//! Every 250 ms the group is described (as `kroupier describe` does); the [`model`] diffs
//! successive snapshots into moves (a task that changed owner) and times how long each task
//! was unowned; the [`view`] draws it with ratatui. `q`, `Esc` or ctrl-c quits.
//!
//! The unowned time `watch` can see starts when DescribeGroups stops showing the task on its
//! old owner: for a crashed worker that is when the coordinator expires its session, so the
//! session timeout itself is not included (`kroupier demo` knows when it killed the worker and
//! includes it). A handover that falls between two polls (the group rebalanced within 250 ms)
//! shows as "handed over between two polls".

pub mod model;
pub mod view;

use std::error::Error;
use std::time::{Duration, Instant};

use model::Tracker;
use view::{Screen, Ui};

use crate::describe::{self, GroupTarget};

/// How often the group is described.
pub const POLL: Duration = Duration::from_millis(250);

/// Arguments of `kroupier watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: GroupTarget,
}

/// Runs the command until the user quits.
pub fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let security = args.target.config.security()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Short, so that the view (and q) stays responsive while the cluster is unreachable.
    let timeout = Duration::from_secs(2);
    let observer = describe::observer(&args.target.bootstrap, security, timeout)?;
    let mut ui = Ui::start().map_err(|e| {
        format!("kroupier watch needs a terminal ({e}); use `kroupier describe` in scripts")
    })?;
    let mut tracker = Tracker::new();
    let mut latest = None;
    let mut next_poll = Instant::now();
    let title = format!("group {} at {}", args.target.group, args.target.bootstrap);
    loop {
        if ui.quit_requested()? {
            return Ok(());
        }
        let now = Instant::now();
        if now >= next_poll {
            next_poll = now + POLL;
            let fetched = runtime.block_on(describe::fetch(
                &observer,
                &args.target.bootstrap,
                &args.target.group,
                timeout,
            ));
            let error = match fetched {
                Ok(view) => {
                    tracker.observe(Instant::now(), &model::owners(&view));
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
        std::thread::sleep(Duration::from_millis(30));
    }
}
