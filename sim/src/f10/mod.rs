//! The reference F10 gateway (TDX's TQLEX service, port 7615): every entry
//! the engine's F10 client asks, answered from the seeded market.
//!
//! - [`data`]: what each entry answers ([`answer`]);
//! - [`gateway`]: [`F10Gateway`], the HTTP server, with its faults;
//! - [`truth`]: what `tdx-sim truth f10` prints for an entry.

pub mod data;
pub mod gateway;
pub mod truth;

pub use data::{answer, GatewayReply, ResultSet};
pub use gateway::{F10Gateway, GatewayFaultHandle, GatewayFaults, GatewayStats};
pub use truth::{f10_truth, F10Words};
