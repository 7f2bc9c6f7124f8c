//! The quote fields of 0x122B and 0x122C, chosen by a 20-byte bitmap.
//!
//! Bit `b` of the bitmap (byte `b / 8`, bit `b % 8`) asks for field `b`.
//! A reply echoes the bitmap and gives every record one 4-byte slot per set
//! field bit, in bit order. Field bits are 0..=150; bits 151..=159 are
//! reserved and get no slot (eltdx 3.3.0 `mac/bitmap.py`, probed bit by bit
//! on a real server). A bit this table does not name still gets its slot:
//! records keep every slot as a raw word, so nothing is lost and the
//! offsets of the named ones stay right.
//!
//! The names, meanings and units below are the engine's, from the field
//! list of eltdx 3.3.0 (`FieldBit`, itself from easy_tdx); units marked
//! "unconfirmed" are the sources' guesses.

use std::fmt;

/// Bytes of the field bitmap.
pub const FIELD_BITMAP_BYTES: usize = 20;

/// Field bits are below this; bits from it to 159 are reserved.
pub const FIELD_BITS: u8 = 151;

/// How a field's 4-byte slot is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// IEEE binary32.
    F32,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
}

/// What a field's number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldUnit {
    /// Yuan (prices, amounts).
    Yuan,
    /// Ten thousand yuan.
    TenThousandYuan,
    /// Lots of shares (volumes; the quote family's unit, unconfirmed for MAC).
    Lots,
    /// Shares.
    Shares,
    /// Ten thousand shares.
    TenThousandShares,
    /// Percent (13.9 means 13.9%).
    Percent,
    /// A plain ratio or multiple.
    Ratio,
    /// A count of things (days, stocks, decimals).
    Count,
    /// A `YYYYMMDD` date.
    Date,
    /// An `HHMMSS` time.
    Time,
    /// A code or an identifier.
    Code,
    /// Flag bits.
    Flags,
    /// Not known.
    Unknown,
}

/// One named field bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    /// The bit.
    pub bit: u8,
    /// The engine's name (`limit_up`).
    pub name: &'static str,
    /// How its slot reads.
    pub kind: FieldKind,
    /// What it means.
    pub meaning: &'static str,
    /// Its unit.
    pub unit: FieldUnit,
}

macro_rules! fields {
    ($($bit:literal $konst:ident $name:literal $kind:ident $unit:ident $meaning:literal;)+) => {
        /// Every named field bit, in bit order.
        pub const MAC_FIELDS: &[FieldInfo] = &[
            $(FieldInfo { bit: $bit, name: $name, kind: FieldKind::$kind, meaning: $meaning, unit: FieldUnit::$unit },)+
        ];

        impl MacField {
            $(
                #[doc = $meaning]
                pub const $konst: MacField = MacField($bit);
            )+
        }
    };
}

