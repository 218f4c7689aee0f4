use super::*;

fn every_100(worker: &str, from: u64, to: u64) -> Vec<(u64, String)> {
    (from..=to)
        .step_by(100)
        .map(|ms| (ms, worker.to_string()))
        .collect()
}

fn journal(parts: &[Vec<(u64, String)>]) -> Vec<Beat> {
    let mut all: Vec<Beat> = parts
        .iter()
        .flatten()
        .map(|(ms, w)| Beat {
            unix_ms: *ms,
            worker: w.clone(),
            generation: 1,
        })
        .collect();
    all.sort_by_key(|b| b.unix_ms);
    all
}

fn kill(signal_ms: u64, reaped_ms: u64) -> Kill<'static> {
    Kill {
        worker: "a",
        signal_ms,
        reaped_ms,
    }
}

#[test]
fn a_clean_failover_passes_and_is_timed() {
    let mut journals = BTreeMap::new();
    journals.insert(
        "task-0".to_string(),
        journal(&[every_100("a", 0, 5000), every_100("b", 8400, 12000)]),
    );
    journals.insert("task-1".to_string(), journal(&[every_100("b", 0, 12000)]));
    let moved = BTreeSet::from(["task-0".to_string()]);
    let finals = BTreeMap::from([
        ("task-0".to_string(), "b".to_string()),
        ("task-1".to_string(), "b".to_string()),
    ]);
    let failover = check(&journals, kill(5050, 5060), &moved, &finals, 11000, 300).unwrap();
    assert_eq!(failover.resumed["task-0"], ("b".to_string(), 3350));
    assert_eq!(failover.time_ms(), 3350);
}

#[test]
fn violations_are_all_reported() {
    let mut journals = BTreeMap::new();
    // Ran on two workers at once, and twice after the kill.
    journals.insert(
        "task-0".to_string(),
        journal(&[
            every_100("a", 0, 5000),
            every_100("b", 4000, 12000),
            every_100("c", 9000, 9500),
        ]),
    );
    // Never ran again.
    journals.insert("task-1".to_string(), journal(&[every_100("a", 0, 5000)]));
    let moved = BTreeSet::from(["task-0".to_string(), "task-1".to_string()]);
    let finals = BTreeMap::from([("task-1".to_string(), "b".to_string())]);
    let problems = check(&journals, kill(4500, 4500), &moved, &finals, 11000, 300).unwrap_err();
    let text = problems.join("\n");
    assert!(text.contains("task-0 ran on a"), "{text}");
    assert!(text.contains("after it was reaped at 4500"), "{text}");
    assert!(
        text.contains("task-0 ran on 2 workers after the kill"),
        "{text}"
    );
    assert!(text.contains("task-1 did not run again"), "{text}");
    assert!(
        text.contains("task-1 should be running on b only"),
        "{text}"
    );
}

#[test]
fn the_failover_is_timed_from_the_signal_not_from_the_reaping() {
    // SIGKILL sent at 5000, the process reaped at 5300 (a slow reap on a busy machine), its
    // last beat at 5000; the new owner's first beat at 5040: 40 ms, not 0 (or less).
    let mut journals = BTreeMap::new();
    journals.insert(
        "task-0".to_string(),
        journal(&[every_100("a", 0, 5000), every_100("b", 5040, 12000)]),
    );
    let moved = BTreeSet::from(["task-0".to_string()]);
    let finals = BTreeMap::from([("task-0".to_string(), "b".to_string())]);
    let failover = check(&journals, kill(5000, 5300), &moved, &finals, 11000, 300).unwrap();
    assert_eq!(failover.resumed["task-0"], ("b".to_string(), 40));
    assert_eq!(failover.time_ms(), 40);
}
