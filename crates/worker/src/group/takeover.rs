//! # A static worker's handover note
//!
//! Kafka hands a process that joins with a known `group.instance.id` the assignment of the
//! process it replaces, in the same generation, without a rebalance (KIP-345). If the old
//! process is still alive — cut off from the broker, or paused for less than its session — it
//! keeps passing its lease checks until its own deadline, so the new one must not start that
//! assignment before then ([`Takeover::MustWait`]: one session timeout from its first join).
//!
//! Whether that can happen is asked before joining: DescribeGroups says which member id holds
//! the instance id now. Nobody (a first start, a new instance, or the old member was removed:
//! its session expired, fast failover saw its process end, or a third party removed it while
//! it still runs) means Kafka hands this process nothing of the old one's: its JoinGroup starts
//! a rebalance, and the leader holds every task of a member that vanished without a proof of
//! death — or that came back under another member id in the same round — for that member's
//! session, wherever it goes (`leader.rs`), so this process needs no wait of its own
//! ([`Takeover::Clean`]). A holder means a process that may still be alive, and the wait
//! applies to every assignment until then, whoever computed it: Kafka hands the new process
//! the old assignment when the group is stable, and a rebalance in progress when it joins
//! hands it an assignment computed for its own member id that may hold the old process's tasks
//! all the same. Meanwhile the worker's metadata carries the wait (`takeover_hold`), and the
//! leader holds back every task that changes owner without a live member's claim for as long,
//! whoever gets it: a rebalance may give the old process's tasks to another worker.
//!
//! A rolling restart should not pay that wait: the old process stopped every task before it
//! exited. So a static worker that stops cleanly (every task stopped, none left unresponsive)
//! leaves a note in the host's temporary directory naming its member id; the next process
//! with the same group and instance id reads it (and removes it) before it joins. If the
//! member id holding the instance id is the note's, it starts at once: then the process being
//! replaced is the one that wrote the note, and it has stopped. Any doubt — a holder and no
//! note (a crash, another host), another member id (a third process took over meanwhile), no
//! answer from the coordinator — means waiting.
//!
//! Assumption: one restart at a time per instance id (a process that takes the instance id
//! over between the DescribeGroups and the JoinGroup of the next one is not seen).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kroupier_coordinator::connection::{Cluster, ClusterConfig};
use kroupier_coordinator::observer::{GroupDescription, Observer};
use serde::{Deserialize, Serialize};

use super::reconciler::Takeover;

/// How long the check may take before the worker gives up on it and waits instead.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the check waits before asking again after a failed DescribeGroups.
const DESCRIBE_RETRY: Duration = Duration::from_millis(200);
/// How long one attempt of the check may look for the group's coordinator.
const ATTEMPT: Duration = Duration::from_secs(1);
/// How long the check may fail before it warns, as a running member does (the coordinator
/// crate's driver): within 5 s of the start.
const WARN_AFTER: Duration = Duration::from_secs(3);

/// What a cleanly stopped static worker leaves for its successor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Note {
    group: String,
    instance_id: String,
    member_id: String,
    stopped_at_ms: u64,
}

/// Where the note of `instance_id` in `group` lives.
fn note_path(group: &str, instance_id: &str) -> PathBuf {
    let name: String = format!("{group}.{instance_id}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::env::temp_dir()
        .join("kroupier-handover")
        .join(format!("{name}.json"))
}

/// Records that the static worker `instance_id`, member `member_id` of `group`, stopped every
/// task. Errors are logged: without a note the successor waits, which is safe.
pub(crate) fn leave_note(group: &str, instance_id: &str, member_id: &str) {
    let note = Note {
        group: group.to_owned(),
        instance_id: instance_id.to_owned(),
        member_id: member_id.to_owned(),
        stopped_at_ms: crate::journal::unix_ms(),
    };
    let path = note_path(group, instance_id);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let json = serde_json::to_vec(&note).map_err(std::io::Error::other)?;
            std::fs::write(&path, json)
        });
    match written {
        Ok(()) => {
            tracing::info!(path = %path.display(), "left a handover note for the next process")
        }
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "cannot write the handover note; the next process will wait one session timeout before starting")
        }
    }
}

