//! The arguments of the listed methods, described and given as values:
//! what surfaces that take requests as data (an HTTP gateway, an MCP
//! server) parse their text into. The `commands!` list describes each
//! method's arguments from its own signature
//! ([`CommandInfo::args`](super::CommandInfo::args)), each [`ArgKind`]
//! naming the engine type whose `FromStr` reads it; [`Invocation`]
//! (`by_name.rs`) calls a listed method with [`ArgValue`]s.
//!
//! [`Invocation`]: super::Invocation

use crate::proto::commands::{Adjust, AuxKind, CompanySection, Period, QuoteCategory};
use crate::proto::ex::{ExCode, ExPeriod};
use crate::proto::mac::FieldBitmap;
use crate::proto::{Market, SecurityCode, TradeDate};

/// What one argument of a listed method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ArgKind {
    /// A [`Market`] (`sz`, `sh`, `bj`).
    Market,
    /// One [`SecurityCode`].
    Code,
    /// Several [`SecurityCode`]s, in order.
    Codes,
    /// A bar [`Period`].
    Period,
    /// An [`Adjust`] mode without an anchor.
    Adjust,
    /// A [`Page`](super::Page): rows to skip and rows to return.
    Page,
    /// A past [`TradeDate`].
    TradeDate,
    /// A [`TradeDate`], or none for today.
    OptionalTradeDate,
    /// An [`AuxKind`].
    AuxKind,
    /// A [`QuoteCategory`].
    QuoteCategory,
    /// Text (a server file's name, a board's name).
    Text,
    /// A whole number from 0 to `u32::MAX` (a file offset or size).
    Integer,
    /// A whole number from 0 to 65,535 (a day count, a MAC sort field,
    /// board kind or market id).
    SmallInteger,
    /// MAC quote fields ([`FieldBitmap`]): names, comma-separated, or `all`.
    Fields,
    /// A [`CompanySection`] as the directory lists it (file, start, length).
    Section,
    /// A 7727 instrument ([`ExCode`], `47#IFL0`).
    ExCode,
    /// Several 7727 instruments, in order.
    ExCodes,
    /// A 7727 bar period ([`ExPeriod`]).
    ExPeriod,
    /// A 7727 market id (`u8`; [`ExMarket`](crate::proto::ex::ExMarket) names one).
    ExMarket,
}

/// One argument of a listed method: its name in the method's signature
/// and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ArgInfo {
    /// The parameter's name (`code`, `market`, `page`).
    pub name: &'static str,
    /// What it takes.
    pub kind: ArgKind,
}

/// An argument's value, of one [`ArgKind`].
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// [`ArgKind::Market`].
    Market(Market),
    /// [`ArgKind::Code`].
    Code(SecurityCode),
    /// [`ArgKind::Codes`].
    Codes(Vec<SecurityCode>),
    /// [`ArgKind::Period`].
    Period(Period),
    /// [`ArgKind::Adjust`].
    Adjust(Adjust),
    /// [`ArgKind::Page`]: rows to skip, rows to return.
    Page {
        /// Rows to skip.
        start: u16,
        /// Most rows to return.
        count: u16,
    },
    /// [`ArgKind::TradeDate`].
    TradeDate(TradeDate),
    /// [`ArgKind::OptionalTradeDate`].
    OptionalTradeDate(Option<TradeDate>),
    /// [`ArgKind::AuxKind`].
    AuxKind(AuxKind),
    /// [`ArgKind::QuoteCategory`].
    QuoteCategory(QuoteCategory),
    /// [`ArgKind::Text`].
    Text(String),
    /// [`ArgKind::Integer`].
    Integer(u32),
    /// [`ArgKind::SmallInteger`].
    SmallInteger(u16),
    /// [`ArgKind::Fields`].
    Fields(FieldBitmap),
    /// [`ArgKind::Section`].
    Section(CompanySection),
    /// [`ArgKind::ExCode`].
    ExCode(ExCode),
    /// [`ArgKind::ExCodes`].
    ExCodes(Vec<ExCode>),
    /// [`ArgKind::ExPeriod`].
    ExPeriod(ExPeriod),
    /// [`ArgKind::ExMarket`].
    ExMarket(u8),
}

