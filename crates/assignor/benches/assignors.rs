//! Criterion benchmarks of the assignors (filled in below).

fn main() {}
