//! Status of this worker and its tasks: the model, the board the runtime writes, and the HTTP
//! API that serves it, on a free loopback port unless the config's `status.addr` says otherwise
//! ([`WorkerHandle::status_addr`](crate::WorkerHandle::status_addr) tells where).
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /status` | [`WorkerStatus`] as JSON; during a rebalance the last stable view with `rebalancing: true` |
//! | `GET /metrics` | the metrics below in the OpenMetrics text format (written by `prometheus-client`); content type `application/openmetrics-text; version=1.0.0; charset=utf-8` whatever `Accept` asks (the body is OpenMetrics, and scrapers pick their parser by this header: Prometheus, the OpenTelemetry collector and vmagent read it) |
//! | `GET /healthz` | 200 while the process serves (liveness) |
//! | `GET /readyz` | 200 once the worker has an assignment; 503 (`{"error": "not ready: ...", "status": 503}`) before that, while shutting down, and while the member has reached no broker for 3 s (the reason and what to check, as in its WARN line) |
//! | `GET /tasks` | every task of the effective catalogue (code and task store): kind, config, weight, desired state (`running`/`paused`), source (`code`/`store`) and version, this worker's state when it holds it, `UNPLACED` with the reason when no worker can take it |
//! | `PUT /tasks/{id}` | with a task store: body `{"kind", "config", "weight"?, "state"?}`; 200 `{"id", "version"}`; 400 for a body that is not a task, or a config its kind refuses on a worker that registers the kind (serde's message); 413 over the store's record limit |
//! | `DELETE /tasks/{id}` | with a task store: 200 `{"id", "version"}`; 404 for an unknown task |
//! | `POST /tasks/{id}/pause`, `/resume` | with a task store: sets the desired state; the owner stops (`PAUSED`) or starts the task without a rebalance; 404 for an unknown task |
//! | `POST /tasks/{id}/restart` | with a task store and a stored task: 200, the store's restart counter moves and the owner restarts the task wherever it runs; otherwise 202: restart requested here (the way out of `FAILED`), 404 if this worker does not hold the task |
//! | `GET /watch` | with fast failover: 200 and a body that never ends while the process serves (a peer's link; its end is the cue to check whether this process is gone) |
//! | `POST /rebalance?generation=G&from=ADDR` | with fast failover: 202, and this worker rejoins at once if it is stable in generation `G` or older (a peer whose status API is `ADDR` started a rebalance); 400 for a bad `G` |
//!
//! Reads never fail because of a rebalance, and neither do task store writes: they go to the
//! store's Kafka topic, not through the group. Their errors are JSON, `{"error", "status"}`
//! (503 when the store cannot be reached, 403 when the principal may not write it; 404 on
//! every write route when the worker has no task store).
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
//! | `kroupier_rebalances_total` | counter | rebalances this worker completed, its first join included |
//! | `kroupier_rebalancing` | gauge | 1 while a rebalance is in progress |
//! | `kroupier_generation` | gauge | generation of the last completed rebalance (-1 before the first) |
//! | `kroupier_catalogue_mismatch` | gauge | 1 when this worker's catalogue differs from the leader's |
//! | `kroupier_last_failover_timestamp_seconds` | gauge | Unix time of the last takeover (0 = never) |
//! | `kroupier_rebalance_latency_seconds` | histogram | from a rebalance's start (this worker's revocation, or, for the first join, the member's first JoinGroup) to its assignment applied |

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