fields! {
    0x00 PRE_CLOSE "pre_close" F32 Yuan "Previous close.";
    0x01 OPEN "open" F32 Yuan "Open.";
    0x02 HIGH "high" F32 Yuan "High.";
    0x03 LOW "low" F32 Yuan "Low.";
    0x04 CLOSE "close" F32 Yuan "Latest price (the close after the session).";
    0x05 VOLUME "volume" U32 Lots "Total volume.";
    0x06 VOLUME_RATIO "volume_ratio" F32 Ratio "Volume ratio (量比).";
    0x07 AMOUNT "amount" F32 Yuan "Total amount.";
    0x08 INSIDE_VOLUME "inside_volume" U32 Lots "Seller-initiated volume (内盘).";
    0x09 OUTSIDE_VOLUME "outside_volume" U32 Lots "Buyer-initiated volume (外盘).";
    0x0A TOTAL_SHARES "total_shares" F32 TenThousandShares "Total shares.";
    0x0B FLOAT_SHARES "float_shares" F32 TenThousandShares "Float shares.";
    0x0C EPS "eps" F32 Yuan "Earnings per share.";
    0x0D NET_ASSETS "net_assets" F32 Unknown "Net assets (per share or total, unconfirmed).";
    0x0E SECURITY_TYPE_PRICE "security_type_price" F32 Unknown "Security-type price (meaning unconfirmed).";
    0x0F MARKET_CAP_AB "market_cap_ab" F32 Yuan "Total market value of A and B shares.";
    0x10 PE_DYNAMIC "pe_dynamic" F32 Ratio "Dynamic price-earnings ratio.";
    0x11 BID "bid" F32 Yuan "Best bid.";
    0x12 ASK "ask" F32 Yuan "Best ask.";
    0x13 UPDATE_DATE "update_date" U32 Date "Server update date.";
    0x14 UPDATE_TIME "update_time" U32 Time "Server update time.";
    0x15 LOT_SIZE_INFO "lot_size_info" U32 Unknown "Lot-size information (meaning unconfirmed).";
    0x16 BOARD_STRENGTH "board_strength" F32 Count "Board strength: advancers minus decliners.";
    0x17 DIVIDEND_PER_SHARE "dividend_per_share" F32 Yuan "Dividend per share.";
    0x18 BID_VOLUME "bid_volume" U32 Lots "Volume at the best bid.";
    0x19 ASK_VOLUME "ask_volume" U32 Lots "Volume at the best ask.";
    0x1A LAST_VOLUME "last_volume" U32 Lots "Volume of the last trade (现量).";
    0x1B TURNOVER "turnover" F32 Percent "Turnover rate.";
    0x1C INDUSTRY "industry" U32 Code "Industry classification code.";
    0x1D INDUSTRY_CHANGE "industry_change" F32 Percent "The industry's change.";
    0x1E TAG_FLAGS "tag_flags" U32 Flags "Stock tag bits.";
    0x1F DECIMALS "decimals" U32 Count "Price decimals.";
    0x20 LIMIT_UP "limit_up" F32 Yuan "Limit-up price.";
    0x21 LIMIT_DOWN "limit_down" F32 Yuan "Limit-down price.";
    0x22 PRICE_DECIMAL_FLAGS "price_decimal_flags" U32 Flags "Price precision flags.";
    0x23 LOT_SIZE "lot_size" U32 Shares "Shares per lot (some sources: regional board; unconfirmed).";
    0x24 PRE_IOPV "pre_iopv" F32 Yuan "Previous IOPV.";
    0x25 RISE_SPEED "rise_speed" F32 Percent "Rise speed (涨速).";
    0x26 AVERAGE_PRICE "average_price" F32 Yuan "Average price.";
    0x27 IOPV "iopv" F32 Yuan "IOPV.";
    0x28 PRE_REFERENCE_PRICE "pre_reference_price" F32 Yuan "Previous reference price (US stocks).";
    0x29 PRE_AMOUNT_REFERENCE "pre_amount_reference" F32 Unknown "Previous amount reference (meaning unconfirmed).";
    0x2A OPERATING_REVENUE "operating_revenue" F32 TenThousandYuan "Operating revenue.";
    0x2B STAR_FLAG "star_flag" U32 Flags "STAR-market flag.";
    0x2C BJ_FLAG "bj_flag" U32 Flags "Beijing-exchange flag.";
    0x2D CIRCULATING_CAPITAL "circulating_capital" F32 TenThousandShares "Circulating capital (流通股本Z).";
    0x2E AFTER_HOURS_VOLUME "after_hours_volume" I32 Lots "After-hours volume.";
    0x30 PE_TTM "pe_ttm" F32 Ratio "Trailing price-earnings ratio.";
    0x31 PE_STATIC "pe_static" F32 Ratio "Static price-earnings ratio.";
    0x37 INDEX_METRIC "index_metric" F32 Unknown "Index metric (meaning unconfirmed).";
    0x38 MAIN_NET_INFLOW "main_net_inflow" F32 Yuan "Today's main-force net inflow.";
    0x39 COMMITTEE_RATIO "committee_ratio" F32 Percent "Order committee ratio (委比).";
    0x3A NON_INDEX_FLAG "non_index_flag" U32 Flags "Not-an-index flag.";
    0x3B CHANGE_20D "change_20d" F32 Percent "Change over 20 trading days.";
    0x3C CHANGE_YTD "change_ytd" F32 Percent "Change since the start of the year.";
    0x3E SUBCLASS "subclass" U32 Code "Security subclass code.";
    0x3F PERCENT_BASE "percent_base" U32 Unknown "Percent base (meaning unconfirmed).";
    0x40 CHANGE_MTD "change_mtd" F32 Percent "Change since the start of the month.";
    0x41 CHANGE_1Y "change_1y" F32 Percent "Change over one year.";
    0x42 PREVIOUS_CHANGE "previous_change" F32 Percent "The previous day's change.";
    0x43 CHANGE_3D "change_3d" F32 Percent "Change over 3 trading days.";
    0x44 CHANGE_60D "change_60d" F32 Percent "Change over 60 trading days.";
    0x45 CHANGE_5D "change_5d" F32 Percent "Change over 5 trading days.";
    0x46 CHANGE_10D "change_10d" F32 Percent "Change over 10 trading days.";
    0x47 PREVIOUS_2_CHANGE "previous_2_change" F32 Percent "The change two days ago.";
    0x48 BID_2 "bid_2" F32 Yuan "Second bid.";
    0x49 ASK_2 "ask_2" F32 Yuan "Second ask.";
    0x4A AH_CODE "ah_code" U32 Code "The paired A or H share's code, as a number.";
    0x4B CODE_B "code_b" U32 Unknown "A code some securities carry (meaning unconfirmed).";
    0x57 OPEN_AMOUNT "open_amount" F32 Yuan "Opening-auction amount.";
    0x58 LIMIT_UP_DAYS_YEAR "limit_up_days_year" I32 Count "Limit-up days this year.";
    0x59 ACTIVITY "activity" U32 Count "Activity (活跃度).";
    0x5B DIVIDEND_YIELD "dividend_yield" F32 Percent "Dividend yield.";
    0x5C UP_DAYS "up_days" I32 Count "Consecutive up days.";
    0x5D BID_2_VOLUME "bid_2_volume" U32 Lots "Volume at the second bid (for a board: its limit-up count).";
    0x5E ASK_2_VOLUME "ask_2_volume" U32 Lots "Volume at the second ask (for a board: its limit-down count).";
    0x5F INDUSTRY_2 "industry_2" U32 Code "Second-level industry code.";
    0x66 AUCTION_BUY_CAP "auction_buy_cap" F32 Yuan "Highest price a continuous-auction buy may name.";
    0x67 AUCTION_SELL_FLOOR "auction_sell_floor" F32 Yuan "Lowest price a continuous-auction sell may name.";
    0x68 VOLUME_SPEED "volume_speed" F32 Percent "Volume speed (量涨速).";
    0x69 SHORT_TURNOVER "short_turnover" F32 Percent "Short-term turnover.";
    0x6A AMOUNT_2M "amount_2m" F32 Yuan "Amount over the last two minutes.";
    0x6B MAIN_NET_INFLOW_COPY "main_net_inflow_copy" F32 Yuan "Today's main-force net inflow (a second copy).";
    0x6C MAIN_NET_RATIO "main_net_ratio" F32 Percent "Main-force net inflow over the amount.";
    0x6D RETAIL_RATIO "retail_ratio" F32 Unknown "Retail-order increase ratio (unconfirmed).";
    0x6E MAIN_NET_5M "main_net_5m" F32 Yuan "Main-force net inflow over five minutes.";
    0x6F MAIN_NET_3D "main_net_3d" F32 Yuan "Main-force net inflow over three days.";
    0x70 MAIN_NET_5D "main_net_5d" F32 Yuan "Main-force net inflow over five days.";
    0x71 MAIN_BUY_10D "main_buy_10d" F32 Yuan "Main-force buying over ten days (unconfirmed).";
    0x72 MAIN_BUY_NET "main_buy_net" F32 Yuan "Today's main-force active-buy net amount.";
    0x73 DDX "ddx" F32 Ratio "DDX.";
    0x74 DDY "ddy" F32 Ratio "DDY.";
    0x75 DDZ "ddz" F32 Ratio "DDZ.";
    0x76 DDF "ddf" F32 Ratio "DDF.";
    0x77 STOCK_FLAGS_A "stock_flags_a" F32 Flags "Stock flags A.";
    0x78 STOCK_FLAGS_B "stock_flags_b" F32 Flags "Stock flags B (a copy).";
    0x7A AUCTION_VOLUME_RATIO "auction_volume_ratio" F32 Ratio "Opening-auction volume against yesterday's.";
    0x7B PREVIOUS_AMOUNT "previous_amount" F32 Yuan "The previous day's amount.";
    0x7D RECENT_SIGNAL "recent_signal" F32 Unknown "Recent indicator hint (unconfirmed).";
    0x80 BID_3 "bid_3" F32 Yuan "Third bid.";
    0x81 BID_4 "bid_4" F32 Yuan "Fourth bid.";
    0x82 BID_5 "bid_5" F32 Yuan "Fifth bid.";
    0x83 ASK_3 "ask_3" F32 Yuan "Third ask.";
    0x84 ASK_4 "ask_4" F32 Yuan "Fourth ask.";
    0x85 ASK_5 "ask_5" F32 Yuan "Fifth ask.";
    0x86 BID_3_VOLUME "bid_3_volume" U32 Lots "Volume at the third bid.";
    0x87 BID_4_VOLUME "bid_4_volume" U32 Lots "Volume at the fourth bid.";
    0x88 BID_5_VOLUME "bid_5_volume" U32 Lots "Volume at the fifth bid (for a board: its advancers).";
    0x89 ASK_3_VOLUME "ask_3_volume" U32 Lots "Volume at the third ask.";
    0x8A ASK_4_VOLUME "ask_4_volume" U32 Lots "Volume at the fourth ask.";
    0x8B ASK_5_VOLUME "ask_5_volume" U32 Lots "Volume at the fifth ask (for a board: its decliners).";
    0x8C BID_ASK_DIFFERENCE "bid_ask_difference" I32 Lots "Bid volume minus ask volume (委差).";
    0x8D LIMIT_STATE "limit_state" I32 Code "Limit-board state (封板状态).";
    0x8E SAFETY_SCORE "safety_score" F32 Unknown "Safety score.";
    0x8F HIGHLIGHTS "highlights" F32 Count "Highlight count.";
    0x90 CHANGE_AT_1000 "change_at_1000" F32 Percent "Change from the previous close at 10:00.";
    0x91 CHANGE_AT_1030 "change_at_1030" F32 Percent "Change from the previous close at 10:30.";
    0x92 CHANGE_AT_1100 "change_at_1100" F32 Percent "Change from the previous close at 11:00.";
    0x93 CHANGE_AT_1130 "change_at_1130" F32 Percent "Change from the previous close at 11:30.";
    0x94 CHANGE_AT_1330 "change_at_1330" F32 Percent "Change from the previous close at 13:30.";
    0x95 CHANGE_AT_1400 "change_at_1400" F32 Percent "Change from the previous close at 14:00.";
    0x96 CHANGE_AT_1430 "change_at_1430" F32 Percent "Change from the previous close at 14:30.";
}

