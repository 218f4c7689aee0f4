//! The journal format and the checks: cut lines, tenures, overlaps, unowned time, the end
//! state, and leader elections.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

fn beat(unix_ms: u64, worker: &str, generation: i32) -> Beat {
    Beat {
        unix_ms,
        worker: worker.to_owned(),
        generation,
    }
}

/// A beat every 100 ms from `from` to `to`, both included.
fn every_100(worker: &str, generation: i32, from: u64, to: u64) -> Vec<Beat> {
    (from..=to)
        .step_by(100)
        .map(|ms| beat(ms, worker, generation))
        .collect()
}

fn concat(parts: &[Vec<Beat>]) -> Vec<Beat> {
    parts.iter().flatten().cloned().collect()
}

#[test]
fn a_cut_last_line_is_ignored() {
    assert_eq!(
        parse("100 w0 3\n200 w1 4\n30").unwrap(),
        [beat(100, "w0", 3), beat(200, "w1", 4)]
    );
    // Cut anywhere, even right after a field or in the middle of the worker id.
    assert_eq!(parse("100 w0 3\n200 w").unwrap(), [beat(100, "w0", 3)]);
    assert_eq!(parse("100 w0 3\n200 w1 4").unwrap(), [beat(100, "w0", 3)]);
    assert_eq!(parse("100 w0").unwrap(), []);
    assert_eq!(parse("").unwrap(), []);
}

