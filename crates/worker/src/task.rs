//! Tasks: the user's unit of work, and the [`Registry`] of task kinds a worker can run.
//!
//! A task is a Rust struct that implements [`Task`]. Its config comes from the task's entry in the
//! [`Catalogue`](crate::Catalogue) (a `serde_json::Value`), so the struct usually derives
//! `serde::Deserialize`. A worker registers each kind it can run under a name; the catalogue says
//! which instances of which kind exist.
//!
//! Every (re)start of a task builds a fresh value from its config, so nothing leaks from a failed
//! attempt into the next one.
//!
//! # Examples
//!
//! ```
//! use kroupier_worker::{Registry, Task, TaskContext, TaskError};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Ticker {
//!     every_ms: u64,
//! }
//!
//! impl Task for Ticker {
//!     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
//!         loop {
//!             tokio::select! {
//!                 _ = ctx.cancelled() => return Ok(()),
//!                 _ = tokio::time::sleep(std::time::Duration::from_millis(self.every_ms)) => {}
//!             }
//!             // Before each side effect: fails once this worker may have lost the task.
//!             let token = ctx.check_lease()?;
//!             println!("{} tick at generation {}", ctx.task_id(), token.generation_id);
//!         }
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! registry.register::<Ticker>("ticker");
//! assert!(registry.contains("ticker"));
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::catalogue::TaskSpec;
use crate::context::TaskContext;
use crate::exactly_once::ExactlyOnceError;
use crate::lease::LeaseError;

/// A unit of work that the group assigns to exactly one worker at a time.
///
/// `run` should loop until [`TaskContext::cancelled`] fires (the task was revoked or the worker
/// is shutting down) and return `Ok(())` then. Before every side effect it calls
/// [`TaskContext::check_lease`]; when that fails, return the error (`?` converts it), which stops
/// the task without counting as a failure.
///
/// Returning [`TaskError::Failed`] or panicking makes the supervisor restart the task with
/// exponential backoff, and mark it `FAILED` after the configured number of attempts.
/// Returning `Ok(())` without having been cancelled marks the task `COMPLETED`.
pub trait Task: Send + 'static {
    /// Runs the task until it is cancelled, finishes, or fails.
    fn run(self, ctx: TaskContext) -> impl Future<Output = Result<(), TaskError>> + Send;
}

/// A task kind: its name, and in its type the config its tasks take.
///
/// Declare each kind once, as a constant, and use it both to register the kind and to add its
/// tasks: the name cannot be misspelt between the two, and a task's config is checked against
/// the kind's config type at compile time.
///
/// `C` is what the catalogue's JSON config deserializes into: the task struct itself for
/// [`WorkerBuilder::register`](crate::WorkerBuilder::register), or a separate config struct
/// for [`WorkerBuilder::register_with`](crate::WorkerBuilder::register_with).
///
/// # Examples
///
/// ```
/// use kroupier_worker::{Kind, Task, TaskContext, TaskError, WorkerBuilder, WorkerConfig};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Beat { every_ms: u64 }
///
/// impl Task for Beat {
///     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
///         ctx.cancelled().await;
///         Ok(())
///     }
/// }
///
/// const BEAT: Kind<Beat> = Kind::new("beat");
///
/// // The config's type is checked at compile time: `typed_task` takes a `Beat`.
/// let builder = WorkerBuilder::new(WorkerConfig::new("beats"))
///     .register(BEAT)
///     .typed_task(&BEAT, "beat-0", Beat { every_ms: 100 });
/// ```
pub struct Kind<C> {
    name: Cow<'static, str>,
    exactly_once: bool,
    config: PhantomData<fn() -> C>,
}

impl<C> Kind<C> {
    /// The kind called `name` (sent in each worker's metadata, so keep it stable).
    pub const fn new(name: &'static str) -> Self {
        Kind {
            name: Cow::Borrowed(name),
            exactly_once: false,
            config: PhantomData,
        }
    }

    /// A kind whose name is known only at run time.
    pub fn named(name: impl Into<String>) -> Self {
        Kind {
            name: Cow::Owned(name.into()),
            exactly_once: false,
            config: PhantomData,
        }
    }

