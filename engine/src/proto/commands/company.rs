//! 0x02cf company-info directory and 0x02d0 company-info content
//! (F10 公司信息): GBK text sections of a per-company file, read by offset and
//! length (pytdx 1.72 `get_company_info_*`, eltdx 3.3.0 `company_info.*`).

use super::{put_code_u16, read_code_u16, Command};
use crate::proto::security::SecurityCode;
use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// Width of a section name.
pub const COMPANY_NAME_BYTES: usize = 64;
/// Width of a file name, in the directory and in 0x02d0 requests.
pub const COMPANY_FILE_BYTES: usize = 80;
/// Bytes of one directory entry.
pub const COMPANY_SECTION_BYTES: usize = COMPANY_NAME_BYTES + COMPANY_FILE_BYTES + 8;
/// Most text one 0x02d0 reply can carry (its length is a u16 after 12 bytes).
pub const COMPANY_TEXT_BYTES_MAX: usize = u16::MAX as usize - 12;

/// 0x02cf request (12 bytes): the security, then a u32 pytdx sends as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompanyCategory {
    /// The security.
    pub code: SecurityCode,
    /// The trailing u32; kept raw.
    pub reserved: u32,
}

impl From<SecurityCode> for CompanyCategory {
    fn from(code: SecurityCode) -> Self {
        Self { code, reserved: 0 }
    }
}

/// One directory entry: where a section's text lies in which file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanySection {
    /// Section name (公司概况, ...), GBK, at most 64 bytes.
    pub name: String,
    /// The file holding it (`600000.txt`), at most 80 bytes.
    pub filename: String,
    /// Byte offset of the text in the file.
    pub start: u32,
    /// Byte length of the text.
    pub length: u32,
}

/// 0x02d0 request (102 bytes): one section's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanyContent {
    /// The security.
    pub code: SecurityCode,
    /// The u16 after the code (pytdx sends 0); kept raw.
    pub reserved_a: u16,
    /// The file, from the directory.
    pub filename: String,
    /// Byte offset, from the directory.
    pub start: u32,
    /// Byte length, from the directory.
    pub length: u32,
    /// The trailing u32 (pytdx sends 0); kept raw.
    pub reserved_b: u32,
}

impl CompanyContent {
    /// The request for `section` of `code`, as pytdx sends it.
    pub fn new(code: SecurityCode, section: &CompanySection) -> Self {
        Self {
            code,
            reserved_a: 0,
            filename: section.filename.clone(),
            start: section.start,
            length: section.length,
            reserved_b: 0,
        }
    }
}

/// A 0x02d0 reply: 10 leading bytes (meaning unknown; kept raw) and the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanyText {
    /// The first 10 bytes.
    pub head_raw: [u8; 10],
    /// The text as GBK bytes, exactly as sent.
    pub text_raw: Vec<u8>,
}

impl CompanyText {
    /// The text decoded from GBK (bytes that do not decode are dropped).
    pub fn text(&self) -> String {
        let (text, _had_errors) = encoding_rs::GBK.decode_without_bom_handling(&self.text_raw);
        text.chars().filter(|&c| c != '\u{fffd}').collect()
    }
}

impl Command for CompanyCategory {
    const MSG_TYPE: u16 = 0x02cf;
    const NAME: &'static str = "company_category";
    type Reply = Vec<CompanySection>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.put_u32_le(self.reserved);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 12)?;
        let mut r = Reader::new(body);
        Ok(Self { code: read_code_u16(&mut r)?, reserved: r.u32("company reserved")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<CompanySection>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        let needed = count * COMPANY_SECTION_BYTES;
        if needed != r.remaining() {
            return Err(if needed > r.remaining() {
                ProtoError::Truncated { what: "company directory", needed, remaining: r.remaining() }
            } else {
                ProtoError::TrailingBytes { what: "company directory", count: r.remaining() - needed }
            });
        }
        let mut sections = Vec::with_capacity(count);
        for _ in 0..count {
            sections.push(CompanySection {
                name: decode_gbk(r.bytes(COMPANY_NAME_BYTES, "section name")?),
                filename: decode_gbk(r.bytes(COMPANY_FILE_BYTES, "section file")?),
                start: r.u32("section start")?,
                length: r.u32("section length")?,
            });
        }
        Ok(sections)
    }

    fn encode_reply(&self, reply: &Vec<CompanySection>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("company sections", reply.len())?);
        for s in reply {
            encode_gbk(out, &s.name, COMPANY_NAME_BYTES, "section name")?;
            encode_gbk(out, &s.filename, COMPANY_FILE_BYTES, "section file")?;
            out.put_u32_le(s.start);
            out.put_u32_le(s.length);
        }
        Ok(())
    }
}

