//! The 120-byte security summary that ends the MAC bar (0x122E) and minute
//! line (0x122D, 0x123E) replies: name, price decimals, the day's quote
//! (opentdx `symbol_bar.py`, `symbol_tick_chart.py`; eltdx 3.3.0 reads the
//! same layout after the minute points).

use super::symbol::{put_name, read_name, MAC_NAME_BYTES};
use super::units::{hhmmss_of_time, put_optional_date, read_hhmmss, read_optional_date};
use crate::proto::wire::{PutLe, Reader};
use crate::proto::{Date, ProtoError, TimeOfDay};

/// Bytes of a [`SecuritySummary`].
pub const SUMMARY_BYTES: usize = 120;

/// The summary after a bar page or minute line.
#[derive(Debug, Clone, PartialEq)]
pub struct SecuritySummary {
    /// GBK name.
    pub name: String,
    /// Price decimals.
    pub decimals: u8,
    /// Category (opentdx's name; values unexplained).
    pub category: u16,
    /// Volume unit (opentdx's name), binary32.
    pub volume_unit: f32,
    /// Bytes 51..56, kept raw.
    pub reserved_a: [u8; 5],
    /// Quote date; `None` when the server sends 0.
    pub date: Option<Date>,
    /// Quote time (`HHMMSS` on the wire).
    pub time: TimeOfDay,
    /// Previous close, yuan.
    pub pre_close: f32,
    /// Open, yuan.
    pub open: f32,
    /// High, yuan.
    pub high: f32,
    /// Low, yuan.
    pub low: f32,
    /// Latest price, yuan.
    pub close: f32,
    /// opentdx's "momentum" (a rise speed; unconfirmed).
    pub momentum: f32,
    /// Volume (lots in the reference exchange).
    pub volume: u32,
    /// Amount, yuan.
    pub amount: f32,
    /// Bytes 96..108, kept raw.
    pub reserved_b: [u8; 12],
    /// Turnover rate, percent.
    pub turnover: f32,
    /// Average price, yuan.
    pub average: f32,
    /// Industry code.
    pub industry: u32,
}

impl SecuritySummary {
    /// A summary of zeros and no name (what the reference exchange sends
    /// for a code it does not list).
    pub fn empty() -> Self {
        Self {
            name: String::new(),
            decimals: 0,
            category: 0,
            volume_unit: 0.0,
            reserved_a: [0; 5],
            date: None,
            time: TimeOfDay::new(0, 0, 0, 0).expect("midnight"),
            pre_close: 0.0,
            open: 0.0,
            high: 0.0,
            low: 0.0,
            close: 0.0,
            momentum: 0.0,
            volume: 0,
            amount: 0.0,
            reserved_b: [0; 12],
            turnover: 0.0,
            average: 0.0,
            industry: 0,
        }
    }

    pub(super) fn read(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        Ok(Self {
            name: read_name(r, MAC_NAME_BYTES)?,
            decimals: r.u8("summary decimals")?,
            category: r.u16("summary category")?,
            volume_unit: r.f32("summary volume unit")?,
            reserved_a: r.array("summary")?,
            date: read_optional_date(r, "summary")?,
            time: read_hhmmss(r, "summary")?,
            pre_close: r.f32("summary price")?,
            open: r.f32("summary price")?,
            high: r.f32("summary price")?,
            low: r.f32("summary price")?,
            close: r.f32("summary price")?,
            momentum: r.f32("summary momentum")?,
            volume: r.u32("summary volume")?,
            amount: r.f32("summary amount")?,
            reserved_b: r.array("summary")?,
            turnover: r.f32("summary turnover")?,
            average: r.f32("summary average")?,
            industry: r.u32("summary industry")?,
        })
    }

    pub(super) fn write(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let start = out.len();
        put_name(out, &self.name, MAC_NAME_BYTES)?;
        out.push(self.decimals);
        out.put_u16_le(self.category);
        out.put_f32_le(self.volume_unit);
        out.extend_from_slice(&self.reserved_a);
        put_optional_date(out, self.date);
        out.put_u32_le(hhmmss_of_time(self.time));
        for v in [self.pre_close, self.open, self.high, self.low, self.close, self.momentum] {
            out.put_f32_le(v);
        }
        out.put_u32_le(self.volume);
        out.put_f32_le(self.amount);
        out.extend_from_slice(&self.reserved_b);
        out.put_f32_le(self.turnover);
        out.put_f32_le(self.average);
        out.put_u32_le(self.industry);
        debug_assert_eq!(out.len() - start, SUMMARY_BYTES);
        Ok(())
    }
}
