//! How MAC commands name a security: a u16 market and a NUL-padded GBK
//! code of a fixed width (22 bytes in most commands, 6 or 8 in a few).

use std::fmt;

use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::wire::{PutLe, Reader};
use crate::proto::{Market, ProtoError, SecurityCode};

/// Width of the code field in most MAC requests and records.
pub const MAC_CODE_BYTES: usize = 22;

/// Width of a security or board name field in MAC records.
pub const MAC_NAME_BYTES: usize = 44;

/// A security as MAC carries it. Markets 0, 1 and 2 are Shenzhen, Shanghai
/// and Beijing with six-digit codes; other markets are eltdx's extended
/// markets (47 CFFEX futures, 31 Hong Kong, 74 US stocks, ...), whose codes
/// are free text (`IFL0`, `00700`, `AAPL`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacSymbol {
    /// The market id.
    pub market: u16,
    /// The code, without padding.
    pub code: String,
}

impl MacSymbol {
    /// A symbol of `market` and `code`.
    pub fn new(market: u16, code: impl Into<String>) -> Self {
        Self { market, code: code.into() }
    }

    /// The A-share code, when the market is sz, sh or bj and the code six
    /// letters or digits.
    pub fn security_code(&self) -> Option<SecurityCode> {
        let market = Market::from_id(self.market).ok()?;
        SecurityCode::new(market, self.code.as_bytes().try_into().ok()?).ok()
    }
}

impl From<SecurityCode> for MacSymbol {
    fn from(code: SecurityCode) -> Self {
        Self { market: code.market().id().into(), code: code.code().to_owned() }
    }
}

/// `sz000001` for the A-share markets, `MARKET:CODE` otherwise.
impl fmt::Display for MacSymbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.security_code() {
            Some(code) => code.fmt(f),
            None => write!(f, "{}:{}", self.market, self.code),
        }
    }
}

/// Reads `u16 market, [u8; width] code`.
pub(super) fn read_symbol(r: &mut Reader<'_>, width: usize) -> Result<MacSymbol, ProtoError> {
    let market = r.u16("market")?;
    let code = decode_gbk(r.bytes(width, "code")?);
    Ok(MacSymbol { market, code })
}

/// Writes `u16 market, [u8; width] code`.
pub(super) fn put_symbol(out: &mut Vec<u8>, symbol: &MacSymbol, width: usize) -> Result<(), ProtoError> {
    out.put_u16_le(symbol.market);
    encode_gbk(out, &symbol.code, width, "code")
}

/// Reads a fixed-width GBK name.
pub(super) fn read_name(r: &mut Reader<'_>, width: usize) -> Result<String, ProtoError> {
    Ok(decode_gbk(r.bytes(width, "name")?))
}

/// Writes a fixed-width GBK name.
pub(super) fn put_name(out: &mut Vec<u8>, name: &str, width: usize) -> Result<(), ProtoError> {
    encode_gbk(out, name, width, "name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_symbols_convert_both_ways() {
        let code: SecurityCode = "sh600000".parse().unwrap();
        let symbol = MacSymbol::from(code);
        assert_eq!(symbol, MacSymbol::new(1, "600000"));
        assert_eq!(symbol.security_code(), Some(code));
        assert_eq!(symbol.to_string(), "sh600000");
        assert_eq!(MacSymbol::new(47, "IFL0").to_string(), "47:IFL0");
        assert_eq!(MacSymbol::new(47, "IFL0").security_code(), None);
        let mut out = Vec::new();
        put_symbol(&mut out, &symbol, MAC_CODE_BYTES).unwrap();
        assert_eq!(out.len(), 24);
        assert_eq!(read_symbol(&mut Reader::new(&out), MAC_CODE_BYTES).unwrap(), symbol);
    }
}
