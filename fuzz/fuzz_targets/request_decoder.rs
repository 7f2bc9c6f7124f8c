//! The server's request stream decoder (7709, MAC and 7727 prefixes) and
//! every request body decoder (7727's EX and MAC-EX included), fed in chunks read from the input as a
//! [`tdx_fuzz::RequestCase`] (`count: u8, cuts: [u16; count], stream..`).
//! Invariants: no panic; a decoded request re-encodes to a body that decodes
//! to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::ex::ExPortRequest;
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
                    if let Ok(request) = ExPortRequest::decode(&frame) {
                        assert_eq!(request.msg_type(), frame.header.msg_type);
                        let mut again = Vec::new();
                        if request.encode_frame(frame.header.msg_id, &mut again).is_ok() {
                            let mut one = RequestDecoder::new();
                            one.feed(&again).expect("a re-encoded frame feeds");
                            let frame = one.next_frame().expect("it decodes").expect("it is whole");
                            assert_eq!(ExPortRequest::decode(&frame).as_ref(), Ok(&request));
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
