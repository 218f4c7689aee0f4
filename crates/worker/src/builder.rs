//! [`WorkerBuilder`]: config + assignors + task kinds + catalogue, validated together before the
//! worker joins its group.
//!
//! [`WorkerBuilder::spawn`] and [`WorkerBuilder::run_until`] check everything first, then join
//! the Kafka group (see [`group`](crate::group)): a mistake is a [`BuildError`] before anything
//! is bound or joined.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use kroupier_assignor::{Assignor, Cooperative};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::catalogue::{Catalogue, TaskSpec};
use crate::config::WorkerConfig;
use crate::error::{BuildDetail, BuildError, WorkerError};
use crate::group::{WorkerExit, WorkerHandle};
use crate::runtime::Runtime;
use crate::secrets::{ConfigProvider, ConfigProviders};
use crate::status::{StatusBoard, TaskTable};
use crate::supervisor::{InvalidConfig, Supervisor};
use crate::task::{Kind, Registry, Task, TaskConfigError};

/// Collects what a worker needs, checks it, then joins the group.
///
/// # Examples
///
/// ```
/// use kroupier_assignor::{Cooperative, Sticky};
/// use kroupier_worker::{
///     Kind, Task, TaskContext, TaskError, TaskSpec, WorkerBuilder, WorkerConfig, WorkerErrorKind,
/// };
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Copy { table: String }
///
/// impl Task for Copy {
///     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
///         ctx.cancelled().await;
///         Ok(())
///     }
/// }
///
/// const COPY: Kind<Copy> = Kind::new("copy");
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let builder = WorkerBuilder::new(WorkerConfig::new("orders"))
///     // Offered in this order: a rolling change from sticky to cooperative offers both.
///     .assignor(Cooperative::default())
///     .assignor(Sticky)
///     .register(COPY)
///     // Checked at compile time: the config is a `Copy`.
///     .typed_task(&COPY, "copy-0", Copy { table: "orders".into() })
///     // Checked before joining: a kind nobody registered is an error, not a warning.
///     .task(TaskSpec::new("copy-1", "cpoy", serde_json::json!({"table": "orders"})));
/// let error = builder.spawn().await.unwrap_err();
/// assert_eq!(error.kind(), WorkerErrorKind::Build, "{error}");
/// # }
/// ```
#[derive(Default)]
pub struct WorkerBuilder {
    config: WorkerConfig,
    assignors: Vec<Arc<dyn Assignor>>,
    registry: Registry,
    /// The providers of secret references: `env`, `file`, and those registered.
    providers: ConfigProviders,
    foreign: BTreeSet<String>,
    specs: Vec<TaskSpec>,
    /// The first typed task whose config did not serialize, reported by the build.
    spec_error: Option<TaskConfigError>,
}

impl fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let assignors: Vec<&str> = self.assignors.iter().map(|a| a.name()).collect();
        f.debug_struct("WorkerBuilder")
            .field("config", &self.config)
            .field("assignors", &assignors)
            .field("registry", &self.registry)
            .field("providers", &self.providers)
            .field("foreign", &self.foreign)
            .field("specs", &self.specs)
            .finish_non_exhaustive()
    }
}

impl WorkerBuilder {
    /// A builder with `config`, no kinds and no tasks, offering the default assignor
    /// ([`Cooperative`] with its defaults) until [`assignor`](Self::assignor) is called.
    pub fn new(config: WorkerConfig) -> Self {
        WorkerBuilder {
            config,
            ..Self::default()
        }
    }

    /// Offers `assignor` to the group, after those offered before (most preferred first).
    ///
    /// Default, when none is given: [`Cooperative::default()`] (Kafka Connect's incremental
    /// cooperative rebalancing, lost tasks moved at once). Any value implementing
    /// [`Assignor`] plugs in, the application's own included; its
    /// [`name`](Assignor::name) is the protocol name the group votes on, so offer the old and
    /// the new assignor during a rolling change of assignor. Every worker of the group must
    /// compute the same plan from the same input.
    pub fn assignor(mut self, assignor: impl Assignor + 'static) -> Self {
        self.assignors.push(Arc::new(assignor));
        self
    }

    /// Replaces the assignors offered with `assignors`, most preferred first (for a list
    /// built at run time, e.g. from names with [`kroupier_assignor::by_name`]).
    pub fn assignors(mut self, assignors: impl IntoIterator<Item = Arc<dyn Assignor>>) -> Self {
        self.assignors = assignors.into_iter().collect();
        self
    }

    /// Registers `kind`, whose tasks are built from their config by serde: the task struct is
    /// its own config. Takes a [`Kind`] constant (or a name: `register::<Copy>("copy")`).
    pub fn register<T: Task + DeserializeOwned>(mut self, kind: impl Into<Kind<T>>) -> Self {
        let kind = kind.into();
        self.registry.register::<T>(kind.name());
        self.registry
            .set_exactly_once(kind.name(), kind.is_exactly_once());
        self
    }