/// A field bit, named or not (see [`MAC_FIELDS`] for the named ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacField(pub u8);

impl MacField {
    /// The named field of this bit, if the table names it.
    pub fn info(self) -> Option<&'static FieldInfo> {
        MAC_FIELDS.binary_search_by_key(&self.0, |f| f.bit).ok().map(|i| &MAC_FIELDS[i])
    }

    /// The field named `name` (the table's names, as in `limit_up`).
    pub fn from_name(name: &str) -> Option<Self> {
        MAC_FIELDS.iter().find(|f| f.name == name).map(|f| MacField(f.bit))
    }

    /// How its slot reads: the table's kind, raw `u32` for unnamed bits.
    pub fn kind(self) -> FieldKind {
        self.info().map_or(FieldKind::U32, |f| f.kind)
    }
}

/// The table's name, or `bit_N` for an unnamed bit.
impl fmt::Display for MacField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info() {
            Some(info) => f.write_str(info.name),
            None => write!(f, "bit_{}", self.0),
        }
    }
}

/// One slot's value, read as its field's kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue {
    /// A binary32.
    F32(f32),
    /// An unsigned integer.
    U32(u32),
    /// A signed integer.
    I32(i32),
}

impl FieldValue {
    /// The raw word read as `kind`.
    pub fn from_word(kind: FieldKind, word: u32) -> Self {
        match kind {
            FieldKind::F32 => Self::F32(f32::from_bits(word)),
            FieldKind::U32 => Self::U32(word),
            FieldKind::I32 => Self::I32(word as i32),
        }
    }

