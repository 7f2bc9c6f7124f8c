//! Markets, security codes, price units and the code-based classification
//! rules the clients use (docs/PROTOCOL.md, Text, codes and markets; Price
//! units; Bars (0x052d)).

use std::fmt;
use std::str::FromStr;

use super::names::ParseNameError;
use super::ProtoError;

/// An exchange, as its wire id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Market {
    /// Shenzhen, wire id 0, prefix `sz`.
    Sz = 0,
    /// Shanghai, wire id 1, prefix `sh`.
    Sh = 1,
    /// Beijing, wire id 2, prefix `bj`.
    Bj = 2,
}

impl Market {
    /// Every market, in wire-id order.
    pub const ALL: [Market; 3] = [Market::Sz, Market::Sh, Market::Bj];

    /// The wire id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The market with wire id `raw`.
    pub fn from_id(raw: u16) -> Result<Self, ProtoError> {
        match raw {
            0 => Ok(Self::Sz),
            1 => Ok(Self::Sh),
            2 => Ok(Self::Bj),
            _ => Err(ProtoError::UnknownMarket { raw }),
        }
    }

    /// The two-letter prefix: `sz`, `sh` or `bj`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Sz => "sz",
            Self::Sh => "sh",
            Self::Bj => "bj",
        }
    }
}

/// The prefix in either case, or the wire id.
impl FromStr for Market {
    type Err = ParseNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "sz" | "0" => Ok(Self::Sz),
            "sh" | "1" => Ok(Self::Sh),
            "bj" | "2" => Ok(Self::Bj),
            _ => Err(ParseNameError::new("market", s, "sz, sh or bj")),
        }
    }
}

impl fmt::Display for Market {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// A security: market plus 6-character code, written `sz000001`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecurityCode {
    market: Market,
    /// Invariant: 6 ASCII alphanumerics (digits in practice).
    code: [u8; 6],
}

/// A string that is not a security code such as `sz000001`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid security code {input:?}: expected a market prefix sz, sh or bj and 6 digits, like sz000001 (or 000001.SZ)"
)]
pub struct ParseCodeError {
    input: String,
}

impl SecurityCode {
    /// A code, if `code` is 6 ASCII letters or digits.
    pub fn new(market: Market, code: [u8; 6]) -> Result<Self, ProtoError> {
        if code.iter().all(u8::is_ascii_alphanumeric) {
            Ok(Self { market, code })
        } else {
            Err(ProtoError::InvalidCode { raw: code })
        }
    }

    /// The market.
    pub fn market(self) -> Market {
        self.market
    }

    /// The 6 code bytes.
    pub fn code_bytes(self) -> [u8; 6] {
        self.code
    }

    /// The 6-character code without the market.
    pub fn code(&self) -> &str {
        // The invariant makes these bytes ASCII.
        std::str::from_utf8(&self.code).unwrap_or("??????")
    }

    /// The 7-byte wire marker: market id then code.
    pub fn marker(self) -> [u8; 7] {
        let mut out = [0u8; 7];
        out[0] = self.market.id();
        out[1..].copy_from_slice(&self.code);
        out
    }

    /// True for the codes the clients treat as indexes, whose bars carry
    /// breadth counts: sh000xxx, sh880xxx, sh881xxx, sh999xxx, sz399xxx,
    /// bj899xxx (docs/PROTOCOL.md, Text, codes and markets).
    pub fn is_index(self) -> bool {
        let p = &self.code[..3];
        match self.market {
            Market::Sh => matches!(p, b"000" | b"880" | b"881" | b"999"),
            Market::Sz => p == b"399",
            Market::Bj => p == b"899",
        }
    }

    /// What kind of instrument the code rules say this is.
    pub fn category(self) -> Category {
        if self.is_index() {
            return Category::Index;
        }
        let p2 = &self.code[..2];
        let p3 = &self.code[..3];
        match self.market {
            Market::Sz => match p3 {
                b"000" | b"001" | b"002" | b"003" | b"300" | b"301" => Category::AShare,
                b"200" | b"201" => Category::BShare,
                _ if matches!(p2, b"15" | b"16" | b"18") => Category::Fund,
                _ if matches!(p2, b"10" | b"11" | b"12" | b"13") => Category::Bond,
                _ => Category::Other,
            },
            Market::Sh => match p3 {
                b"600" | b"601" | b"603" | b"605" | b"688" | b"689" => Category::AShare,
                b"900" => Category::BShare,
                _ if matches!(p2, b"50" | b"51" | b"52" | b"53" | b"56" | b"58") => Category::Fund,
                _ if matches!(p2, b"01" | b"02" | b"10" | b"11" | b"12" | b"13" | b"20") => Category::Bond,
                _ => Category::Other,
            },
            Market::Bj => match p2 {
                b"43" | b"83" | b"87" | b"88" | b"92" => Category::AShare,
                _ => Category::Other,
            },
        }
    }

    /// The quote price scale eltdx assumes when it has no 0x044d table:
    /// 3 decimals for fund-like prefixes 15, 16, 50, 51, 52, 53, 56, 58, else 2 (docs/PROTOCOL.md, Price units).
    pub fn default_scale(self) -> PriceScale {
        match &self.code[..2] {
            b"15" | b"16" | b"50" | b"51" | b"52" | b"53" | b"56" | b"58" => PriceScale::THOUSANDTHS,
            _ => PriceScale::HUNDREDTHS,
        }
    }
}

