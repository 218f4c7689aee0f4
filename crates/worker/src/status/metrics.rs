//! `/metrics`: the worker's metrics in a [`prometheus_client`] registry, encoded in the OpenMetrics
//! text format. [`super`] lists them.
//!
//! Counters and the histogram are updated as events happen; the gauges that mirror the task table
//! and the group view are set from them when a scrape comes in.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::model::TaskState;

/// The content type of every `/metrics` answer, whatever the scraper's `Accept` says: the body is
/// OpenMetrics text (`# EOF`, `# UNIT`, counters named without `_total` in `# TYPE`), and a
/// scraper picks its parser by this header. Prometheus (2.x and 3.x), the OpenTelemetry
/// collector's Prometheus receiver, vmagent and Grafana Agent/Alloy all parse it; labelling it
/// Prometheus' older `text/plain; version=0.0.4` would make them read it with the wrong parser.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds (seconds) of the rebalance latency histogram buckets.
const LATENCY_BUCKETS: [f64; 11] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

/// The metrics of one worker and the registry that encodes them.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    tasks: Family<StateLabel, Gauge>,
    task_restarts: Gauge,
    rebalances: Counter,
    rebalancing: Gauge,
    generation: Gauge,
    catalogue_mismatch: Gauge,
    last_failover: Gauge<f64, AtomicU64>,
    rebalance_latency: Histogram,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            tasks: Family::default(),
            task_restarts: Gauge::default(),
            rebalances: Counter::default(),
            rebalancing: Gauge::default(),
            generation: Gauge::default(),
            catalogue_mismatch: Gauge::default(),
            last_failover: Gauge::default(),
            rebalance_latency: Histogram::new(LATENCY_BUCKETS),
        };
        metrics.generation.set(-1);
        let registry = &mut metrics.registry;
        registry.register(
            "kroupier_tasks",
            "Tasks held by this worker, by state",
            metrics.tasks.clone(),
        );
        registry.register(
            "kroupier_task_restarts",
            "Restarts after failures, summed over the tasks this worker holds",
            metrics.task_restarts.clone(),
        );
        registry.register(
            "kroupier_rebalances",
            "Rebalances this worker completed, its first join included",
            metrics.rebalances.clone(),
        );
        registry.register(
            "kroupier_rebalancing",
            "1 while a rebalance is in progress",
            metrics.rebalancing.clone(),
        );
        registry.register(
            "kroupier_generation",
            "Generation of the last completed rebalance (-1 before the first)",
            metrics.generation.clone(),
        );
        registry.register(
            "kroupier_catalogue_mismatch",
            "1 when this worker's catalogue differs from the leader's",
            metrics.catalogue_mismatch.clone(),
        );
        registry.register_with_unit(
            "kroupier_last_failover_timestamp",
            "Unix time this worker last took over tasks after its first assignment (0 = never)",
            Unit::Seconds,
            metrics.last_failover.clone(),
        );
        registry.register_with_unit(
            "kroupier_rebalance_latency",
            "From the start of a rebalance to its assignment applied",
            Unit::Seconds,
            metrics.rebalance_latency.clone(),
        );
        metrics
    }

    /// A rebalance completed after `seconds` (the first join included).
    pub(crate) fn rebalance_completed(&self, seconds: f64) {
        self.rebalances.inc();
        self.rebalance_latency.observe(seconds);
    }

    /// This worker took over tasks at `unix_ms`.
    pub(crate) fn failover_at(&self, unix_ms: u64) {
        self.last_failover.set(unix_ms as f64 / 1000.0);
    }

    /// Sets the gauges that mirror the board (tasks by state, their restarts, whether a
    /// rebalance runs, the group's generation and whether this worker's catalogue differs from
    /// the leader's), then encodes every metric in the OpenMetrics text format.
    pub(crate) fn encode(
        &self,
        tasks: &[(TaskState, usize)],
        restarts: u64,
        rebalancing: bool,
        generation: Option<i32>,
        catalogue_mismatch: bool,
    ) -> String {
        for (state, count) in tasks {
            self.tasks
                .get_or_create(&StateLabel {
                    state: state.as_str(),
                })
                .set(saturating_i64(*count as u64));
        }
        self.task_restarts.set(saturating_i64(restarts));
        self.rebalancing.set(i64::from(rebalancing));
        self.generation.set(generation.map_or(-1, i64::from));
        self.catalogue_mismatch.set(i64::from(catalogue_mismatch));
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

fn saturating_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
