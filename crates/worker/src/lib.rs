//! # kroupier-worker
//!
//! The worker runtime: user tasks defined as Rust structs, started and stopped under supervision
//! as the group's assignment changes, with a status API. Built on `kroupier-coordinator` and
//! `kroupier-assignor`.
