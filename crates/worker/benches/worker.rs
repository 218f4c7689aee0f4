//! Criterion benchmarks of the worker's hot and bulky paths:
//!
//! * `lease/check`: what a task pays before each side effect;
//! * `protocol/metadata/{encode,decode}` and `protocol/assignment/{encode,decode}`: one member
//!   of a 100k-task, 100-worker group (1,000 tasks, every hundredth id);
//! * `protocol/group_record/decode`: the whole group record a leader reads (100 members'
//!   metadata);
//! * `catalogue/from_specs`: a worker's catalogue of 100,000 tasks, built at start-up.
//!
//! Run with `cargo bench -p kroupier-worker`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use kroupier_worker::protocol::{Assignment, MemberMetadata};
use kroupier_worker::{Catalogue, FencingToken, TaskContext, TaskSpec};

const TASKS: usize = 100_000;
const WORKERS: usize = 100;

fn member(worker: usize) -> (MemberMetadata, Assignment) {
    let owned: BTreeMap<String, i32> = (worker..TASKS)
        .step_by(WORKERS)
        .map(|t| (format!("task-{t}"), 41))
        .collect();
    let mut metadata = MemberMetadata::new(format!("worker-{worker}"));
    metadata.kinds.insert("copy".into());
    metadata.catalogue_fingerprint = 0xfeed;
    let mut assignment = Assignment::new("member-0", 42);
    assignment.tasks = owned.keys().cloned().collect();
    metadata.owned = owned;
    (metadata, assignment)
}

fn lease(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let _guard = runtime.enter();
    let valid_until = tokio::time::Instant::now() + Duration::from_secs(3600);
    let (ctx, _cancel, _member) =
        TaskContext::detached("task-0", FencingToken::new(1, "member-0"), valid_until);
    c.bench_function("lease/check", |b| b.iter(|| black_box(ctx.check_lease())));
}

fn protocol(c: &mut Criterion) {
    let (metadata, assignment) = member(7);
    let metadata_bytes = metadata.encode();
    let assignment_bytes = assignment.encode();
    c.bench_function("protocol/metadata/encode", |b| {
        b.iter(|| black_box(metadata.encode()))
    });
    c.bench_function("protocol/metadata/decode", |b| {
        b.iter(|| black_box(MemberMetadata::decode(&metadata_bytes)))
    });
    c.bench_function("protocol/assignment/encode", |b| {
        b.iter(|| black_box(assignment.encode()))
    });
    c.bench_function("protocol/assignment/decode", |b| {
        b.iter(|| black_box(Assignment::decode(&assignment_bytes)))
    });
    let record: Vec<Vec<u8>> = (0..WORKERS).map(|w| member(w).0.encode()).collect();
    let mut group = c.benchmark_group("protocol/group_record");
    group.sample_size(20);
    group.bench_function("decode", |b| {
        b.iter(|| {
            for bytes in &record {
                black_box(MemberMetadata::decode(bytes).ok());
            }
        })
    });
    group.finish();
}

fn catalogue(c: &mut Criterion) {
    // In the order a program adds them: task-0, task-1, ... (not the ids' sorted order).
    let specs: Vec<TaskSpec> = (0..TASKS)
        .map(|t| {
            TaskSpec::new(
                format!("task-{t}"),
                "copy",
                serde_json::json!({"every_ms": 100}),
            )
        })
        .collect();
    c.bench_function("catalogue/from_specs", |b| {
        b.iter_batched(
            || specs.clone(),
            |specs| black_box(Catalogue::from_specs(specs).expect("unique ids")),
            criterion::BatchSize::LargeInput,
        )
    });
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    lease(&mut c);
    protocol(&mut c);
    catalogue(&mut c);
    c.final_summary();
}
