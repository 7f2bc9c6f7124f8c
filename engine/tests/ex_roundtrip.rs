//! Encode-then-decode round trips for every EX (7727) command, both
//! directions and through both stream decoders; cuts and garbage.
//!
//! Why: the reference exchange answers EX requests with the same encoders
//! the engine parses with; a value that does not survive the trip would
//! make the simulation lie about what real servers send.

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::prelude::*;
use tdx_engine::proto::ex::*;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::time::{Date, DateTime, TimeOfDay};
use tdx_engine::proto::*;

fn arb_f32() -> impl Strategy<Value = f32> {
    any::<u32>().prop_map(|bits| {
        let f = f32::from_bits(bits);
        if f.is_nan() {
            0.0
        } else {
            f
        }
    })
}

fn arb_code() -> impl Strategy<Value = ExCode> {
    (any::<u8>(), "[A-Z0-9]{1,9}").prop_map(|(m, c)| ExCode::new(m, &c).unwrap())
}

fn arb_date() -> impl Strategy<Value = Date> {
    (2004u16..2035, 1u8..=12, 1u8..=28).prop_map(|(y, m, d)| Date::new(y, m, d).unwrap())
}

fn arb_minute() -> impl Strategy<Value = TimeOfDay> {
    (0u16..1440).prop_map(|m| TimeOfDay::from_minutes(m).unwrap())
}

fn arb_level() -> impl Strategy<Value = ExLevel> {
    (arb_f32(), any::<u32>()).prop_map(|(price, volume)| ExLevel { price, volume })
}

fn arb_quote() -> impl Strategy<Value = ExQuote> {
    (
        arb_code(),
        prop::array::uniform6(arb_f32()),
        prop::array::uniform10(any::<u32>()),
        prop::array::uniform5(arb_level()),
        prop::array::uniform5(arb_level()),
    )
        .prop_map(|(code, [pre_close, open, high, low, price, amount], w, bids, asks)| ExQuote {
            code,
            activity: w[0],
            pre_close,
            open,
            high,
            low,
            price,
            opened: w[1],
            reserved_a: w[2],
            volume: w[3],
            last_volume: w[4],
            amount,
            inner: w[5],
            outer: w[6],
            reserved_b: w[7],
            open_interest: w[8],
            bids,
            asks,
        })
}

fn arb_minute_bar() -> impl Strategy<Value = ExBar> {
    (arb_date(), arb_minute(), prop::array::uniform5(arb_f32()), any::<u32>(), any::<u32>()).prop_map(
        |(date, time, [open, high, low, close, amount], open_interest, volume)| ExBar {
            at: ExBarTime::Minute(DateTime { date, time }),
            open,
            high,
            low,
            close,
            open_interest,
            volume,
            amount,
        },
    )
}

fn arb_ex_minute() -> impl Strategy<Value = ExMinute> {
    (arb_minute(), arb_f32(), arb_f32(), any::<u32>(), any::<u32>()).prop_map(
        |(time, price, avg_price, volume, open_interest)| ExMinute { time, price, avg_price, volume, open_interest },
    )
}

fn arb_tick() -> impl Strategy<Value = ExTick> {
    (arb_minute(), any::<u32>(), any::<u32>(), any::<i32>(), any::<u16>()).prop_map(
        |(time, price_milli, volume, oi_change, nature)| ExTick { time, price_milli, volume, oi_change, nature },
    )
}

fn arb_ticks_page() -> impl Strategy<Value = (ExTicks, Vec<ExTick>)> {
    (arb_code(), 0u32..=i32::MAX as u32, vec(arb_tick(), 0..40)).prop_flat_map(|(code, start, ticks)| {
        let least = ticks.len().max(1) as u16;
        (least..=1800).prop_map(move |count| (ExTicks { code: code.clone(), start, count }, ticks.clone()))
    })
}

/// One EX command with a reply its server could send, erased to bytes.
#[derive(Debug, Clone)]
struct Exchange {
    request: ExRequest,
    payload: Vec<u8>,
    /// Parses `payload` back and compares it with the reply it was encoded from.
    check: fn(&ExRequest, &[u8], &[u8]) -> bool,
}

fn exchange<C, R>(wrap: fn(C) -> ExRequest, command: C, reply: R) -> Exchange
where
    C: Command<Reply = R> + Clone + Debug,
    R: PartialEq + Debug,
{
    let mut payload = Vec::new();
    command.encode_reply(&reply, &mut payload).unwrap();
    // Parsing the same bytes twice must give equal values (no NaN: arb_f32 removes them).
    fn same(request: &ExRequest, a: &[u8], b: &[u8]) -> bool {
        request.reparse_reply(a).ok() == Some(b.to_vec()) && a == b
    }
    Exchange { request: wrap(command), payload, check: same }
}

