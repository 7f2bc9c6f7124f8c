//! The server's request stream decoder and every request body decoder.
//! Invariants: no panic; a decoded request re-encodes to a body that decodes
//! to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::{Request, RequestDecoder};

fuzz_target!(|data: &[u8]| {
    let mut decoder = RequestDecoder::new();
    for chunk in data.chunks(97) {
        if decoder.feed(chunk).is_err() {
            return;
        }
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    if let Ok(request) = Request::decode(frame.header.msg_type, &frame.body) {
                        let mut body = Vec::new();
                        if request.encode_body(&mut body).is_ok() {
                            assert_eq!(Request::decode(frame.header.msg_type, &body).as_ref(), Ok(&request));
                        }
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
