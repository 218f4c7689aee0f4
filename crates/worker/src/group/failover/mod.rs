//! # Fast failover: act on a peer's proven death, and rebalance in round trips
//!
//! Kafka learns that a member crashed only when its session expires (10 s by default), and the
//! other members learn that a rebalance started only at their next heartbeat (3 s by default).
//! Most crashes, though, are the end of a process on a live host, and the host's kernel says
//! so at once: it closes the process's sockets, and its listening port refuses connections.
//!
//! So each worker keeps a link to its peers' status APIs ([`link`]: every peer in a group of up
//! to [`peers::WATCH_ALL_UP_TO`], its [`peers::SUCCESSORS`] in member order beyond, and every
//! peer while it leads). When a link that reached the peer's process (its `/watch` named the
//! process identity the member advertised) ends and the peer's address then *refuses* a new
//! connection, the peer's process is gone (`proof.rs` says why, and what proves nothing), and
//! the worker
//!
//! 1. removes it from the group (LeaveGroup v3+ naming its member id and instance id, as
//!    Kafka's admin client does), so the rebalance need not wait for its session;
//! 2. rejoins at once, and in a large group tells the other peers to do the same ([`hint`]).
//!
//! A static peer whose worker stopped in order (its `/watch` body says so before it ends) is
//! not removed: Kafka keeps a static member's place through a restart, and its tasks wait for
//! it, as they do without fast failover; a stopping worker holds its process until its
//! `/watch` bodies have said so ([`end_links`]). A peer no link ever reached — in another
//! network, behind a proxy, already gone when it was first seen — is never removed.
//!
//! A paused process (SIGSTOP, a long GC), a partition, a blackholed link or a slow peer never
//! produces a refused connection on the peer's host, so none of them removes a member early:
//! they still wait for the session timeout, and self-fencing covers them as before. Why a
//! member removed this way cannot still be running tasks is argued in docs/reliability.md.
//!
//! The same hint makes every rebalance that a worker starts quick: a worker that joins, leaves
//! (SIGTERM) or rejoins for a cooperative follow-up round tells its peers, which rejoin at once
//! if they are still stable in the generation the hint names.
//!
//! Links and hints speak HTTP through the worker's one client ([`crate::http::client`]) to the
//! routes of [`crate::http::failover`]; that module owns the `/watch` body's format, and hands
//! hints back here through [`FastFailover`]'s `Hints` implementation.

mod hint;
mod link;
pub(crate) mod peers;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig, Secret};
use kroupier_coordinator::driver::MemberHandle;
use kroupier_coordinator::failover::removal;
use kroupier_coordinator::membership::MemberState;
use kroupier_coordinator::observer::{GroupDescription, GroupState, Observer};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

pub(crate) use peers::Peer;

use super::proof::{self, Proofs};

/// How long one DescribeGroups for the peer list may take.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);
/// A worker that starts a rebalance (joining, or rejoining for a cooperative follow-up round)
/// waits at most this long for the group to prepare it before it tells the members.
const JOIN_WATCH: Duration = Duration::from_secs(3);
/// How often it looks at the group's state meanwhile.
const JOIN_POLL: Duration = Duration::from_millis(20);
/// How long a stopping worker waits for its status API to end, so that its peers' links read
/// [`STOPPED`](link::STOPPED) before the process exits (a link whose peer does not read still
/// gets the line into its socket's buffer at once; this bounds a connection that will not
/// close).
const LINKS_END: Duration = Duration::from_secs(1);

/// What the worker tells fast failover.
#[derive(Debug)]
enum Input {
    /// An assignment was applied: the members may have changed.
    Assigned,
    /// A peer asked this worker to rejoin (`POST /rebalance`).
    Hinted {
        generation: Option<i32>,
        from: Option<String>,
    },
    /// This worker starts a rebalance from `generation`: tell the peers.
    Rebalancing { generation: Option<i32> },
    /// This worker is joining a group with these members: tell them once the group prepares
    /// the rebalance.
    Joining(Vec<Peer>),
}