    /// The value as a double (exact for every kind).
    pub fn as_f64(self) -> f64 {
        match self {
            Self::F32(v) => f64::from(v),
            Self::U32(v) => f64::from(v),
            Self::I32(v) => f64::from(v),
        }
    }

    /// The raw word.
    pub fn word(self) -> u32 {
        match self {
            Self::F32(v) => v.to_bits(),
            Self::U32(v) => v,
            Self::I32(v) => v as u32,
        }
    }
}

/// The 20-byte field bitmap, every bit kept as sent (reserved ones too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FieldBitmap(pub [u8; FIELD_BITMAP_BYTES]);

impl FieldBitmap {
    /// The bitmap asking for `fields`.
    pub fn of(fields: impl IntoIterator<Item = MacField>) -> Self {
        let mut map = Self::default();
        for field in fields {
            map.insert(field);
        }
        map
    }

    /// Every named field.
    pub fn all_named() -> Self {
        Self::of(MAC_FIELDS.iter().map(|f| MacField(f.bit)))
    }

    /// Sets a bit (any of 0..=159).
    pub fn insert(&mut self, field: MacField) {
        if let Some(byte) = self.0.get_mut(usize::from(field.0 / 8)) {
            *byte |= 1 << (field.0 % 8);
        }
    }

    /// Whether a bit is set.
    pub fn contains(&self, field: MacField) -> bool {
        self.0.get(usize::from(field.0 / 8)).is_some_and(|b| b >> (field.0 % 8) & 1 != 0)
    }

