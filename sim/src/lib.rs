//! `tdx-sim`: the reference 7709 server, its synthetic market and the
//! deterministic simulation harness for `tdx-engine`.
//!
//! This crate currently holds no code: the server, market and harness are
//! built on top of `tdx_engine::proto` in later work (see the project's issues).
