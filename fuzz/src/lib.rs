//! The byte layouts of the fuzz targets' inputs, shared by the targets, which
//! read them, and the corpus generator (`examples/corpus.rs`), which writes
//! seeds in them from the protocol vectors and the server-side encoders.
//!
//! Every layout is a plain little-endian byte string read front to back by a
//! [`Cursor`]: a field past the end of the input reads as zero, so every
//! input decodes to some case, and a seed written by a `write` method reads
//! back to the same value (the generator checks this for every seed).
//!
//! | target            | layout |
//! |-------------------|--------|
//! | `frame_decoder`   | `frames_max: u8, decoded_bytes_max: u32, chunking, stream..` |
//! | `request_decoder` | `chunking, stream..` |
//! | `reply_parsers`   | `prefix: u8, msg_type: u16, body_len: u16, body: [u8; body_len], payload..` |
//! | `values`          | the raw bytes (also read as a board file) |
//! | `file_readers`    | `pick: u8` (reader and units), then the file's bytes |
//! | `supervisor`      | `servers: u8, per_server: u8, pending: u8, establish: u8, seed: u64, op..` |
//! | `history_parsers`, `intraday_parsers`, `structure_parsers` | as `reply_parsers`, `msg_type` mapped into the family ([`Family::msg_type`]) |
//! | `ex_parsers`      | as `reply_parsers`, `prefix` ignored, `msg_type` mapped into the EX commands ([`ex_msg_type`]) |
//! | `server_messages` | a reply payload (also read as one frame's worth of bytes) |
//! | `manifest_reader` | the bytes of a `manifest.json` |
//!
//! `prefix` picks a request prefix, 0x0c, 0x1c, 0x01 or 0x02 (taken
//! modulo 4), so every input names a family. `chunking` is `count: u8,
//! cuts: [u16; count]`: the stream is fed in pieces
//! of `cuts[i % count]` bytes (at least 1), or of `u16::MAX` bytes when
//! `count` is 0. Each supervisor `op` is an opcode byte (taken modulo the
//! number of operations) followed by that operation's fixed fields; see
//! [`Op::read`].

/// Reads little-endian fields from a fuzz input; missing bytes read as zero.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes: fewer when the input ends first.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let head = self.bytes(N);
        out[..head.len()].copy_from_slice(head);
        out
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// Everything not read yet.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}

/// How a stream is cut into the chunks fed to a decoder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunking {
    /// Chunk lengths, used in turn; empty means chunks of `u16::MAX` bytes.
    pub cuts: Vec<u16>,
}

impl Chunking {
    /// Reads `count: u8, cuts: [u16; count]`.
    pub fn read(cursor: &mut Cursor<'_>) -> Self {
        let count = cursor.u8();
        Self { cuts: (0..count).map(|_| cursor.u16()).collect() }
    }

    /// Appends the layout [`read`](Self::read) reads (at most 255 cuts).
    pub fn write(&self, out: &mut Vec<u8>) {
        let cuts = &self.cuts[..self.cuts.len().min(255)];
        out.push(cuts.len() as u8);
        for cut in cuts {
            out.extend_from_slice(&cut.to_le_bytes());
        }
    }

    /// The chunks of `stream`, in order; each is at least one byte.
    pub fn split<'s>(&self, stream: &'s [u8]) -> Vec<&'s [u8]> {
        let mut chunks = Vec::new();
        let mut rest = stream;
        let mut i = 0;
        while !rest.is_empty() {
            let cut = if self.cuts.is_empty() { u16::MAX } else { self.cuts[i % self.cuts.len()] };
            let (chunk, tail) = rest.split_at(usize::from(cut).clamp(1, rest.len()));
            chunks.push(chunk);
            rest = tail;
            i += 1;
        }
        chunks
    }
}

/// Input of `frame_decoder`: a response stream, its chunking and the round limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameCase {
    /// Round limit on frames (0 reads as 1).
    pub frames_max: u8,
    /// Round limit on decoded bytes.
    pub decoded_bytes_max: u32,
    /// How the stream arrives.
    pub chunking: Chunking,
    /// The bytes a server sent.
    pub stream: Vec<u8>,
}

