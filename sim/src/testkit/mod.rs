//! A test kit for code built on `tdx-engine`: run it against the simulated
//! exchange, under faults, from one seed, and replay any failure.
//!
//! - [`SimExchange`]: reference servers inside turmoil (simulated network
//!   and time). [`SimExchangeBuilder::run`] hands your async code a
//!   [`Client`](tdx_engine::Client) wired to them, applies the faults you
//!   asked for (per server, over time, or a swarm drawn from the seed) and
//!   returns what your code returned plus a [`Report`]; the same seed gives
//!   the same run, trace hash included.
//! - [`LocalExchange`]: the same servers on 127.0.0.1 in this process, for
//!   ordinary `#[tokio::test]`s and examples.
//! - [`Truth`]: what every server answers, in process (the answers of
//!   `tdx-sim truth`).
//! - Failures print the seed and a one-line replay command;
//!   `TDX_SIM_SEED=N` replays one seed, `TDX_SIM_START`/`TDX_SIM_SEEDS`
//!   move a sweep, `TDX_SIM_SHARD=I/N` runs one of N blocks of it, and a
//!   [`Regressions`] file keeps every seed that ever failed.
//!
//! How to set it up in your crate, a fault test, a sharded seed sweep in
//! CI and replaying a failure: [`guide`] (`sim/TESTKIT.md` in the
//! repository).
//!
//! ```
//! use std::time::Duration;
//! use tdx_engine::proto::commands::{Adjust, Period};
//! use tdx_sim::testkit::{Fault, FaultKind, SimExchange};
//!
//! let run = SimExchange::builder()
//!     .seed(7)
//!     .servers(2)
//!     .fault(0, FaultKind::Garbage { per_mille: 200 })
//!     .fault_during(1, Duration::from_millis(200)..Duration::from_secs(2), Fault::Partition)
//!     .run(|client| async move {
//!         let code = "sz000001".parse().unwrap();
//!         // A caller that retries: garbage and a partition cost attempts, not data.
//!         for _ in 0..20 {
//!             if let Ok(bars) = client.bars(code, Period::Day, Adjust::None, tdx_engine::Page::new(0, 100)).await {
//!                 return Ok(bars.len());
//!             }
//!         }
//!         Err("no bars after 20 tries")
//!     });
//! assert_eq!(run.value, 100);
//! println!("trace hash {:016x}, faults applied: {}", run.report.trace_hash, run.report.faults.len());
//! ```

#[doc = include_str!("../../TESTKIT.md")]
pub mod guide {}

mod local;
mod replay;
mod sim;

pub use local::{LocalExchange, LocalExchangeBuilder};
pub use replay::{parse_shard, replay_command, shard_block, Regressions, SEEDS_ENV, SEED_ENV, SHARD_ENV, START_ENV};
pub use sim::{current_seed, note, Report, SimExchange, SimExchangeBuilder, SimFailure, SimRun, Verdict};

pub use crate::faults::{FaultKind, Faults, PushFlood};
pub use crate::simulation::{Fault, FaultEvent, Scheduled, Window};
pub use crate::truth::Truth;