/// The handle the worker loop and the status API use; cheap to clone. Every call returns at
/// once; a handle whose task has ended (or that was [`off`](Self::off)) ignores them.
#[derive(Debug, Clone)]
pub(crate) struct FastFailover {
    inputs: Option<mpsc::UnboundedSender<Input>>,
}

/// The receiving half, for [`run`].
#[derive(Debug)]
pub(crate) struct Inbox(mpsc::UnboundedReceiver<Input>);

impl FastFailover {
    /// A handle and the inbox of its task.
    pub(crate) fn channel() -> (Self, Inbox) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (
            Self {
                inputs: Some(sender),
            },
            Inbox(receiver),
        )
    }

    /// A handle that does nothing (fast failover turned off).
    pub(crate) fn off() -> Self {
        Self { inputs: None }
    }

    fn send(&self, input: Input) {
        if let Some(inputs) = &self.inputs {
            let _ = inputs.send(input);
        }
    }

    /// An assignment was applied.
    pub(crate) fn assigned(&self) {
        self.send(Input::Assigned);
    }

    /// A peer (whose status API is `from`) asked this worker to rejoin, if it is stable in
    /// `generation` or older.
    pub(crate) fn hinted(&self, generation: Option<i32>, from: Option<String>) {
        self.send(Input::Hinted { generation, from });
    }

    /// This worker starts a rebalance from `generation`.
    pub(crate) fn rebalancing(&self, generation: Option<i32>) {
        self.send(Input::Rebalancing { generation });
    }

    /// This worker has started to join a group whose members were `peers` (see
    /// [`members_before_join`]).
    pub(crate) fn joining(&self, peers: Vec<Peer>) {
        if !peers.is_empty() {
            self.send(Input::Joining(peers));
        }
    }
}

/// The status API's `POST /rebalance` hands a peer's hint to fast failover.
impl crate::http::failover::Hints for FastFailover {
    fn hinted(&self, generation: Option<i32>, from: Option<String>) {
        FastFailover::hinted(self, generation, from);
    }
}

/// What fast failover needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The group.
    pub(crate) group_id: String,
    /// The cluster (for DescribeGroups and LeaveGroup).
    pub(crate) cluster: ClusterConfig,
    /// The status token, sent with hints.
    pub(crate) token: Option<Secret>,
    /// This worker's status API address, named in its hints.
    pub(crate) own_addr: String,
    /// What the links learn, shared with the leader's round (see `proof.rs`).
    pub(crate) proofs: Arc<Proofs>,
}

/// The task's state.
struct Watch {
    settings: Settings,
    member: MemberHandle,
    observer: Option<Observer>,
    peers: Vec<Peer>,
    /// Status addresses of workers that hinted this one but are not among `peers` yet (they
    /// just joined): they get this worker's hints too, until DescribeGroups shows them.
    announced: BTreeSet<String>,
    links: HashMap<String, AbortHandle>,
    deaths: mpsc::UnboundedSender<(String, link::Gone)>,
    /// A hint that came while this worker was still joining or syncing the generation it
    /// names: it rejoins once that generation is assigned ([`defers`]).
    deferred: Option<i32>,
}

/// Runs fast failover for `member` until the inbox closes (every handle dropped) or the member
/// stops.
pub(crate) async fn run(Inbox(mut inbox): Inbox, settings: Settings, member: MemberHandle) {
    let observer = match Cluster::new(settings.cluster.clone()) {
        Ok(cluster) => Some(Observer::new(Arc::new(cluster))),
        Err(error) => {
            tracing::warn!(%error, "fast failover is off: no cluster to describe the group");
            None
        }
    };
    let (deaths, mut dead) = mpsc::unbounded_channel();
    let mut watch = Watch {
        settings,
        member,
        observer,
        peers: Vec::new(),
        announced: BTreeSet::new(),
        links: HashMap::new(),
        deaths,
        deferred: None,
    };
    loop {
        tokio::select! {
            input = inbox.recv() => match input {
                Some(Input::Assigned) => {
                    watch.rejoin_if_deferred().await;
                    watch.refresh().await;
                }
                Some(Input::Hinted { generation, from }) => watch.hinted(generation, from).await,
                Some(Input::Rebalancing { generation }) => {
                    // A cooperative follow-up round, or a hand-over before leaving.
                    watch.hint_when_prepared(generation)
                }
                Some(Input::Joining(peers)) => watch.joining(peers),
                None => break,
            },
            Some((member_id, gone)) = dead.recv() => watch.died(&member_id, gone).await,
            () = watch.member.stopped() => break,
        }
    }
    for (_, link) in watch.links.drain() {
        link.abort();
    }
}

