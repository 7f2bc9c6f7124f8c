//! `tdx_engine._native`: the extension module behind the `tdx_engine`
//! Python package. [`engine`] holds every call into the Rust client,
//! [`convert`] turns replies into [`table::Table`]s, [`table`] exports them
//! through the Arrow C data interface, [`errors`] maps errors to exceptions.

mod convert;
mod engine;
mod errors;
mod table;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<engine::NativeClient>()?;
    m.add_class::<table::Table>()?;
    m.add("TdxError", py.get_type::<errors::TdxError>())?;
    m.add("PoolBusy", py.get_type::<errors::PoolBusy>())?;
    m.add("Timeout", py.get_type::<errors::Timeout>())?;
    m.add("Closed", py.get_type::<errors::Closed>())?;
    m.add("ProtocolError", py.get_type::<errors::ProtocolError>())?;
    m.add("ServerError", py.get_type::<errors::ServerError>())?;
    m.add_function(wrap_pyfunction!(errors::_exception_for, m)?)?;
    m.add("ENGINE_COMMANDS", engine::command_names())?;
    m.add("F10_ENTRIES", engine::f10_entry_names())?;
    m.add("SIGNAL_CHECK_SECONDS", engine::SIGNAL_CHECK.as_secs_f64())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
