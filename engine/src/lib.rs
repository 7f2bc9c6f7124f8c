//! `tdx-engine`: a client engine for the TDX (通达信) 7709 market-data protocol.
//!
//! This crate is layered. [`proto`] is the wire protocol: frame encoding and
//! decoding, value encodings and typed commands, in both directions, so that
//! clients and the reference server share one codec. It does no I/O, reads no
//! clock and allocates only within the documented bounds in [`proto::limits`].
//!
//! Beside the wire, [`files`] reads and writes the TDX desktop client's own
//! files (daily and minute bars, gbbq, blocks, industries, finance history;
//! pure, like [`proto`]), and [`calendar`] is the trading calendar the
//! client builds from the server's index bars (docs/FILES.md).
//!
//! The protocol this code follows is written down in the repository's
//! `docs/PROTOCOL.md`; doc comments name its sections by title
//! ("docs/PROTOCOL.md, Bars (0x052d)").
//!
//! Testing code built on this crate: the `tdx-sim` crate's test kit
//! (`tdx_sim::testkit`) runs it against simulated servers under faults from
//! one seed and replays failures; its guide is `tdx_sim::testkit::guide`
//! (`sim/TESTKIT.md` in the repository), and `examples/` shows the client
//! against an embedded exchange.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod adjust;
pub mod budget;
pub mod calendar;
#[cfg(not(loom))]
pub mod client;
#[cfg(not(loom))]
mod endpoint;
mod error;
pub mod f10;
pub mod files;
mod id_map;
pub mod mutants;
pub mod proto;
#[cfg(not(loom))]
pub mod ranking;
pub mod rng;
// The runtime uses tokio's I/O, which does not exist under `--cfg loom`;
// loom builds check the budgets and the shim only.
#[cfg(not(loom))]
pub mod runtime;
pub mod supervisor;
mod sync;
pub mod table;

#[cfg(not(loom))]
pub use client::{
    ArgInfo, ArgKind, ArgValue, BlockingClient, BlockingF10, Client, ClientBuilder, CommandInfo, Invocation,
    InvocationError, Listed, Page, PageOrder, Paged, Paging, Pinned, Pool, PushStream, Pushes, RankingSaveError,
    BLOCKING_WAKE, CAPITAL_CHANGES_BATCH, CATEGORY_PAGE_ROWS, COMMANDS, COMPOSITES, F10, HISTORY_TRADES_LANES,
    PUBLIC_RATE_CAP_PER_SEC,
};
#[cfg(not(loom))]
pub use endpoint::{EndpointError, EndpointProblem};
pub use error::Error;
pub use proto::{Reply, Request};
#[cfg(not(loom))]
pub use runtime::{EngineDiagnostics, PushFrame, RuntimeFlavor};
// The types a caller matches on or names, at the root.
pub use supervisor::{CloseState, ConfigError, Endpoint, PinId, RequestError, SlotError, SlotId};

#[cfg(any(test, feature = "testing"))]
mod test_support;
