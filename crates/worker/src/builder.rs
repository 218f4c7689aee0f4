//! [`WorkerBuilder`]: registry + catalogue + config, validated together.
//!
//! [`WorkerBuilder::build_runtime`] gives the [`Runtime`] alone (tests, custom drivers);
//! [`WorkerBuilder::spawn`] and [`WorkerBuilder::run`] also join the Kafka group (see
//! [`group`](crate::group)).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::catalogue::{Catalogue, CatalogueError, TaskSpec};
use crate::config::WorkerConfig;
use crate::group::{WorkerError, WorkerExit, WorkerHandle};
use crate::runtime::Runtime;
use crate::status::{StatusBoard, TaskTable};
use crate::supervisor::{InvalidConfig, Supervisor};
use crate::task::{Registry, Task};

/// Why a worker could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A config value cannot work.
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// The catalogue is inconsistent.
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// No task kind is registered: the worker could run nothing.
    #[error("no task kind is registered; call `register` for each kind this worker runs")]
    NoKinds,
}

/// Collects what a worker needs, then builds its [`Runtime`].
///
/// # Examples
///
/// ```
/// use kroupier_worker::{TaskSpec, Task, TaskContext, TaskError, WorkerBuilder, WorkerConfig};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Copy { table: String }
///
/// impl Task for Copy {
///     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
///         ctx.cancelled().await;
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let runtime = WorkerBuilder::new(WorkerConfig::new("orders"))
///     .register::<Copy>("copy")
///     .task(TaskSpec::new("copy-0", "copy", serde_json::json!({"table": "orders"})))
///     .build_runtime()
///     .unwrap();
/// assert_eq!(runtime.metadata().kinds.len(), 1);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct WorkerBuilder {
    config: WorkerConfig,
    registry: Registry,
    specs: Vec<TaskSpec>,
}

impl WorkerBuilder {
    /// A builder with `config`, no kinds and no tasks.
    pub fn new(config: WorkerConfig) -> Self {
        WorkerBuilder {
            config,
            registry: Registry::new(),
            specs: Vec::new(),
        }
    }

    /// The config so far.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Changes the config.
    pub fn configure(mut self, change: impl FnOnce(&mut WorkerConfig)) -> Self {
        change(&mut self.config);
        self
    }

    /// Registers kind `kind`, built from its config by serde.
    pub fn register<T: Task + DeserializeOwned>(mut self, kind: &str) -> Self {
        self.registry.register::<T>(kind);
        self
    }

    /// Registers kind `kind` with a custom constructor (for tasks that also need something
    /// from the worker, such as a client or a directory); its error message becomes the task's
    /// `FAILED` reason. See [`Registry::register_with`].
    pub fn register_with<T, F, E>(mut self, kind: &str, constructor: F) -> Self
    where
        T: Task,
        F: Fn(&serde_json::Value) -> Result<T, E> + Send + Sync + 'static,
        E: std::fmt::Display,
    {
        self.registry.register_with(kind, constructor);
        self
    }

    /// Replaces the registry.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Adds one task to the catalogue (duplicate ids are refused by the build).
    pub fn task(mut self, spec: TaskSpec) -> Self {
        self.specs.push(spec);
        self
    }

    /// Adds every task of `catalogue`.
    pub fn catalogue(mut self, catalogue: &Catalogue) -> Self {
        self.specs.extend(catalogue.iter().cloned());
        self
    }

    /// Validates everything and builds the runtime: supervisor, task table, status board.
    /// Must be called within a tokio runtime only if tasks are then started.
    pub fn build_runtime(self) -> Result<Runtime, BuildError> {
        self.config.validate()?;
        if self.registry.kinds().next().is_none() {
            return Err(BuildError::NoKinds);
        }
        let catalogue = Catalogue::from_specs(self.specs)?;
        for spec in catalogue.iter() {
            if let Err(error) = self.registry.check(spec) {
                // Not fatal: the task becomes FAILED on whichever worker it lands.
                tracing::warn!(%error, "task cannot run on this worker");
            }
        }
        let kinds: BTreeSet<String> = self.registry.kinds().map(str::to_owned).collect();
        let table = TaskTable::new();
        let board = StatusBoard::new(
            self.config.worker_id.clone(),
            self.config.group_id.clone(),
            catalogue.fingerprint(),
            table.clone(),
        );
        let supervisor = Supervisor::with_table(
            Arc::new(self.registry),
            Arc::new(catalogue),
            self.config.supervisor(),
            table,
        );
        Ok(
            Runtime::new(Arc::new(supervisor), board, self.config.worker_id, kinds)
                .with_placement(self.config.capacity, self.config.rack),
        )
    }

    /// Builds the worker, binds its status API, joins the group and runs the worker loop in
    /// the background. Stop it with [`WorkerHandle::shutdown`].
    pub async fn spawn(self) -> Result<WorkerHandle, WorkerError> {
        let config = self.config.clone();
        let runtime = self.build_runtime()?;
        crate::group::spawn(config, runtime).await
    }

    /// [`spawn`](Self::spawn), then runs until SIGTERM or ctrl-c: stops every task, sends
    /// LeaveGroup and returns [`WorkerExit::Shutdown`]; a second signal cuts that short
    /// ([`WorkerExit::Interrupted`]). Returns an error if the member is fenced or fails, after
    /// stopping every task.
    pub async fn run(self) -> Result<WorkerExit, WorkerError> {
        self.spawn().await?.until_signal().await
    }
}
