//! Incremental stream decoders: [`FrameDecoder`] for responses (clients) and
//! [`RequestDecoder`] for requests (servers).
//!
//! Feed them bytes in chunks of any size, down to one byte at a time; they
//! yield whole frames. Both stage at most
//! [`super::limits::RAW_STAGING_BYTES_MAX`] raw bytes,
//! refuse anything that would go past it, and never allocate more than one
//! frame's worth for a single frame.
//!
//! Raw (uncompressed) payloads are zero-copy slices of the staging buffer.
//! Such a slice keeps the buffer chunk it was cut from alive until it is
//! dropped; engine budgets account for payloads, not for that slack.

use bytes::{Buf, Bytes, BytesMut};

use super::frame::{Frame, RequestFrame, RequestHeader, ResponseHeader, RESPONSE_MAGIC};
use super::limits::{
    RAW_STAGING_BYTES_MAX, REQUEST_HEADER_LEN, RESPONSE_FRAME_BYTES_MAX, RESPONSE_HEADER_LEN, RESYNC_DISCARD_BYTES_MAX,
    ROUND_DECODED_BYTES_MAX, ROUND_FRAMES_MAX,
};
use super::{zlib, ProtoError};

/// How much one [`FrameDecoder::decode_round`] may produce before it returns,
/// so that a slot task yields to its neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundLimits {
    /// Frames per round.
    pub frames_max: usize,
    /// Decoded payload bytes per round. The frame that crosses it is the
    /// round's last, so a round may exceed it by one payload (< 64 KiB).
    pub decoded_bytes_max: usize,
}

impl Default for RoundLimits {
    fn default() -> Self {
        Self { frames_max: ROUND_FRAMES_MAX, decoded_bytes_max: ROUND_DECODED_BYTES_MAX }
    }
}

/// Why a decode round returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundEnd {
    /// No whole frame is staged: read more bytes.
    NeedBytes,
    /// The frame limit was reached; more frames may be staged.
    FramesLimit,
    /// The decoded-bytes limit was reached; more frames may be staged.
    DecodedBytesLimit,
}

/// What one decode round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// Frames emitted.
    pub frames: usize,
    /// Decoded payload bytes emitted.
    pub decoded_bytes: usize,
    /// Why it stopped.
    pub end: RoundEnd,
}

/// The bounded buffer both decoders stage raw bytes in.
#[derive(Debug)]
struct Staging {
    /// Invariant: `bytes.len() <= max`.
    bytes: BytesMut,
    max: usize,
}

impl Staging {
    fn new(max: usize) -> Self {
        Self { bytes: BytesMut::new(), max }
    }

    fn room(&self) -> usize {
        self.max - self.bytes.len()
    }

    /// Stages `chunk`. Fails, staging nothing, when that would pass the bound.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), ProtoError> {
        if chunk.len() > self.room() {
            return Err(ProtoError::StagingFull { staged: self.bytes.len(), incoming: chunk.len(), max: self.max });
        }
        self.bytes.extend_from_slice(chunk);
        debug_assert!(self.bytes.len() <= self.max);
        Ok(())
    }

    /// The header of `N` bytes at the head, once that much is staged.
    fn header<const N: usize>(&self) -> Option<&[u8; N]> {
        self.bytes.get(..N).map(|head| head.try_into().expect("N bytes"))
    }

    /// The body of the frame of `header_len + body_len` bytes at the head,
    /// split off, once it is whole.
    fn take_body(&mut self, header_len: usize, body_len: usize) -> Option<BytesMut> {
        if self.bytes.len() < header_len + body_len {
            return None;
        }
        let mut frame = self.bytes.split_to(header_len + body_len);
        frame.advance(header_len);
        Some(frame)
    }

    /// At end of stream: fails if a partial frame is staged.
    fn finish(&self) -> Result<(), ProtoError> {
        match self.bytes.len() {
            0 => Ok(()),
            buffered => Err(ProtoError::TruncatedFrame { buffered }),
        }
    }
}

