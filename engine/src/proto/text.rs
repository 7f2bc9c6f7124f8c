//! GBK text in fixed-width, NUL-padded fields (docs/PROTOCOL.md, Text, codes and markets).

use encoding_rs::GBK;

use super::ProtoError;

/// Decodes a fixed-width GBK field the way eltdx does: malformed byte
/// sequences are skipped, NULs removed, and surrounding whitespace trimmed.
pub fn decode_gbk(raw: &[u8]) -> String {
    let (text, _had_errors) = GBK.decode_without_bom_handling(raw);
    let cleaned: String = text.chars().filter(|&c| c != '\u{fffd}' && c != '\0').collect();
    cleaned.trim().to_owned()
}

/// Encodes `text` as GBK into exactly `width` bytes, NUL-padded.
pub fn encode_gbk(out: &mut Vec<u8>, text: &str, width: usize, what: &'static str) -> Result<(), ProtoError> {
    let (bytes, _, unmappable) = GBK.encode(text);
    if unmappable {
        return Err(ProtoError::TextNotGbk { what });
    }
    if bytes.len() > width {
        return Err(ProtoError::TextTooLong { what, len: bytes.len(), max: width });
    }
    out.extend_from_slice(&bytes);
    out.resize(out.len() + width - bytes.len(), 0);
    Ok(())
}

/// The text of a payload that is a server's plain GBK message instead of
/// the reply asked for: servers of 2026 answer older clients' handshake or
/// setup with `客户端与行情主站不匹配,不能使用!` ("client does not match this
/// server"). `None` unless the whole payload (trailing NULs aside) is
/// well-formed GBK of printable characters, at least two of them.
pub fn server_message(payload: &[u8]) -> Option<String> {
    let end = payload.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let text = GBK.decode_without_bom_handling_and_without_replacement(&payload[..end])?;
    let printable = text.chars().all(|c| !c.is_control() || c == '\n' || c == '\r' || c == '\t');
    // The decoder is GB18030's: its four-byte forms are no GBK text.
    if GBK.encode(&text).2 {
        return None;
    }
    let text = text.trim();
    (printable && text.chars().count() >= 2).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_messages_are_whole_printable_gbk() {
        let (gbk, _, _) = GBK.encode("客户端与行情主站不匹配,不能使用!");
        let mut padded = gbk.to_vec();
        padded.extend([0, 0]);
        assert_eq!(super::server_message(&padded).as_deref(), Some("客户端与行情主站不匹配,不能使用!"));
        assert_eq!(super::server_message(&[0; 10]), None, "zeros are no message");
        assert_eq!(super::server_message(&[0x0c, 0x01, 0x00, 0xff]), None, "binary is no message");
        assert_eq!(super::server_message(&[0x81]), None, "a cut GBK pair is no message");
        let four = [0xb5, 0xb5, 0xb5, 0x36, 0xb5, 0x31];
        assert_eq!(super::server_message(&four), None, "GB18030's four-byte forms are no GBK");
    }

    use super::*;

    #[test]
    fn eltdx_cleanup_rules() {
        assert_eq!(decode_gbk(&[0x20, 0xc9, 0xee, 0xff, 0xca, 0xd0, 0x00, 0x20]), "深市");
        assert_eq!(decode_gbk(&[0xd6, 0xf7, 0xb0, 0xe5, 0xa3, 0xc1, 0xb9, 0xc9]), "主板Ａ股");
    }

    #[test]
    fn encode_pads_and_rejects() {
        let mut out = Vec::new();
        encode_gbk(&mut out, "平安银行", 16, "name").unwrap();
        assert_eq!(out.len(), 16);
        assert_eq!(decode_gbk(&out), "平安银行");
        assert_eq!(
            encode_gbk(&mut Vec::new(), "平安银行平安", 8, "name"),
            Err(ProtoError::TextTooLong { what: "name", len: 12, max: 8 })
        );
        assert_eq!(encode_gbk(&mut Vec::new(), "😀", 8, "name"), Err(ProtoError::TextNotGbk { what: "name" }));
    }
}
