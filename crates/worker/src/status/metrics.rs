//! `/metrics` in the Prometheus text exposition format (version 0.0.4).

use std::fmt::Write;

use super::board::{LATENCY_BUCKETS, StatusBoard};

/// The content type of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    header(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// Renders the board's metrics.
pub fn render(board: &StatusBoard) -> String {
    let (counts, restarts, counters) = board.metrics();
    let group = board.group();
    let mut out = String::new();
    header(
        &mut out,
        "kroupier_tasks",
        "gauge",
        "Tasks held by this worker, by state.",
    );
    for (state, count) in counts {
        let _ = writeln!(
            out,
            "kroupier_tasks{{state=\"{}\"}} {count}",
            state.as_str()
        );
    }
    single(
        &mut out,
        "kroupier_task_restarts",
        "gauge",
        "Restarts after failures, summed over the tasks this worker holds.",
        restarts,
    );
    single(
        &mut out,
        "kroupier_rebalances_total",
        "counter",
        "Rebalances this worker took part in.",
        counters.rebalances,
    );
    single(
        &mut out,
        "kroupier_rebalancing",
        "gauge",
        "1 while a rebalance is in progress.",
        u8::from(board.is_rebalancing()),
    );
    single(
        &mut out,
        "kroupier_generation",
        "gauge",
        "Generation of the last completed rebalance (-1 before the first).",
        group.generation.unwrap_or(-1),
    );
    single(
        &mut out,
        "kroupier_catalogue_mismatch",
        "gauge",
        "1 when this worker's catalogue differs from the leader's.",
        u8::from(group.catalogue_mismatch),
    );
    single(
        &mut out,
        "kroupier_last_failover_timestamp_seconds",
        "gauge",
        "Unix time this worker last took over tasks after its first assignment (0 = never).",
        format_args!(
            "{:.3}",
            counters.last_failover_ms.unwrap_or(0) as f64 / 1000.0
        ),
    );
    let name = "kroupier_rebalance_latency_seconds";
    header(
        &mut out,
        name,
        "histogram",
        "From the start of a rebalance to its assignment applied.",
    );
    for (bound, count) in LATENCY_BUCKETS.iter().zip(counters.latency_buckets) {
        let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {count}");
    }
    let _ = writeln!(
        out,
        "{name}_bucket{{le=\"+Inf\"}} {}",
        counters.latency_count
    );
    let _ = writeln!(out, "{name}_sum {}", counters.latency_sum);
    let _ = writeln!(out, "{name}_count {}", counters.latency_count);
    out
}