/// Decodes a stream of response frames (docs/PROTOCOL.md, Framing).
///
/// Resynchronises on garbage by searching for the magic, keeping at most 3
/// trailing bytes that could start a split magic; more than
/// [`RESYNC_DISCARD_BYTES_MAX`] discarded bytes over the decoder's life is
/// [`ProtoError::ResyncLimitExceeded`]. Any error is final for the stream:
/// the connection must be retired and the decoder dropped.
///
/// The decoder yields frames with `msg_id` 0 (real servers echo whatever id
/// they were sent); rejecting them as [`ProtoError::ZeroMsgId`] is the
/// engine's matching policy, since it never sends id 0.
#[derive(Debug)]
pub struct FrameDecoder {
    staging: Staging,
    resync_discarded: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder with the default staging bound.
    pub fn new() -> Self {
        Self::with_staging_max(RAW_STAGING_BYTES_MAX)
    }

    /// A decoder that stages at most `staging_max` bytes, which must hold at
    /// least one whole frame.
    pub fn with_staging_max(staging_max: usize) -> Self {
        assert!(
            staging_max >= RESPONSE_FRAME_BYTES_MAX,
            "staging_max must hold one frame of {RESPONSE_FRAME_BYTES_MAX} bytes"
        );
        Self { staging: Staging::new(staging_max), resync_discarded: 0 }
    }

    /// Raw bytes currently staged.
    pub fn staged(&self) -> usize {
        self.staging.bytes.len()
    }

    /// Bytes [`feed`](Self::feed) accepts right now.
    pub fn staging_room(&self) -> usize {
        self.staging.room()
    }

    /// Garbage bytes discarded so far while resynchronising.
    pub fn resync_discarded(&self) -> usize {
        self.resync_discarded
    }

    /// Stages `chunk`. Fails, staging nothing, when that would pass the bound.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ProtoError> {
        self.staging.feed(chunk)
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProtoError> {
        if !self.resync()? {
            return Ok(None);
        }
        let Some(header_bytes) = self.staging.header::<RESPONSE_HEADER_LEN>() else { return Ok(None) };
        let header = ResponseHeader::parse(header_bytes)?;
        if header.is_compressed() {
            zlib::check_lengths(header.zip_length, header.length)?;
        }
        let Some(raw) = self.staging.take_body(RESPONSE_HEADER_LEN, usize::from(header.zip_length)) else {
            return Ok(None);
        };
        let payload = if header.is_compressed() {
            Bytes::from(zlib::inflate_exact(&raw, usize::from(header.length))?)
        } else {
            raw.freeze()
        };
        debug_assert_eq!(payload.len(), usize::from(header.length));
        Ok(Some(Frame { header, payload }))
    }

    /// Emits staged frames until none is whole or `limits` is reached.
    pub fn decode_round(&mut self, limits: RoundLimits, mut emit: impl FnMut(Frame)) -> Result<Round, ProtoError> {
        assert!(limits.frames_max > 0, "a round must allow at least one frame");
        let mut round = Round { frames: 0, decoded_bytes: 0, end: RoundEnd::NeedBytes };
        while let Some(frame) = self.next_frame()? {
            round.frames += 1;
            round.decoded_bytes += frame.payload.len();
            emit(frame);
            if round.frames >= limits.frames_max {
                round.end = RoundEnd::FramesLimit;
                break;
            }
            if round.decoded_bytes >= limits.decoded_bytes_max {
                round.end = RoundEnd::DecodedBytesLimit;
                break;
            }
        }
        debug_assert!(round.frames <= limits.frames_max);
        Ok(round)
    }

    /// Call at end of stream: fails if a partial frame (or partial magic) is staged.
    pub fn finish(&self) -> Result<(), ProtoError> {
        self.staging.finish()
    }

    /// Moves the staging head to a magic. Returns true when it starts with a
    /// full magic, false when only a possible magic prefix remains.
    fn resync(&mut self) -> Result<bool, ProtoError> {
        let staged = &mut self.staging.bytes;
        if staged.starts_with(&RESPONSE_MAGIC) {
            return Ok(true);
        }
        let found = staged.windows(RESPONSE_MAGIC.len()).position(|w| w == RESPONSE_MAGIC);
        let discard = match found {
            Some(at) => at,
            // Keep the longest tail that is a proper prefix of the magic.
            None => staged.len() - magic_prefix_tail(staged),
        };
        staged.advance(discard);
        self.resync_discarded += discard;
        if self.resync_discarded > RESYNC_DISCARD_BYTES_MAX {
            return Err(ProtoError::ResyncLimitExceeded { discarded: self.resync_discarded });
        }
        Ok(found.is_some())
    }
}

