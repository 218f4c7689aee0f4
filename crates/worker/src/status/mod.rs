//! Status of this worker and its tasks: the model, the board the runtime writes, and the HTTP
//! API that serves it, on a free loopback port unless the config's `status.addr` says otherwise
//! ([`WorkerHandle::status_addr`](crate::WorkerHandle::status_addr) tells where).
//!
//! | Route | Answer | Errors |
//! |---|---|---|
//! | `GET /status` | 200: the worker's status as JSON (worker, group, generation, leader, each held task's state, restarts and last error); during a rebalance the last stable view with `rebalancing: true` | 401 with `status.protect_reads` and no token |
//! | `GET /metrics` | 200: the metrics in the OpenMetrics text format, content type `application/openmetrics-text; version=1.0.0; charset=utf-8` whatever `Accept` asks (scrapers pick their parser by it: Prometheus, the OpenTelemetry collector and vmagent read it) | 401 with `status.protect_reads` and no token |
//! | `GET /healthz` | 200 `ok` while the process serves (liveness) | none |
//! | `GET /readyz` | 200 `ready` once the worker has an assignment | 503 `not ready: ...` before the first assignment, while shutting down, and while the member has reached no broker for 3 s (the member's WARN text: the address, the cause, what to check) |
//! | `GET /tasks` | 200: every task of the effective catalogue (code and task store): kind, config, weight, desired state (`running`/`paused`), source (`code`/`store`) and version, this worker's state when it holds it, `UNPLACED` with the reason when no worker can take it; `invalid` lists store records that are not tasks | none |
//! | `GET /tasks/{id}` | 200: that task's entry of `GET /tasks` | 404 for a task not in the catalogue (or a store record that is not a task) |
//! | `PUT /tasks/{id}` | with a task store, body `{"kind", "config", "weight"?, "state"?}`: 200 `{"id", "version"}` | 400 for a body that is not a task, or a config its kind refuses on a worker that registers the kind (serde's message, and how to send one it accepts); 413 over the store's record limit (`limit_bytes`); 404 without a task store; 403, 503 from the store |
//! | `DELETE /tasks/{id}` | with a task store: 200 `{"id", "version"}` | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `GET /tasks/{id}/checkpoint` | with a task store: 200 `{"id", "generation", "offset", "member", "state"}`, the task's newest checkpoint (read to the topic's end) | 404 when it has none (or it was reset), or without a task store; 503 from the topic |
//! | `PUT /tasks/{id}/checkpoint` | with a task store, body any JSON value: 200 `{"id", "checkpoint": "set", "offset"}`; the task's next start reads that value (docs/tasks.md, *Checkpoint administration*) | 409 unless the task is paused in the store and not running on this worker (the message says why); 404 for an unknown task, or without a task store; 400 for a body that is not JSON; 413 over the checkpoint limit; 503 from the topic |
//! | `DELETE /tasks/{id}/checkpoint` | with a task store: 200 `{"id", "checkpoint": "reset", "offset"}`; the task's next start reads no checkpoint | 409 unless the task is paused and not running on this worker; 404 for an unknown task, or without a task store; 503 from the topic |
//! | `POST /tasks/{id}/pause` | with a task store: 200 `{"id", "version"}`; the owner stops the task (`PAUSED`) without a rebalance | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `POST /tasks/{id}/resume` | with a task store: 200 `{"id", "version"}`; the owner starts the task again without a rebalance | 404 for an unknown task, or without a task store; 403, 503 from the store |
//! | `POST /tasks/{id}/restart` | with a task store and a stored task: 200 `{"id", "version"}`, the owner restarts the task wherever it runs; otherwise 202 `{"id", "restart": "requested"}`: restarted here (the way out of `FAILED`) | 404 when this worker does not hold the task (ask its owner), or restarts are not enabled |
//! | `GET /watch` | with fast failover: 200 and a body that never ends while the process serves (a peer's link; its end is the cue to check whether this process is gone) | none |
//! | `POST /rebalance` | with fast failover, `?generation=G&from=HOST:PORT` (both optional) and no body: 202 `{"rebalance": ...}`, and this worker rejoins at once if it is stable in generation `G` or older | 400 for a `G` that is not an integer, or for a body |
//!
//! Every error answer, on every route and for routes and methods that do not exist, is JSON in
//! one shape: `{"error": "...", "status": N}`, where `error` says what went wrong and what to
//! do, with `routes` for an unknown route (404), `allowed` for a method a route does not take
//! (405, and `Allow`), `limit_bytes` for a body over the limit (413). Reads never fail because
//! of a rebalance, and neither do task store writes: they go to the store's Kafka topic, not
//! through the group (503 when the store cannot be reached, 403 when the principal may not
//! write it).
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
