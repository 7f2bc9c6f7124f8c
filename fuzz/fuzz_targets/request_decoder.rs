//! The server's request stream decoder (7709 and MAC prefixes) and every
//! request body decoder, fed in chunks read from the input as a
//! [`tdx_fuzz::RequestCase`] (`count: u8, cuts: [u16; count], stream..`).
//! Invariants: no panic; a decoded request re-encodes to a body that decodes
//! to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::{Request, RequestDecoder};
use tdx_fuzz::RequestCase;

fuzz_target!(|data: &[u8]| {
    let case = RequestCase::read(data);
    let mut decoder = RequestDecoder::new();
    for chunk in case.chunking.split(&case.stream) {
        if decoder.feed(chunk).is_err() {
            return;
        }
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    if let Ok(request) = Request::decode_frame(&frame) {
                        assert_eq!(request.prefix(), frame.header.prefix);
                        let mut body = Vec::new();
                        if request.encode_body(&mut body).is_ok() {
                            let again = Request::decode_prefixed(frame.header.prefix, frame.header.msg_type, &body);
                            assert_eq!(again.as_ref(), Ok(&request));
                        }
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let _ = decoder.finish();
});