/// Length of the longest suffix of `buf` that is a proper prefix of the magic.
fn magic_prefix_tail(buf: &[u8]) -> usize {
    (1..RESPONSE_MAGIC.len())
        .rev()
        .find(|&n| buf.len() >= n && buf[buf.len() - n..] == RESPONSE_MAGIC[..n])
        .unwrap_or(0)
}

/// Decodes a stream of request frames (docs/PROTOCOL.md, Request header), for servers.
///
/// Requests cannot be resynchronised (they have no magic), so any header
/// error is final for the connection.
#[derive(Debug)]
pub struct RequestDecoder {
    staging: Staging,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestDecoder {
    /// A decoder with the default staging bound.
    pub fn new() -> Self {
        Self { staging: Staging::new(RAW_STAGING_BYTES_MAX) }
    }

    /// Bytes [`feed`](Self::feed) accepts right now.
    pub fn staging_room(&self) -> usize {
        self.staging.room()
    }

    /// Raw bytes currently staged.
    pub fn staged(&self) -> usize {
        self.staging.bytes.len()
    }

    /// Stages `chunk`. Fails, staging nothing, when that would pass the bound.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ProtoError> {
        self.staging.feed(chunk)
    }

    /// The next whole request, `Ok(None)` when more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<RequestFrame>, ProtoError> {
        let Some(header_bytes) = self.staging.header::<REQUEST_HEADER_LEN>() else { return Ok(None) };
        let header = RequestHeader::parse(header_bytes)?;
        let body = self.staging.take_body(REQUEST_HEADER_LEN, usize::from(header.body_len));
        Ok(body.map(|body| RequestFrame { header, body: body.freeze() }))
    }

    /// Call at end of stream: fails if a partial request is staged.
    pub fn finish(&self) -> Result<(), ProtoError> {
        self.staging.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame::{encode_request, encode_response, Compression};
    use super::*;
    use proptest::prelude::*;

    fn frame(msg_id: u32, payload: &[u8], compression: Compression) -> Vec<u8> {
        let mut out = Vec::new();
        encode_response(&mut out, msg_id, 0x052d, payload, compression).unwrap();
        out
    }

    fn decode_all(decoder: &mut FrameDecoder) -> Vec<Frame> {
        let mut frames = Vec::new();
        while let Some(frame) = decoder.next_frame().unwrap() {
            frames.push(frame);
        }
        frames
    }

    #[test]
    fn one_byte_at_a_time() {
        let mut stream = frame(1, b"abc", Compression::Never);
        stream.extend(frame(2, &[7u8; 3000], Compression::IfSmaller(6)));
        let mut decoder = FrameDecoder::new();
        let mut frames = Vec::new();
        for byte in &stream {
            decoder.feed(std::slice::from_ref(byte)).unwrap();
            frames.extend(decode_all(&mut decoder));
        }
        decoder.finish().unwrap();
        assert_eq!(frames.len(), 2);
        assert_eq!(&frames[0].payload[..], b"abc");
        assert_eq!(frames[1].payload.len(), 3000);
        assert!(frames[1].header.is_compressed());
    }

    #[test]
    fn resync_limit_is_enforced() {
        let mut decoder = FrameDecoder::new();
        let garbage = vec![0x55u8; 40_000];
        decoder.feed(&garbage).unwrap();
        assert_eq!(decoder.next_frame(), Ok(None));
        assert_eq!(decoder.resync_discarded(), 40_000);
        decoder.feed(&garbage).unwrap();
        assert_eq!(decoder.next_frame(), Err(ProtoError::ResyncLimitExceeded { discarded: 80_000 }));
    }

    #[test]
    fn staging_bound_is_enforced() {
        let mut decoder = FrameDecoder::new();
        // A header announcing a large raw body keeps bytes staged.
        decoder.feed(&vec![0u8; RAW_STAGING_BYTES_MAX]).unwrap();
        assert!(matches!(decoder.feed(&[0]), Err(ProtoError::StagingFull { .. })));
        assert_eq!(decoder.staged(), RAW_STAGING_BYTES_MAX);
    }

    #[test]
    fn lying_lengths_are_errors() {
        let mut lying = frame(1, b"abcdef", Compression::Never);
        lying[14] = 0xff; // length 255 while zip_length is 6
        let mut decoder = FrameDecoder::new();
        decoder.feed(&lying).unwrap();
        assert_eq!(decoder.next_frame(), Err(ProtoError::ZipLengthInconsistent { zip_length: 6, length: 255 }));
    }

    #[test]
    fn round_limits_stop_early() {
        let mut decoder = FrameDecoder::new();
        for id in 1..=100 {
            decoder.feed(&frame(id, &[1u8; 100], Compression::Never)).unwrap();
        }
        let mut seen = 0;
        let round = decoder.decode_round(RoundLimits::default(), |_| seen += 1).unwrap();
        assert_eq!((round.frames, round.end), (64, RoundEnd::FramesLimit));
        let limits = RoundLimits { frames_max: 64, decoded_bytes_max: 1000 };
        let round = decoder.decode_round(limits, |_| seen += 1).unwrap();
        assert_eq!((round.frames, round.decoded_bytes, round.end), (10, 1000, RoundEnd::DecodedBytesLimit));
        let round = decoder.decode_round(RoundLimits::default(), |_| seen += 1).unwrap();
        assert_eq!((round.frames, round.end), (26, RoundEnd::NeedBytes));
        assert_eq!(seen, 100);
    }

    #[test]
    fn request_decoder_splits_and_rejects() {
        let mut stream = Vec::new();
        encode_request(&mut stream, 1, 1, 0x000d, &[1]).unwrap();
        encode_request(&mut stream, 2, 1, 0x0004, &[]).unwrap();
        let mut decoder = RequestDecoder::new();
        let mut frames = Vec::new();
        for byte in &stream {
            decoder.feed(std::slice::from_ref(byte)).unwrap();
            while let Some(frame) = decoder.next_frame().unwrap() {
                frames.push(frame);
            }
        }
        decoder.finish().unwrap();
        assert_eq!(frames.len(), 2);
        assert_eq!(&frames[0].body[..], &[1]);
        assert_eq!(frames[1].header.msg_type, 4);
        let mut decoder = RequestDecoder::new();
        decoder.feed(&[0xff; 12]).unwrap();
        assert_eq!(decoder.next_frame(), Err(ProtoError::BadRequestPrefix { found: 0xff }));
    }

    fn arb_payload() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            (any::<u8>(), 0usize..5000).prop_map(|(b, n)| vec![b; n]),
        ]
    }

    proptest! {
        /// Why: the slot task reads whatever the socket gives; frame
        /// boundaries must never depend on how the stream was cut.
        #[test]
        fn any_chunking_yields_identical_frames(
            payloads in proptest::collection::vec((arb_payload(), any::<bool>()), 1..8),
            cuts in proptest::collection::vec(1usize..700, 1..64),
        ) {
            let mut stream = Vec::new();
            for (i, (payload, zlib)) in payloads.iter().enumerate() {
                let compression = if *zlib { Compression::IfSmaller(6) } else { Compression::Never };
                stream.extend(frame(i as u32 + 1, payload, compression));
            }
            let mut decoder = FrameDecoder::new();
            let mut frames = Vec::new();
            let mut rest = &stream[..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = cuts[i % cuts.len()].min(rest.len());
                decoder.feed(&rest[..n]).unwrap();
                rest = &rest[n..];
                i += 1;
                decoder.decode_round(RoundLimits::default(), |f| frames.push(f)).unwrap();
            }
            decoder.finish().unwrap();
            prop_assert_eq!(frames.len(), payloads.len());
            for (i, (frame, (payload, _))) in frames.iter().zip(&payloads).enumerate() {
                prop_assert_eq!(frame.header.msg_id, i as u32 + 1);
                prop_assert_eq!(&frame.payload[..], &payload[..]);
            }
        }

        /// Why: garbage from the network must give a typed error or nothing,
        /// never a panic, and never stage past the bound.
        #[test]
        fn garbage_never_panics(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..2000), 0..20)) {
            let mut decoder = FrameDecoder::new();
            for chunk in chunks {
                if decoder.feed(&chunk).is_err() {
                    break;
                }
                match decoder.decode_round(RoundLimits::default(), |_| {}) {
                    Ok(_) => prop_assert!(decoder.staged() <= RAW_STAGING_BYTES_MAX),
                    Err(_) => break,
                }
            }
        }
    }
}
