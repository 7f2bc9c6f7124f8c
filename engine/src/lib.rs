//! `tdx-engine`: a client engine for the TDX (通达信) 7709 market-data protocol.
//!
//! This crate is layered. [`proto`] is the wire protocol: frame encoding and
//! decoding, value encodings and typed commands, in both directions, so that
//! clients and the reference server share one codec. It does no I/O, reads no
//! clock and allocates only within the documented bounds in [`proto::limits`].
//!
//! The protocol specification this code follows is `SPEC-7709.md` in the
//! project's shared folder; section numbers in doc comments (`§2.2`) refer to it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod budget;
pub mod proto;
pub mod supervisor;
mod sync;

#[cfg(test)]
mod test_support;