#[test]
fn a_malformed_complete_line_is_an_error() {
    let err = parse("100 w0 3\n200 w0\n300 w0 3\n").unwrap_err();
    assert_eq!(err.line, 2);
    assert_eq!(err.text, "200 w0");
    assert!(err.to_string().contains("line 2: `200 w0`"), "{err}");
    // Even when it is the last line: it ends with '\n', so the writer finished it.
    assert_eq!(parse("100 w0 3\n200 w0\n").unwrap_err().line, 2);
    for bad in [
        "\n",
        "100 w0 3\n\n",
        "x w0 3\n",
        "100 w0 x\n",
        "100 w0 3 extra\n",
        "100  w0 3\n",
        "100\tw0 3\n",
        "-1 w0 3\n",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn the_writer_appends_lines_the_parser_reads() {
    let dir = std::env::temp_dir().join(format!(
        "kroupier-journal-writer-{}-{}",
        std::process::id(),
        unix_ms()
    ));
    let nested = dir.join("journals");
    let mut a = Writer::create(&nested, "task-0", "a").unwrap();
    a.beat_at(1_000, 3).unwrap();
    let mut b = Writer::create(&nested, "task-0", "b").unwrap();
    b.beat_at(1_100, 4).unwrap();
    a.beat(3).unwrap();
    assert_eq!(a.path(), nested.join("task-0.log"));
    // Not a journal: skipped.
    std::fs::write(nested.join("worker-a.stderr"), "noise").unwrap();

    let journals = read_dir(&nested).unwrap();
    assert_eq!(journals.keys().collect::<Vec<_>>(), ["task-0"]);
    let beats = &journals["task-0"];
    assert_eq!(beats[..2], [beat(1_000, "a", 3), beat(1_100, "b", 4)]);
    assert_eq!((beats[2].worker.as_str(), beats[2].generation), ("a", 3));
    assert!(beats[2].unix_ms > 1_000_000_000_000, "now, in Unix ms");

    std::fs::write(nested.join("task-1.log"), "1 a 1\nbroken\n").unwrap();
    let err = read_dir(&nested).unwrap_err();
    assert!(
        err.to_string().contains("task-1.log: line 2: `broken`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    for (task, worker) in [
        ("task-0", "w 1"),
        ("task-0", ""),
        ("../x", "w1"),
        ("", "w1"),
    ] {
        let err = Writer::create(&dir, task, worker).unwrap_err();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::InvalidInput,
            "{task:?} {worker:?}"
        );
    }
    assert!(!dir.exists(), "nothing is created for a rejected writer");
}

#[test]
fn tenures_split_at_gaps_and_at_generations() {
    let beats = concat(&[
        every_100("a", 1, 0, 200),
        // A silence of 600 ms: a new tenure of the same worker and generation.
        every_100("a", 1, 800, 1_000),
        // Kept through a rebalance: a new generation, a new tenure.
        every_100("a", 2, 1_100, 1_300),
    ]);
    let t = tenures(&beats, 300);
    let spans: Vec<(i32, u64, u64)> = t
        .iter()
        .map(|t| (t.generation, t.first_ms, t.last_ms))
        .collect();
    assert_eq!(spans, [(1, 0, 200), (1, 800, 1_000), (2, 1_100, 1_300)]);
    // With a looser bound, the silence is no gap.
    assert_eq!(tenures(&beats, 600).len(), 2);
    // Order does not matter.
    let mut reversed = beats.clone();
    reversed.reverse();
    assert_eq!(tenures(&reversed, 300), t);
    assert!(overlaps(&t).is_empty(), "one worker never overlaps itself");
}

#[test]
fn a_clean_handover_is_no_overlap() {
    let beats = concat(&[
        every_100("a", 1, 0, 5_000),
        every_100("b", 2, 8_400, 12_000),
    ]);
    let t = tenures(&beats, 300);
    assert_eq!(t.len(), 2);
    assert_eq!(overlaps(&t), []);

    // A worker back after another's tenure is still no overlap.
    let back = concat(&[
        every_100("a", 1, 0, 100),
        every_100("b", 2, 1_000, 1_100),
        every_100("a", 3, 2_000, 2_100),
    ]);
    assert_eq!(overlaps(&tenures(&back, 300)), []);
    // ... unless the bound is so loose that a's two stretches join around b's.
    assert_eq!(overlaps(&tenures(&back, 10_000)), []);
    let same_generation = concat(&[
        every_100("a", 1, 0, 100),
        every_100("b", 2, 1_000, 1_100),
        every_100("a", 1, 2_000, 2_100),
    ]);
    assert_eq!(overlaps(&tenures(&same_generation, 10_000)).len(), 1);
}

#[test]
fn two_workers_at_once_is_an_overlap() {
    let beats = concat(&[every_100("a", 1, 0, 1_000), every_100("b", 2, 950, 2_000)]);
    let found = overlaps(&tenures(&beats, 300));
    assert_eq!(found.len(), 1);
    let (x, y) = &found[0];
    assert_eq!((x.worker.as_str(), x.last_ms), ("a", 1_000));
    assert_eq!((y.worker.as_str(), y.first_ms), ("b", 950));

    // Beats in the same millisecond are at once.
    let touching = vec![beat(0, "a", 1), beat(100, "a", 1), beat(100, "b", 2)];
    assert_eq!(overlaps(&tenures(&touching, 300)).len(), 1);
    // A single beat inside another's tenure too.
    let inside = concat(&[every_100("a", 1, 0, 1_000), vec![beat(550, "c", 1)]]);
    assert_eq!(overlaps(&tenures(&inside, 300)).len(), 1);
}

#[test]
fn unowned_time_counts_from_the_instant() {
    let beats = concat(&[
        every_100("a", 1, 0, 1_000),
        every_100("b", 2, 4_000, 5_000),
        every_100("b", 3, 5_700, 6_000),
    ]);
    assert_eq!(longest_unowned(&beats, 0), 3_000);
    assert_eq!(longest_unowned(&beats, 4_000), 700);
    assert_eq!(longest_unowned(&beats, 5_800), 100);
    assert_eq!(longest_unowned(&beats, 6_000), 0);
    assert_eq!(longest_unowned(&[], 0), 0);
}

#[test]
fn exactly_once_at_the_end() {
    let mut journals = Journals::new();
    journals.insert(
        "task-0".into(),
        concat(&[
            every_100("a", 1, 0, 5_000),
            every_100("b", 2, 8_400, 12_000),
        ]),
    );
    journals.insert("task-1".into(), every_100("b", 1, 0, 12_000));
    journals.insert("task-2".into(), every_100("a", 1, 0, 5_000));
    journals.insert(
        "task-3".into(),
        concat(&[
            every_100("b", 2, 0, 12_000),
            every_100("c", 2, 11_000, 12_000),
        ]),
    );

    let owners = exactly_once_since(&journals, ["task-0", "task-1"], 11_000).unwrap();
    assert_eq!(
        owners,
        BTreeMap::from([("task-0".into(), "b".into()), ("task-1".into(), "b".into())])
    );

    let problems = exactly_once_since(&journals, ["task-1", "task-2", "task-3", "task-9"], 11_000)
        .unwrap_err();
    assert_eq!(
        problems,
        [
            NotRunningOnce::Stopped {
                task: "task-2".into(),
                last_ms: Some(5_000)
            },
            NotRunningOnce::OnSeveral {
                task: "task-3".into(),
                workers: BTreeSet::from(["b".into(), "c".into()])
            },
            NotRunningOnce::Stopped {
                task: "task-9".into(),
                last_ms: None
            },
        ]
    );
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "task-2 is not running: its last beat was at 5000",
            "task-3 runs on 2 workers: {\"b\", \"c\"}",
            "task-9 never ran",
        ]
    );
}

