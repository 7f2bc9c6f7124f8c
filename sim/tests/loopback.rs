//! The reference server on real tokio sockets on 127.0.0.1: every command
//! answered as the market says, paging, pushes, faults, and isolation of a
//! malformed connection.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Client, ClientError};
use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Market as Exchange, ProtoError, Reply, Request, SecurityCode};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, MarketData, PushFlood, ReferenceServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SEED: u64 = 11;

async fn start(faults: Faults) -> (std::net::SocketAddr, ReferenceServer, Arc<MarketData>) {
    let data = Arc::new(MarketData::new(Market::new(SEED)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = ReferenceServer::new(data.clone(), 0, faults);
    tokio::spawn(server.clone().run(listener));
    (addr, server, data)
}

async fn client(addr: std::net::SocketAddr) -> Client<TcpStream> {
    Client::new(TcpStream::connect(addr).await.unwrap())
}

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

/// Why: every command the codec knows must be answered with exactly what
/// the market holds, through real framing and compression.
#[tokio::test]
async fn every_command_answers_from_the_market() {
    let (addr, _server, data) = start(Faults::default()).await;
    let mut c = client(addr).await;
    let mut requests: Vec<Request> = vec![
        Handshake { step: 1 }.into(),
        Handshake { step: 2 }.into(),
        LegacySetup::default().into(),
        Heartbeat.into(),
        Minutes::from(QuoteTarget::from(code("sz000001"))).into(),
        Trades { code: code("sz000001"), start: 0, count: 1800 }.into(),
        MinuteAux { code: code("sz000001"), kind: AuxKind::VOLUME_COMPARISON }.into(),
        MinuteAux { code: code("sh510300"), kind: AuxKind::BUY_SELL_STRENGTH }.into(),
        Sparkline::new(code("bj430047")).into(),
        Quotes {
            targets: ["sz000001", "sh600000", "sh510300", "bj430047", "sz399001"].map(|c| code(c).into()).to_vec(),
        }
        .into(),
        Snapshots { targets: ["sz000001", "sh510300", "sz999999"].map(|c| code(c).into()).to_vec() }.into(),
    ];
    for exchange in Exchange::ALL {
        requests.push(SecurityCount { market: exchange, client_date: 0 }.into());
        requests.push(SecurityList { market: exchange, start: 0, limit: 1600 }.into());
        requests.push(LegacySecurityList { market: exchange, start: 1000 }.into());
    }
    let date = tdx_engine::proto::TradeDate::new(data.market().history_dates()[3]);
    for start in [0, 1000, 60_000] {
        requests.push(DetailedHistoryTrades { date, code: code("sz000001"), start, count: 1800 }.into());
    }
    for c in ["sz000001", "sh000001", "sh510300", "bj899050"] {
        for period in [
            Period::Day,
            Period::Days(1),
            Period::Week,
            Period::Month,
            Period::Min1,
            Period::Min5,
            Period::Min60,
            Period::Minutes(10),
        ] {
            for start in [0, 800] {
                requests.push(Bars::new(code(c), period, start, 800).into());
            }
        }
    }
    for request in &requests {
        let reply = c.call(request).await.unwrap_or_else(|e| panic!("{request:?}: {e:?}"));
        assert_eq!(reply, respond(&data, 0, request), "{}", request.name());
    }
    // Spot checks that the answers are not trivially empty.
    let count = c.call(&SecurityCount { market: Exchange::Sz, client_date: 0 }.into()).await.unwrap();
    assert!(matches!(count, Reply::SecurityCount(n) if n > 2000));
    let bars = c.call(&Bars::new(code("sh000001"), Period::Day, 0, 800).into()).await.unwrap();
    let Reply::Bars(bars) = bars else { panic!() };
    assert_eq!(bars.len(), 800);
    assert!(bars.iter().all(|b| b.breadth.is_some()), "index bars carry breadth");
    assert!(c.pushes.is_empty(), "no pushes without a refresh");
}

/// Why: clients page 0x044d until an empty page, and 0x052d until an empty page.
#[tokio::test]
async fn paging_ends_with_an_empty_page() {
    let (addr, _server, data) = start(Faults::default()).await;
    let mut c = client(addr).await;
    let mut start = 0;
    loop {
        let Reply::SecurityList(page) =
            c.call(&SecurityList { market: Exchange::Sh, start, limit: 1600 }.into()).await.unwrap()
        else {
            panic!()
        };
        if page.is_empty() {
            break;
        }
        start += page.len() as u32;
    }
    assert_eq!(start as usize, data.market().listings(Exchange::Sh).len());
    let mut bars = 0;
    for page in 0.. {
        let Reply::Bars(b) = c.call(&Bars::new(code("sz000001"), Period::Min1, page * 800, 800).into()).await.unwrap()
        else {
            panic!()
        };
        if b.is_empty() {
            break;
        }
        bars += b.len();
    }
    assert_eq!(bars, 20 * 240, "six pages of one-minute history");
}

/// Why: eltdx reads 0x0547 pushes after a refresh; they must parse with the
/// refresh request and never reuse a request's msg_id.
#[tokio::test]
async fn refresh_is_followed_by_pushes() {
    let (addr, _server, _data) = start(Faults::default()).await;
    let mut c = client(addr).await;
    let refresh = Refresh { targets: vec![code("sz000001").into(), code("sh600000").into()] };
    let request: Request = refresh.clone().into();
    let Reply::Refresh(first) = c.call(&request).await.unwrap() else { panic!() };
    assert_eq!(first.records.len(), 2);
    let mut pushed = Vec::new();
    for _ in 0..2 {
        let push = c.frame(Duration::from_secs(2)).await.unwrap();
        assert_eq!(push.header.msg_type, 0x0547);
        assert_ne!(push.header.msg_id, 1);
        let parsed = refresh.parse_reply(&push.payload).unwrap();
        assert_eq!(parsed.records.len(), 1, "one record per push frame");
        pushed.push(parsed.records[0].clone());
    }
    assert_eq!(
        pushed.iter().map(|r| r.code).collect::<Vec<_>>(),
        first.records.iter().map(|r| r.code).collect::<Vec<_>>()
    );
    assert_ne!(pushed, first.records, "pushes carry updates");
}

/// Why: a malformed request closes that connection only; others go on.
#[tokio::test]
async fn malformed_request_closes_only_its_connection() {
    let (addr, _server, _data) = start(Faults::default()).await;
    let mut good = client(addr).await;
    let mut bad = TcpStream::connect(addr).await.unwrap();
    bad.write_all(&[0xff; 12]).await.unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(bad.read(&mut buf).await.unwrap(), 0, "the server closed the malformed connection");
    // A well-framed request with a body its command does not define closes too.
    let mut bad2 = TcpStream::connect(addr).await.unwrap();
    let mut wire = Vec::new();
    tdx_engine::proto::frame::encode_request(&mut wire, 1, 1, 0x044e, &[1, 2, 3]).unwrap();
    bad2.write_all(&wire).await.unwrap();
    assert_eq!(bad2.read(&mut buf).await.unwrap(), 0);
    assert!(good.call(&Heartbeat.into()).await.is_ok());
}

/// Why: the same seed must give the same bytes (simulations replay).
#[tokio::test]
async fn same_seed_same_bytes() {
    let (a, _, _) = start(Faults::default()).await;
    let (b, _, _) = start(Faults::default()).await;
    let request: Request = Bars::new(code("sz000001"), Period::Min5, 0, 800).into();
    let mut bytes = Vec::new();
    for addr in [a, b] {
        let mut c = client(addr).await;
        c.send(&request).await;
        let frame = c.frame(Duration::from_secs(5)).await.unwrap();
        bytes.push((frame.header, frame.payload));
    }
    assert_eq!(bytes[0], bytes[1]);
}

/// One reply to a large (compressed) bars request under `faults`.
async fn one_reply(faults: Faults) -> Result<tdx_engine::proto::Frame, ClientError> {
    reply_to(faults, Bars::new(code("sz000001"), Period::Day, 0, 800).into()).await
}

async fn reply_to(faults: Faults, request: Request) -> Result<tdx_engine::proto::Frame, ClientError> {
    let (addr, _server, _) = start(faults).await;
    let mut c = client(addr).await;
    c.send(&request).await;
    c.frame(Duration::from_secs(1)).await
}

/// Why: each fault must produce the broken stream it names, as a typed
/// error at the client, never a hang of the test.
#[tokio::test]
async fn faults_break_the_stream_as_named() {
    let all = 1000;
    let frame = one_reply(Faults { wrong_id_per_mille: all, ..Default::default() }).await.unwrap();
    assert_eq!(frame.header.msg_id, 2);
    let frame = one_reply(Faults { wrong_type_per_mille: all, ..Default::default() }).await.unwrap();
    assert_ne!(frame.header.msg_type, 0x052d);
    let e = one_reply(Faults { corrupt_zlib_per_mille: all, ..Default::default() }).await.unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Proto(
                ProtoError::CorruptZlib | ProtoError::DecodedLengthMismatch { .. } | ProtoError::ZlibUnfinished
            )
        ),
        "{e:?}"
    );
    let e = one_reply(Faults { oversize_per_mille: all, ..Default::default() }).await.unwrap_err();
    assert!(matches!(e, ClientError::Proto(_)), "{e:?}");
    let e = one_reply(Faults { close_mid_frame_per_mille: all, ..Default::default() }).await.unwrap_err();
    assert!(matches!(e, ClientError::Proto(ProtoError::TruncatedFrame { .. })), "{e:?}");
    // Bad magic: the decoder resyncs past the broken frame and finds nothing.
    let e = one_reply(Faults { bad_magic_per_mille: all, ..Default::default() }).await.unwrap_err();
    assert!(matches!(e, ClientError::TimedOut), "{e:?}");
    // A cut body: a whole frame on the wire whose records do not parse.
    let frame = one_reply(Faults { truncated_body_per_mille: all, ..Default::default() }).await.unwrap();
    let bars: Request = Bars::new(code("sz000001"), Period::Day, 0, 800).into();
    assert!(bars.parse_reply(&frame.payload).is_err(), "a truncated body must not parse");
    // Garbage before a good frame is skipped by the resync.
    let frame = one_reply(Faults { garbage_per_mille: all, ..Default::default() }).await.unwrap();
    assert_eq!(frame.header.msg_id, 1);
    // Drip: the same frame, a byte at a time.
    let count: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
    let frame = reply_to(Faults { drip: Some(Duration::from_millis(1)), ..Default::default() }, count).await.unwrap();
    assert_eq!(frame.header.msg_id, 1);
    let e = one_reply(Faults { refuse_connections: true, ..Default::default() }).await.unwrap_err();
    assert!(matches!(e, ClientError::Closed | ClientError::Io(_)), "{e:?}");
}

