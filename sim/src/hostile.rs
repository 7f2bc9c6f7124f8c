//! Hostile text ([`Faults::hostile_text`](crate::Faults::hostile_text)): a
//! server that weaves terminal escape sequences and control characters into
//! every text it sends (security names, board names, company sections and
//! their text), names its company files with a path that climbs out of any
//! directory, and turns clients away with a message that carries a
//! carriage return. The data is otherwise the market's, so a client's
//! numbers still match [`respond`].

use std::sync::{Arc, Mutex, OnceLock};

use tdx_engine::proto::blockfile::{encode_block_file, md5_hex, BOARD_NAME_BYTES};
use tdx_engine::proto::commands::{CompanyContent, COMPANY_NAME_BYTES};
use tdx_engine::proto::{Reply, Request};

use crate::boards::{BoardFile, BoardFiles};
use crate::company::company_file;
use crate::market_data::MarketData;
use crate::responder::respond;

/// The file name every company section names: a path out of any directory.
pub const HOSTILE_FILENAME: &str = "../../../../tmp/tdx-hostile.txt";

/// What a hostile server says instead of the handshake reply: the mismatch
/// message, then a carriage return and a line that would print over it.
pub const HOSTILE_MISMATCH_MESSAGE: &str = "客户端与行情主站不匹配\r连接成功,请输入密码:";

/// An OSC window-title change ended by a bell, a screen clear, a colour,
/// a backspace and a DEL: what a terminal would obey.
pub const ESCAPES: [&str; 4] = ["\u{1b}]0;pwned\u{7}", "\u{1b}[2J", "\u{1b}[31m", "\u{8}\u{7f}"];

/// GBK bytes of `s` (its characters are all GBK).
fn gbk_len(s: &str) -> usize {
    encoding_rs::GBK.encode(s).0.len()
}

/// `escape` then as much of `name` as fits in `width` GBK bytes, with a
/// visible character kept last so a decoder's trim keeps the escape inside.
pub fn weave(escape: &str, name: &str, width: usize) -> String {
    let mut out = escape.to_owned();
    for c in name.chars() {
        let mut next = out.clone();
        next.push(c);
        if gbk_len(&next) > width {
            break;
        }
        out = next;
    }
    if out == escape {
        // Nothing of the name fits: a shorter escape and one letter.
        out = format!("{}x", &escape[..escape.len().min(width.saturating_sub(1))]);
    }
    out
}

/// The reply a hostile server sends to `request`.
pub fn respond_hostile(data: &MarketData, server: usize, request: &Request) -> Reply {
    match request {
        Request::CompanyContent(c) if c.filename == HOSTILE_FILENAME => {
            // The client asks by the name it was given: answer for the real file.
            let real = data.market().listing(c.code).and_then(|l| company_file(data, l)).map(|f| f.filename);
            let asked = CompanyContent { filename: real.unwrap_or_default(), ..c.clone() };
            let mut reply = respond(data, server, &Request::CompanyContent(asked));
            if let Reply::CompanyContent(text) = &mut reply {
                // Escapes in, the length kept: a client checks it against what it asked.
                let (head, tail) = (ESCAPES[0].as_bytes(), b"\r\x1b[2J");
                let len = text.text_raw.len();
                if len > head.len() + tail.len() {
                    let mut raw = head.to_vec();
                    raw.extend_from_slice(&text.text_raw[..len - head.len() - tail.len()]);
                    raw.extend_from_slice(tail);
                    text.text_raw = raw;
                }
            }
            reply
        }
        Request::FileMeta(_) | Request::FileRead(_) => {
            let (name, boards) = match request {
                Request::FileMeta(m) => (m.name.as_str(), hostile_boards(data)),
                Request::FileRead(r) => (r.path.as_str(), hostile_boards(data)),
                _ => unreachable!("matched above"),
            };
            match boards.file(name) {
                Some(_) => respond_with_boards(data, server, request, &boards),
                None => respond(data, server, request),
            }
        }
        _ => {
            let mut reply = respond(data, server, request);
            match &mut reply {
                Reply::SecurityList(rows) => {
                    for (i, s) in rows.iter_mut().enumerate() {
                        s.name = weave(ESCAPES[i % ESCAPES.len()], &s.name, 16);
                    }
                }
                Reply::LegacySecurityList(rows) => {
                    for (i, s) in rows.iter_mut().enumerate() {
                        s.name = weave(ESCAPES[(i + 1) % ESCAPES.len()], &s.name, 8);
                    }
                }
                Reply::CompanyCategory(sections) => {
                    for (i, s) in sections.iter_mut().enumerate() {
                        s.name = weave(ESCAPES[i % ESCAPES.len()], &s.name, COMPANY_NAME_BYTES);
                        s.filename = HOSTILE_FILENAME.into();
                    }
                }
                _ => {}
            }
            reply
        }
    }
}

