//! What the examples that elect one member share (`leader_election`, `active_standby`,
//! `single_writer`): the member's command-line settings, the role lines they print, and how
//! they end when the group driver stops.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kroupier::Events;
use kroupier::election::{ElectionEvent, Elector, ElectorHandle};
use kroupier::failover::{Failover, FastFailover};
use kroupier::protocol::{MemberConfig, MemberError, MemberHandle};
use kroupier::worker::journal::unix_ms;
use tokio::task::JoinError;

use crate::SessionArgs;

/// The group member's settings, as every election-shaped example takes them.
#[derive(Debug, clap::Args)]
pub struct MemberArgs {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long)]
    pub bootstrap: String,
    /// The group id the members share.
    #[arg(long)]
    pub group: String,
    /// This member's stable id (the lowest id leads when nobody led before).
    #[arg(long)]
    pub id: String,
    /// Kafka's session settings: how soon a dead leader is replaced.
    #[command(flatten)]
    pub session: SessionArgs,
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
    /// `ssl.truststore.location`, ...), as Kafka's own tools take them. The connection's
    /// security and the session settings come from them (a flag given wins); other keys are
    /// checked but not used.
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
}

impl MemberArgs {
    /// The member config these settings give `program` (its name is the client id's prefix).
    ///
    /// # Errors
    /// The command config file's error, naming the file.
    pub fn member_config(&self, program: &str) -> Result<MemberConfig, String> {
        let file = self.session.worker_config(self.command_config.as_deref())?;
        let membership = &file.member.membership;
        let mut config = MemberConfig::new(&self.bootstrap, &self.group)
            .with_timeouts(membership.session_timeout, membership.heartbeat_interval);
        // No client-side guess of the broker's session bounds: the broker checks the session
        // timeout against its own group.min/max.session.timeout.ms, and its error names them.
        config.membership.min_session_timeout = Duration::ZERO;
        config.cluster.connection.client_id = format!("{program}-{}", self.id);
        config.cluster.security = file.member.cluster.security;
        Ok(config)
    }
}

/// Fast failover, as `leader_election`, `active_standby`, `single_writer` and
/// `consumer_group` take it: off by default, as in the library.
#[derive(Debug, clap::Args)]
pub struct FastFailoverArgs {
    /// Fail over in milliseconds when the process of a member this one follows (the leader,
    /// the writer, a peer) ends: each process listens on a small endpoint the followers link
    /// to (see `leader_election`'s module docs).
    #[arg(long)]
    pub fast_failover: bool,
    /// The fast-failover endpoint's address (port 0: any free port).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:0",
        requires = "fast_failover"
    )]
    pub fast_failover_listen: SocketAddr,
    /// The address to advertise for the endpoint instead of the listening one (needed with
    /// `--fast-failover-listen 0.0.0.0:0` across hosts); one of this host's own addresses.
    #[arg(long, value_name = "IP", requires = "fast_failover")]
    pub fast_failover_advertise: Option<IpAddr>,
}

impl FastFailoverArgs {
    /// The endpoint these flags ask for, bound now (`None` without `--fast-failover`).
    ///
    /// # Errors
    /// As [`Failover::bind`].
    pub fn bind(&self) -> Result<Option<Failover>, MemberError> {
        self.settings().as_ref().map(Failover::bind).transpose()
    }

    /// Serves `failover` (if on) beside the driver of `member`, built from `config`.
    ///
    /// # Errors
    /// As [`Failover::run`].
    pub fn spawn(
        failover: Option<&Failover>,
        member: &MemberHandle,
        config: &MemberConfig,
    ) -> Result<(), MemberError> {
        if let Some(failover) = failover {
            tokio::spawn(failover.run(member, config)?);
        }
        Ok(())
    }

    /// The settings these flags give, `None` without `--fast-failover`.
    pub fn settings(&self) -> Option<FastFailover> {
        self.fast_failover.then(|| {
            let settings = FastFailover::new().listen(self.fast_failover_listen);
            match self.fast_failover_advertise {
                Some(ip) => settings.advertise(ip),
                None => settings,
            }
        })
    }
}

/// An eligible elector's handle and driver, with fast failover when `fast` asks for it.
///
/// # Errors
/// As [`Elector::new`] and [`Elector::with_fast_failover`].
pub fn elector(
    config: MemberConfig,
    id: &str,
    fast: &FastFailoverArgs,
) -> Result<(ElectorHandle, BoxFuture<'static, Result<(), MemberError>>), MemberError> {
    match fast.settings() {
        Some(settings) => {
            Elector::with_fast_failover(config, id, true, settings).map(|(e, d)| (e, d.boxed()))
        }
        None => Elector::new(config, id, true).map(|(e, d)| (e, d.boxed())),
    }
}