    /// Registers `kind` with a constructor from its typed config `C` (for tasks that also need
    /// something from the worker, such as a client or a directory). A config that does not
    /// deserialize into `C`, or the constructor's error, becomes the task's `FAILED` reason —
    /// or, for the tasks given to this builder, a [`BuildError`] of kind
    /// [`Task`](crate::BuildErrorKind::Task).
    pub fn register_with<C, T, F, E>(mut self, kind: impl Into<Kind<C>>, constructor: F) -> Self
    where
        C: DeserializeOwned,
        T: Task,
        F: Fn(C) -> Result<T, E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        let kind = kind.into();
        self.registry
            .register_with(kind.name(), move |config: &serde_json::Value| {
                let config = C::deserialize(config).map_err(|e| e.to_string())?;
                constructor(config).map_err(|e| e.to_string())
            });
        self.registry
            .set_exactly_once(kind.name(), kind.is_exactly_once());
        self
    }

    /// Replaces the registry (kinds registered by name, with constructors from JSON).
    #[cfg(test)]
    pub(crate) fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Registers `provider` as `name`, for the secret references `${name:KEY}` and
    /// `${name:PATH:KEY}` in task configs (see [`ConfigProvider`]); replaces a provider of that
    /// name, a built-in one (`env`, `file`) too.
    pub fn config_provider(
        mut self,
        name: impl Into<String>,
        provider: impl ConfigProvider,
    ) -> Self {
        self.providers.insert(name, Arc::new(provider));
        self
    }

    /// Declares that the catalogue's tasks of `kind` run on other workers of the group, which
    /// register it, and never here (a group whose workers run different kinds). Without it, a
    /// catalogue task of a kind this worker does not register is a [`BuildError`] (kind `Task`): most
    /// often a misspelt kind, which would otherwise show only once the task is assigned.
    pub fn foreign_kind(mut self, kind: impl Into<String>) -> Self {
        self.foreign.insert(kind.into());
        self
    }

    /// Adds one task to the catalogue (duplicate ids are refused by the build).
    pub fn task(mut self, spec: TaskSpec) -> Self {
        self.specs.push(spec);
        self
    }

    /// Adds task `id` of `kind` with `config`, typed: the config must be the kind's type. See
    /// [`TaskSpec::typed`]; a config that does not serialize fails the build.
    pub fn typed_task<C: Serialize>(
        mut self,
        kind: &Kind<C>,
        id: impl Into<String>,
        config: C,
    ) -> Self {
        match TaskSpec::typed(kind, id, &config) {
            Ok(spec) => self.specs.push(spec),
            Err(error) => {
                self.spec_error.get_or_insert(error);
            }
        }
        self
    }

    /// Validates everything and builds the runtime alone: supervisor, task table, status
    /// board (the crate's tests drive it without a group).
    ///
    /// # Errors
    /// The first [`BuildError`]: an invalid config, no kind registered, a catalogue with
    /// duplicate or empty ids, or a task whose kind is unknown here or whose config does not
    /// fit its kind.
    #[cfg(test)]
    pub(crate) fn build_runtime(self) -> Result<Runtime, BuildError> {
        self.build().map(|built| built.runtime)
    }

    /// The runtime, the config and the assignors to offer, all checked.
    fn build(self) -> Result<Built, BuildError> {
        self.config.validate()?;
        let assignors = if self.assignors.is_empty() {
            vec![Arc::new(Cooperative::default()) as Arc<dyn Assignor>]
        } else {
            self.assignors
        };
        check_assignors(&assignors)?;
        if self.registry.kinds().next().is_none() {
            return Err(BuildDetail::NoKinds.into());
        }
        if let Some(error) = self.spec_error {
            return Err(error.into());
        }
        let catalogue = Catalogue::from_specs(self.specs)?;
        for spec in catalogue.iter() {
            if self.foreign.contains(&spec.kind) && !self.registry.contains(&spec.kind) {
                continue;
            }
            self.registry.check(spec)?;
        }
        let kinds: BTreeSet<String> = self.registry.kinds().map(str::to_owned).collect();
        let config = self.config;
        let table = TaskTable::new();
        let board = StatusBoard::new(
            config.worker_id.clone(),
            config.member.membership.group_id.clone(),
            catalogue.fingerprint(),
            table.clone(),
        );
        let supervisor = Supervisor::with_table(
            Arc::new(self.registry),
            Arc::new(catalogue),
            config.supervisor(),
            table,
        )
        .with_providers(self.providers);
        let runtime = Runtime::new(Arc::new(supervisor), board, config.worker_id.clone(), kinds)
            .with_placement(config.capacity, config.rack.clone());
        Ok(Built {
            runtime,
            config,
            assignors,
        })
    }

    /// Builds the worker, binds its status API, joins the group and runs the worker loop in
    /// the background. Stop it with [`WorkerHandle::shutdown`] or
    /// [`WorkerHandle::run_until`].
    ///
    /// # Errors
    /// A [`BuildError`] (before anything is bound or joined), or the status API's bind error.
    pub async fn spawn(self) -> Result<WorkerHandle, WorkerError> {
        let built = self.build()?;
        crate::group::spawn(built.config, built.runtime, built.assignors, None).await
    }

    /// [`spawn`](Self::spawn), then [`WorkerHandle::run_until`]`(shutdown)`: runs until
    /// `shutdown` completes, then stops every task, sends LeaveGroup and returns
    /// [`WorkerExit::Shutdown`]. The library installs no signal handler: pass the signal
    /// future of your choice (see [`shutdown`](crate::shutdown) for the two-signal rule).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn); or the error that ended the member (fenced, fatal), after
    /// stopping every task.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<WorkerExit, WorkerError> {
        self.spawn().await?.run_until(shutdown).await
    }
}

/// What a successful build hands to the group driver.
struct Built {
    runtime: Runtime,
    config: WorkerConfig,
    assignors: Vec<Arc<dyn Assignor>>,
}

/// At least one assignor, each with a unique, non-empty name (the protocol names).
fn check_assignors(assignors: &[Arc<dyn Assignor>]) -> Result<(), InvalidConfig> {
    for (i, assignor) in assignors.iter().enumerate() {
        let name = assignor.name();
        if name.is_empty() {
            return Err(InvalidConfig::new(
                "assignors",
                "an assignor has an empty name; name it (the name is its protocol name)",
            ));
        }
        if assignors[..i].iter().any(|a| a.name() == name) {
            return Err(InvalidConfig::new(
                "assignors",
                format!("`{name}` is offered twice; offer each assignor once"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
