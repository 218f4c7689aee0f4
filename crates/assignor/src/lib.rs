//! # kroupier-assignor
//!
//! Pure, synchronous, deterministic assignors: given the members of a group (with what their
//! metadata says they own and can run) and the set of tasks, compute who runs what.
//!
//! This crate does no IO and depends on nothing else of kroupier, so it can be tested and
//! benchmarked on its own. The assignors (`round-robin`, `sticky`, `cooperative`) and the
//! reusable invariant checkers will live here.
