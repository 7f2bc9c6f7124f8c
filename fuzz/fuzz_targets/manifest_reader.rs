//! The `tdx sync` manifest reader (store/src/manifest.rs, compiled here as
//! it is): any bytes in `manifest.json` are a typed error or a manifest.
//! Invariants: no panic; a manifest read is one the store could have
//! written (every file path inside the store), and writing it again reads
//! back to the same manifest.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../store/src/manifest.rs"]
mod manifest;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = manifest::Manifest::parse(data) else {
        return;
    };
    for c in m.bars.values() {
        assert!(c.file.starts_with("bars/period=") && !c.file.contains(".."), "{:?}", c.file);
    }
    for path in m.files.keys() {
        assert!(manifest::is_derived_path(path) && !path.starts_with('/'), "{path:?}");
    }
    let again = manifest::Manifest::parse(&m.to_bytes()).expect("a written manifest reads back");
    assert_eq!(again, m);
});