impl FrameCase {
    /// Reads `frames_max: u8, decoded_bytes_max: u32, chunking, stream..`.
    pub fn read(data: &[u8]) -> Self {
        let mut cursor = Cursor::new(data);
        let frames_max = cursor.u8();
        let decoded_bytes_max = cursor.u32();
        let chunking = Chunking::read(&mut cursor);
        Self { frames_max, decoded_bytes_max, chunking, stream: cursor.rest().to_vec() }
    }

    /// The bytes [`read`](Self::read) reads back to `self`.
    pub fn write(&self) -> Vec<u8> {
        let mut out = vec![self.frames_max];
        out.extend_from_slice(&self.decoded_bytes_max.to_le_bytes());
        self.chunking.write(&mut out);
        out.extend_from_slice(&self.stream);
        out
    }
}

/// Input of `request_decoder`: a client's request stream and its chunking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestCase {
    /// How the stream arrives.
    pub chunking: Chunking,
    /// The bytes a client sent.
    pub stream: Vec<u8>,
}

impl RequestCase {
    /// Reads `chunking, stream..`.
    pub fn read(data: &[u8]) -> Self {
        let mut cursor = Cursor::new(data);
        let chunking = Chunking::read(&mut cursor);
        Self { chunking, stream: cursor.rest().to_vec() }
    }

    /// The bytes [`read`](Self::read) reads back to `self`.
    pub fn write(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.chunking.write(&mut out);
        out.extend_from_slice(&self.stream);
        out
    }
}

/// The request prefixes, in the order a `reply_parsers` input's first byte
/// picks them.
pub const PREFIXES: [u8; 4] = [0x0c, 0x1c, 0x01, 0x02];

/// Input of `reply_parsers`: a request, as its wire body, and a reply payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyCase {
    /// The request frame's first byte (one of [`PREFIXES`]).
    pub prefix: u8,
    /// The request's command code.
    pub msg_type: u16,
    /// The request body (what follows the 12-byte request header).
    pub body: Vec<u8>,
    /// The reply payload (after inflation).
    pub payload: Vec<u8>,
}

impl ReplyCase {
    /// Reads `prefix: u8, msg_type: u16, body_len: u16, body, payload..`.
    pub fn read(data: &[u8]) -> Self {
        let mut cursor = Cursor::new(data);
        let prefix = PREFIXES[usize::from(cursor.u8()) % PREFIXES.len()];
        let msg_type = cursor.u16();
        let body_len = cursor.u16();
        let body = cursor.bytes(usize::from(body_len)).to_vec();
        Self { prefix, msg_type, body, payload: cursor.rest().to_vec() }
    }

    /// The bytes [`read`](Self::read) reads back to `self` (a body is at
    /// most `u16::MAX` bytes; the prefix is one of [`PREFIXES`]).
    pub fn write(&self) -> Vec<u8> {
        let body_len = u16::try_from(self.body.len()).expect("request body fits a u16");
        let prefix = PREFIXES.iter().position(|&p| p == self.prefix).expect("a known prefix") as u8;
        let mut out = Vec::with_capacity(5 + self.body.len() + self.payload.len());
        out.push(prefix);
        out.extend_from_slice(&self.msg_type.to_le_bytes());
        out.extend_from_slice(&body_len.to_le_bytes());
        out.extend_from_slice(&self.body);
        out.extend_from_slice(&self.payload);
        out
    }
}

/// Input of `supervisor`: the configuration knobs and a sequence of operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorCase {
    /// Servers, `1 + servers % 3`.
    pub servers: u8,
    /// Connections per server, `1 + per_server % 3`.
    pub per_server: u8,
    /// Pending request bound, `pending % 8`.
    pub pending: u8,
    /// Establishment knobs: bit 0 canary, bits 1..3 connect concurrency - 1,
    /// bit 3 connects per host - 1, bits 4..6 start probe (0 off, 1 wait,
    /// else background).
    pub establish: u8,
    /// The Supervisor's RNG seed.
    pub seed: u64,
    /// What happens, in order (the target runs the first 512).
    pub ops: Vec<Op>,
}

