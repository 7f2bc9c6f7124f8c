//! The 7709 wire protocol and TDX's MAC protocol, both directions.
//!
//! - [`frame`]: request and response headers and whole-frame encoders;
//! - [`decoder`]: incremental, bounded stream decoders ([`FrameDecoder`] for
//!   replies, [`RequestDecoder`] for a server's requests);
//! - [`zlib`]: strict, bounded inflation;
//! - [`wire`], [`time`], [`text`], [`security`]: value encodings (docs/PROTOCOL.md, Value encodings);
//! - [`commands`]: typed requests and replies, with encoders and parsers on
//!   both sides; [`Request`] and [`Reply`] cover every supported command;
//! - [`mac`]: the MAC commands (prefix 0x1c), listed in [`commands`] too;
//! - [`ex`]: the 7727 extended-market (EX) commands, prefix 0x01.
//!
//! A client round trip, with the reply bytes made by the server-side encoder:
//!
//! ```
//! use tdx_engine::proto::commands::{Bars, Period};
//! use tdx_engine::proto::frame::encode_response;
//! use tdx_engine::proto::{Compression, FrameDecoder, Reply, Request};
//!
//! let request: Request = Bars::new("sz000001".parse()?, Period::Day, 0, 800).into();
//! let mut wire = Vec::new();
//! request.encode_frame(1, &mut wire)?; // what a client writes
//!
//! // What a server answers: an empty page.
//! let mut payload = Vec::new();
//! request.encode_reply(&Reply::Bars(Vec::new()), &mut payload)?;
//! let mut reply_bytes = Vec::new();
//! encode_response(&mut reply_bytes, 1, request.msg_type(), &payload, Compression::IfSmaller(6))?;
//!
//! let mut decoder = FrameDecoder::new();
//! decoder.feed(&reply_bytes)?; // bytes as read from the socket, in any chunks
//! while let Some(frame) = decoder.next_frame()? {
//!     assert_eq!(frame.header.msg_id, 1);
//!     assert_eq!(request.parse_reply(&frame.payload)?, Reply::Bars(Vec::new()));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Nothing here does I/O or reads a clock. Errors are [`ProtoError`]s; bad
//! bytes from the network never panic and never allocate past
//! [`limits`].

pub mod blockfile;
mod command;
pub mod commands;
pub mod decoder;
mod error;
pub mod ex;
pub mod frame;
pub mod limits;
pub mod mac;
mod names;
pub mod security;
pub mod text;
pub mod time;
pub mod wire;
pub mod zlib;

pub use commands::{Command, Reply, Request};
pub use decoder::{FrameDecoder, RequestDecoder, Round, RoundEnd, RoundLimits};
pub use error::ProtoError;
pub use frame::{Compression, Family, Frame, RequestFrame, RequestHeader, ResponseHeader};
pub use names::ParseNameError;
pub use security::{Category, Market, ParseCodeError, Price, PriceScale, SecurityCode};
pub use time::{Date, DateTime, ParseDateError, TimeOfDay, TradeDate};
