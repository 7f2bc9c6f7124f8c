//! Extended-market ids and instrument codes (docs/PROTOCOL.md, Extended
//! markets (7727)): the market table is eltdx 3.3.0's `ExMarket`, the
//! code form `47#IFL0` is the one way the engine prints and reads them.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

macro_rules! ex_markets {
    ($($variant:ident = $id:literal, $name:literal, $label:literal;)*) => {
        /// A 7727 market, by the id the wire carries.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ExMarket {
            $(#[doc = $label] $variant,)*
        }

        impl ExMarket {
            /// Every known market, by id.
            pub const ALL: &'static [ExMarket] = &[$(ExMarket::$variant,)*];

            /// The wire id.
            pub fn id(self) -> u8 {
                match self { $(ExMarket::$variant => $id,)* }
            }

            /// The market of a wire id, `None` for an id the table lacks.
            pub fn from_id(id: u8) -> Option<Self> {
                match id { $($id => Some(ExMarket::$variant),)* _ => None }
            }

            /// A short snake_case name (stable: CLI and Python use it).
            pub fn name(self) -> &'static str {
                match self { $(ExMarket::$variant => $name,)* }
            }

            /// What the market holds, in English.
            pub fn label(self) -> &'static str {
                match self { $(ExMarket::$variant => $label,)* }
            }

            /// The market of a [`name`](Self::name).
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(ExMarket::$variant),)* _ => None }
            }
        }
    };
}

ex_markets! {
    TempStock = 1, "temp_stock", "Temporary stock listings";
    ZhengzhouCommodityOptions = 4, "czce_options", "Zhengzhou commodity options";
    DalianCommodityOptions = 5, "dce_options", "Dalian commodity options";
    ShanghaiCommodityOptions = 6, "shfe_options", "Shanghai commodity options";
    CffexOptions = 7, "cffex_options", "China Financial Futures Exchange options";
    ShanghaiStockOptions = 8, "sse_options", "Shanghai stock options";
    ShenzhenStockOptions = 9, "szse_options", "Shenzhen stock options";
    BasicFx = 10, "fx_basic", "Basic exchange rates";
    CrossFx = 11, "fx_cross", "Cross exchange rates";
    InternationalIndex = 12, "intl_index", "International indices";
    Comex = 16, "comex", "New York COMEX futures";
    Nymex = 17, "nymex", "New York NYMEX futures";
    Cbot = 18, "cbot", "Chicago CBOT futures";
    HkFinancialFutures = 23, "hk_financial_futures", "Hong Kong financial futures";
    HkFinancialOptions = 24, "hk_financial_options", "Hong Kong financial options";
    HkStockFutures = 25, "hk_stock_futures", "Hong Kong stock futures";
    HkStockOptions = 26, "hk_stock_options", "Hong Kong stock options";
    HkIndex = 27, "hk_index", "Hong Kong indices";
    ZhengzhouFutures = 28, "czce", "Zhengzhou commodity futures";
    DalianFutures = 29, "dce", "Dalian commodity futures";
    ShanghaiFutures = 30, "shfe", "Shanghai futures";
    HkMainBoard = 31, "hk_main", "Hong Kong main board";
    OpenEndFund = 33, "open_fund", "Open-end fund NAVs";
    MoneyFund = 34, "money_fund", "Money-market funds";
    MacroIndicator = 38, "macro", "Macroeconomic indicators";
    CommodityIndex = 42, "commodity_index", "Commodity indices";
    BToH = 43, "b_to_h", "B shares converted to H shares";
    Neeq = 44, "neeq", "National Equities Exchange and Quotations";
    ShanghaiGold = 46, "sge", "Shanghai Gold Exchange";
    CffexFutures = 47, "cffex", "China Financial Futures Exchange futures";
    HkGem = 48, "hk_gem", "Hong Kong Growth Enterprise Market";
    HkFund = 49, "hk_fund", "Hong Kong funds";
    TreasuryWhenIssued = 54, "treasury_when_issued", "Treasury when-issued";
    PrivateFund = 56, "private_fund", "Private (sunshine) funds";
    BrokerCollective = 57, "broker_collective", "Broker collective wealth products";
    BrokerMoney = 58, "broker_money", "Broker money-market wealth products";
    MainContract = 60, "main_contract", "Main futures contracts";
    CsiIndex = 62, "csi_index", "CSI indices";
    GuangzhouArbitrage = 65, "gfex_arbitrage", "Guangzhou arbitrage futures";
    GuangzhouFutures = 66, "gfex", "Guangzhou futures";
    GuangzhouOptions = 67, "gfex_options", "Guangzhou options";
    RiskControlIndex = 68, "risk_index", "Risk-control indices";
    HuazhengIndex = 69, "huazheng_index", "Huazheng indices";
    ExtendedSectorIndex = 70, "sector_index", "Extended sector indices";
    HkConnect = 71, "hk_connect", "Hong Kong stocks through Stock Connect";
    GermanStock = 73, "de_stock", "German stocks";
    UsStock = 74, "us_stock", "US stocks";
    SingaporeStock = 78, "sg_stock", "Singapore stocks";
    MoneyMarket = 91, "money_market", "Money market rates";
    FundValuation = 93, "fund_valuation", "Intraday fund valuations";
    HkDarkPool = 98, "hk_dark_pool", "Hong Kong grey market";
    CodeMirror = 100, "code_mirror", "Code mirror";
    CniIndex = 102, "cni_index", "CNI indices";
}

