//! Listed commands called **by name**, with their arguments as
//! [`ArgValue`]s (`args.rs`): a call's outputs come back as a [`Table`].
//! The `commands!` list writes the dispatch (`with_listed`, which hands each
//! command to a visitor by its type), so a new command is callable by name
//! without code outside the list.

use std::future::Future;
use std::pin::Pin;

use super::args::{ArgValue, InvocationError};
use super::commands::{self, CommandInfo, Listed, ListedVisitor, Page, Paged};
use super::Client;
use crate::error::Error;
use crate::table::{Table, Tabular};

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
        commands::with_listed(method, args, Build)
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
}

/// Builds an [`Invocation`] of the command the list found.
struct Build;

impl ListedVisitor for Build {
    type Out = Invocation;

    fn one_shot<C: Listed + Clone + Send + Sync + 'static>(self, info: &'static CommandInfo, command: C) -> Invocation {
        Invocation { info, command: Box::new(OneShot(command)) }
    }

    fn paged<C: Paged + Clone + Send + Sync + 'static>(self, info: &'static CommandInfo, command: C) -> Invocation {
        Invocation { info, command: Box::new(PagedCall(command)) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::args::ArgKind;
    use super::super::COMMANDS;
    use super::*;
    use crate::proto::commands::{Adjust, AuxKind, CompanySection, Period, QuoteCategory};
    use crate::proto::{Market, SecurityCode, TradeDate};

    fn sample(kind: ArgKind) -> ArgValue {
        let code: SecurityCode = "sz000001".parse().unwrap();
        let day = TradeDate::from_yyyymmdd(20240102).unwrap();
        match kind {
            ArgKind::Market => ArgValue::Market(Market::Sh),
            ArgKind::Code => ArgValue::Code(code),
            ArgKind::Codes => ArgValue::Codes(vec![code]),
            ArgKind::Period => ArgValue::Period(Period::Day),
            ArgKind::Adjust => ArgValue::Adjust(Adjust::Forward),
            ArgKind::Page => ArgValue::Page { start: 3, count: 7 },
            ArgKind::TradeDate => ArgValue::TradeDate(day),
            ArgKind::OptionalTradeDate => ArgValue::OptionalTradeDate(None),
            ArgKind::AuxKind => ArgValue::AuxKind(AuxKind::VOLUME_COMPARISON),
            ArgKind::QuoteCategory => ArgValue::QuoteCategory(QuoteCategory::Etf),
            ArgKind::Text => ArgValue::Text("tdxzs.cfg".into()),
            ArgKind::Integer => ArgValue::Integer(9),
            ArgKind::SmallInteger => ArgValue::SmallInteger(2),
            ArgKind::Fields => {
                ArgValue::Fields(crate::proto::mac::FieldBitmap::of([crate::proto::mac::MacField::CLOSE]))
            }
            ArgKind::Section => ArgValue::Section(CompanySection {
                name: "公司概况".into(),
                filename: "000001.txt".into(),
                start: 0,
                length: 10,
            }),
            ArgKind::ExCode => ArgValue::ExCode("47#IFL0".parse().unwrap()),
            ArgKind::ExCodes => ArgValue::ExCodes(vec!["47#IFL0".parse().unwrap(), "74#AAPL".parse().unwrap()]),
            ArgKind::ExPeriod => ArgValue::ExPeriod(crate::proto::ex::ExPeriod::Day),
            ArgKind::ExMarket => ArgValue::ExMarket(47),
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