impl ArgValue {
    /// Its kind.
    pub fn kind(&self) -> ArgKind {
        match self {
            Self::Market(_) => ArgKind::Market,
            Self::Code(_) => ArgKind::Code,
            Self::Codes(_) => ArgKind::Codes,
            Self::Period(_) => ArgKind::Period,
            Self::Adjust(_) => ArgKind::Adjust,
            Self::Page { .. } => ArgKind::Page,
            Self::TradeDate(_) => ArgKind::TradeDate,
            Self::OptionalTradeDate(_) => ArgKind::OptionalTradeDate,
            Self::AuxKind(_) => ArgKind::AuxKind,
            Self::QuoteCategory(_) => ArgKind::QuoteCategory,
            Self::Text(_) => ArgKind::Text,
            Self::Integer(_) => ArgKind::Integer,
            Self::SmallInteger(_) => ArgKind::SmallInteger,
            Self::Fields(_) => ArgKind::Fields,
            Self::Section(_) => ArgKind::Section,
            Self::ExCode(_) => ArgKind::ExCode,
            Self::ExCodes(_) => ArgKind::ExCodes,
            Self::ExPeriod(_) => ArgKind::ExPeriod,
            Self::ExMarket(_) => ArgKind::ExMarket,
        }
    }
}

/// A method argument's type, as the list's signatures write it.
pub trait Arg<'a>: Sized {
    /// Its kind.
    const KIND: ArgKind;
    /// The argument, if `value` is of its kind.
    fn from_value(value: &'a ArgValue) -> Option<Self>;
}

macro_rules! args {
    ($($ty:ty => $kind:ident($v:ident) $view:expr;)+) => {$(
        impl<'a> Arg<'a> for $ty {
            const KIND: ArgKind = ArgKind::$kind;
            fn from_value(value: &'a ArgValue) -> Option<Self> {
                match value {
                    ArgValue::$kind($v) => Some($view),
                    _ => None,
                }
            }
        }
    )+};
}

args! {
    Market => Market(m) *m;
    SecurityCode => Code(c) *c;
    &'a [SecurityCode] => Codes(c) c.as_slice();
    Period => Period(p) *p;
    Adjust => Adjust(a) *a;
    TradeDate => TradeDate(d) *d;
    Option<TradeDate> => OptionalTradeDate(d) *d;
    AuxKind => AuxKind(k) *k;
    QuoteCategory => QuoteCategory(c) *c;
    &'a str => Text(s) s.as_str();
    u32 => Integer(n) *n;
    u16 => SmallInteger(n) *n;
    FieldBitmap => Fields(f) *f;
    &'a CompanySection => Section(s) s;
    &'a ExCode => ExCode(c) c;
    &'a [ExCode] => ExCodes(c) c.as_slice();
    ExPeriod => ExPeriod(p) *p;
    u8 => ExMarket(m) *m;
}

/// Why a call by name could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    /// No listed method has this name.
    #[error("no command named {0:?}")]
    UnknownCommand(String),
    /// An argument is missing or of another kind.
    #[error("{method}: argument {arg} takes {expected:?}, got {got}")]
    BadArgument {
        /// The method.
        method: &'static str,
        /// The argument's name.
        arg: &'static str,
        /// Its kind.
        expected: ArgKind,
        /// What was given instead (`nothing`, or a kind).
        got: String,
    },
    /// More arguments than the method takes.
    #[error("{method} takes fewer arguments than the {given} given")]
    ExtraArguments {
        /// The method.
        method: &'static str,
        /// How many were given.
        given: usize,
    },
}

/// The next argument of `method`, of `A`'s kind.
pub(super) fn take<'a, A: Arg<'a>>(
    method: &'static str,
    arg: &'static str,
    args: &mut std::slice::Iter<'a, ArgValue>,
) -> Result<A, InvocationError> {
    let bad = |got: String| InvocationError::BadArgument { method, arg, expected: A::KIND, got };
    let value = args.next().ok_or_else(|| bad("nothing".into()))?;
    A::from_value(value).ok_or_else(|| bad(format!("{:?}", value.kind())))
}
