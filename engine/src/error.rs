//! The public API's error type.

use crate::supervisor::{ConfigError, RequestError};

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The configuration was rejected at build time; the message names the field.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The request ended without a reply (busy, cancelled, timed out,
    /// closed, connection lost after its retry, bad reply, pin lost).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The caller's input cannot be encoded (for example too many codes).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A downloaded server file is not what its metadata announced (size or
    /// MD5), or does not parse; the server may have changed it mid-download.
    #[error("server file {file}: {reason}")]
    BadFile {
        /// The file's name.
        file: String,
        /// What did not match.
        reason: String,
    },
}
