//! # kroupier
//!
//! Share work among many processes with Apache Kafka's group membership protocol.
//!
//! This is the crate users add: it re-exports the coordinator (group membership and leader
//! election), the assignors and the worker runtime.

pub use kroupier_assignor as assignor;
pub use kroupier_coordinator as coordinator;
pub use kroupier_worker as worker;