impl SupervisorCase {
    /// Reads the 12-byte header, then operations until the input ends.
    pub fn read(data: &[u8]) -> Self {
        let mut cursor = Cursor::new(data);
        let (servers, per_server, pending, establish) = (cursor.u8(), cursor.u8(), cursor.u8(), cursor.u8());
        let seed = cursor.u64();
        let mut ops = Vec::new();
        while !cursor.is_empty() {
            ops.push(Op::read(&mut cursor));
        }
        Self { servers, per_server, pending, establish, seed, ops }
    }

    /// The bytes [`read`](Self::read) reads back to `self`.
    pub fn write(&self) -> Vec<u8> {
        let mut out = vec![self.servers, self.per_server, self.pending, self.establish];
        out.extend_from_slice(&self.seed.to_le_bytes());
        for op in &self.ops {
            op.write(&mut out);
        }
        out
    }
}

/// One supervisor operation. `pick` chooses among the recent connects or
/// sends the target has seen; `skew` shifts the generation by `skew % 3`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op {
    Submit { repeat: bool, retry_safe: bool, timeout_ms: u16, pin: Option<u8> },
    Cancel { back: u8 },
    Pin { id: u8, timeout_ms: u16 },
    Release { id: u8 },
    Connected { pick: u8, skew: i8 },
    Ready { pick: u8, skew: i8 },
    Failed { pick: u8, skew: i8 },
    Closed { pick: u8, skew: i8 },
    SendCompleted { pick: u8, skew: i8 },
    Reply { pick: u8, skew: i8, wrong_type: bool, zero_id: bool, invalid: bool },
    Push { slot: u8, msg_id: u32, len: u8 },
    ReadPushes { max: u8 },
    Advance { ms: u16 },
    Rewind { ms: u8 },
    Close,
    NewEpoch { endpoints: u8 },
    ProbeDone { old_epoch: bool, latencies: Vec<Option<u16>> },
}

/// Number of distinct opcodes.
const OPCODES: u8 = 17;

impl Op {
    /// Reads one operation: an opcode byte (modulo 17), then its fields.
    ///
    /// | opcode | operation | fields |
    /// |---|---|---|
    /// | 0 | Submit | `flags: u8` (bit 0 repeat, 1 retry_safe, 2 pinned), `timeout_ms: u16`, `pin: u8` |
    /// | 1 | Cancel | `back: u8` |
    /// | 2 | Pin | `id: u8`, `timeout_ms: u16` |
    /// | 3 | Release | `id: u8` |
    /// | 4..=8 | Connected, Ready, Failed, Closed, SendCompleted | `pick: u8`, `skew: i8` |
    /// | 9 | Reply | `pick: u8`, `skew: i8`, `flags: u8` (bit 0 wrong type, 1 zero id, 2 invalid) |
    /// | 10 | Push | `slot: u8`, `msg_id: u32`, `len: u8` |
    /// | 11 | ReadPushes | `max: u8` |
    /// | 12 | Advance | `ms: u16` |
    /// | 13 | Rewind | `ms: u8` |
    /// | 14 | Close | |
    /// | 15 | NewEpoch | `endpoints: u8` |
    /// | 16 | ProbeDone | `old_epoch: u8` (bit 0), `count: u8` (mod 8), `count` × (`ok: u8` (bit 0), `ms: u16`) |
    pub fn read(c: &mut Cursor<'_>) -> Self {
        let bit = |flags: u8, n: u8| flags >> n & 1 != 0;
        match c.u8() % OPCODES {
            0 => {
                let flags = c.u8();
                let timeout_ms = c.u16();
                let pin = c.u8();
                Op::Submit {
                    repeat: bit(flags, 0),
                    retry_safe: bit(flags, 1),
                    timeout_ms,
                    pin: bit(flags, 2).then_some(pin),
                }
            }
            1 => Op::Cancel { back: c.u8() },
            2 => Op::Pin { id: c.u8(), timeout_ms: c.u16() },
            3 => Op::Release { id: c.u8() },
            code @ 4..=8 => {
                let (pick, skew) = (c.u8(), c.u8() as i8);
                match code {
                    4 => Op::Connected { pick, skew },
                    5 => Op::Ready { pick, skew },
                    6 => Op::Failed { pick, skew },
                    7 => Op::Closed { pick, skew },
                    _ => Op::SendCompleted { pick, skew },
                }
            }
            9 => {
                let (pick, skew, flags) = (c.u8(), c.u8() as i8, c.u8());
                Op::Reply { pick, skew, wrong_type: bit(flags, 0), zero_id: bit(flags, 1), invalid: bit(flags, 2) }
            }
            10 => Op::Push { slot: c.u8(), msg_id: c.u32(), len: c.u8() },
            11 => Op::ReadPushes { max: c.u8() },
            12 => Op::Advance { ms: c.u16() },
            13 => Op::Rewind { ms: c.u8() },
            14 => Op::Close,
            15 => Op::NewEpoch { endpoints: c.u8() },
            _ => {
                let old_epoch = bit(c.u8(), 0);
                let count = c.u8() % 8;
                let latencies = (0..count)
                    .map(|_| {
                        let ok = bit(c.u8(), 0);
                        let ms = c.u16();
                        ok.then_some(ms)
                    })
                    .collect();
                Op::ProbeDone { old_epoch, latencies }
            }
        }
    }

