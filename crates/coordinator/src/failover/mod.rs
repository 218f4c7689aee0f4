//! # Fast failover: act on a proof that a member's process ended
//!
//! Kafka learns that a member crashed only when its session expires (10 s by default), and the
//! others learn that a rebalance started only at their next heartbeat (3 s by default). Most
//! crashes, though, are the end of a process on a live host, and the host's kernel says so at
//! once: it closes the process's sockets, and a port it listened on refuses connections. This
//! module turns that into a *proof*, and acts on it; it is off unless a protocol turns it on:
//! any protocol with a [`Failover`], leader election with
//! [`Elector::with_fast_failover`](crate::election::Elector::with_fast_failover).
//!
//! - **The endpoint** (`endpoint.rs`). A member with fast failover listens on a small TCP
//!   endpoint and advertises its address, a random identity and its network identity (the
//!   kernel's boot id and the inode of its network namespace) in its metadata. On every
//!   connection the endpoint writes one line naming its identity and keeps the connection
//!   open. The listening socket is held until the member *resigns* (its handle is dropped or
//!   leaves, after the protocol has stopped acting) or its process ends: a serving loop that
//!   stops early (its runtime shut down) leaves a second descriptor open, so the address keeps
//!   accepting.
//! - **The link** (`link.rs`). A member that follows keeps one connection to the endpoint of the
//!   member it depends on (the leader). A link *reached* that member when its first line named
//!   the identity the member advertised.
//! - **The proof.** When a link that reached the member ends, and a fresh connection to the
//!   same address is then *refused* (`ECONNREFUSED`), the endpoint's socket is closed: its
//!   owner resigned or its process is gone, and in both cases it no longer acts. No two sockets
//!   listen on one address at once (kroupier never sets `SO_REUSEPORT`), so nothing else can
//!   have been answering for it.
//! - **What proves nothing**, and so leaves the member to its session as before: a timeout (a
//!   partition, a blackhole, a host that is down), a link that ends while the address still
//!   accepts (a middlebox, a paused process — SIGSTOP keeps its sockets), a refusal before any
//!   link reached the endpoint (another network, already gone when first seen), another
//!   identity answering (a namesake on this host's loopback, a restarted process), and a
//!   loopback or unspecified address advertised from another network namespace (a forwarder
//!   could listen there; `proof.rs`). An address that is not the advertiser's own (a
//!   proxy, a NAT) is refused when the endpoint is built.
//! - **The action** ([`Failover::run`]). On the proof the follower removes the member from the
//!   group (LeaveGroup v3+ naming its member id and instance id, as Kafka's admin client does:
//!   `Observer::remove_member`) and rejoins at once, so the rebalance need not wait for the
//!   session. A static member that said it stopped in order is not removed: Kafka keeps a
//!   static member's place through a restart, and fast failover must not undo that.
//!
//! The assumptions no process can check (an address that routes to one host for the life of a
//! link; no firewall that answers with a forged refusal) are listed in docs/reliability.md.

mod advert;
pub(crate) mod endpoint;
// The link, the proof and the removal are shared with the worker runtime's peer links (its
// status API's `/watch`), through the `unstable` feature.
unstable_mod!(pub(crate) link);
mod member;
unstable_mod!(pub(crate) proof);
unstable_mod!(pub(crate) removal);
mod settings;

pub use advert::{FailoverEndpoint, InvalidFailoverEndpoint};
pub use member::{Failover, FailoverTarget};
pub use settings::FastFailover;

use std::net::SocketAddr;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;

use crate::driver::WeakMember;
use crate::observer::Observer;

/// Keeps a link to each member `targets` names (the current leader, or every peer; none while
/// this member leads or has no generation), and when one's end is proven, records it in
/// `proven`, removes it from `group` and makes `member` rejoin. Runs until `targets`' sender
/// is dropped.
pub(crate) async fn watch_members(
    mut targets: watch::Receiver<Vec<FailoverTarget>>,
    observer: Observer,
    group: String,
    member: WeakMember,
    proven: member::Proven,
) {
    loop {
        let watched: Vec<(FailoverTarget, SocketAddr)> = targets
            .borrow_and_update()
            .iter()
            .filter_map(|t| {
                let addr = proof::dialable(&t.endpoint, proof::own_network());
                if addr.is_none() {
                    tracing::debug!(member = %t.member_id, addr = %t.endpoint.addr,
                        "the endpoint is another network's loopback: no fast failover for it");
                }
                addr.map(|addr| (t.clone(), addr))
            })
            .collect();
        let mut links: FuturesUnordered<_> = watched
            .iter()
            .map(|(target, addr)| async move {
                let gone = link::until_gone(*addr, &target.endpoint.process).await;
                (target, *addr, gone)
            })
            .collect();
        loop {
            tokio::select! {
                changed = targets.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                Some((target, addr, gone)) = links.next(), if !links.is_empty() => {
                    proven.send_modify(|ended| {
                        ended.push(target.member_id.clone());
                        let excess = ended.len().saturating_sub(member::PROVEN_KEPT);
                        ended.drain(..excess);
                    });
                    // An ended member is never linked again: its link is done.
                    act(&observer, &group, &member, target, addr, gone).await;
                }
            }
        }
    }
}

/// Removes the member whose end was proven (unless it keeps its place) and rejoins.
async fn act(
    observer: &Observer,
    group: &str,
    member: &WeakMember,
    target: &FailoverTarget,
    addr: SocketAddr,
    gone: link::Gone,
) {
    if removal::keeps_place(gone, target.group_instance_id.is_some()) {
        tracing::info!(member = %target.member_id, %addr,
            "the static member stopped in order: it keeps its place until its session ends");
        return;
    }
    tracing::info!(member = %target.member_id, %addr, orderly = gone.orderly,
        "a followed member's endpoint closed (its link ended, its address refuses): removing \
         it from the group and rejoining");
    removal::remove(
        observer,
        group,
        &target.member_id,
        target.group_instance_id.as_deref(),
        "kroupier fast failover: the member's process ended",
    )
    .await;
    if let Err(error) = member.rejoin("a followed member's process ended").await {
        tracing::debug!(%error, "could not rejoin after a followed member's end");
    }
}
