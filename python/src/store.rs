//! The store's operations that need no server: `merge_manifests` (the
//! same merge as `tdx sync --merge-manifests`), for the Dask driver.

use pyo3::prelude::*;

/// Merges the shards' manifest fragments of the store at `store` into its
/// manifest; returns `(shards, bars_files, other_files)`.
#[pyfunction]
pub fn merge_manifests(py: Python<'_>, store: std::path::PathBuf) -> PyResult<(u32, usize, usize)> {
    let merged = py
        .detach(|| tdx_store::shard::merge(&tdx_store::Store::new(store)))
        .map_err(|e| crate::errors::TdxError::new_err(e.to_string()))?;
    Ok((merged.shards, merged.bars_files, merged.other_files))
}