/// Decides, before joining, whether this worker's assignments may start at once; hands back
/// the group's description it read (a static worker's), which fast failover reuses rather than
/// asking again.
///
/// While no broker answers, it says so as the member would once it runs (a WARN after
/// [`WARN_AFTER`] naming the last error and what to check; `unreachable` gets the same text for
/// `/readyz`, and `None` once a broker answers): a static worker asks here for up to
/// [`DESCRIBE_TIMEOUT`] before its member exists, and must not be silent meanwhile.
pub(crate) async fn policy(
    cluster: &ClusterConfig,
    group: &str,
    instance_id: Option<&str>,
    unreachable: impl Fn(Option<&str>),
) -> (Takeover, Option<GroupDescription>) {
    let Some(instance_id) = instance_id else {
        return (Takeover::Clean, None);
    };
    let path = note_path(group, instance_id);
    let note: Option<Note> = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .filter(|n: &Note| n.group == group && n.instance_id == instance_id);
    // A note is read once: a later process must not trust it again.
    let _ = std::fs::remove_file(&path);
    // Retried until it answers: a worker started with its cluster may ask before the group's
    // coordinator is up (its JoinGroup would wait for it all the same).
    let describe = async {
        // Each attempt gives up within a second, so that the check has an error to name when
        // it warns (an attempt would otherwise retry for the whole lookup timeout, 30 s by
        // default, well past DESCRIBE_TIMEOUT).
        let mut cluster = cluster.clone();
        cluster.coordinator_lookup_timeout = cluster.coordinator_lookup_timeout.min(ATTEMPT);
        let observer = Observer::new(Arc::new(Cluster::new(cluster).ok()?));
        let started = tokio::time::Instant::now();
        let mut warned = false;
        loop {
            match observer.describe_group(group).await {
                Ok(description) => {
                    if warned {
                        unreachable(None);
                    }
                    return Some(description);
                }
                Err(error) => {
                    tracing::debug!(%error, "DescribeGroups before joining failed; retrying");
                    if !warned && started.elapsed() >= WARN_AFTER {
                        warned = true;
                        let text = format!(
                            "no usable connection to Kafka for {} s, still retrying: check the \
                             bootstrap servers (`bootstrap.servers`, `--bootstrap`) and that \
                             `security.protocol` (and the TLS and SASL settings) matches the \
                             broker's listener; last error: {error}",
                            WARN_AFTER.as_secs()
                        );
                        tracing::warn!(%group, "{text}");
                        unreachable(Some(&text));
                    }
                    tokio::time::sleep(DESCRIBE_RETRY).await;
                }
            }
        }
    };
    let description = tokio::time::timeout(DESCRIBE_TIMEOUT, describe)
        .await
        .ok()
        .flatten();
    let holder = match &description {
        Some(description) => Holder::Known(
            description
                .members
                .iter()
                .find(|m| m.group_instance_id.as_deref() == Some(instance_id))
                .map(|m| m.member_id.clone()),
        ),
        None => Holder::Unknown,
    };
    let takeover = decide(note.as_ref().map(|n| n.member_id.as_str()), holder);
    (takeover, description)
}

/// Who holds the instance id, as the coordinator said before this worker joined.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holder {
    /// No answer: a live process may hold it.
    Unknown,
    /// The member id holding it, if any.
    Known(Option<String>),
}

