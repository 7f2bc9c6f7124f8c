//! Listed commands called **by name**, with their arguments as values:
//! what surfaces that take requests as data (an HTTP gateway, an MCP
//! server) need. The `commands!` list describes each method's arguments
//! ([`CommandInfo::args`](super::CommandInfo::args): name and [`ArgKind`],
//! taken from the method's own signature) and writes [`Invocation::new`]'s
//! dispatch, so a new command is callable by name, with its outputs as a
//! [`Table`], without code outside the list.
//!
//! Parsing text into [`ArgValue`]s is the caller's (each surface has its
//! own syntax); each kind names the engine type whose `FromStr` does it.

use std::future::Future;
use std::pin::Pin;

use super::commands::{CommandInfo, Listed, Page, Paged};
use super::Client;
use crate::error::Error;
use crate::proto::commands::{Adjust, AuxKind, CompanySection, Period, QuoteCategory};
use crate::proto::{Market, SecurityCode, TradeDate};
use crate::table::{Table, Tabular};

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
    /// A [`Page`]: rows to skip and rows to return.
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
    /// A [`CompanySection`] as the directory lists it (file, start, length).
    Section,
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
    /// [`ArgKind::Page`].
    Page(Page),
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
    /// [`ArgKind::Section`].
    Section(CompanySection),
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
            Self::Page(_) => ArgKind::Page,
            Self::TradeDate(_) => ArgKind::TradeDate,
            Self::OptionalTradeDate(_) => ArgKind::OptionalTradeDate,
            Self::AuxKind(_) => ArgKind::AuxKind,
            Self::QuoteCategory(_) => ArgKind::QuoteCategory,
            Self::Text(_) => ArgKind::Text,
            Self::Integer(_) => ArgKind::Integer,
            Self::Section(_) => ArgKind::Section,
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
    Page => Page(p) *p;
    TradeDate => TradeDate(d) *d;
    Option<TradeDate> => OptionalTradeDate(d) *d;
    AuxKind => AuxKind(k) *k;
    QuoteCategory => QuoteCategory(c) *c;
    &'a str => Text(s) s.as_str();
    u32 => Integer(n) *n;
    &'a CompanySection => Section(s) s;
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

/// A boxed future of a call's table.
pub type TableFuture<'a> = Pin<Box<dyn Future<Output = Result<Table, Error>> + Send + 'a>>;

/// A listed command, type-erased: call it, or ask for another page.
trait Erased: Send + Sync {
    fn call<'a>(&'a self, client: &'a Client) -> TableFuture<'a>;
    fn at_page(&self, page: Page) -> Option<Box<dyn Erased>>;
}

/// Calls `command`; its output as a table.
fn call_table<'a, C: Listed + Clone + Send + Sync + 'static>(command: &'a C, client: &'a Client) -> TableFuture<'a> {
    Box::pin(async move { client.call_listed(command.clone()).await.map(|out| out.table()) })
}

struct OneShot<C>(C);

impl<C> Erased for OneShot<C>
where
    C: Listed + Clone + Send + Sync + 'static,
{
    fn call<'a>(&'a self, client: &'a Client) -> TableFuture<'a> {
        call_table(&self.0, client)
    }

    fn at_page(&self, _: Page) -> Option<Box<dyn Erased>> {
        None
    }
}

struct PagedCall<C>(C);

impl<C> Erased for PagedCall<C>
where
    C: Paged + Clone + Send + Sync + 'static,
{
    fn call<'a>(&'a self, client: &'a Client) -> TableFuture<'a> {
        call_table(&self.0, client)
    }

    fn at_page(&self, page: Page) -> Option<Box<dyn Erased>> {
        Some(Box::new(PagedCall(self.0.at_page(page))))
    }
}

/// A listed command built from arguments by name, ready to call.
pub struct Invocation {
    info: &'static CommandInfo,
    command: Box<dyn Erased>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation").field("method", &self.info.method).finish_non_exhaustive()
    }
}

impl Invocation {
    /// The listed method `method` with `args` in its signature's order
    /// ([`CommandInfo::args`](super::CommandInfo::args)).
    pub fn new(method: &str, args: &[ArgValue]) -> Result<Self, InvocationError> {
        super::commands::invocation(method, args)
    }