    /// Appends the bytes [`read`](Self::read) reads back to `self` (at most
    /// 7 probe latencies).
    pub fn write(&self, out: &mut Vec<u8>) {
        let flags = |bits: &[bool]| bits.iter().enumerate().fold(0u8, |f, (i, &b)| f | u8::from(b) << i);
        match self {
            Op::Submit { repeat, retry_safe, timeout_ms, pin } => {
                out.extend_from_slice(&[0, flags(&[*repeat, *retry_safe, pin.is_some()])]);
                out.extend_from_slice(&timeout_ms.to_le_bytes());
                out.push(pin.unwrap_or(0));
            }
            Op::Cancel { back } => out.extend_from_slice(&[1, *back]),
            Op::Pin { id, timeout_ms } => {
                out.extend_from_slice(&[2, *id]);
                out.extend_from_slice(&timeout_ms.to_le_bytes());
            }
            Op::Release { id } => out.extend_from_slice(&[3, *id]),
            Op::Connected { pick, skew } => out.extend_from_slice(&[4, *pick, *skew as u8]),
            Op::Ready { pick, skew } => out.extend_from_slice(&[5, *pick, *skew as u8]),
            Op::Failed { pick, skew } => out.extend_from_slice(&[6, *pick, *skew as u8]),
            Op::Closed { pick, skew } => out.extend_from_slice(&[7, *pick, *skew as u8]),
            Op::SendCompleted { pick, skew } => out.extend_from_slice(&[8, *pick, *skew as u8]),
            Op::Reply { pick, skew, wrong_type, zero_id, invalid } => {
                out.extend_from_slice(&[9, *pick, *skew as u8, flags(&[*wrong_type, *zero_id, *invalid])])
            }
            Op::Push { slot, msg_id, len } => {
                out.extend_from_slice(&[10, *slot]);
                out.extend_from_slice(&msg_id.to_le_bytes());
                out.push(*len);
            }
            Op::ReadPushes { max } => out.extend_from_slice(&[11, *max]),
            Op::Advance { ms } => {
                out.push(12);
                out.extend_from_slice(&ms.to_le_bytes());
            }
            Op::Rewind { ms } => out.extend_from_slice(&[13, *ms]),
            Op::Close => out.push(14),
            Op::NewEpoch { endpoints } => out.extend_from_slice(&[15, *endpoints]),
            Op::ProbeDone { old_epoch, latencies } => {
                let latencies = &latencies[..latencies.len().min(7)];
                out.extend_from_slice(&[16, u8::from(*old_epoch), latencies.len() as u8]);
                for latency in latencies {
                    out.push(u8::from(latency.is_some()));
                    out.extend_from_slice(&latency.unwrap_or(0).to_le_bytes());
                }
            }
        }
    }
}

/// A family of reply parsers that gets its own fuzz target, so a long
/// campaign spends its executions there rather than across every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Past days: minute lines and ticks of a past day, recent minutes,
    /// delisted bars, the legacy minute line.
    History,
    /// Today: minute line, ticks, call auction, minute aux, sparkline, refresh.
    Intraday,
    /// Structure and corporate data: categories, company info, limits,
    /// server files, capital changes, finance.
    Structure,
}