/// `sz000001`, with the prefix in either case, or the suffixed `000001.SZ`.
impl FromStr for SecurityCode {
    type Err = ParseCodeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseCodeError { input: s.to_owned() };
        let (prefix, digits) = match s.split_once('.') {
            Some((digits, suffix)) if suffix.len() == 2 => (suffix, digits),
            Some(_) => return Err(err()),
            None => s.split_at_checked(2).ok_or_else(err)?,
        };
        let market = prefix.parse().map_err(|_| err())?;
        let code: [u8; 6] = digits.as_bytes().try_into().map_err(|_| err())?;
        if !code.iter().all(u8::is_ascii_digit) {
            return Err(err());
        }
        Self::new(market, code).map_err(|_| err())
    }
}

impl fmt::Display for SecurityCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.market, self.code())
    }
}

/// Instrument kinds, decided from the code alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// Ordinary A shares (all boards).
    AShare,
    /// B shares.
    BShare,
    /// Exchange funds: ETFs, LOFs.
    Fund,
    /// Bonds and repos.
    Bond,
    /// Indexes (bars carry breadth counts).
    Index,
    /// Anything the rules do not recognise.
    Other,
}

/// A price in exact milli-yuan (0.001 yuan), the finest unit any command uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Price(pub i64);

impl Price {
    /// The price in milli-yuan.
    pub fn milli(self) -> i64 {
        self.0
    }

    /// The price in yuan, as a float (display and analysis; not exact).
    pub fn yuan(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:03}", abs / 1000, abs % 1000)
    }
}

/// How many decimal places a wire price integer carries, for the quote,
/// minute and tick families (docs/PROTOCOL.md, Price units). Bars always carry milli-yuan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PriceScale {
    /// Invariant: `decimals <= 3`.
    decimals: u8,
}

impl PriceScale {
    /// Wire integers in 0.01 yuan (ordinary stocks).
    pub const HUNDREDTHS: PriceScale = PriceScale { decimals: 2 };
    /// Wire integers in 0.001 yuan (ETFs and other 3-decimal instruments).
    pub const THOUSANDTHS: PriceScale = PriceScale { decimals: 3 };

    /// A scale of `decimals` places. Scales finer than 0.001 are not
    /// representable in [`Price`] and return `None`.
    pub fn from_decimals(decimals: u8) -> Option<Self> {
        (decimals <= 3).then_some(Self { decimals })
    }

    /// Decimal places.
    pub fn decimals(self) -> u8 {
        self.decimals
    }

    fn factor(self) -> i64 {
        10i64.pow(u32::from(3 - self.decimals))
    }

    /// Converts a wire integer to a price.
    pub fn to_price(self, raw: i64) -> Result<Price, ProtoError> {
        raw.checked_mul(self.factor()).map(Price).ok_or(ProtoError::ValueOutOfRange { what: "price", value: raw })
    }

    /// Converts a price to the wire integer, if it is a whole number of units.
    pub fn to_raw(self, price: Price) -> Result<i64, ProtoError> {
        let factor = self.factor();
        if price.0 % factor != 0 {
            return Err(ProtoError::InexactPrice { milli: price.0, decimals: self.decimals });
        }
        Ok(price.0 / factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(code("sz000001").to_string(), "sz000001");
        assert_eq!(code("SH600000").market(), Market::Sh);
        assert!("sz00001".parse::<SecurityCode>().is_err());
        assert!("xx000001".parse::<SecurityCode>().is_err());
        assert!("sz00000a".parse::<SecurityCode>().is_err());
        assert!("深圳".parse::<SecurityCode>().is_err(), "non-ASCII must not panic");
        assert_eq!(code("bj430047").marker(), [2, b'4', b'3', b'0', b'0', b'4', b'7']);
    }

    #[test]
    fn classification_rules() {
        for index in ["sh000001", "sh880001", "sh881001", "sh999999", "sz399001", "bj899050"] {
            assert!(code(index).is_index(), "{index}");
            assert_eq!(code(index).category(), Category::Index);
        }
        assert!(!code("sz000001").is_index());
        assert_eq!(code("sz000001").category(), Category::AShare);
        assert_eq!(code("sh510300").category(), Category::Fund);
        assert_eq!(code("sh510300").default_scale(), PriceScale::THOUSANDTHS);
        assert_eq!(code("sz000001").default_scale(), PriceScale::HUNDREDTHS);
    }

    #[test]
    fn price_scale_conversions() {
        let s = PriceScale::HUNDREDTHS;
        assert_eq!(s.to_price(1202), Ok(Price(12_020)));
        assert_eq!(s.to_raw(Price(12_020)), Ok(1202));
        assert!(s.to_raw(Price(12_021)).is_err());
        assert!(s.to_price(i64::MAX).is_err());
        assert_eq!(PriceScale::from_decimals(4), None);
        assert_eq!(Price(-1500).to_string(), "-1.500");
    }
}
