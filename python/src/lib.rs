//! `tdx_engine._native`: the extension module behind the `tdx_engine`
//! Python package. [`engine`] holds every call into the Rust client,
//! [`convert`] turns replies into [`table::Table`]s, [`table`] exports them
//! through the Arrow C data interface, [`errors`] maps errors to exceptions;
//! [`offline`] reads and writes the TDX client's own files, [`calendar`]
//! gives the markets' sessions; [`store`] merges a sharded store's manifest.

mod calendar;
mod convert;
mod engine;
mod errors;
mod offline;
mod store;
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
    m.add_function(wrap_pyfunction!(calendar::market_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(store::merge_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_daily_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_minute_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_ex_daily_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_gbbq_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_block_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_custom_blocks_dir, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_industry_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::read_finance_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_daily_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_minute_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_gbbq_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_ex_daily_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_industry_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_custom_blocks_dir, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_block_file, m)?)?;
    m.add_function(wrap_pyfunction!(offline::write_finance_file, m)?)?;
    Ok(())
}