    /// The command's entry in [`COMMANDS`](super::COMMANDS).
    pub fn info(&self) -> &'static CommandInfo {
        self.info
    }

    /// Sends it; its output as a table.
    pub fn call<'a>(&'a self, client: &'a Client) -> TableFuture<'a> {
        self.command.call(client)
    }

    /// The same command asking for `page` instead; `None` for a command
    /// that does not page.
    pub fn at_page(&self, page: Page) -> Option<Invocation> {
        self.command.at_page(page).map(|command| Invocation { info: self.info, command })
    }

    pub(super) fn one_shot<C: Listed + Clone + Send + Sync + 'static>(info: &'static CommandInfo, command: C) -> Self {
        Self { info, command: Box::new(OneShot(command)) }
    }

    pub(super) fn paged<C: Paged + Clone + Send + Sync + 'static>(info: &'static CommandInfo, command: C) -> Self {
        Self { info, command: Box::new(PagedCall(command)) }
    }
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

#[cfg(test)]
mod tests {
    use super::super::COMMANDS;
    use super::*;

    fn sample(kind: ArgKind) -> ArgValue {
        let code: SecurityCode = "sz000001".parse().unwrap();
        let day = TradeDate::from_yyyymmdd(20240102).unwrap();
        match kind {
            ArgKind::Market => ArgValue::Market(Market::Sh),
            ArgKind::Code => ArgValue::Code(code),
            ArgKind::Codes => ArgValue::Codes(vec![code]),
            ArgKind::Period => ArgValue::Period(Period::Day),
            ArgKind::Adjust => ArgValue::Adjust(Adjust::Forward),
            ArgKind::Page => ArgValue::Page(Page::new(3, 7)),
            ArgKind::TradeDate => ArgValue::TradeDate(day),
            ArgKind::OptionalTradeDate => ArgValue::OptionalTradeDate(None),
            ArgKind::AuxKind => ArgValue::AuxKind(AuxKind::VOLUME_COMPARISON),
            ArgKind::QuoteCategory => ArgValue::QuoteCategory(QuoteCategory::Etf),
            ArgKind::Text => ArgValue::Text("tdxzs.cfg".into()),
            ArgKind::Integer => ArgValue::Integer(9),
            ArgKind::Section => ArgValue::Section(CompanySection {
                name: "公司概况".into(),
                filename: "000001.txt".into(),
                start: 0,
                length: 10,
            }),
        }
    }

    #[test]
    fn every_listed_method_is_callable_by_name_from_its_described_arguments() {
        for info in COMMANDS {
            let args: Vec<ArgValue> = info.args.iter().map(|a| sample(a.kind)).collect();
            let call = Invocation::new(info.method, &args).unwrap_or_else(|e| panic!("{}: {e}", info.method));
            assert_eq!(call.info(), info);
            assert_eq!(call.at_page(Page::new(0, 1)).is_some(), info.paging.is_some(), "{}", info.method);
            assert_eq!(
                info.paging.is_some(),
                info.args.last().is_some_and(|a| a.kind == ArgKind::Page),
                "{}: a paged method takes its page last",
                info.method
            );
            assert!(!info.doc.trim().is_empty(), "{} has a doc comment", info.method);
            let mut extra = args.clone();
            extra.push(ArgValue::Integer(1));
            assert!(matches!(Invocation::new(info.method, &extra), Err(InvocationError::ExtraArguments { .. })));
        }
    }

    #[test]
    fn a_wrong_or_missing_argument_names_itself() {
        let err = Invocation::new("bars", &[ArgValue::Code("sz000001".parse().unwrap())]).unwrap_err();
        assert_eq!(err.to_string(), "bars: argument period takes Period, got nothing");
        let err = Invocation::new("count", &[ArgValue::Integer(1)]).unwrap_err();
        assert_eq!(err.to_string(), "count: argument market takes Market, got Integer");
        assert_eq!(Invocation::new("nope", &[]).unwrap_err(), InvocationError::UnknownCommand("nope".into()));
    }
}