    /// The same kind, declared exactly-once: before each run of one of its tasks, the worker
    /// starts the task's transactional producer, which fences every older owner's (see
    /// [`ExactlyOnce`](crate::ExactlyOnce)), and the run gets it from
    /// [`TaskContext::exactly_once`](crate::TaskContext::exactly_once). A run whose fencing
    /// fails (a broker without transactions, a missing ACL) fails before it starts.
    pub const fn exactly_once(mut self) -> Self {
        self.exactly_once = true;
        self
    }

    /// The kind's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the kind is declared exactly-once.
    pub(crate) fn is_exactly_once(&self) -> bool {
        self.exactly_once
    }
}

impl<C> Clone for Kind<C> {
    fn clone(&self) -> Self {
        Kind {
            name: self.name.clone(),
            exactly_once: self.exactly_once,
            config: PhantomData,
        }
    }
}

impl<C> fmt::Debug for Kind<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Kind").field(&self.name).finish()
    }
}

impl<C> From<&'static str> for Kind<C> {
    fn from(name: &'static str) -> Self {
        Kind::new(name)
    }
}

/// Why a task's `run` returned early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The lease check failed: the task stopped its side effects because this worker may no
    /// longer own it. Not a failure; the task is not restarted until the group assigns it again.
    #[error("task stopped because its lease is no longer valid: {0}")]
    Lease(#[from] LeaseError),
    /// The task failed; the supervisor restarts it with backoff, then marks it `FAILED`.
    #[error("{0}")]
    Failed(Box<dyn StdError + Send + Sync>),
}

impl TaskError {
    /// Wraps any error (or a `&str`/`String` message) as a task failure.
    pub fn failed(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        TaskError::Failed(error.into())
    }
}

impl From<std::io::Error> for TaskError {
    fn from(error: std::io::Error) -> Self {
        TaskError::failed(error)
    }
}

impl From<serde_json::Error> for TaskError {
    fn from(error: serde_json::Error) -> Self {
        TaskError::failed(error)
    }
}

// `TaskSpec::typed` lives beside `Kind`, whose name and config type it checks: the catalogue
// (task instances) then needs nothing of the task kinds, and the two do not import each other.
impl TaskSpec {
    /// A task of `kind` with `config`, weight 1. The config's type is the kind's, so a task
    /// cannot name a kind it does not match; the kind's name is taken from `kind`.
    ///
    /// # Errors
    /// A [`TaskConfigError`] of kind `InvalidConfig` if `config` does not serialize to JSON (a map with
    /// non-string keys, or a `Serialize` impl that fails).
    pub fn typed<C: Serialize>(
        kind: &Kind<C>,
        id: impl Into<String>,
        config: &C,
    ) -> Result<Self, TaskConfigError> {
        let id = id.into();
        match serde_json::to_value(config) {
            Ok(config) => Ok(TaskSpec::new(id, kind.name(), config)),
            Err(error) => Err(TaskConfigDetail::InvalidConfig {
                task_id: id,
                kind: kind.name().to_owned(),
                message: error.to_string(),
            }
            .into()),
        }
    }
}

/// Why a task from the catalogue cannot be built on this worker. The task becomes `FAILED` with
/// this message; the worker itself keeps running. [`kind`](Self::kind) sorts it for code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct TaskConfigError(pub(crate) TaskConfigDetail);

/// What kind of [`TaskConfigError`] happened, for code that acts on it (the message says the
/// rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskConfigErrorKind {
    /// The task's config does not deserialize into its kind's struct.
    InvalidConfig,
    /// No constructor is registered for the task's kind on this worker.
    UnknownKind,
    /// The task id is not in this worker's catalogue.
    NotInCatalogue,
}

impl TaskConfigError {
    /// What kind of error this is.
    pub fn kind(&self) -> TaskConfigErrorKind {
        match &self.0 {
            TaskConfigDetail::InvalidConfig { .. } => TaskConfigErrorKind::InvalidConfig,
            TaskConfigDetail::UnknownKind { .. } => TaskConfigErrorKind::UnknownKind,
            TaskConfigDetail::NotInCatalogue { .. } => TaskConfigErrorKind::NotInCatalogue,
        }
    }

