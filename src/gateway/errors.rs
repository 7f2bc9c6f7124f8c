//! Every failure the gateway answers: an HTTP status and a JSON body
//! `{"error": {"kind", "message", "parameter"?}}`, where `kind` is the
//! engine's error kind (`PoolBusy`, `TimedOut`, ...) or the gateway's own
//! (`BadParameter`, `Unauthorized`, ...).

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tdx_engine::f10::F10Error;
use tdx_engine::{Error, RequestError};

use crate::calls::ParamError;

/// How long a client is told to wait after `PoolBusy` or a rate limit.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// The parameter at fault, for `BadParameter`.
    pub parameter: Option<String>,
    /// Seconds to send in `Retry-After`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self { status, kind, message: message.into(), parameter: None, retry_after: None }
    }

    fn retry(mut self, after: Duration) -> Self {
        self.retry_after = Some(after.as_secs().max(1));
        self
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NotFound", what)
    }

    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", "send the gateway's token: Authorization: Bearer TOKEN")
    }

    pub fn rate_limited(message: impl Into<String>, after: Duration) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, "RateLimited", message).retry(after)
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "GatewayBusy", message).retry(RETRY_AFTER)
    }

    /// The HTTP form of an engine error.
    pub fn engine(e: &Error) -> Self {
        let (status, kind) = match e {
            Error::Request(r) => match r {
                RequestError::PoolBusy => {
                    return Self::new(StatusCode::SERVICE_UNAVAILABLE, "PoolBusy", e.to_string()).retry(RETRY_AFTER)
                }
                RequestError::TimedOut => (StatusCode::GATEWAY_TIMEOUT, "TimedOut"),
                RequestError::Closed => (StatusCode::SERVICE_UNAVAILABLE, "Closed"),
                RequestError::Cancelled => (StatusCode::SERVICE_UNAVAILABLE, "Cancelled"),
                RequestError::ConnectionLost(_) => (StatusCode::BAD_GATEWAY, "ConnectionLost"),
                RequestError::BadReply(_) => (StatusCode::BAD_GATEWAY, "BadReply"),
                RequestError::PinLost => (StatusCode::BAD_GATEWAY, "PinLost"),
                RequestError::Fatal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "Fatal"),
            },
            Error::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "InvalidRequest"),
            Error::BadFile { .. } => (StatusCode::BAD_GATEWAY, "BadFile"),
            Error::SeriesMoved { .. } => (StatusCode::BAD_GATEWAY, "SeriesMoved"),
            Error::Config(_) => (StatusCode::INTERNAL_SERVER_ERROR, "Config"),
            Error::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "Internal"),
            Error::F10(f) => match f {
                F10Error::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "InvalidRequest"),
                F10Error::TimedOut => (StatusCode::GATEWAY_TIMEOUT, "TimedOut"),
                F10Error::Closed => (StatusCode::SERVICE_UNAVAILABLE, "Closed"),
                F10Error::Connect { .. } | F10Error::Transport { .. } => (StatusCode::BAD_GATEWAY, "ConnectionLost"),
                F10Error::Status { .. } | F10Error::Gateway { .. } => (StatusCode::BAD_GATEWAY, "F10Refused"),
                F10Error::Protocol { .. } => (StatusCode::BAD_GATEWAY, "BadReply"),
            },
        };
        Self::new(status, kind, e.to_string())
    }

    /// The kind used in metrics and bodies.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({ "kind": self.kind, "message": self.message });
        if let Some(p) = &self.parameter {
            error["parameter"] = json!(p);
        }
        json!({ "error": error })
    }
}

impl From<ParamError> for ApiError {
    fn from(e: ParamError) -> Self {
        let mut err = Self::new(StatusCode::BAD_REQUEST, "BadParameter", e.to_string());
        err.parameter = Some(e.param);
        err
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, json_body(&self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A JSON response body with its content type.
pub fn json_body(value: &serde_json::Value) -> Response {
    let mut text = serde_json::to_vec(value).unwrap_or_default();
    text.push(b'\n');
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_map_to_their_documented_statuses() {
        let busy = ApiError::engine(&Error::Request(RequestError::PoolBusy));
        assert_eq!((busy.status, busy.kind, busy.retry_after), (StatusCode::SERVICE_UNAVAILABLE, "PoolBusy", Some(1)));
        let late = ApiError::engine(&Error::Request(RequestError::TimedOut));
        assert_eq!((late.status, late.kind), (StatusCode::GATEWAY_TIMEOUT, "TimedOut"));
        let bad: ApiError = ParamError { param: "code".into(), reason: "nope".into() }.into();
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert_eq!(bad.body()["error"]["parameter"], "code");
    }
}
