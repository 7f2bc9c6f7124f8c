//! Decoder throughput: MB/s of wire bytes through `FrameDecoder` for small
//! raw frames (a count reply), a ~64 KiB raw bars reply and the same reply
//! zlib-compressed, plus parsing that bars payload into typed bars.
//!
//! Run: `cargo bench -p tdx-engine --bench decoder`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tdx_engine::proto::commands::{Bar, Bars, Command, Period};
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::{Compression, Date, DateTime, FrameDecoder, Price, RoundLimits, TimeOfDay};

/// A bars payload close to the 64 KiB frame limit, with a seeded random walk.
fn bars_payload(request: &Bars) -> Vec<u8> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut price = 12_000i64;
    let mut day = Date::new(2000, 1, 1).unwrap().days_since_epoch();
    let mut bars = Vec::new();
    loop {
        let open = price + (next() % 200) as i64 - 100;
        let close = open + (next() % 400) as i64 - 200;
        let bar = Bar {
            time: DateTime {
                date: Date::from_days_since_epoch(day).unwrap(),
                time: TimeOfDay::new(15, 0, 0, 0).unwrap(),
            },
            open: Price(open),
            close: Price(close),
            high: Price(open.max(close) + (next() % 100) as i64),
            low: Price(open.min(close) - (next() % 100) as i64),
            volume: (next() % 10_000_000) as f32,
            amount: (next() % 1_000_000_000) as f32,
            breadth: None,
        };
        bars.push(bar);
        let mut out = Vec::new();
        request.encode_reply(&bars, &mut out).unwrap();
        if out.len() > 64 * 1024 - 64 {
            return out;
        }
        price = close.max(1000);
        day += 1;
    }
}

fn stream_of(frame: &[u8], min_bytes: usize) -> Vec<u8> {
    frame.repeat(min_bytes.div_ceil(frame.len()))
}

fn decode_all(stream: &[u8]) -> usize {
    let mut decoder = FrameDecoder::new();
    let mut frames = 0;
    for chunk in stream.chunks(64 * 1024) {
        decoder.feed(chunk).unwrap();
        loop {
            let round = decoder.decode_round(RoundLimits::default(), |_| frames += 1).unwrap();
            if round.end == tdx_engine::proto::RoundEnd::NeedBytes {
                break;
            }
        }
    }
    frames
}

fn bench(c: &mut Criterion) {
    let request = Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 800);
    let payload = bars_payload(&request);
    let mut count_frame = Vec::new();
    encode_response(&mut count_frame, 1, 0x044e, &[0xe7, 0x19], Compression::Never).unwrap();
    let mut raw_frame = Vec::new();
    encode_response(&mut raw_frame, 2, 0x052d, &payload, Compression::Never).unwrap();
    let mut zlib_frame = Vec::new();
    encode_response(&mut zlib_frame, 3, 0x052d, &payload, Compression::IfSmaller(6)).unwrap();
    eprintln!(
        "count frame {} B, bars payload {} B, zlib frame {} B",
        count_frame.len(),
        payload.len(),
        zlib_frame.len()
    );

    let mut group = c.benchmark_group("decoder");
    for (name, frame) in [("count_18B", &count_frame), ("bars_raw_64KiB", &raw_frame), ("bars_zlib", &zlib_frame)] {
        let stream = stream_of(frame, 4 * 1024 * 1024);
        group.throughput(Throughput::Bytes(stream.len() as u64));
        group.bench_function(name, |b| b.iter(|| decode_all(&stream)));
    }
    group.finish();

    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(payload.len() as u64));
    group.bench_function("bars_64KiB", |b| {
        b.iter_batched(|| (), |_| request.parse_reply(&payload).unwrap().len(), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
