//! The response stream decoder under arbitrary bytes, chunking and round
//! limits, read from the input as a [`tdx_fuzz::FrameCase`]
//! (`frames_max: u8, decoded_bytes_max: u32, count: u8, cuts: [u16; count],
//! stream..`).
//! Invariants: no panic; staging never passes its bound; a round never
//! emits more frames than allowed; every emitted payload has the header's
//! length; after an error the stream is abandoned, as a slot would.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::limits::{PAYLOAD_BYTES_MAX, RAW_STAGING_BYTES_MAX};
use tdx_engine::proto::{FrameDecoder, RoundLimits};
use tdx_fuzz::FrameCase;

fuzz_target!(|data: &[u8]| {
    let case = FrameCase::read(data);
    let limits = RoundLimits {
        frames_max: usize::from(case.frames_max).max(1),
        decoded_bytes_max: case.decoded_bytes_max as usize,
    };
    let mut decoder = FrameDecoder::new();
    for chunk in case.chunking.split(&case.stream) {
        if decoder.feed(chunk).is_err() {
            return;
        }
        assert!(decoder.staged() <= RAW_STAGING_BYTES_MAX);
        let result = decoder.decode_round(limits, |frame| {
            assert_eq!(frame.payload.len(), usize::from(frame.header.length));
            assert!(frame.payload.len() <= PAYLOAD_BYTES_MAX);
        });
        match result {
            Ok(round) => assert!(round.frames <= limits.frames_max),
            Err(_) => return,
        }
    }
    let _ = decoder.finish();
});
