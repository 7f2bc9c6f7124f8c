//! The exception hierarchy: `TdxError` and one subclass per way a request
//! ends that callers branch on. Configuration and argument errors are
//! `ValueError`s naming the field.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use tdx_engine::f10::F10Error;
use tdx_engine::supervisor::RequestError;
use tdx_engine::Error;

create_exception!(_native, TdxError, PyException, "Base of every error a tdx_engine call raises.");
create_exception!(_native, PoolBusy, TdxError, "The engine's admission queue is full; retry later.");
create_exception!(_native, Timeout, TdxError, "The request's deadline (the client's `timeout`) passed.");
create_exception!(_native, Closed, TdxError, "The client is closed (or closing).");
create_exception!(
    _native,
    ProtocolError,
    TdxError,
    "A reply did not decode, or was not the reply the request asked for."
);
create_exception!(
    _native,
    ServerError,
    TdxError,
    "The server failed the request: the connection was lost after its retry, a pin was lost, a server file did not match its metadata, or the pages of a bar series did not join."
);

/// The Python exception for an engine error.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Config(c) => PyValueError::new_err(format!("{}: {}", c.field, c.reason)),
        Error::InvalidRequest(_) => PyValueError::new_err(msg),
        Error::Internal(_) => TdxError::new_err(msg),
        Error::BadFile { .. } | Error::SeriesMoved { .. } => ServerError::new_err(msg),
        Error::F10(f) => match f {
            F10Error::TimedOut => Timeout::new_err(msg),
            F10Error::Closed => Closed::new_err(msg),
            F10Error::Protocol { .. } => ProtocolError::new_err(msg),
            F10Error::InvalidRequest(_) => PyValueError::new_err(msg),
            F10Error::Connect { .. }
            | F10Error::Transport { .. }
            | F10Error::Status { .. }
            | F10Error::Gateway { .. } => ServerError::new_err(msg),
        },
        Error::Request(r) => match r {
            RequestError::PoolBusy => PoolBusy::new_err(msg),
            RequestError::TimedOut => Timeout::new_err(msg),
            RequestError::Closed => Closed::new_err(msg),
            RequestError::BadReply(_) => ProtocolError::new_err(msg),
            RequestError::ConnectionLost(_) | RequestError::PinLost => ServerError::new_err(msg),
            RequestError::Cancelled | RequestError::Fatal(_) => TdxError::new_err(msg),
        },
    }
}

/// The exception an engine error of `kind` becomes (a test hook: the
/// mapping for errors the simulator cannot provoke on demand).
#[pyfunction]
pub fn _exception_for(py: Python<'_>, kind: &str) -> PyResult<Py<PyAny>> {
    use tdx_engine::supervisor::ConfigError;
    let e = match kind {
        "pool_busy" => Error::Request(RequestError::PoolBusy),
        "timed_out" => Error::Request(RequestError::TimedOut),
        "closed" => Error::Request(RequestError::Closed),
        "bad_reply" => Error::Request(RequestError::BadReply("short body".into())),
        "pin_lost" => Error::Request(RequestError::PinLost),
        "bad_file" => Error::BadFile { file: "block.dat".into(), reason: "md5".into() },
        "series_moved" => Error::SeriesMoved { series: "sz000001 day".into() },
        "fatal" => Error::Request(RequestError::Fatal("engine gone".into())),
        "invalid_request" => Error::InvalidRequest("too many codes".into()),
        "config" => Error::Config(ConfigError { field: "pool_size", reason: "too small".into() }),
        "f10_malformed" => Error::F10(F10Error::Protocol { entry: "CWServ.x".into(), reason: "not JSON".into() }),
        "f10_timeout" => Error::F10(F10Error::TimedOut),
        "f10_status" => Error::F10(F10Error::Status { entry: "CWServ.x".into(), status: 503 }),
        other => return Err(PyValueError::new_err(format!("kind: unknown {other:?}"))),
    };
    Ok(to_py(e).into_value(py).into_any())
}
