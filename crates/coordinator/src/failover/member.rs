//! [`Failover`]: fast failover for any group protocol, as one value a protocol holds.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;

use super::endpoint::Endpoint;
use super::{FailoverEndpoint, FastFailover};
use crate::connection::Cluster;
use crate::driver::{MemberConfig, MemberError, MemberHandle};
use crate::observer::Observer;

/// The member a follower depends on, as the protocol's assignment names it: fast failover
/// links to its endpoint and, on the proof that its process ended, removes it from the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailoverTarget {
    /// Its member id in the current generation (what LeaveGroup names).
    pub member_id: String,
    /// Its `group.instance.id`, if it is a static member.
    pub group_instance_id: Option<String>,
    /// Its endpoint, as it advertised it.
    pub endpoint: FailoverEndpoint,
}

/// One member's fast failover, for any [`GroupProtocol`](crate::membership::GroupProtocol):
/// its endpoint (bound by [`bind`](Self::bind), advertised by the protocol in its metadata as
/// [`endpoint`](Self::endpoint)) and the link to the member it follows
/// ([`follow`](Self::follow), from each assignment the member's events report). [`run`](Self::run) serves
/// both beside the member's driver.
///
/// The protocol's part is three calls: put `endpoint()` in its metadata (its text form if the
/// metadata is text); when an assignment names the member this one depends on, `follow` it
/// (`None` while this member leads or has no generation); and [`resign`](Self::resign) once
/// it has stopped acting for good, *before* it leaves the group. Closing the endpoint is what
/// lets the followers prove this member's end, so it must never happen while the member may
/// still act; dropping a `Failover` does not close it (the process's end does).
///
/// [`Elector::with_fast_failover`](crate::election::Elector::with_fast_failover) does all of
/// this for leader election.
#[derive(Debug, Clone)]
pub struct Failover {
    endpoint: Arc<Endpoint>,
    target: Arc<watch::Sender<Vec<FailoverTarget>>>,
    /// The member ids whose end this member proved, newest last (at most [`PROVEN_KEPT`]).
    proven: Proven,
}

/// How many proven ends a member remembers (one per leader it followed and saw end).
pub(crate) const PROVEN_KEPT: usize = 16;

/// The member ids whose end was proven, as [`super::watch_leader`] records them.
pub(crate) type Proven = Arc<watch::Sender<Vec<String>>>;

