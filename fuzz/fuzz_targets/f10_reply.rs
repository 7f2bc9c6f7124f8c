//! The F10 gateway's result-set parser on any bytes.
//! Invariants: no panic; a parsed reply's rows are as long as its columns,
//! its record names are unique, and it renders as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::f10::parse_reply;

fuzz_target!(|data: &[u8]| {
    if let Ok(reply) = parse_reply("CWServ.fuzz", data) {
        for table in &reply.tables {
            assert!(table.rows.iter().all(|r| r.len() == table.columns.len()));
            let names = table.unique_columns();
            let distinct: std::collections::HashSet<&String> = names.iter().collect();
            assert_eq!(distinct.len(), names.len(), "{names:?}");
        }
        let _ = reply.to_json().to_string();
    }
});
