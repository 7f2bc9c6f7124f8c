//! What a server says instead of a reply: `server_message` (the GBK text a
//! server of 2026 sends instead of the handshake reply) and the decoding
//! of its fixed-width GBK fields.
//! Invariants: no panic; a message is non-empty trimmed text of at least
//! two characters with no control character but line breaks and tabs;
//! GBK text that encodes again decodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::text::{decode_gbk, encode_gbk, server_message};

fuzz_target!(|data: &[u8]| {
    if let Some(text) = server_message(data) {
        assert!(text.chars().count() >= 2, "{text:?}");
        assert_eq!(text.trim(), text);
        assert!(text.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t')), "{text:?}");
        let mut out = Vec::new();
        encode_gbk(&mut out, &text, data.len().max(text.len() * 2), "message").expect("a message is GBK");
        assert_eq!(server_message(&out).as_deref(), Some(text.as_str()), "a message reads back");
    }
    let field = decode_gbk(data);
    assert!(!field.contains('\0') && !field.contains('\u{fffd}'), "{field:?}");
});
