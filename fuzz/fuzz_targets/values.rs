//! Value encodings: varint, TDX float, dates, quote times, GBK text, and
//! the board-file layout (0x06b9 downloads).
//! Invariants: no panic; decode(encode(v)) == v wherever v decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::blockfile::{encode_block_file, parse_block_file};
use tdx_engine::proto::text::{decode_gbk, encode_gbk};
use tdx_engine::proto::time::{decode_packed_minute, decode_seconds_stamp, encode_packed_minute, encode_seconds_stamp};
use tdx_engine::proto::wire::{decode_varint, put_varint, varint_len};
use tdx_engine::proto::{Date, TimeOfDay};

fuzz_target!(|data: &[u8]| {
    if let Ok((value, used)) = decode_varint(data) {
        assert!(used <= data.len());
        let mut out = Vec::new();
        put_varint(&mut out, value);
        assert_eq!(out.len(), varint_len(value));
        assert_eq!(decode_varint(&out), Ok((value, out.len())));
    }
    if data.len() >= 4 {
        let word = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        if let Some(date) = Date::from_yyyymmdd(word) {
            assert_eq!(date.yyyymmdd(), word);
        }
        if let Ok(at) = decode_seconds_stamp(word) {
            assert_eq!(encode_seconds_stamp(at), Ok(word));
        }
        let (d, t) = ((word & 0xffff) as u16, (word >> 16) as u16);
        if let Ok(at) = decode_packed_minute(d, t) {
            assert_eq!(encode_packed_minute(at), Ok((d, t)));
        }
        let _ = TimeOfDay::from_quote_time_raw(i64::from(word));
    }
    if let Ok(boards) = parse_block_file(data) {
        // Names and codes come back cleaned (NULs and bad GBK dropped), so the
        // re-encoded file need not equal the input, but it parses to the same boards.
        if let Ok(file) = encode_block_file("fuzz", &boards) {
            assert_eq!(parse_block_file(&file).as_ref(), Ok(&boards));
        }
    }
    let text = decode_gbk(data);
    let mut out = Vec::new();
    if encode_gbk(&mut out, &text, data.len().max(1), "fuzz").is_ok() {
        assert_eq!(decode_gbk(&out), text);
    }
});