    /// The set field bits (0..=150), in bit order: one slot each.
    pub fn slots(&self) -> impl Iterator<Item = MacField> + '_ {
        (0..FIELD_BITS).map(MacField).filter(|f| self.contains(*f))
    }

    /// Slots per record.
    pub fn slot_count(&self) -> usize {
        self.slots().count()
    }

    /// The slot index of `field`, if it is set.
    pub fn slot_of(&self, field: MacField) -> Option<usize> {
        (field.0 < FIELD_BITS && self.contains(field)).then(|| self.slots().take_while(|f| *f != field).count())
    }

    /// The bitmap with only bits below `bits` (0x122C's request carries 128).
    pub fn truncated(&self, bits: u8) -> Self {
        Self::of(self.slots().filter(|f| f.0 < bits))
    }
}

/// `all` (every named field), or field names and `bit_N`s, comma-separated.
impl std::str::FromStr for FieldBitmap {
    type Err = crate::proto::ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            crate::proto::ParseNameError::new(
                "MAC field list",
                s,
                "all, or field names (limit_up, close, ...) and bit_N, comma-separated",
            )
        };
        if s.trim() == "all" {
            return Ok(Self::all_named());
        }
        let mut map = Self::default();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let field = match name.strip_prefix("bit_") {
                Some(bit) => bit.parse::<u8>().ok().filter(|b| *b < FIELD_BITS).map(MacField),
                None => MacField::from_name(name),
            };
            map.insert(field.ok_or_else(bad)?);
        }
        if map == Self::default() {
            return Err(bad());
        }
        Ok(map)
    }
}

/// The set fields' names, comma-separated (what [`FromStr`](std::str::FromStr) reads).
impl fmt::Display for FieldBitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, field) in self.slots().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{field}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_bit_order_with_unique_names() {
        assert!(MAC_FIELDS.windows(2).all(|w| w[0].bit < w[1].bit));
        assert!(MAC_FIELDS.iter().all(|f| f.bit < FIELD_BITS));
        let mut names: Vec<&str> = MAC_FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MAC_FIELDS.len());
        assert_eq!(MacField::from_name("limit_up"), Some(MacField::LIMIT_UP));
        assert_eq!(MacField::LIMIT_UP.info().unwrap().unit, FieldUnit::Yuan);
        assert_eq!(MacField(0x4c).to_string(), "bit_76");
    }

    #[test]
    fn field_lists_read_back_from_their_text() {
        let map: FieldBitmap = "close, limit_up,bit_76".parse().unwrap();
        assert!(map.contains(MacField::LIMIT_UP) && map.contains(MacField(76)) && map.slot_count() == 3);
        assert_eq!(map.to_string().parse::<FieldBitmap>().unwrap(), map);
        assert_eq!("all".parse::<FieldBitmap>().unwrap(), FieldBitmap::all_named());
        for bad in ["", "no_such_field", "bit_200", ","] {
            assert!(bad.parse::<FieldBitmap>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn slots_follow_bit_order_and_skip_reserved_bits() {
        let mut map = FieldBitmap::of([MacField::CLOSE, MacField::PRE_CLOSE, MacField(0x96), MacField(0x4c)]);
        map.insert(MacField(152));
        map.insert(MacField(159));
        assert_eq!(map.slot_count(), 4);
        assert_eq!(map.slot_of(MacField::PRE_CLOSE), Some(0));
        assert_eq!(map.slot_of(MacField::CLOSE), Some(1));
        assert_eq!(map.slot_of(MacField(0x4c)), Some(2), "an unnamed bit holds its slot");
        assert_eq!(map.slot_of(MacField(0x96)), Some(3));
        assert_eq!(map.slot_of(MacField(152)), None, "reserved bits have no slot");
        assert!(map.contains(MacField(159)));
        assert_eq!(map.0[19], 0x81);
        assert_eq!(map.truncated(128).slot_count(), 3);
    }
}