/// Resigns on a stop signal: prints `lost` for the role held, then leaves the group, then
/// prints what else came in. Resigning turns the role to `lost` at once and (with fast
/// failover) closes the endpoint, after which a follower may lead within milliseconds, before
/// LeaveGroup has even been answered: `lost` goes first, as the moment this process stops
/// acting.
pub async fn resign(id: &str, elector: &ElectorHandle, events: &mut Events<ElectionEvent>) {
    while let Some(event) = events.try_recv() {
        print_role(id, election_role(&event));
    }
    let held = elector.role();
    let lost = match held {
        Some(ElectionEvent::Leader { token }) => Some(token.generation_id),
        Some(ElectionEvent::Follower { generation_id, .. }) => Some(generation_id),
        _ => None,
    };
    if let Some(generation) = lost {
        print_role(id, ("lost", Some(generation)));
    }
    elector.leave().await;
    // The `lost` of the resignation is printed already, unless a role came in between (then
    // everything is printed, in order).
    let rest: Vec<ElectionEvent> = std::iter::from_fn(|| events.try_recv()).collect();
    let changed = rest
        .iter()
        .any(|e| !matches!(e, ElectionEvent::Lost { .. }));
    for event in rest.iter().filter(|_| changed || lost.is_none()) {
        print_role(id, election_role(event));
    }
}

/// The role line of an election event: its name and generation.
pub fn election_role(event: &ElectionEvent) -> (&'static str, Option<i32>) {
    match event {
        ElectionEvent::Leader { token } => ("leader", Some(token.generation_id)),
        ElectionEvent::Follower { generation_id, .. } => ("follower", Some(*generation_id)),
        ElectionEvent::Lost { generation_id } => ("lost", *generation_id),
    }
}

/// Prints one JSON line, flushed at once:
/// `{"ts_ms":..,"id":..,"event":EVENT,"KEY":VALUE}` (`ts_ms` is Unix milliseconds; the keys
/// in this order, which serde_json's maps would sort).
pub fn print_line(id: &str, event: &str, extra: (&str, serde_json::Value)) {
    let line = format!(
        "{{\"ts_ms\":{},\"id\":{},\"event\":{},\"{}\":{}}}",
        unix_ms(),
        serde_json::Value::from(id),
        serde_json::Value::from(event),
        extra.0,
        extra.1,
    );
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the member; the next line will fail the same way.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints a role line: `{"ts_ms":..,"id":..,"event":"leader"|"follower"|"lost","generation":..}`.
pub fn print_role(id: &str, (event, generation): (&str, Option<i32>)) {
    print_line(id, event, ("generation", generation.into()));
}

/// Exit code 2 for bad arguments or settings, with `message` on stderr after `program`'s name.
pub fn usage_error(program: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{program}: {message}");
    ExitCode::from(2)
}

/// The exit code of `program` once its group driver ended: 0 when it left cleanly, 1 (with
/// the reason on stderr) when it failed or panicked.
pub fn driver_exit(program: &str, ended: Result<Result<(), MemberError>, JoinError>) -> ExitCode {
    match ended {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{program}: the driver panicked: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        member: MemberArgs,
    }

    #[test]
    fn the_settings_become_the_member_config() {
        let cli = Cli::parse_from([
            "x",
            "--bootstrap",
            "127.0.0.1:9092",
            "--group",
            "g",
            "--id",
            "a",
            "--session-timeout-ms",
            "6000",
            "--heartbeat-interval-ms",
            "1000",
        ]);
        let config = cli.member.member_config("example").unwrap();
        assert_eq!(config.membership.group_id, "g");
        assert_eq!(config.membership.session_timeout, Duration::from_secs(6));
        assert_eq!(config.membership.heartbeat_interval, Duration::from_secs(1));
        assert_eq!(config.cluster.connection.client_id, "example-a");
        assert_eq!(config.cluster.bootstrap_servers, ["127.0.0.1:9092"]);
    }

    /// A `--command-config` file holding `text`, for this test process.
    fn properties(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kroupier-member-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the test dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write the properties file");
        path
    }

    #[test]
    fn the_files_session_timeout_wins_over_the_default_and_a_given_flag_over_the_file() {
        let path = properties("session.properties", "session.timeout.ms=500\n");
        let path = path.to_str().unwrap();
        let member = ["x", "--bootstrap", "b:1", "--group", "g", "--id", "a"];
        let file_only = Cli::parse_from(member.into_iter().chain(["--command-config", path]));
        let config = file_only.member.member_config("example").unwrap();
        assert_eq!(
            config.membership.session_timeout,
            Duration::from_millis(500)
        );
        assert_eq!(config.membership.heartbeat_interval, Duration::from_secs(3));

        let flag = ["--command-config", path, "--session-timeout-ms", "6000"];
        let both = Cli::parse_from(member.into_iter().chain(flag));
        let config = both.member.member_config("example").unwrap();
        assert_eq!(config.membership.session_timeout, Duration::from_secs(6));
    }

    #[test]
    fn a_missing_command_config_is_an_error_naming_it() {
        let cli = Cli::parse_from([
            "x",
            "--bootstrap",
            "b:1",
            "--group",
            "g",
            "--id",
            "a",
            "--command-config",
            "/nonexistent/client.properties",
        ]);
        let error = cli.member.member_config("example").unwrap_err();
        assert!(error.contains("/nonexistent/client.properties"), "{error}");
    }

    #[test]
    fn election_events_name_their_roles() {
        let lost = ElectionEvent::Lost {
            generation_id: None,
        };
        assert_eq!(election_role(&lost), ("lost", None));
    }
}
