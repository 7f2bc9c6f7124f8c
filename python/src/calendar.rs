//! The trading calendar's pure parts for Python: each market's sessions
//! (the days come from the server: `NativeClient::trading_days`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tdx_engine::proto::Market;

/// `market`'s sessions on a trading day: dicts `session`, `start`, `end`
/// (`HH:MM`), in time order.
#[pyfunction]
pub fn market_sessions<'py>(py: Python<'py>, market: &str) -> PyResult<Bound<'py, PyList>> {
    let m =
        market.trim().parse::<Market>().map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("market: {e}")))?;
    let out = PyList::empty(py);
    for s in tdx_engine::calendar::sessions(m) {
        let d = PyDict::new(py);
        d.set_item("session", s.kind.name())?;
        d.set_item("start", s.start.to_string())?;
        d.set_item("end", s.end.to_string())?;
        out.append(d)?;
    }
    Ok(out)
}
