//! Test-only: the drain-and-check loop, the seeded model world built on it,
//! and the model tests that run that world over many seeds.

mod drive;
#[cfg_attr(not(test), allow(dead_code))]
mod harness;
#[cfg(test)]
mod model_tests;

pub use drive::Drive;
pub use harness::run_seed;
