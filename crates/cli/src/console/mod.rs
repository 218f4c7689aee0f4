//! `kroupier console`: a web page showing a group live — workers as columns with their tasks
//! and each task's state, the generation and leader, a timeline of rebalances with what moved
//! and how long each moved task was unowned, the failover time after a worker dies, and each
//! worker's `/status` one click away.
//!
//! The server polls as `kroupier watch` does (DescribeGroups every 250 ms, diffed into moves
//! by the same tracker) and also asks each worker's status API for `/status` (task states,
//! restarts, last errors) every 500 ms; [`board`] turns both into snapshots, which the page
//! receives over Server-Sent Events and only draws. The page is one HTML, one JS and one CSS
//! file embedded in the binary: no CDN, no Node at run time. Its actions go through the
//! workers' status APIs (guarded by their bearer token when they have one): restarting a task,
//! and, when the group keeps its tasks in Kafka (docs/tasks.md), adding, changing, pausing,
//! resuming and deleting them; without a task store the workers refuse those with 404 and the
//! page shows why. Every request to a worker goes through the worker crate's one HTTP client
//! (`kroupier_worker::http::client`), the one workers use to reach each other.
//!
//! `kroupier demo` serves the same page (see [`spawn`]).

pub(crate) mod board;
pub(crate) mod poll;
pub(crate) mod server;

use std::error::Error;
use std::io::Write;
use std::net::SocketAddr;

use kroupier_coordinator::observer::Observer;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::describe::{self, GroupTarget};
use poll::Shared;

/// Arguments of `kroupier console`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: GroupTarget,
    /// Where the page is served. Loopback by default: the page shows the group to anyone who
    /// can reach it.
    #[arg(long, default_value = "127.0.0.1:7990")]
    listen: SocketAddr,
}

/// A running console; its pollers and server stop when it is dropped.
pub(crate) struct Console {
    /// Where the page is served.
    pub addr: SocketAddr,
    _tasks: JoinSet<()>,
}

impl Console {
    /// The page's URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Starts a console for `group` on `listen` (in the current tokio runtime).
///
/// # Errors
/// When `listen` cannot be bound.
pub(crate) async fn spawn(
    listen: SocketAddr,
    observer: Observer,
    bootstrap: &str,
    group: &str,
) -> Result<Console, String> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot serve the console on {listen}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot serve the console on {listen}: {e}"))?;
    let shared = Shared::new(group, bootstrap);
    let mut tasks = JoinSet::new();
    tasks.spawn(poll::describe_loop(
        observer,
        bootstrap.to_owned(),
        group.to_owned(),
        shared.clone(),
    ));
    tasks.spawn(poll::probe_loop(shared.clone()));
    let router = server::router(shared);
    tasks.spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            eprintln!("kroupier console: the web server stopped: {e}");
        }
    });
    Ok(Console {
        addr,
        _tasks: tasks,
    })
}

/// Runs the command until ctrl-c or SIGTERM.
pub(crate) fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let security = args.target.config.security()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let observer = describe::observer(
        &args.target.bootstrap,
        security,
        std::time::Duration::from_secs(2),
    )?;
    runtime.block_on(async {
        let console = spawn(
            args.listen,
            observer,
            &args.target.bootstrap,
            &args.target.group,
        )
        .await?;
        // The first line is for scripts (and the tests); the second for people.
        println!("console={}", console.url());
        println!(
            "kroupier console: group {} at {}; open {} (ctrl-c stops)",
            args.target.group,
            args.target.bootstrap,
            console.url()
        );
        let _ = std::io::stdout().flush();
        crate::signal::terminated()
            .await
            .map_err(|e| format!("cannot wait for ctrl-c: {e}"))?;
        Ok::<_, Box<dyn Error>>(())
    })
}