impl fmt::Display for ExMarket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Longest code the wire's code field holds (9 bytes, NUL-padded).
pub const EX_CODE_BYTES_MAX: usize = 9;

/// An instrument on 7727: its market id and its code, printed `47#IFL0`.
/// The market id is kept raw, since servers list markets the table lacks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExCode {
    market: u8,
    code: String,
}

/// Why an instrument code was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseExCodeError {
    /// No `#` between market and code.
    #[error("instrument code {0:?} is not MARKET#CODE (e.g. 47#IFL0)")]
    NoSeparator(String),
    /// The market part is neither an id 0..=255 nor a known market name.
    #[error("unknown extended market {0:?}")]
    Market(String),
    /// The code is empty, longer than 9 bytes, or holds a byte other than
    /// a printable ASCII one (`#` excluded).
    #[error("invalid extended instrument code {0:?}")]
    Code(String),
}

impl ExCode {
    /// An instrument code; fails for a code the wire field cannot hold.
    pub fn new(market: u8, code: &str) -> Result<Self, ParseExCodeError> {
        let valid =
            (1..=EX_CODE_BYTES_MAX).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_graphic() && b != b'#');
        if !valid {
            return Err(ParseExCodeError::Code(code.to_owned()));
        }
        Ok(Self { market, code: code.to_owned() })
    }

    /// The market id.
    pub fn market_id(&self) -> u8 {
        self.market
    }

    /// The market, when the table knows its id.
    pub fn market(&self) -> Option<ExMarket> {
        ExMarket::from_id(self.market)
    }

    /// The code within the market.
    pub fn code(&self) -> &str {
        &self.code
    }
}

impl fmt::Display for ExCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.market, self.code)
    }
}

impl FromStr for ExCode {
    type Err = ParseExCodeError;

    /// Reads `47#IFL0`; the market may also be a market name (`cffex#IFL0`),
    /// but [`Display`](fmt::Display) always prints the id.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (market, code) = s.split_once('#').ok_or_else(|| ParseExCodeError::NoSeparator(s.to_owned()))?;
        let id = match market.parse::<u8>() {
            Ok(id) if !market.starts_with('+') => id,
            _ => ExMarket::from_name(market).ok_or_else(|| ParseExCodeError::Market(market.to_owned()))?.id(),
        };
        Self::new(id, code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_table_is_one_to_one() {
        // eltdx 3.3.0 lists 53 markets.
        assert_eq!(ExMarket::ALL.len(), 53);
        for &m in ExMarket::ALL {
            assert_eq!(ExMarket::from_id(m.id()), Some(m));
            assert_eq!(ExMarket::from_name(m.name()), Some(m));
        }
        assert_eq!(ExMarket::from_id(47), Some(ExMarket::CffexFutures));
        assert_eq!(ExMarket::from_id(31), Some(ExMarket::HkMainBoard));
        assert_eq!(ExMarket::from_id(74), Some(ExMarket::UsStock));
        assert_eq!(ExMarket::from_id(2), None);
    }

    #[test]
    fn codes_parse_and_print_one_way() {
        for text in ["47#IFL0", "31#00700", "74#AAPL", "74#BRK.B", "28#SR505"] {
            let code: ExCode = text.parse().unwrap();
            assert_eq!(code.to_string(), text);
        }
        let by_name: ExCode = "cffex#IFL0".parse().unwrap();
        assert_eq!((by_name.market_id(), by_name.code()), (47, "IFL0"));
        assert_eq!(by_name.to_string(), "47#IFL0");
        assert_eq!("31#00700".parse::<ExCode>().unwrap().market(), Some(ExMarket::HkMainBoard));
        assert_eq!("IFL0".parse::<ExCode>(), Err(ParseExCodeError::NoSeparator("IFL0".into())));
        assert_eq!("256#X".parse::<ExCode>(), Err(ParseExCodeError::Market("256".into())));
        assert_eq!("+47#X".parse::<ExCode>(), Err(ParseExCodeError::Market("+47".into())));
        assert_eq!("47#".parse::<ExCode>(), Err(ParseExCodeError::Code(String::new())));
        assert_eq!("47#ABCDEFGHIJ".parse::<ExCode>(), Err(ParseExCodeError::Code("ABCDEFGHIJ".into())));
        assert_eq!("47#A B".parse::<ExCode>(), Err(ParseExCodeError::Code("A B".into())));
        assert_eq!("47#A#B".parse::<ExCode>(), Err(ParseExCodeError::Code("A#B".into())));
    }

    proptest! {
        #[test]
        fn display_then_parse_is_identity(market in any::<u8>(), code in "[!-\"$-~]{1,9}") {
            let c = ExCode::new(market, &code).unwrap();
            prop_assert_eq!(c.to_string().parse::<ExCode>(), Ok(c));
        }

        #[test]
        fn parsing_never_panics(s in ".{0,24}") {
            let _ = s.parse::<ExCode>();
        }
    }
}