fn arb_exchange() -> impl Strategy<Value = (Exchange, String)> {
    prop_oneof![
        (arb_code(), arb_quote()).prop_map(|(code, q)| {
            let request = ExQuoteOne { code };
            let want = format!("{q:?}");
            (exchange(ExRequest::Quote, request, q), want)
        }),
        (any::<u8>(), any::<u16>(), vec(arb_quote(), 0..6), 0u16..200).prop_map(|(market, start, quotes, extra)| {
            let count = (quotes.len() as u16 + extra).clamp(1, 200);
            let request = ExQuoteList { market, start, count };
            let want = format!("{quotes:?}");
            (exchange(ExRequest::QuoteList, request, quotes), want)
        }),
        (arb_code(), 0u16..12, arb_date(), arb_date(), vec(arb_minute_bar(), 0..40)).prop_map(
            |(code, period, start, end, bars)| {
                let request = ExBarsRange { code, period: ExPeriod::from_code(period).unwrap(), start, end };
                let want = format!("{bars:?}");
                (exchange(ExRequest::BarsRange, request, bars), want)
            }
        ),
        (arb_code(), vec(arb_ex_minute(), 0..60)).prop_map(|(code, minutes)| {
            let want = format!("{minutes:?}");
            (exchange(ExRequest::Minutes, ExMinutes { code }, minutes), want)
        }),
        (arb_code(), arb_date(), vec(arb_ex_minute(), 0..60)).prop_map(|(code, date, minutes)| {
            let want = format!("{minutes:?}");
            (exchange(ExRequest::HistoryMinutes, ExHistoryMinutes { date, code }, minutes), want)
        }),
        arb_ticks_page().prop_map(|(page, ticks)| {
            let want = format!("{ticks:?}");
            (exchange(ExRequest::Ticks, page, ticks), want)
        }),
        (arb_date(), arb_ticks_page()).prop_map(|(date, (page, ticks))| {
            let want = format!("{ticks:?}");
            (exchange(ExRequest::HistoryTicks, ExHistoryTicks { date, page }, ticks), want)
        }),
    ]
}

/// The typed reply of `request` to `payload`, printed (the reply types differ).
fn parsed(request: &ExRequest, payload: &[u8]) -> Result<String, ProtoError> {
    Ok(match request {
        ExRequest::Quote(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::QuoteList(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::BarsRange(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::Minutes(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::HistoryMinutes(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::Ticks(c) => format!("{:?}", c.parse_reply(payload)?),
        ExRequest::HistoryTicks(c) => format!("{:?}", c.parse_reply(payload)?),
        other => format!("{other:?} is not generated here"),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The server decodes exactly what the client encoded, and the client
    /// parses exactly what the server encoded, through both stream decoders.
    #[test]
    fn every_ex_command_round_trips((ex, want) in arb_exchange(), msg_id in 1u32.., zlib in any::<bool>()) {
        let mut wire = Vec::new();
        ex.request.encode_frame(msg_id, &mut wire).unwrap();
        let mut requests = RequestDecoder::new();
        requests.feed(&wire).unwrap();
        let frame = requests.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.prefix, EX_REQUEST_PREFIX);
        prop_assert_eq!(frame.header.msg_id, msg_id);
        prop_assert_eq!(&ExRequest::decode(&frame).unwrap(), &ex.request);

        let compression = if zlib { Compression::IfSmaller(6) } else { Compression::Never };
        let mut wire = Vec::new();
        encode_response(&mut wire, msg_id, ex.request.msg_type(), &ex.payload, compression).unwrap();
        let mut frames = FrameDecoder::new();
        frames.feed(&wire).unwrap();
        let frame = frames.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.msg_id, msg_id);
        prop_assert_eq!(&frame.payload[..], &ex.payload[..]);
        prop_assert_eq!(parsed(&ex.request, &frame.payload).unwrap(), want);
        prop_assert!((ex.check)(&ex.request, &frame.payload, &ex.payload));
    }

    /// Every EX reply is fixed-size records after a counted header, so every
    /// proper prefix of a valid reply is a typed error.
    #[test]
    fn truncated_ex_replies_are_errors((ex, _) in arb_exchange(), cut in any::<prop::sample::Index>()) {
        let cut = cut.index(ex.payload.len());
        prop_assert!(parsed(&ex.request, &ex.payload[..cut]).is_err(), "{:?} cut at {cut}", ex.request);
    }

    /// Parsers and body decoders given any bytes return a value or a typed
    /// error, never panic; the request decoder frames every EX code.
    #[test]
    fn ex_parsers_never_panic_on_garbage((ex, _) in arb_exchange(), payload in vec(any::<u8>(), 0..800)) {
        let _ = parsed(&ex.request, &payload);
        let _ = ExRequest::decode_body(ex.request.msg_type(), &payload);
        let mut frame = vec![EX_REQUEST_PREFIX, 0, 0, 0, 0, 1];
        let len = (payload.len() as u16 + 2).to_le_bytes();
        frame.extend_from_slice(&len);
        frame.extend_from_slice(&len);
        frame.extend_from_slice(&ex.request.msg_type().to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut decoder = RequestDecoder::new();
        decoder.feed(&frame).unwrap();
        let decoded = decoder.next_frame().unwrap().unwrap();
        prop_assert_eq!(decoded.header.msg_type, ex.request.msg_type());
        let _ = ExRequest::decode(&decoded);
    }
}
