//! Status of this worker and its tasks.

pub mod model;

pub use model::{TaskState, TaskStatus, TaskTable};
