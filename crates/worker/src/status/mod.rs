//! Status of this worker and its tasks: the model, the board the runtime writes, the HTTP API.

pub mod board;
pub mod http;
pub(crate) mod metrics;
pub mod model;

pub use board::{GroupView, StatusBoard, TaskView, WorkerStatus};
pub use model::{TaskState, TaskStatus, TaskTable};
