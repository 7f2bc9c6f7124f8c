//! Why an F10 gateway call failed, with the same questions
//! [`Error`](crate::Error) answers (`is_timeout`, `is_protocol`, ...).

/// An F10 call's failure. Carried by [`Error::F10`](crate::Error::F10).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum F10Error {
    /// The caller's input is not a request the gateway takes (unknown
    /// entry or parameter, a value outside its choices, a bad code).
    #[error("invalid F10 request: {0}")]
    InvalidRequest(String),
    /// The call's deadline (the client's `timeout`) passed: waiting for the
    /// rate cap or a free call slot, connecting, or awaiting the reply.
    #[error("F10 gateway: timed out")]
    TimedOut,
    /// No connection to the gateway could be opened (or the loopback-only
    /// rule refused its address).
    #[error("F10 gateway {url}: cannot connect: {reason}")]
    Connect {
        /// The address tried.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// The connection failed after it was opened (reset, closed early).
    #[error("F10 gateway {entry}: {reason}")]
    Transport {
        /// The gateway entry asked.
        entry: String,
        /// What went wrong.
        reason: String,
    },
    /// The gateway answered with an HTTP status other than success.
    #[error("F10 gateway {entry}: HTTP status {status}")]
    Status {
        /// The gateway entry asked.
        entry: String,
        /// The status code.
        status: u16,
    },
    /// The gateway answered with a non-zero `ErrorCode`.
    #[error("F10 gateway {entry}: error code {code}: {message}")]
    Gateway {
        /// The gateway entry asked.
        entry: String,
        /// Its `ErrorCode`.
        code: i64,
        /// Its message, when it sent one.
        message: String,
    },
    /// The reply is not the gateway's JSON result-set document (not JSON,
    /// not an object, a result set of the wrong shape), or lacks what a
    /// follow-up request needs.
    #[error("F10 gateway {entry}: malformed reply: {reason}")]
    Protocol {
        /// The gateway entry asked.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The client is closed; no F10 call will succeed again.
    #[error("F10: the client is closed")]
    Closed,
}

impl F10Error {
    /// The call's deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::TimedOut)
    }

    /// The gateway broke its format: a reply that is not its JSON document.
    pub fn is_protocol(&self) -> bool {
        matches!(self, Self::Protocol { .. })
    }

    /// The gateway could not be reached.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Connect { .. })
    }

    /// The client is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }

    /// The gateway refused the request: an HTTP error status or a non-zero `ErrorCode`.
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Status { .. } | Self::Gateway { .. })
    }

    /// The caller's input was rejected before anything was sent.
    pub fn is_invalid_request(&self) -> bool {
        matches!(self, Self::InvalidRequest(_))
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::InvalidRequest(reason.into())
    }

    pub(crate) fn protocol(entry: &str, reason: impl Into<String>) -> Self {
        Self::Protocol { entry: entry.to_owned(), reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_question_picks_its_errors() {
        let all = [
            F10Error::TimedOut,
            F10Error::protocol("e", "x"),
            F10Error::Connect { url: "u".into(), reason: "refused".into() },
            F10Error::Closed,
            F10Error::Status { entry: "e".into(), status: 503 },
            F10Error::invalid("x"),
        ];
        let pick = |f: fn(&F10Error) -> bool| all.iter().map(f).collect::<Vec<_>>();
        assert_eq!(pick(F10Error::is_timeout), [true, false, false, false, false, false]);
        assert_eq!(pick(F10Error::is_protocol), [false, true, false, false, false, false]);
        assert_eq!(pick(F10Error::is_connect), [false, false, true, false, false, false]);
        assert_eq!(pick(F10Error::is_closed), [false, false, false, true, false, false]);
        assert_eq!(pick(F10Error::is_refused), [false, false, false, false, true, false]);
        assert_eq!(pick(F10Error::is_invalid_request), [false, false, false, false, false, true]);
    }
}
