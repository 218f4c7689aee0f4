//! The worker's two errors: why a worker could not be built ([`BuildError`]) and why it stopped
//! or could not start ([`WorkerError`]). A leaf: the builder and the group loop both return
//! them, and neither imports the other for it.

use kroupier_coordinator::driver::MemberError;

use crate::catalogue::CatalogueError;
use crate::supervisor::InvalidConfig;
use crate::task::TaskConfigError;

/// Why a worker could not be built. Each is found before the worker joins its group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A config value cannot work.
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// The catalogue is inconsistent.
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// A task of the catalogue cannot run here: its kind is not registered (and not declared
    /// [`foreign`](crate::WorkerBuilder::foreign_kind)), or its config does not fit its kind.
    #[error(transparent)]
    Task(#[from] TaskConfigError),
    /// No task kind is registered: the worker could run nothing.
    #[error("no task kind is registered; call `register` for each kind this worker runs")]
    NoKinds,
}

/// Why a worker stopped with an error, or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The worker's config, catalogue or registry is invalid.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The group member could not be built (its config is invalid).
    #[error("cannot start the group member: {0}")]
    Member(#[from] MemberError),
    /// The status API could not listen.
    #[error(transparent)]
    StatusApi(std::io::Error),
    /// Another process joined with this worker's `group.instance.id`; every task was stopped.
    #[error(
        "fenced: another worker joined with group.instance.id {group_instance_id:?}; give every \
         worker its own instance id"
    )]
    Fenced {
        /// The instance id.
        group_instance_id: Option<String>,
    },
    /// The member stopped on an error it cannot recover from; every task was stopped.
    #[error("the group member stopped: {0}")]
    Fatal(String),
    /// The member's driver ended unexpectedly; every task was stopped. Start the worker again.
    #[error("the group member's driver ended; every task was stopped; start the worker again")]
    MemberStopped,
    /// The task store could not be opened or read (`tasks.store.enabled`): the message names
    /// the topic and what to change.
    #[error("cannot start with the task store: {0}")]
    TaskStore(String),
    /// The worker loop panicked (a bug: report it).
    #[error("the worker loop panicked: {0}")]
    Panicked(String),
}