fn event(ts_ms: u64, id: &str, role: Role, generation: i32) -> RoleChange {
    RoleChange {
        ts_ms,
        id: id.to_owned(),
        event: role,
        generation: Some(generation),
    }
}

#[test]
fn election_events_parse_like_journals() {
    let text = "{\"ts_ms\":1000,\"id\":\"a\",\"event\":\"leader\",\"generation\":1}\n\
                {\"ts_ms\":1001,\"id\":\"a\",\"event\":\"lost\",\"generation\":null}\n\
                {\"ts_ms\":1002,\"id\":\"a\",\"ev";
    assert_eq!(
        parse_events(text).unwrap(),
        [
            event(1_000, "a", Role::Leader, 1),
            RoleChange {
                ts_ms: 1_001,
                id: "a".into(),
                event: Role::Lost,
                generation: None
            },
        ]
    );
    let err = parse_events("{\"ts_ms\":1,\"id\":\"a\",\"event\":\"king\",\"generation\":1}\n")
        .unwrap_err();
    assert_eq!(err.line, 1);
    assert_eq!(Role::from_name("follower"), Some(Role::Follower));
    assert_eq!(Role::from_name("king"), None);
}

#[test]
fn a_clean_succession_has_one_leader_at_a_time() {
    let events = [
        event(100, "a", Role::Leader, 1),
        event(100, "b", Role::Follower, 1),
        event(100, "c", Role::Follower, 1),
        // a is killed at 1_000 and prints nothing more; b leads after the session timeout.
        event(4_000, "b", Role::Leader, 2),
        event(4_000, "c", Role::Follower, 2),
        // b resigns on SIGTERM; c leads in the same millisecond.
        event(5_000, "b", Role::Lost, 2),
        event(5_000, "c", Role::Leader, 3),
    ];
    let ends = BTreeMap::from([
        ("a".to_owned(), 1_000),
        ("b".to_owned(), 5_100),
        ("c".to_owned(), 6_000),
    ]);
    let r = reigns(&events, &ends);
    let spans: Vec<(&str, u64, u64)> = r
        .iter()
        .map(|r| (r.id.as_str(), r.from_ms, r.until_ms))
        .collect();
    assert_eq!(
        spans,
        [("a", 100, 1_000), ("b", 4_000, 5_000), ("c", 5_000, 6_000)]
    );
    assert_eq!(two_leaders(&r), []);
}

#[test]
fn two_leaders_at_once_are_found() {
    let events = [
        event(100, "a", Role::Leader, 1),
        // a never reported `lost`, and was alive until 3_000.
        event(2_000, "b", Role::Leader, 2),
        event(2_500, "b", Role::Follower, 3),
    ];
    let ends = BTreeMap::from([("a".to_owned(), 3_000)]);
    let found = two_leaders(&reigns(&events, &ends));
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0.id.as_str(), found[0].1.id.as_str()), ("a", "b"));
    // Without an end, a's reign lasts forever.
    let forever = reigns(&events, &BTreeMap::new());
    assert_eq!(forever[0].until_ms, u64::MAX);
    assert_eq!(two_leaders(&forever).len(), 1);
}

fn beats() -> impl Strategy<Value = Vec<Beat>> {
    proptest::collection::vec(
        (any::<u64>(), "[A-Za-z0-9._-]{1,12}", any::<i32>()).prop_map(
            |(unix_ms, worker, generation)| Beat {
                unix_ms,
                worker,
                generation,
            },
        ),
        0..20,
    )
}

proptest! {
    #[test]
    fn parse_reads_what_render_writes(lines in beats()) {
        let text: String = lines.iter().map(Beat::render).collect();
        prop_assert_eq!(parse(&text).unwrap(), lines);
    }

    #[test]
    fn a_cut_last_line_loses_only_that_line(lines in beats(), cut in any::<prop::sample::Index>()) {
        prop_assume!(!lines.is_empty());
        let text: String = lines.iter().map(Beat::render).collect();
        let last = lines[lines.len() - 1].render();
        // Keep 0 .. len-1 bytes of the last line (all ASCII): never its '\n'.
        let keep = cut.index(last.len());
        let cut_text = &text[..text.len() - last.len() + keep];
        prop_assert_eq!(parse(cut_text).unwrap(), &lines[..lines.len() - 1]);
    }
}
