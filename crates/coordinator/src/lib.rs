//! # kroupier-coordinator
//!
//! A generic member of a Kafka group (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) for any protocol, plus leader election on top of it.
//!
//! It knows nothing of tasks: a protocol plugs in its metadata and its assignment function.
//! The connection layer, the sans-IO membership state machine and its tokio driver will live here.

pub mod connection;
pub mod observer;
pub mod wire;
pub mod membership;
pub mod election;
pub mod driver;
