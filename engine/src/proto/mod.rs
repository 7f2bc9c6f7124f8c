//! The 7709 wire protocol, both directions.
//!
//! - [`frame`]: request and response headers and whole-frame encoders;
//! - [`decoder`]: incremental, bounded stream decoders ([`FrameDecoder`] for
//!   replies, [`RequestDecoder`] for a server's requests);
//! - [`zlib`]: strict, bounded inflation;
//! - [`wire`], [`time`], [`text`], [`security`]: value encodings (§3);
//! - [`commands`]: typed requests and replies, with encoders and parsers on
//!   both sides; [`Request`] and [`Reply`] cover every supported command.
//!
//! Nothing here does I/O or reads a clock. Errors are [`ProtoError`]s; bad
//! bytes from the network never panic and never allocate past
//! [`limits`].

pub mod commands;
pub mod decoder;
mod error;
pub mod frame;
pub mod limits;
pub mod security;
pub mod text;
pub mod time;
pub mod wire;
pub mod zlib;

pub use commands::{Command, Reply, Request};
pub use decoder::{FrameDecoder, RequestDecoder, Round, RoundEnd, RoundLimits};
pub use error::ProtoError;
pub use frame::{Compression, Frame, RequestFrame, RequestHeader, ResponseHeader};
pub use security::{Category, Market, ParseCodeError, Price, PriceScale, SecurityCode};
pub use time::{Date, DateTime, TimeOfDay};
