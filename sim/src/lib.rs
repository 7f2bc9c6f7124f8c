//! `tdx-sim`: the reference 7709 server, its synthetic market, and the
//! deterministic simulation harness for `tdx-engine`.
//!
//! - [`market`]: a seeded, pure synthetic market (SZ, SH, BJ);
//! - [`market_data`]: a market and what is built from it once, which the
//!   servers serve;
//! - [`boards`]: its boards and the board files it publishes;
//! - [`company`]: its company-info (F10) files;
//! - [`limits`]: its special-security price-limit table;
//! - [`delisted`]: its delisted securities' daily bars;
//! - [`exact_adjust`]: adjustment in exact rationals, apart from the engine's;
//! - [`f10`]: the reference F10 gateway (HTTP, port 7615's entries);
//! - [`quote`]: today's quote of a listing, for 7709 and MAC alike;
//! - [`money_flow`]: money flow derived from the ticks (0x0ffc);
//! - [`mac`]: the MAC protocol's answers, from the same market;
//! - [`ex`]: the extended market (7727, EX): futures, Hong Kong and US
//!   stocks and fund NAVs, and its listener;
//! - [`responder`]: the typed reply to every request;
//! - [`server`]: [`ReferenceServer`], generic over tokio and turmoil streams;
//! - [`faults`]: live fault injection;
//! - [`hostile`]: the text a hostile server sends (escapes, control
//!   characters, a file name out of any directory);
//! - [`truth`]: what a seed's server holds, as JSON;
//! - [`simulation`]: seeded turmoil worlds of servers, faults and the engine;
//! - [`soak`]: the engine for a long while against faulty servers, checked
//!   against the truth, its memory, descriptors and threads sampled;
//! - [`testkit`]: the same, for your code: [`testkit::SimExchange`] runs it
//!   under faults from one seed, [`testkit::LocalExchange`] serves it on
//!   loopback, [`truth::Truth`] says what the answers are.
//!
//! Testing your own code with the kit (dev-dependency setup, a fault test,
//! a sharded seed sweep in CI, replaying a failure): `sim/TESTKIT.md` in the
//! repository, rendered here as [`testkit::guide`].
//!
//! Servers listen where they are told; the binary binds 127.0.0.1 only.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod boards;
pub mod company;
pub mod delisted;
pub mod ex;
pub mod exact_adjust;
pub mod f10;
pub mod faults;
pub mod hostile;
pub mod limits;
pub mod mac;
pub mod market;
pub mod market_data;
pub mod money_flow;
pub mod quote;
pub mod responder;
pub mod rng;
pub mod server;
pub mod simulation;
pub mod soak;
pub mod tdx_files;
pub mod testkit;
pub mod truth;

pub use faults::{FaultHandle, FaultKind, Faults, PushFlood};
pub use market::Market;
pub use market_data::MarketData;
pub use server::{Listener, ReferenceServer, ServerStats};