impl Failover {
    /// Binds the endpoint `settings` describe.
    ///
    /// # Errors
    /// [`MemberError::InvalidConfig`] (field `fast_failover`) when it cannot listen, or
    /// would advertise an address that is not this host's.
    pub fn bind(settings: &FastFailover) -> Result<Self, MemberError> {
        let endpoint = Endpoint::bind(settings.listen, settings.advertise)
            .map_err(|reason| MemberError::invalid_setting("fast_failover", reason))?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            target: Arc::new(watch::channel(Vec::new()).0),
            proven: Arc::new(watch::channel(Vec::new()).0),
        })
    }

    /// What this member advertises: the protocol puts it in its metadata.
    pub fn endpoint(&self) -> &FailoverEndpoint {
        self.endpoint.advertised()
    }

    /// Follow `targets` from now on: one member (`Some(target)`), several (a `Vec`, e.g. every
    /// peer), or nobody (`None`). Following the same targets again changes nothing (the links
    /// stay); other targets replace the links.
    pub fn follow(&self, targets: impl IntoIterator<Item = FailoverTarget>) {
        let targets: Vec<FailoverTarget> = targets.into_iter().collect();
        self.target.send_if_modified(|current| {
            let changed = *current != targets;
            *current = targets;
            changed
        });
    }

    /// Waits until the end of `member_id`'s process (or its resignation) is proven by this
    /// member's link to it; at once if it was already. Never returns for a member this one
    /// did not follow, or whose end proves nothing.
    pub(crate) async fn ended(&self, member_id: &str) {
        let mut proven = self.proven.subscribe();
        // The sender lives as long as `self`, so waiting never fails.
        let _ = proven
            .wait_for(|ended| ended.iter().any(|m| m == member_id))
            .await;
    }

    /// This member stopped acting for good: its endpoint closes, and its followers may prove
    /// its end at once. Call it after the protocol stopped acting and before LeaveGroup.
    pub fn resign(&self) {
        self.follow(None);
        self.endpoint.close();
    }

    /// Serves the endpoint and the link to the followed member, for `member` (built from
    /// `config`): on the proof that the followed member's process ended, it is removed from the
    /// group (LeaveGroup naming its member id and instance id) and `member` rejoins at once.
    /// Spawn the future beside the driver; it ends once every clone of this `Failover` is
    /// dropped and it [resigned](Self::resign).
    ///
    /// # Errors
    /// [`MemberError::InvalidConfig`] when `config`'s cluster settings are invalid.
    pub fn run(
        &self,
        member: &MemberHandle,
        config: &MemberConfig,
    ) -> Result<impl Future<Output = ()> + Send + use<>, MemberError> {
        let cluster = Cluster::new(config.cluster.clone()).map_err(MemberError::from_cluster)?;
        let observer = Observer::new(Arc::new(cluster));
        let group = config.membership.group_id.clone();
        let member = member.downgrade();
        let endpoint = self.endpoint.clone();
        let targets = self.target.subscribe();
        let proven = self.proven.clone();
        Ok(async move {
            tokio::join!(
                endpoint.serve(),
                super::watch_members(targets, observer, group, member, proven)
            );
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failover::proof;

    #[test]
    fn a_failover_that_never_ran_refuses_only_once_it_resigned() {
        let failover = Failover::bind(&FastFailover::new()).expect("bind 127.0.0.1:0");
        let addr = failover.endpoint().addr.parse().expect("ip:port");
        let copy = failover.clone();
        drop(failover);
        assert!(
            !proof::refused(addr),
            "a clone may still act: the address accepts"
        );
        copy.resign();
        assert!(proof::refused(addr), "resigned: nothing listens any more");
    }

    #[test]
    fn following_the_same_target_again_is_no_change() {
        let failover = Failover::bind(&FastFailover::new()).expect("bind 127.0.0.1:0");
        let mut targets = failover.target.subscribe();
        let target = FailoverTarget {
            member_id: "m-1".into(),
            group_instance_id: None,
            endpoint: failover.endpoint().clone(),
        };
        failover.follow(Some(target.clone()));
        assert!(targets.has_changed().unwrap());
        assert_eq!(*targets.borrow_and_update(), vec![target.clone()]);
        failover.follow(Some(target));
        assert!(!targets.has_changed().unwrap(), "the link is kept");
        failover.resign();
        assert!(targets.has_changed().unwrap());
        assert!(
            targets.borrow_and_update().is_empty(),
            "a resigned member follows nobody"
        );
    }

    fn target(member_id: &str, of: &Failover) -> FailoverTarget {
        FailoverTarget {
            member_id: member_id.into(),
            group_instance_id: None,
            endpoint: of.endpoint().clone(),
        }
    }

    #[tokio::test]
    async fn each_followed_member_s_end_is_proven_on_its_own() {
        let bind = || Failover::bind(&FastFailover::new()).expect("bind 127.0.0.1:0");
        let (a, b, watcher) = (bind(), bind(), bind());
        // A member that never reaches a broker: enough to run the endpoints and the links.
        let config = MemberConfig::new("127.0.0.1:1", "g");
        let (elector, _driver) = crate::election::Elector::new(config.clone(), "w", true).unwrap();
        for failover in [&a, &b, &watcher] {
            tokio::spawn(failover.run(elector.member(), &config).unwrap());
        }
        watcher.follow(vec![target("m-a", &a), target("m-b", &b)]);
        // The links reach both endpoints, then `a` resigns: only `a` is proven gone.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        a.resign();
        tokio::time::timeout(std::time::Duration::from_secs(5), watcher.ended("m-a"))
            .await
            .expect("a's end is proven");
        let b_ended =
            tokio::time::timeout(std::time::Duration::from_millis(300), watcher.ended("m-b")).await;
        assert!(b_ended.is_err(), "b still listens: nothing proves its end");
    }
}
