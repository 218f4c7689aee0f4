//! # kroupier-embedded
//!
//! An in-process group coordinator that speaks Kafka's wire protocol, so that kroupier workers
//! run with zero setup on one machine (the demo, fast fault-injecting tests). Real Apache Kafka
//! stays the engine for multi-machine deployments.
//!
//! - [`group`]: Kafka's classic group state machine, sans-IO, on virtual time.

pub mod group;
