//! The store's operations that need no server: `merge_manifests` (the
//! same merge as `tdx sync --merge-manifests`), for the Dask driver.

use pyo3::prelude::*;

/// Merges the shards' manifest fragments of the store at `store` (a
/// directory or `s3://BUCKET/PREFIX`) into its manifest; returns `(shards, bars_files, other_files)`.
/// `storage`: S3 settings by their `AWS_*` names (a store at `s3://`).
#[pyfunction]
#[pyo3(signature = (store, storage=None))]
pub fn merge_manifests(
    py: Python<'_>,
    store: std::path::PathBuf,
    storage: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<(u32, usize, usize)> {
    let options: Vec<(String, String)> = storage.unwrap_or_default().into_iter().collect();
    let merged = py
        .detach(|| {
            let store = tdx_store::Store::open_with(&store, &options)?;
            if store.is_remote() {
                store.create()?;
            }
            tdx_store::shard::merge(&store)
        })
        .map_err(|e| crate::errors::TdxError::new_err(e.to_string()))?;
    Ok((merged.shards, merged.bars_files, merged.other_files))
}