#[tokio::test]
async fn failing_handshake_and_live_fault_changes() {
    let (addr, server, _) = start(Faults { fail_handshake: true, ..Default::default() }).await;
    let mut c = client(addr).await;
    let e = c.call(&Handshake::default().into()).await.unwrap_err();
    assert!(matches!(e, ClientError::Proto(ProtoError::Truncated { .. })), "{e:?}");
    // Healing takes effect at the next request on the same connection.
    server.faults().set(Faults::default());
    assert!(c.call(&Handshake::default().into()).await.is_ok());
}

#[tokio::test]
async fn push_flood_after_refresh() {
    let flood = PushFlood { rate_per_sec: 1000, size: 512 };
    let (addr, _server, _) = start(Faults { push_flood: Some(flood), ..Default::default() }).await;
    let mut c = client(addr).await;
    c.call(&Refresh { targets: vec![code("sz000001").into()] }.into()).await.unwrap();
    let mut sizes = Vec::new();
    for _ in 0..50 {
        sizes.push(c.frame(Duration::from_secs(1)).await.unwrap().payload.len());
    }
    assert!(sizes.iter().filter(|&&n| n == 512).count() >= 40, "{sizes:?}");
}

#[tokio::test]
async fn stalls_delay_but_answer() {
    let (addr, _server, data) = start(Faults {
        stall_per_mille: 1000,
        stall: Duration::from_millis(200),
        latency: Duration::from_millis(5),
        jitter: Duration::from_millis(5),
        ..Default::default()
    })
    .await;
    let mut c = client(addr).await;
    let request: Request = SecurityCount { market: Exchange::Bj, client_date: 0 }.into();
    assert_eq!(c.call(&request).await.unwrap(), respond(&data, 0, &request));
}