/// Hostile board files built so far, by market seed.
type BuiltBoards = Mutex<Vec<(u64, Arc<BoardFiles>)>>;

/// The market's board files with every board name led by an escape
/// (names stay unique: each keeps its own characters after the escape).
fn hostile_boards(data: &MarketData) -> Arc<BoardFiles> {
    // One copy per market seed: building them encodes about 1 MB.
    static BUILT: OnceLock<BuiltBoards> = OnceLock::new();
    let seed = data.market().seed();
    let built = BUILT.get_or_init(Mutex::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, files)) = built.iter().find(|(s, _)| *s == seed) {
        return files.clone();
    }
    let files = BoardFiles {
        files: data
            .boards()
            .files
            .iter()
            .map(|f| {
                let boards: Vec<_> = f
                    .boards
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let mut b = b.clone();
                        // One control byte and the name: every name still fits its 9 bytes
                        // when the original left a byte free; else the escape replaces its last character.
                        b.name = weave(["\u{1b}", "\u{7}", "\u{8}"][i % 3], &b.name, BOARD_NAME_BYTES);
                        b
                    })
                    .collect();
                let bytes = encode_block_file("tdx-sim hostile boards", &boards).expect("woven names fit the layout");
                BoardFile { kind: f.kind, md5: md5_hex(&bytes), boards, bytes }
            })
            .collect(),
    };
    let files = Arc::new(files);
    built.push((seed, files.clone()));
    files
}

/// `respond` for a board file request, from `boards` instead of the market's.
fn respond_with_boards(data: &MarketData, server: usize, request: &Request, boards: &BoardFiles) -> Reply {
    use tdx_engine::proto::commands::{FileMetaReply, FILE_CHUNK_BYTES_MAX};
    match request {
        Request::FileMeta(m) => Reply::FileMeta(match boards.file(&m.name) {
            Some(f) => {
                let mut hash = [0u8; 32];
                hash.copy_from_slice(f.md5.as_bytes());
                FileMetaReply { size: f.bytes.len() as u32, reserved_a: 0, hash, reserved_b: 0 }
            }
            None => FileMetaReply { size: 0, reserved_a: 0, hash: [0; 32], reserved_b: 0 },
        }),
        Request::FileRead(r) => Reply::FileRead(
            boards
                .file(&r.path)
                .map(|f| {
                    let start = (r.offset as usize).min(f.bytes.len());
                    let len = r.size.min(FILE_CHUNK_BYTES_MAX) as usize;
                    f.bytes[start..(start + len).min(f.bytes.len())].to_vec()
                })
                .unwrap_or_default(),
        ),
        _ => respond(data, server, request),
    }
}

/// [`HOSTILE_MISMATCH_MESSAGE`] in GBK, as the whole reply payload.
pub fn hostile_mismatch_payload() -> Vec<u8> {
    encoding_rs::GBK.encode(HOSTILE_MISMATCH_MESSAGE).0.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Market;
    use tdx_engine::proto::blockfile::parse_block_file;
    use tdx_engine::proto::commands::{CompanyCategory, SecurityList};
    use tdx_engine::proto::text::server_message;

    #[test]
    fn every_text_carries_an_escape_and_still_encodes() {
        let data = MarketData::new(Market::new(1));
        let list = Request::SecurityList(SecurityList { market: tdx_engine::proto::Market::Sz, start: 0, limit: 40 });
        let Reply::SecurityList(rows) = respond_hostile(&data, 0, &list) else { panic!("a list") };
        assert!(rows.iter().all(|s| s.name.chars().any(char::is_control)), "{rows:?}");
        let mut out = Vec::new();
        list.encode_reply(&respond_hostile(&data, 0, &list), &mut out).expect("hostile names fit the wire");
        let company = Request::CompanyCategory(CompanyCategory { code: "sz000001".parse().unwrap(), reserved: 0 });
        let Reply::CompanyCategory(sections) = respond_hostile(&data, 0, &company) else { panic!("sections") };
        assert!(!sections.is_empty() && sections.iter().all(|s| s.filename == HOSTILE_FILENAME));
        let content = Request::CompanyContent(CompanyContent::new("sz000001".parse().unwrap(), &sections[0]));
        let Reply::CompanyContent(text) = respond_hostile(&data, 0, &content) else { panic!("text") };
        assert!(text.text_raw.starts_with(ESCAPES[0].as_bytes()) && text.text_raw.len() == sections[0].length as usize);
        for f in &hostile_boards(&data).files {
            let boards = parse_block_file(&f.bytes).unwrap();
            assert!(boards.iter().all(|b| b.name.chars().next().is_some_and(char::is_control)), "{:?}", f.kind);
            assert_eq!(boards.len(), data.boards().of(f.kind).len());
        }
        assert_eq!(server_message(&hostile_mismatch_payload()).as_deref(), Some(HOSTILE_MISMATCH_MESSAGE));
    }
}
