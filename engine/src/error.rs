//! The public API's error type, with the questions a caller branches on
//! (`is_timeout`, `is_pool_busy`, ...) so that matching on nested variants
//! is never needed for the common cases.

use crate::f10::F10Error;
use crate::supervisor::{ConfigError, RequestError, SlotError};

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
    /// The pages of a bar series did not join: a page shared no bar with
    /// the page before it even when asked again further back (the servers'
    /// copies of the series differ by more than a page, or it changed
    /// between requests). Asking again usually succeeds.
    #[error("the pages of {series} did not join (the servers' copies differ); ask again")]
    SeriesMoved {
        /// The series: code and period.
        series: String,
    },
    /// The engine broke one of its own rules (for example it answered a
    /// request with another command's reply). Not the caller's fault, nor
    /// the server's: please report it.
    #[error("engine bug: {0}")]
    Internal(String),
    /// An F10 gateway call failed (see [`F10Error`]'s own questions).
    #[error(transparent)]
    F10(#[from] F10Error),
}

impl Error {
    /// The call's deadline passed (queued, connecting, or awaiting the reply).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Request(RequestError::TimedOut)) || self.f10().is_some_and(F10Error::is_timeout)
    }

    /// The engine refused the call at once because its admission queue is
    /// full; retry later or raise `max_pending_requests`.
    pub fn is_pool_busy(&self) -> bool {
        matches!(self, Self::Request(RequestError::PoolBusy))
    }

    /// The engine is closing or closed; no call will succeed again.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Request(RequestError::Closed)) || self.f10().is_some_and(F10Error::is_closed)
    }

    /// A server broke the protocol: a reply that did not parse, a byte
    /// stream that broke framing, or a downloaded file that is not what its
    /// metadata said.
    pub fn is_protocol(&self) -> bool {
        matches!(
            self,
            Self::Request(RequestError::BadReply(_) | RequestError::ConnectionLost(SlotError::Protocol(_)))
                | Self::BadFile { .. }
        ) || self.f10().is_some_and(F10Error::is_protocol)
    }

    /// The connection carrying the call could not be opened: the TCP
    /// connect failed or timed out, the handshake failed, or the server
    /// does not serve this client.
    pub fn is_connect(&self) -> bool {
        matches!(
            self,
            Self::Request(RequestError::ConnectionLost(
                SlotError::Connect(_) | SlotError::Handshake(_) | SlotError::Mismatch(_)
            ))
        ) || self.f10().is_some_and(F10Error::is_connect)
    }

    /// The F10 gateway's error, when this is one.
    pub fn f10(&self) -> Option<&F10Error> {
        match self {
            Self::F10(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_question_picks_its_errors() {
        let all = [
            Error::Request(RequestError::TimedOut),
            Error::Request(RequestError::PoolBusy),
            Error::Request(RequestError::Closed),
            Error::Request(RequestError::BadReply("x".into())),
            Error::Request(RequestError::ConnectionLost(SlotError::Connect("refused".into()))),
            Error::Request(RequestError::ConnectionLost(SlotError::PeerClosed)),
            Error::Internal("x".into()),
        ];
        let pick = |f: fn(&Error) -> bool| all.iter().map(f).collect::<Vec<_>>();
        assert_eq!(pick(Error::is_timeout), [true, false, false, false, false, false, false]);
        assert_eq!(pick(Error::is_pool_busy), [false, true, false, false, false, false, false]);
        assert_eq!(pick(Error::is_closed), [false, false, true, false, false, false, false]);
        assert_eq!(pick(Error::is_protocol), [false, false, false, true, false, false, false]);
        assert_eq!(pick(Error::is_connect), [false, false, false, false, true, false, false]);
    }
}
