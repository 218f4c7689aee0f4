//! The worker's two errors: why a worker could not be built ([`BuildError`]) and why it stopped
//! or could not start ([`WorkerError`]). A leaf: the builder and the group loop both return
//! them, and neither imports the other for it.

use kroupier_coordinator::driver::MemberError;

use crate::catalogue::CatalogueError;
use crate::supervisor::InvalidConfig;
use crate::task::TaskConfigError;

/// Why a worker could not be built. Each is found before the worker joins its group. Its
/// message names the setting or task at fault and what to change; [`kind`](Self::kind) sorts
/// it for code, and [`source`](std::error::Error::source) gives the detail (an
/// [`InvalidConfig`] naming the field, a [`TaskConfigError`] naming the task).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct BuildError(#[from] pub(crate) BuildDetail);

/// What kind of [`BuildError`] happened.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuildErrorKind {
    /// A config value cannot work.
    Config,
    /// A task id is used twice, or breaks the task id rule (1 to 249 ASCII letters, digits,
    /// `.`, `_` and `-`).
    TaskId,
    /// A task cannot run here: its kind is not registered (and not declared
    /// [`foreign`](crate::WorkerBuilder::foreign_kind)), or its config does not fit its kind.
    Task,
    /// No task kind is registered: the worker could run nothing.
    NoKinds,
}

impl BuildError {
    /// What kind of error this is.
    pub fn kind(&self) -> BuildErrorKind {
        match &self.0 {
            BuildDetail::Config(_) => BuildErrorKind::Config,
            BuildDetail::Catalogue(_) => BuildErrorKind::TaskId,
            BuildDetail::Task(_) => BuildErrorKind::Task,
            BuildDetail::NoKinds => BuildErrorKind::NoKinds,
        }
    }
}

impl From<InvalidConfig> for BuildError {
    fn from(error: InvalidConfig) -> Self {
        Self(BuildDetail::Config(error))
    }
}

impl From<CatalogueError> for BuildError {
    fn from(error: CatalogueError) -> Self {
        Self(BuildDetail::Catalogue(error))
    }
}

impl From<TaskConfigError> for BuildError {
    fn from(error: TaskConfigError) -> Self {
        Self(BuildDetail::Task(error))
    }
}

/// The error itself (crate-internal: users see the message, the [`BuildErrorKind`] and the
/// source).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BuildDetail {
    #[error("{0}")]
    Config(#[source] InvalidConfig),
    #[error("{0}")]
    Catalogue(#[source] CatalogueError),
    #[error("{0}")]
    Task(#[source] TaskConfigError),
    #[error("no task kind is registered; call `register` for each kind this worker runs")]
    NoKinds,
}

/// Why a worker stopped with an error, or could not start. Its message says what happened and
/// what to change; [`kind`](Self::kind) sorts it for code, and
/// [`source`](std::error::Error::source) gives the cause (a [`BuildError`], a
/// [`MemberError`], the status API's I/O error) where there is one.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct WorkerError(#[from] pub(crate) WorkerDetail);

/// What kind of [`WorkerError`] happened.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerErrorKind {
    /// The worker's config, tasks or kinds are invalid (the source is the [`BuildError`]).
    Build,
    /// The group member could not be built: its config is invalid (the source is the
    /// [`MemberError`]).
    Member,
    /// The status API could not listen.
    StatusApi,
    /// Another process joined with this worker's `group.instance.id`; every task was stopped.
    Fenced,
    /// The member stopped on an error it cannot recover from; every task was stopped.
    Fatal,
    /// The member's driver ended unexpectedly; every task was stopped. Start the worker again.
    MemberStopped,
    /// The task store could not be opened or read (`tasks.store.enabled`).
    TaskStore,
    /// The worker loop panicked (a bug: report it).
    Panicked,
}

impl WorkerError {
    /// What kind of error this is.
    pub fn kind(&self) -> WorkerErrorKind {
        match &self.0 {
            WorkerDetail::Build(_) => WorkerErrorKind::Build,
            WorkerDetail::Member(_) => WorkerErrorKind::Member,
            WorkerDetail::StatusApi(_) => WorkerErrorKind::StatusApi,
            WorkerDetail::Fenced { .. } => WorkerErrorKind::Fenced,
            WorkerDetail::Fatal(_) => WorkerErrorKind::Fatal,
            WorkerDetail::MemberStopped => WorkerErrorKind::MemberStopped,
            WorkerDetail::TaskStore(_) => WorkerErrorKind::TaskStore,
            WorkerDetail::Panicked(_) => WorkerErrorKind::Panicked,
        }
    }
}

impl From<BuildError> for WorkerError {
    fn from(error: BuildError) -> Self {
        Self(WorkerDetail::Build(error))
    }
}

impl From<MemberError> for WorkerError {
    fn from(error: MemberError) -> Self {
        Self(WorkerDetail::Member(error))
    }
}

/// The error itself, with what its message is made of (crate-internal: users see the message,
/// the [`WorkerErrorKind`] and the source).
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkerDetail {
    #[error("{0}")]
    Build(#[source] BuildError),
    #[error("cannot start the group member: {0}")]
    Member(#[source] MemberError),
    #[error("{0}")]
    StatusApi(#[source] std::io::Error),
    #[error(
        "fenced: another worker joined with group.instance.id {group_instance_id:?}; give every \
         worker its own instance id"
    )]
    Fenced { group_instance_id: Option<String> },
    #[error("the group member stopped: {0}")]
    Fatal(String),
    #[error("the group member's driver ended; every task was stopped; start the worker again")]
    MemberStopped,
    /// The message names the topic and what to change.
    #[error("cannot start with the task store: {0}")]
    TaskStore(String),
    #[error("the worker loop panicked: {0}")]
    Panicked(String),
}
