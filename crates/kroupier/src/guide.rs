//! A guide to writing a worker: a task and its config, clients passed in, the fencing token,
//! tests without Kafka, deployment.
//!
//! This page is `docs/guide.md` of the repository; its examples are compiled and run by
//! `cargo test -p kroupier --doc --features testing`.
#![doc = include_str!("../guide.md")]