impl Command for CompanyContent {
    const MSG_TYPE: u16 = 0x02d0;
    const NAME: &'static str = "company_content";
    type Reply = CompanyText;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.put_u16_le(self.reserved_a);
        encode_gbk(out, &self.filename, COMPANY_FILE_BYTES, "company file")?;
        for v in [self.start, self.length, self.reserved_b] {
            out.put_u32_le(v);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 102)?;
        let mut r = Reader::new(body);
        Ok(Self {
            code: read_code_u16(&mut r)?,
            reserved_a: r.u16("company reserved")?,
            filename: decode_gbk(r.bytes(COMPANY_FILE_BYTES, "company file")?),
            start: r.u32("company start")?,
            length: r.u32("company length")?,
            reserved_b: r.u32("company reserved")?,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<CompanyText, ProtoError> {
        let mut r = Reader::new(payload);
        let head_raw = r.array("company content head")?;
        let len = usize::from(r.u16("company text length")?);
        if len > self.length as usize {
            return Err(ProtoError::CountOverRequest {
                what: "company text",
                count: len,
                requested: self.length as usize,
            });
        }
        let text_raw = r.bytes(len, "company text")?.to_vec();
        r.finish("company content payload")?;
        Ok(CompanyText { head_raw, text_raw })
    }

    fn encode_reply(&self, reply: &CompanyText, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if reply.text_raw.len() > COMPANY_TEXT_BYTES_MAX {
            let len = reply.text_raw.len();
            return Err(ProtoError::TooLarge { what: "company text", len, max: COMPANY_TEXT_BYTES_MAX });
        }
        out.extend_from_slice(&reply.head_raw);
        out.put_u16_le(reply.text_raw.len() as u16);
        out.extend_from_slice(&reply.text_raw);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code() -> SecurityCode {
        "sh600000".parse().unwrap()
    }

    #[test]
    fn requests_match_pytdx_bytes() {
        let mut body = Vec::new();
        CompanyCategory::from(code()).encode_body(&mut body).unwrap();
        assert_eq!(body, [1, 0, b'6', b'0', b'0', b'0', b'0', b'0', 0, 0, 0, 0]);
        assert_eq!(CompanyCategory::decode_body(&body).unwrap(), code().into());

        let section =
            CompanySection { name: "公司概况".into(), filename: "600000.txt".into(), start: 512, length: 300 };
        let content = CompanyContent::new(code(), &section);
        let mut body = Vec::new();
        content.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 102);
        assert_eq!(&body[10..20], b"600000.txt");
        assert_eq!(body[90..94], 512u32.to_le_bytes());
        assert_eq!(body[94..98], 300u32.to_le_bytes());
        assert_eq!(CompanyContent::decode_body(&body).unwrap(), content);
    }

    #[test]
    fn replies_are_exact() {
        let dir = CompanyCategory::from(code());
        let sections =
            vec![CompanySection { name: "经营分析".into(), filename: "600000.txt".into(), start: 0, length: 4 }];
        let mut payload = Vec::new();
        dir.encode_reply(&sections, &mut payload).unwrap();
        assert_eq!(payload.len(), 2 + 152);
        assert_eq!(dir.parse_reply(&payload).unwrap(), sections);
        assert!(matches!(dir.parse_reply(&payload[..100]), Err(ProtoError::Truncated { .. })));

        let content = CompanyContent::new(code(), &sections[0]);
        let reply = CompanyText { head_raw: [0; 10], text_raw: vec![0xbe, 0xad, 0xd3, 0xaa] };
        let mut payload = Vec::new();
        content.encode_reply(&reply, &mut payload).unwrap();
        assert_eq!(content.parse_reply(&payload).unwrap().text(), "经营");
        payload.push(0);
        assert!(matches!(content.parse_reply(&payload), Err(ProtoError::TrailingBytes { .. })));
        let long = CompanyText { head_raw: [0; 10], text_raw: vec![b'a'; 5] };
        let mut payload = Vec::new();
        content.encode_reply(&long, &mut payload).unwrap();
        assert!(matches!(content.parse_reply(&payload), Err(ProtoError::CountOverRequest { .. })));
    }
}