impl Watch {
    fn own_member_id(&self) -> Option<String> {
        self.member.current().generation.map(|g| g.member_id)
    }

    /// Reads the members from the coordinator and opens the links this worker keeps.
    async fn refresh(&mut self) {
        let (Some(observer), Some(own)) = (&self.observer, self.own_member_id()) else {
            return;
        };
        let described = tokio::time::timeout(
            DESCRIBE_TIMEOUT,
            observer.describe_group(&self.settings.group_id),
        )
        .await;
        let group = match described {
            Ok(Ok(group)) => group,
            Ok(Err(error)) => {
                tracing::debug!(%error, "fast failover could not describe the group");
                return;
            }
            Err(_) => return,
        };
        // Kafka gives the metadata only while the group is stable; otherwise the next
        // assignment refreshes the list.
        if group.state != GroupState::Stable {
            return;
        }
        self.peers = peers::from_description(&group, &own, proof::own().network.as_deref());
        let present: BTreeSet<&str> = group.members.iter().map(|m| m.member_id.as_str()).collect();
        self.settings.proofs.retain(|m| present.contains(m));
        let leads = self
            .member
            .current()
            .generation
            .is_some_and(|g| g.is_leader());
        let known: BTreeSet<&str> = self.peers.iter().map(|p| p.status_addr.as_str()).collect();
        self.announced.retain(|addr| !known.contains(addr.as_str()));
        let watched: HashMap<String, Peer> = peers::watched(&self.peers, &own, leads)
            .into_iter()
            .map(|p| (p.member_id.clone(), p.clone()))
            .collect();
        self.links.retain(|member_id, link| {
            let keep = watched.contains_key(member_id);
            if !keep {
                link.abort();
            }
            keep
        });
        for (member_id, peer) in watched {
            if self.links.contains_key(&member_id) {
                continue;
            }
            let deaths = self.deaths.clone();
            let proofs = self.settings.proofs.clone();
            let link = tokio::spawn(async move {
                let gone = link::until_gone(&peer, &proofs).await;
                let _ = deaths.send((peer.member_id, gone));
            });
            self.links.insert(member_id, link.abort_handle());
        }
        tracing::debug!(
            peers = self.peers.len(),
            links = self.links.len(),
            "fast failover watches its peers"
        );
    }

    /// A watched peer's process is gone: remove it, rejoin, and (in a large group) tell the
    /// others. A static peer not seen to crash keeps its place (`removal::keeps_place`):
    /// Kafka keeps it through a restart, and its tasks wait for it (its shutdown stopped them).
    async fn died(&mut self, member_id: &str, gone: link::Gone) {
        self.links.remove(member_id);
        let Some(index) = self.peers.iter().position(|p| p.member_id == member_id) else {
            return;
        };
        let peer = self.peers.remove(index);
        if removal::keeps_place(gone, peer.group_instance_id.is_some()) {
            tracing::info!(
                peer = %peer.member_id,
                "a static peer ended in order: it keeps its place in the group until it \
                 restarts or its session expires"
            );
            return;
        }
        let status = self.member.current();
        let generation = status.generation.as_ref().map(|g| g.generation_id);
        tracing::info!(
            peer = %peer.member_id,
            addr = %peer.status_addr,
            ?generation,
            "a peer's process ended (its link ended and its status API now refuses \
             connections): removing it from the group and rejoining"
        );
        if let Some(observer) = &self.observer {
            let reason = format!(
                "kroupier fast failover: the process at {} ended",
                peer.status_addr
            );
            removal::remove(
                observer,
                &self.settings.group_id,
                &peer.member_id,
                peer.group_instance_id.as_deref(),
                &reason,
            )
            .await;
        }
        if self.peers.len() >= peers::WATCH_ALL_UP_TO {
            // Not every survivor watches this peer: tell them all.
            self.hint_peers(generation);
        }
        if status.state == MemberState::Stable {
            if let Err(error) = self.member.rejoin("a peer's process ended").await {
                tracing::debug!(%error, "could not rejoin after a peer's death");
            }
        }
    }