    /// The task that cannot be built.
    pub fn task_id(&self) -> &str {
        match &self.0 {
            TaskConfigDetail::InvalidConfig { task_id, .. }
            | TaskConfigDetail::UnknownKind { task_id, .. }
            | TaskConfigDetail::NotInCatalogue { task_id } => task_id,
        }
    }
}

impl From<TaskConfigDetail> for TaskConfigError {
    fn from(detail: TaskConfigDetail) -> Self {
        Self(detail)
    }
}

/// The error itself, with the fields its message is made of (crate-internal: the registry and
/// the supervisor construct it; users see the message and the [`TaskConfigErrorKind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskConfigDetail {
    /// The task's config does not deserialize into its kind's struct.
    #[error(
        "task `{task_id}` of kind `{kind}`: invalid config: {message}; fix the task's config in \
         the catalogue, then request a restart"
    )]
    InvalidConfig {
        /// The task instance.
        task_id: String,
        /// Its kind.
        kind: String,
        /// The deserializer's message (serde's, for `Registry::register`).
        message: String,
    },
    /// No constructor is registered for the task's kind on this worker.
    #[error(
        "task `{task_id}`: kind `{kind}` is not registered on this worker; register the kind or \
         run a worker version that knows it"
    )]
    UnknownKind {
        /// The task instance.
        task_id: String,
        /// The kind nobody registered.
        kind: String,
    },
    /// The task id is not in this worker's catalogue.
    #[error(
        "task `{task_id}` is not in this worker's catalogue; the workers' catalogues differ \
         (rolling upgrade?): give every worker the same catalogue"
    )]
    NotInCatalogue {
        /// The unknown task id.
        task_id: String,
    },
}

/// A boxed, type-erased future of one task run.
pub(crate) type RunFuture = Pin<Box<dyn Future<Output = Result<(), TaskError>> + Send>>;

/// A task value whose concrete type has been erased.
pub(crate) trait ErasedTask: Send {
    /// Starts the run.
    fn run_boxed(self: Box<Self>, ctx: TaskContext) -> RunFuture;
}

impl<T: Task> ErasedTask for T {
    fn run_boxed(self: Box<Self>, ctx: TaskContext) -> RunFuture {
        Box::pin((*self).run(ctx))
    }
}

type Constructor =
    Arc<dyn Fn(&serde_json::Value) -> Result<Box<dyn ErasedTask>, String> + Send + Sync>;

/// The task kinds this worker can run, each with a constructor from its JSON config.
///
/// The kinds a worker registered travel in its group metadata, so the assignor gives a task
/// only to workers that know its kind.
#[derive(Clone, Default)]
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub))]
pub struct Registry {
    kinds: BTreeMap<String, Constructor>,
    /// The kinds declared exactly-once ([`Kind::exactly_once`]).
    exactly_once: std::collections::BTreeSet<String>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("kinds", &self.kinds.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub, dead_code))]
impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers kind `kind`, built by deserializing the task's config into `T` with serde.
    /// Registering a kind again replaces its constructor.
    pub fn register<T: Task + DeserializeOwned>(&mut self, kind: impl Into<String>) -> &mut Self {
        self.register_with(kind, |config: &serde_json::Value| T::deserialize(config))
    }

    /// Registers kind `kind` with a custom constructor; its error message becomes the task's
    /// `FAILED` reason.
    pub fn register_with<T, F, E>(&mut self, kind: impl Into<String>, constructor: F) -> &mut Self
    where
        T: Task,
        F: Fn(&serde_json::Value) -> Result<T, E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        let constructor: Constructor = Arc::new(move |config: &serde_json::Value| {
            constructor(config)
                .map(|task| Box::new(task) as Box<dyn ErasedTask>)
                .map_err(|e| e.to_string())
        });
        self.kinds.insert(kind.into(), constructor);
        self
    }

    /// Marks `kind` exactly-once, or not (see [`Kind::exactly_once`]).
    pub(crate) fn set_exactly_once(&mut self, kind: &str, exactly_once: bool) {
        if exactly_once {
            self.exactly_once.insert(kind.to_owned());
        } else {
            self.exactly_once.remove(kind);
        }
    }

    /// Whether the worker fences `kind`'s tasks before each run.
    pub(crate) fn is_exactly_once(&self, kind: &str) -> bool {
        self.exactly_once.contains(kind)
    }

    /// Whether `kind` is registered.
    pub fn contains(&self, kind: &str) -> bool {
        self.kinds.contains_key(kind)
    }

    /// The registered kinds, sorted.
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }

    /// Checks that `spec` can be built on this worker (its kind is known and its config
    /// deserializes), without running it. Secret references (`${env:NAME}`, see
    /// [`ConfigProvider`](crate::ConfigProvider)) are not resolved: their values exist only on
    /// the worker that starts the task, so the check sees the references as written.
    pub fn check(&self, spec: &TaskSpec) -> Result<(), TaskConfigError> {
        self.build(spec).map(drop)
    }

    /// Builds a task value from its spec.
    pub(crate) fn build(&self, spec: &TaskSpec) -> Result<Box<dyn ErasedTask>, TaskConfigError> {
        self.build_config(spec, &spec.config)
    }

    /// Builds a task value of `spec`'s kind from `config` (its config with its secret
    /// references resolved).
    pub(crate) fn build_config(
        &self,
        spec: &TaskSpec,
        config: &serde_json::Value,
    ) -> Result<Box<dyn ErasedTask>, TaskConfigError> {
        let constructor =
            self.kinds
                .get(&spec.kind)
                .ok_or_else(|| TaskConfigDetail::UnknownKind {
                    task_id: spec.id.clone(),
                    kind: spec.kind.clone(),
                })?;
        constructor(config).map_err(|message| {
            TaskConfigDetail::InvalidConfig {
                task_id: spec.id.clone(),
                kind: spec.kind.clone(),
                message,
            }
            .into()
        })
    }
}

impl From<ExactlyOnceError> for TaskError {
    /// A lost lease stops the task without counting as a failure; anything else (a fencing
    /// included) is a failure, restarted with backoff while the task stays assigned here.
    fn from(error: ExactlyOnceError) -> Self {
        match error {
            ExactlyOnceError::Lease(lease) => TaskError::Lease(lease),
            other => TaskError::failed(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Copy {
        #[allow(dead_code)]
        source: String,
    }

    impl Task for Copy {
        async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
            Ok(())
        }
    }

    fn registry() -> Registry {
        let mut registry = Registry::new();
        registry.register::<Copy>("copy");
        registry
    }

    #[test]
    fn valid_config_builds() {
        let spec = TaskSpec::new("t1", "copy", json!({"source": "a"}));
        assert_eq!(registry().check(&spec), Ok(()));
    }

    #[test]
    fn invalid_config_reports_serde_message() {
        let spec = TaskSpec::new("t1", "copy", json!({"source": 5}));
        let err = registry().check(&spec).unwrap_err();
        let TaskConfigDetail::InvalidConfig { message, .. } = &err.0 else {
            panic!("unexpected error {err:?}");
        };
        assert_eq!(message, "invalid type: integer `5`, expected a string");
        assert!(err.to_string().contains("fix the task's config"));
    }

    #[test]
    fn missing_field_reports_serde_message() {
        let spec = TaskSpec::new("t1", "copy", json!({}));
        let err = registry().check(&spec).unwrap_err();
        assert!(err.to_string().contains("missing field `source`"), "{err}");
    }

    #[test]
    fn unknown_kind_is_an_error() {
        let spec = TaskSpec::new("t1", "paste", json!({}));
        assert_eq!(
            registry().check(&spec),
            Err(TaskConfigError::from(TaskConfigDetail::UnknownKind {
                task_id: "t1".into(),
                kind: "paste".into()
            }))
        );
    }

    #[test]
    fn kinds_are_sorted() {
        let mut registry = registry();
        registry.register::<Copy>("archive");
        assert_eq!(registry.kinds().collect::<Vec<_>>(), ["archive", "copy"]);
    }
}