impl Family {
    /// The command codes of the family.
    pub fn msg_types(self) -> &'static [u16] {
        use tdx_engine::proto::commands::*;
        use tdx_engine::proto::Command;
        match self {
            Family::History => &[
                HistoryMinutes::MSG_TYPE,
                HistoryTrades::MSG_TYPE,
                DetailedHistoryTrades::MSG_TYPE,
                RecentMinutes::MSG_TYPE,
                DelistedBars::MSG_TYPE,
                LegacyMinutes::MSG_TYPE,
            ],
            Family::Intraday => &[
                Minutes::MSG_TYPE,
                Trades::MSG_TYPE,
                Auction::MSG_TYPE,
                MinuteAux::MSG_TYPE,
                Sparkline::MSG_TYPE,
                Refresh::MSG_TYPE,
            ],
            Family::Structure => &[
                CategoryQuotes::MSG_TYPE,
                CompanyCategory::MSG_TYPE,
                CompanyContent::MSG_TYPE,
                SpecialLimits::MSG_TYPE,
                FileMeta::MSG_TYPE,
                FileRead::MSG_TYPE,
                CapitalChanges::MSG_TYPE,
                FinanceInfo::MSG_TYPE,
            ],
        }
    }

    /// `raw` when it is one of the family's codes, else one of them chosen
    /// by it: every input exercises the family, and a seed written with a
    /// real code reads back unchanged.
    pub fn msg_type(self, raw: u16) -> u16 {
        let types = self.msg_types();
        if types.contains(&raw) {
            raw
        } else {
            types[usize::from(raw) % types.len()]
        }
    }
}

/// `reply_parsers`' check for the 7727 commands, EX and MAC-EX: a request
/// body that decodes and a payload that parses must re-encode to bytes
/// that parse to the same bytes again.
pub fn check_ex_reply(msg_type: u16, body: &[u8], payload: &[u8]) {
    use tdx_engine::proto::ex::{ExRequest, MacExRequest};
    let reparse = |payload: &[u8]| match ExRequest::decode_body(msg_type, body) {
        Ok(request) => Some(request.reparse_reply(payload)),
        Err(_) => MacExRequest::decode_body(msg_type, body).ok().map(|r| r.reparse_reply(payload)),
    };
    let Some(Ok(encoded)) = reparse(payload) else {
        return;
    };
    let again = reparse(&encoded).expect("the request decodes again").expect("a re-encoded 7727 reply parses");
    assert_eq!(again, encoded, "7727 reply bytes changed across parse/encode");
}

/// `raw` if it is an EX or MAC-EX command code, else one picked by it, so
/// every `ex_parsers` execution lands in a 7727 parser.
pub fn ex_msg_type(raw: u16) -> u16 {
    use tdx_engine::proto::ex::{ExRequest, MacExRequest};
    let ex = ExRequest::MSG_TYPES.as_slice();
    let types = || ex.iter().chain(MacExRequest::MSG_TYPES);
    if types().any(|&t| t == raw) {
        raw
    } else {
        let n = ex.len() + MacExRequest::MSG_TYPES.len();
        *types().nth(usize::from(raw) % n).expect("an index below the count")
    }
}

/// The reply-parser check every reply target makes: the body must decode
/// as a request of `msg_type`; a payload that parses and that the server
/// side can encode again parses back to itself (modulo NaN floats, which
/// compare unequal).
pub fn check_reply(msg_type: u16, body: &[u8], payload: &[u8]) {
    use tdx_engine::proto::Request;
    let Ok(request) = Request::decode(msg_type, body) else {
        return;
    };
    let Ok(reply) = request.parse_reply(payload) else {
        return;
    };
    let mut encoded = Vec::new();
    if request.encode_reply(&reply, &mut encoded).is_err() {
        return;
    }
    let again = request.parse_reply(&encoded).expect("a re-encoded reply parses");
    // Formatted only on a mismatch: a Debug string per execution of a
    // several-hundred-record reply cost history_parsers most of its speed.
    assert!(again == reply || format!("{reply:?}").contains("NaN"), "reply changed across encode/parse");
}