    /// A peer asked this worker to rejoin.
    async fn hinted(&mut self, generation: Option<i32>, from: Option<String>) {
        if let Some(from) = from.filter(|f| *f != self.settings.own_addr)
            && !self.peers.iter().any(|p| p.status_addr == from)
        {
            self.announced.insert(from);
        }
        let status = self.member.current();
        let current = status.generation.as_ref().map(|g| g.generation_id);
        if defers(status.state, current, generation) {
            tracing::debug!(?generation, ?current, state = ?status.state,
                "rebalance hint while this worker is still joining: it rejoins once assigned");
            self.deferred = generation;
            return;
        }
        if !should_rejoin(status.state, current, generation) {
            tracing::debug!(?generation, ?current, state = ?status.state, "rebalance hint ignored");
            return;
        }
        tracing::info!(?generation, "a peer started a rebalance: rejoining at once");
        if let Err(error) = self.member.rejoin("a peer started a rebalance").await {
            tracing::debug!(%error, "could not rejoin on a peer's hint");
        }
    }

    /// A hint deferred while this worker was joining: now that an assignment came, rejoin if
    /// it is of the hinted generation or older (the hinting peer's rebalance started after it).
    async fn rejoin_if_deferred(&mut self) {
        let Some(hinted) = self.deferred.take() else {
            return;
        };
        let current = self.member.current().generation.map(|g| g.generation_id);
        if current.is_some_and(|current| current <= hinted) {
            tracing::info!(
                generation = hinted,
                "a peer started a rebalance while this worker was joining: rejoining now"
            );
            if let Err(error) = self.member.rejoin("a peer started a rebalance").await {
                tracing::debug!(%error, "could not rejoin on a deferred hint");
            }
        }
    }

    /// Tells every known peer that a rebalance from `generation` started.
    fn hint_peers(&self, generation: Option<i32>) {
        send_hints(
            self.hint_targets(),
            generation,
            &self.settings.own_addr,
            self.settings.token.as_ref(),
        );
    }

    /// Every peer a hint goes to: the members, and the workers that announced themselves.
    fn hint_targets(&self) -> BTreeSet<String> {
        self.peers
            .iter()
            .map(|p| &p.status_addr)
            .chain(&self.announced)
            .cloned()
            .collect()
    }

    /// This worker is joining a group of `members`: tell them once the group prepares the
    /// rebalance this worker's JoinGroup starts, so that they rejoin at once.
    fn joining(&mut self, members: Vec<Peer>) {
        if self.peers.is_empty() {
            self.peers = members;
        }
        self.hint_when_prepared(None);
    }

