//! The task journals that `quickstart --journal-dir DIR` writes, and the checks over them:
//! `kroupier_worker::journal`, the one reader and checker the demo and the examples share, so
//! that the tests judge the journals by the same rules.

pub use kroupier_worker::journal::*;
