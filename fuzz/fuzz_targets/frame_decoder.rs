//! The response stream decoder under arbitrary bytes and arbitrary chunking.
//! Invariants: no panic; staging never passes its bound; a round never
//! emits more frames than allowed; every emitted payload has the header's
//! length; after an error the stream is abandoned, as a slot would.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::limits::{PAYLOAD_BYTES_MAX, RAW_STAGING_BYTES_MAX};
use tdx_engine::proto::{FrameDecoder, RoundLimits};

#[derive(Debug, Arbitrary)]
struct Input {
    cuts: Vec<u16>,
    frames_max: u8,
    decoded_bytes_max: u32,
    stream: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let limits = RoundLimits {
        frames_max: usize::from(input.frames_max).max(1),
        decoded_bytes_max: input.decoded_bytes_max as usize,
    };
    let mut decoder = FrameDecoder::new();
    let mut rest = &input.stream[..];
    let mut i = 0;
    while !rest.is_empty() {
        let cut = input.cuts.get(i % input.cuts.len().max(1)).copied().unwrap_or(u16::MAX);
        let n = usize::from(cut).clamp(1, rest.len());
        i += 1;
        if decoder.feed(&rest[..n]).is_err() {
            return;
        }
        rest = &rest[n..];
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