    /// Sends the hint for a rebalance from `generation` once the coordinator prepares it (the
    /// group leaves `Stable`) within [`JOIN_WATCH`]; otherwise not at all (the peers learn of a
    /// later rebalance at their next heartbeat, and a join that started none — a static
    /// process taking its instance's place — must not make the group rebalance during its
    /// takeover wait, which only an assignment computed for the old member id enforces).
    /// Sooner would be too soon:
    /// this worker's JoinGroup goes out only after its revocations stopped and its metadata
    /// was built, so a hint could overtake it, and Kafka answers the JoinGroup of a follower
    /// that finds the group still stable with the current generation, unchanged: that peer
    /// would then learn of the rebalance only at its next heartbeat. Runs on a task of its
    /// own, so that deaths and hints are handled meanwhile.
    fn hint_when_prepared(&self, generation: Option<i32>) {
        let Some(observer) = self.observer.clone() else {
            return;
        };
        let group = self.settings.group_id.clone();
        let targets = self.hint_targets();
        let from = self.settings.own_addr.clone();
        let token = self.settings.token.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + JOIN_WATCH;
            while tokio::time::Instant::now() < deadline {
                let described = tokio::time::timeout(JOIN_WATCH, observer.describe_group(&group));
                if let Ok(Ok(described)) = described.await
                    && matches!(
                        described.state,
                        GroupState::PreparingRebalance | GroupState::CompletingRebalance
                    )
                {
                    tracing::debug!(?generation, "the rebalance started: telling the members");
                    send_hints(targets, generation, &from, token.as_ref());
                    return;
                }
                tokio::time::sleep(JOIN_POLL).await;
            }
            tracing::debug!(?generation, "no rebalance started: no hint sent");
        });
    }
}

/// Sends the hint "a rebalance from `generation` started" to each of `targets`, each on a task
/// of its own (a slow peer delays no other).
fn send_hints(
    targets: BTreeSet<String>,
    generation: Option<i32>,
    from: &str,
    token: Option<&Secret>,
) {
    for addr in targets {
        let from = from.to_owned();
        let token = token.cloned();
        tokio::spawn(async move {
            if !hint::send(&addr, generation, &from, token.as_ref()).await {
                tracing::debug!(%addr, "a peer did not take the rebalance hint");
            }
        });
    }
}

/// The members of `cluster`'s `group` that advertise a status API, as a worker about to join
/// sees them (none if the group is not stable, no bootstrap broker answers, or the group does
/// not answer within a short bound); from
/// `known` when the worker has just read the group's description (a static worker's takeover
/// check), instead of asking again.
pub(crate) async fn members_before_join(
    cluster: &ClusterConfig,
    group: &str,
    known: Option<GroupDescription>,
) -> Vec<Peer> {
    let description = match known {
        Some(description) => Some(description),
        None => {
            let describe = async {
                let cluster = Arc::new(Cluster::new(cluster.clone()).ok()?);
                // No bootstrap broker answers (refused, a TLS handshake cut): there is nothing
                // to describe, and the member's own retries, and its warning, start now rather
                // than after the bound.
                cluster.any_broker().await.ok()?;
                Observer::new(cluster).describe_group(group).await.ok()
            };
            tokio::time::timeout(DESCRIBE_TIMEOUT, describe)
                .await
                .ok()
                .flatten()
        }
    };
    match description {
        Some(group) if group.state == GroupState::Stable => {
            peers::from_description(&group, "", proof::own().network.as_deref())
        }
        _ => Vec::new(),
    }
}

/// Ends this worker's status API, and with it the links its peers keep (`stop` is the API's
/// stop token, `server` its task): every open `/watch` body gets its last line,
/// [`STOPPED`](link::STOPPED), and this waits (at most [`LINKS_END`]) until the server has written it and ended.
///
/// The process exits as soon as the worker has ended. Cancelling alone only *asks* the
/// connections to write their last line: if the process exits first, the links end without
/// it, and every peer takes an orderly stop for a crash — a static worker's restart then
/// removes it from the group and starts the rebalance that static membership exists to avoid.
pub(crate) async fn end_links(stop: &CancellationToken, server: Option<JoinHandle<()>>) {
    stop.cancel();
    if let Some(server) = server
        && tokio::time::timeout(LINKS_END, server).await.is_err()
    {
        tracing::debug!("the status API did not end in time; some links may end unannounced");
    }
}

