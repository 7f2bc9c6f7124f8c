//! The store that `tdx sync` and `tdx backfill` keep, as a library: the
//! `tdx` binary and the Python package (its Dask driver runs a shard's
//! backfill on each worker's own engine) write it with the same code.
//!
//! Layout, schemas and the atomicity promise: docs/SYNC.md.

pub mod backfill;
pub mod ex;
pub mod manifest;
pub mod objects;
pub mod shard;
pub mod store;
pub mod test_hook;

pub use shard::Shard;
pub use store::{Manifest, Store, StoreError};

/// Writes what a run holds: the manifest, or a shard's fragment of it.
pub fn commit(store: &Store, shard: Option<Shard>, manifest: &Manifest) -> Result<(), StoreError> {
    match shard {
        Some(shard) => shard::write_fragment(store, shard, manifest),
        None => store.write_manifest(manifest),
    }
}

/// The store's manifest with a shard's own fragment laid over it.
pub fn with_fragment(mut manifest: Manifest, fragment: Option<Manifest>) -> Manifest {
    if let Some(f) = fragment {
        manifest.bars.extend(f.bars);
        manifest.corporate.extend(f.corporate);
        manifest.files.extend(f.files);
        manifest.f10.extend(f.f10);
        manifest.imported.extend(f.imported);
    }
    manifest
}
