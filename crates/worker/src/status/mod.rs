//! Status of this worker and its tasks: the model, the board the runtime writes, and the HTTP
//! API that serves it, on a free loopback port unless the config's `status.addr` says otherwise
//! ([`WorkerHandle::status_addr`](crate::WorkerHandle::status_addr) tells where).
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /status` | [`WorkerStatus`] as JSON; during a rebalance the last stable view with `rebalancing: true` |
//! | `GET /metrics` | the metrics below in the OpenMetrics text format (written by `prometheus-client`); content type `application/openmetrics-text` when `Accept` asks for it (Prometheus does), Prometheus' `text/plain; version=0.0.4` otherwise |
//! | `GET /healthz` | 200 while the process serves (liveness) |
//! | `GET /readyz` | 200 once the worker has an assignment, 503 before that and while shutting down |
//! | `POST /tasks/{id}/restart` | 202: restart requested (the way out of `FAILED`); 404 if this worker does not hold the task |
//! | `GET /watch` | with fast failover: 200 and a body that never ends while the process serves (a peer's link; its end is the cue to check whether this process is gone) |
//! | `POST /rebalance?generation=G&from=ADDR` | with fast failover: 202, and this worker rejoins at once if it is stable in generation `G` or older (a peer whose status API is `ADDR` started a rebalance); 400 for a bad `G` |
//!
//! Reads never fail because of a rebalance.
//!
//! Access: with a bearer token set (`status.token`), writes need `Authorization: Bearer <token>`
//! and get 401 without it; `/status` and `/metrics` need it too with `status.protect_reads`;
//! `/healthz`, `/readyz` and `/watch` stay open (the rule is on
//! [`StatusConfig`](crate::config::StatusConfig)). Given a certificate and key
//! (`status.tls_certificate`, `status.tls_key`) the API serves HTTPS only (rustls).
//!
//! | Metric | Type | Meaning |
//! |---|---|---|
//! | `kroupier_tasks{state}` | gauge | tasks held by this worker, by state (every state, 0 included) |
//! | `kroupier_task_restarts` | gauge | restarts after failures, summed over the tasks held |
//! | `kroupier_rebalances_total` | counter | rebalances this worker took part in |
//! | `kroupier_rebalancing` | gauge | 1 while a rebalance is in progress |
//! | `kroupier_generation` | gauge | generation of the last completed rebalance (-1 before the first) |
//! | `kroupier_catalogue_mismatch` | gauge | 1 when this worker's catalogue differs from the leader's |
//! | `kroupier_last_failover_timestamp_seconds` | gauge | Unix time of the last takeover (0 = never) |
//! | `kroupier_rebalance_latency_seconds` | histogram | from a rebalance's start to its assignment applied |

pub(crate) mod access;
pub(crate) mod board;
pub(crate) mod failover;
pub(crate) mod http;
pub(crate) mod metrics;
pub(crate) mod model;
pub(crate) mod tls;

pub(crate) use board::StatusBoard;
pub use board::{GroupView, TaskView, WorkerStatus};
pub(crate) use model::TaskTable;
pub use model::{TaskState, TaskStatus};