/// Whether a hint naming `hinted` waits for this worker's assignment: it is joining or syncing
/// (not stable) a generation no newer than the hinting peer's, so the peer's rebalance may
/// start right after this one completes and no hint would tell it. (A hint without a
/// generation, from a joining worker, is not kept: its join is a rebalance of its own.)
fn defers(state: MemberState, current: Option<i32>, hinted: Option<i32>) -> bool {
    let Some(hinted) = hinted else {
        return false;
    };
    state != MemberState::Stable && current.is_none_or(|current| current <= hinted)
}

/// Whether a hint naming `hinted`
/// Whether a hint naming `hinted` (the sender's generation; none from a joining worker) makes
/// a member in `state` at `current` rejoin: only a stable member, and only if it has not moved
/// past the hinted generation (a late hint must not start a rebalance of its own).
fn should_rejoin(state: MemberState, current: Option<i32>, hinted: Option<i32>) -> bool {
    state == MemberState::Stable
        && match (current, hinted) {
            (Some(current), Some(hinted)) => current <= hinted,
            (_, None) => true,
            (None, Some(_)) => false,
        }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::link::STOPPED;
    use super::*;

    /// A static worker that stops in order keeps its place only if its peers read [`STOPPED`]
    /// before its links end: the process exits as soon as the worker has ended (here: the
    /// runtime is dropped), so the last line must be out by then.
    #[test]
    fn an_orderly_stop_reaches_every_link_before_the_process_ends() {
        let process = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let stop = CancellationToken::new();
        let link = process.block_on(async {
            let listener = crate::http::bind("127.0.0.1:0".parse().unwrap())
                .await
                .unwrap();
            let addr = listener.local_addr().unwrap();
            let hints = Arc::new(FastFailover::off());
            let process = crate::group::own_process_id();
            let router = crate::http::failover::router(hints, process, stop.clone());
            let stopped = stop.clone().cancelled_owned();
            let server = tokio::spawn(async move {
                let _ = crate::http::serve(listener, None, router, stopped).await;
            });
            let mut link = tokio::net::TcpStream::connect(addr).await.unwrap();
            link.write_all(b"GET /watch HTTP/1.1\r\nHost: peer\r\n\r\n")
                .await
                .unwrap();
            let mut head = [0u8; 12];
            link.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"HTTP/1.1 200");
            end_links(&stop, Some(server)).await;
            link.into_std().unwrap()
        });
        drop(process);
        link.set_nonblocking(false).unwrap();
        link.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut rest = Vec::new();
        let _ = (&link).read_to_end(&mut rest);
        let rest = String::from_utf8_lossy(&rest);
        assert!(
            rest.contains(STOPPED.trim_end()),
            "the link ended without saying the worker stopped in order: {rest:?}"
        );
    }

    #[test]
    fn a_hint_while_joining_waits_for_the_assignment_unless_it_is_stale() {
        assert!(defers(MemberState::Syncing, Some(4), Some(4)));
        assert!(defers(MemberState::Joining, None, Some(4)), "a first join");
        assert!(
            !defers(MemberState::Syncing, Some(5), Some(4)),
            "a late hint"
        );
        assert!(
            !defers(MemberState::Joining, Some(4), None),
            "a joiner's hint"
        );
        assert!(
            !defers(MemberState::Stable, Some(4), Some(4)),
            "rejoins at once"
        );
    }

    #[test]
    fn only_a_stable_member_not_past_the_hinted_generation_rejoins() {
        assert!(should_rejoin(MemberState::Stable, Some(4), Some(4)));
        assert!(should_rejoin(MemberState::Stable, Some(3), Some(4)));
        assert!(
            !should_rejoin(MemberState::Stable, Some(5), Some(4)),
            "a late hint"
        );
        assert!(
            should_rejoin(MemberState::Stable, Some(5), None),
            "a joining peer"
        );
        assert!(!should_rejoin(MemberState::Joining, Some(4), Some(4)));
        assert!(!should_rejoin(MemberState::Syncing, Some(4), None));
        assert!(!should_rejoin(MemberState::Stable, None, Some(4)));
    }
}