/// The decision of [`policy`], given the member id of the handover note (if any) and the
/// holder of the instance id.
fn decide(note: Option<&str>, holder: Holder) -> Takeover {
    match holder {
        // Nobody holds the instance id: joining starts a rebalance, nothing is taken over.
        Holder::Known(None) => Takeover::Clean,
        Holder::Known(Some(member_id)) if note == Some(member_id.as_str()) => {
            tracing::info!(
                %member_id,
                "the previous process of this instance id stopped cleanly; starting at once"
            );
            Takeover::Clean
        }
        Holder::Known(Some(member_id)) => {
            tracing::warn!(
                %member_id,
                "member {member_id} holds this instance id and no handover note says its \
                 process stopped; tasks start one session timeout after this worker joins"
            );
            Takeover::MustWait
        }
        Holder::Unknown => Takeover::MustWait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_paths_are_plain_file_names() {
        let path = note_path("orders/eu", "pod 1");
        assert_eq!(
            path.file_name().and_then(|n| n.to_str()),
            Some("orders_eu.pod_1.json")
        );
    }

    #[test]
    fn only_a_holder_whose_stop_a_note_proves_or_no_holder_starts_at_once() {
        let holder = |id: &str| Holder::Known(Some(id.to_owned()));
        assert_eq!(decide(None, Holder::Known(None)), Takeover::Clean);
        assert_eq!(decide(Some("m-1"), Holder::Known(None)), Takeover::Clean);
        assert_eq!(decide(Some("m-1"), holder("m-1")), Takeover::Clean);
        // A holder and no note: a crash, another host, or a live process cut off.
        assert_eq!(decide(None, holder("m-1")), Takeover::MustWait);
        // A third process took the instance id over since the note was written.
        assert_eq!(decide(Some("m-1"), holder("m-2")), Takeover::MustWait);
        assert_eq!(decide(Some("m-1"), Holder::Unknown), Takeover::MustWait);
        assert_eq!(decide(None, Holder::Unknown), Takeover::MustWait);
    }

    #[tokio::test]
    async fn without_an_answer_a_static_worker_waits_and_a_dynamic_one_does_not() {
        let cluster = ClusterConfig::new("127.0.0.1:9");
        let group = format!("no-note-{}", std::process::id());
        let said = std::sync::Mutex::new(Vec::new());
        let say = |why: Option<&str>| said.lock().unwrap().push(why.map(str::to_owned));
        assert_eq!(policy(&cluster, &group, None, say).await.0, Takeover::Clean);
        assert!(
            said.lock().unwrap().is_empty(),
            "a dynamic worker asks nothing"
        );
        assert_eq!(
            policy(&cluster, &group, Some("w1"), say).await.0,
            Takeover::MustWait
        );
        // Not silent while it asked: once, naming the address and what to check.
        let said = said.into_inner().unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        let why = said[0].as_deref().expect("a reason");
        assert!(
            why.starts_with("no usable connection to Kafka for 3 s"),
            "{why}"
        );
        assert!(
            why.contains("127.0.0.1:9") && why.contains("security.protocol"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn a_static_worker_whose_instance_id_nobody_holds_starts_at_once() {
        let coordinator = kroupier_embedded::EmbeddedCoordinator::builder()
            .bind("127.0.0.1:0")
            .await
            .expect("the embedded coordinator starts");
        let cluster = ClusterConfig::new(&coordinator.bootstrap());
        let group = format!("fresh-{}", std::process::id());
        assert_eq!(
            policy(&cluster, &group, Some("pod-1"), |why| assert_eq!(why, None))
                .await
                .0,
            Takeover::Clean
        );
    }

    #[tokio::test]
    async fn a_note_is_read_once_and_needs_the_coordinator_to_agree() {
        let group = format!("note-{}", std::process::id());
        leave_note(&group, "w1", "member-1");
        assert!(note_path(&group, "w1").exists());
        // No coordinator answers (nothing listens on port 9): the note cannot be confirmed.
        let cluster = ClusterConfig::new("127.0.0.1:9");
        assert_eq!(
            policy(&cluster, &group, Some("w1"), |_| {}).await.0,
            Takeover::MustWait
        );
        assert!(!note_path(&group, "w1").exists(), "the note was consumed");
    }
}
