//! Every reply parser, against the request a body on the wire describes,
//! read from the input as a [`tdx_fuzz::ReplyCase`]
//! (`prefix: u8, msg_type: u16, body_len: u16, body, payload..`; the prefix
//! picks 7709 or one of MAC's); inputs whose body is not a valid request
//! end at once.
//! Invariants: no panic; errors are typed; a parsed reply that the server
//! side can encode again parses back to itself (modulo NaN floats, which
//! compare unequal and are skipped).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::Request;
use tdx_fuzz::ReplyCase;

fuzz_target!(|data: &[u8]| {
    let case = ReplyCase::read(data);
    let Ok(request) = Request::decode_prefixed(case.prefix, case.msg_type, &case.body) else {
        return;
    };
    let Ok(reply) = request.parse_reply(&case.payload) else {
        return;
    };
    let mut encoded = Vec::new();
    if request.encode_reply(&reply, &mut encoded).is_err() {
        return;
    }
    let again = request.parse_reply(&encoded).expect("a re-encoded reply parses");
    // Formatted only on a mismatch (a Debug string per execution is slow).
    assert!(again == reply || format!("{reply:?}").contains("NaN"), "reply changed across encode/parse");
});
