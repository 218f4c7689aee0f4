//! Examples of kroupier. Each binary in `src/bin/` is a program a user can copy.

pub mod beat;
