//! Calls made of several requests: every page of a series, codes in
//! batches, a file in chunks, boards from files. Written once, here, for
//! the async client; the blocking facade runs these same futures (the list
//! is `COMPOSITES` in `commands.rs`), so each loop exists once.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::bar_pages::BarPages;
use super::commands::{Page, PageOrder, Paged};
use super::Client;
use crate::adjust::AdjustmentFactors;
use crate::error::Error;
use crate::mutants::{on as mutant, Mutant};
use crate::proto::blockfile::{parse_block_file, Board, BoardKind};
use crate::proto::commands::*;
use crate::proto::ex::ExInstrument;
use crate::proto::limits::{BARS_PER_PAGE_MAX, EX_INSTRUMENTS_PER_PAGE_MAX};
use crate::proto::{Date, Market, SecurityCode, TradeDate};
use crate::supervisor::RequestError;

/// Codes per 0x000f and 0x0010 request (eltdx's default).
pub const CAPITAL_CHANGES_BATCH: usize = 75;

/// Days [`Client::history_trades_many`] pages at once.
pub const HISTORY_TRADES_LANES: usize = 16;

/// Rows per page of [`Client::all_category_quotes`].
pub const CATEGORY_PAGE_ROWS: u16 = 200;

impl Client {
    /// Every page of `request` (its other fields kept; `start` and `count`
    /// set per page), joined oldest first for series paged back from the
    /// newest. The one stop rule of every all-pages helper: an empty page,
    /// or the 16-bit `start` running out, or `max_pages` pages.
    pub async fn all_pages<C: Paged + Clone>(
        &self,
        request: C,
        max_pages: Option<usize>,
    ) -> Result<Vec<C::Row>, Error> {
        let mut pages: Vec<Vec<C::Row>> = Vec::new();
        let mut start = 0u32;
        for _ in 0..max_pages.unwrap_or(usize::MAX) {
            let Ok(start16) = u16::try_from(start) else {
                break;
            };
            let page = self.call_listed(request.at_page(Page::new(start16, C::PAGING.rows))).await?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        if C::PAGING.order == PageOrder::FromNewest {
            pages.reverse();
        }
        Ok(pages.into_iter().flatten().collect())
    }

    /// The whole 7727 instrument table, every market in the server's order
    /// (0x23f5 pages of 1000). The one stop rule of [`all_pages`](Self::all_pages),
    /// with a 32-bit `start` (the table outgrows 16 bits: eltdx counted
    /// 107,165 instruments): an empty page, or `max_pages` pages.
    pub async fn all_ex_instruments(&self, max_pages: Option<usize>) -> Result<Vec<ExInstrument>, Error> {
        let mut all = Vec::new();
        for _ in 0..max_pages.unwrap_or(usize::MAX) {
            let Ok(start) = u32::try_from(all.len()) else { break };
            let page = self.ex_instruments(start, EX_INSTRUMENTS_PER_PAGE_MAX).await?;
            if page.is_empty() {
                break;
            }
            all.extend(page);
        }
        Ok(all)
    }

    /// A market's whole code table (0x044d pages of 1600).
    pub async fn all_codes(&self, market: Market, max_pages: Option<usize>) -> Result<Vec<Security>, Error> {
        self.all_pages(SecurityList { market, start: 0, limit: 0 }, max_pages).await
    }

    /// Every bar of `period`, adjusted as `adjust` asks, oldest first
    /// (0x052d pages back from the newest: 800 bars, then pages of 800 that
    /// overlap the one before by a bar, so at most `800 + 799 * (max_pages - 1)`
    /// bars; [`BarPages`] says why). For an anchored adjustment,
    /// [`all_pages`](Self::all_pages) a [`Bars`] with its `anchor_date`.
    pub async fn all_bars(
        &self,
        code: SecurityCode,
        period: Period,
        adjust: Adjust,
        max_pages: Option<usize>,
    ) -> Result<Vec<Bar>, Error> {
        let request = Bars { adjust, ..Bars::new(code, period, 0, 0) };
        let mut pages = BarPages::new(BARS_PER_PAGE_MAX);
        let mut asked = 0;
        while let Some(page) = pages.next_page() {
            if max_pages.is_some_and(|max| asked >= max) {
                break;
            }
            asked += 1;
            let bars = self.call_listed(request.at_page(page)).await?;
            pages.received(bars).map_err(|e| e.of(code, period))?;
        }
        Ok(pages.into_bars())
    }

    /// Every tick of a past day, oldest first (0x0fb5 pages of 2000 back from the newest).
    pub async fn all_history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        max_pages: Option<usize>,
    ) -> Result<Vec<HistoryTrade>, Error> {
        self.all_pages(HistoryTrades { date, code, start: 0, count: 0 }, max_pages).await
    }

    /// Every tick of a past day with order counts, oldest first (0x0fc6
    /// pages of 1800 back from the newest).
    pub async fn all_detailed_history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        max_pages: Option<usize>,
    ) -> Result<Vec<Trade>, Error> {
        self.all_pages(DetailedHistoryTrades { date, code, start: 0, count: 0 }, max_pages).await
    }

    /// Every row of a category in code order (0x054b pages of [`CATEGORY_PAGE_ROWS`]).
    pub async fn all_category_quotes(
        &self,
        category: QuoteCategory,
        max_pages: Option<usize>,
    ) -> Result<Vec<Snapshot>, Error> {
        self.all_pages(CategoryQuotes::new(category, category_sort::CODE, 0, 0, false), max_pages).await
    }

    /// The whole special-security limit table (0x0452 pages from row 0).
    pub async fn all_special_limits(&self, max_pages: Option<usize>) -> Result<Vec<SpecialLimit>, Error> {
        self.all_pages(SpecialLimits::new(0), max_pages).await
    }

    /// Every daily bar of a delisted security, oldest first (0x052b pages
    /// of 800 back from the newest).
    pub async fn all_delisted_bars(
        &self,
        code: SecurityCode,
        max_pages: Option<usize>,
    ) -> Result<Vec<DelistedBar>, Error> {
        self.all_pages(DelistedBars { code, start: 0, count: 0 }, max_pages).await
    }

    /// Every tick of each `(code, date)`, in the order asked: up to
    /// [`HISTORY_TRADES_LANES`] days page at once, so they spread over the pool.
    pub async fn history_trades_many(
        &self,
        days: &[(SecurityCode, TradeDate)],
    ) -> Result<Vec<Vec<HistoryTrade>>, Error> {
        let next = AtomicUsize::new(0);
        let lane = || async {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(code, date)) = days.get(i) else {
                    return Ok::<_, Error>(done);
                };
                done.push((i, self.all_history_trades(code, date, None).await?));
            }
        };
        let lanes = (0..HISTORY_TRADES_LANES.min(days.len())).map(|_| lane()).collect();
        let mut out: Vec<Vec<HistoryTrade>> = vec![Vec::new(); days.len()];
        for lane in join_all(lanes).await {
            for (i, trades) in lane? {
                out[i] = trades;
            }
        }
        Ok(out)
    }

    /// Capital changes (0x000f) of `codes`, one block per listed code in
    /// request order. Codes go in batches of [`CAPITAL_CHANGES_BATCH`],
    /// all batches at once so they spread over the pool; a server that
    /// answers a prefix of a batch is asked again for the rest.
    pub async fn capital_changes(&self, codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error> {
        in_batches(codes, |batch| self.capital_changes_whole_batch(batch)).await
    }

    async fn capital_changes_whole_batch(&self, codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error> {
        let mut out = Vec::with_capacity(codes.len());
        let mut rest = codes;
        while !rest.is_empty() {
            let blocks = self.capital_changes_batch(rest).await?;
            rest = next_capital_changes(rest, &blocks)?;
            if mutant(Mutant::CapitalChangesPrefixLost) {
                rest = &[];
            }
            out.extend(blocks);
        }
        Ok(out)
    }

    /// Finance records (0x0010) of `codes`, in batches of
    /// [`CAPITAL_CHANGES_BATCH`] sent at once; codes the server does not
    /// know have no record.
    pub async fn finance(&self, codes: &[SecurityCode]) -> Result<Vec<Finance>, Error> {
        in_batches(codes, |batch| self.finance_batch(batch)).await
    }

    /// Forward and backward adjustment factors of `code` from its capital
    /// changes, keeping events within `[start, anchor]` (apply them to
    /// stored raw bars with [`adjust_locally`](crate::adjust::adjust_locally)).
    pub async fn adjustment_factors(
        &self,
        code: SecurityCode,
        start: Option<Date>,
        anchor: Option<Date>,
    ) -> Result<AdjustmentFactors, Error> {
        let blocks = self.capital_changes(&[code]).await?;
        let changes: Vec<CapitalChange> = blocks.into_iter().flat_map(|b| b.records).collect();
        Ok(AdjustmentFactors::new(code, &changes, start, anchor))
    }

    /// Company info (F10): the 0x02cf directory, then every section's text
    /// (0x02d0, all at once so they spread over the pool), in directory order.
    pub async fn company_info(&self, code: SecurityCode) -> Result<Vec<(CompanySection, String)>, Error> {
        let sections = self.company_sections(code).await?;
        let texts = join_all(sections.iter().map(|s| self.company_text(code, s)).collect()).await;
        sections.into_iter().zip(texts).map(|(s, text)| Ok((s, text?))).collect()
    }

    /// A whole server file: its metadata, then 0x06b9 chunks of
    /// [`FILE_CHUNK_BYTES_MAX`] in order over one pinned connection (one
    /// server's copy, never a mix), checked against the announced size and
    /// MD5. A file the server does not have is empty.
    pub async fn download_file(&self, name: &str) -> Result<Vec<u8>, Error> {
        let pin = self.pin().await?;
        let meta = pin.file_meta(name).await?;
        let mut data = Vec::with_capacity(meta.size.min(16 << 20) as usize);
        while data.len() < meta.size as usize {
            let chunk = pin.file_chunk(name, data.len() as u32, FILE_CHUNK_BYTES_MAX).await?;
            if chunk.is_empty() {
                break;
            }
            data.extend_from_slice(&chunk);
        }
        check_file(name, &meta, &data)?;
        Ok(data)
    }

    /// The boards of one kind: its file downloaded, checked and parsed.
    pub async fn boards(&self, kind: BoardKind) -> Result<Vec<Board>, Error> {
        let data = self.download_file(kind.file_name()).await?;
        parse_boards(kind, &data)
    }

    /// The board named `name` in any board file, and its kind; `None` when
    /// no file has it. Files are fetched in [`BoardKind::ALL`] order until found.
    pub async fn board_members(&self, name: &str) -> Result<Option<(BoardKind, Board)>, Error> {
        for kind in BoardKind::ALL {
            if let Some(board) = self.boards(kind).await?.into_iter().find(|b| b.name == name) {
                return Ok(Some((kind, board)));
            }
        }
        Ok(None)
    }
}

/// The codes still to ask for after `blocks` answered a prefix of `asked`.
/// A reply with no block for a non-empty request makes no progress: an error.
fn next_capital_changes<'a>(
    asked: &'a [SecurityCode],
    blocks: &[CapitalChangeBlock],
) -> Result<&'a [SecurityCode], Error> {
    if blocks.is_empty() {
        return Err(Error::Request(RequestError::BadReply(format!(
            "capital changes: no block for {} requested codes",
            asked.len()
        ))));
    }
    // The parser checked that the blocks answer a prefix of `asked`.
    debug_assert!(blocks.len() <= asked.len());
    debug_assert!(blocks.iter().zip(asked).all(|(b, c)| b.code == *c));
    Ok(&asked[blocks.len().min(asked.len())..])
}

/// Polls every future until all are done; outputs in input order.
/// `codes` in batches of [`CAPITAL_CHANGES_BATCH`], every batch at once
/// (so they spread over the pool), the rows in request order.
async fn in_batches<'a, T, F, Fut>(codes: &'a [SecurityCode], batch: F) -> Result<Vec<T>, Error>
where
    F: Fn(&'a [SecurityCode]) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, Error>>,
{
    let mut out = Vec::with_capacity(codes.len());
    for rows in join_all(codes.chunks(CAPITAL_CHANGES_BATCH).map(batch).collect()).await {
        out.extend(rows?);
    }
    Ok(out)
}

async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}

/// Checks a downloaded file against its 0x02c5 metadata: the size always,
/// the MD5 when the server announced one (not all NULs).
fn check_file(name: &str, meta: &FileMetaReply, data: &[u8]) -> Result<(), Error> {
    let bad = |reason: String| Error::BadFile { file: name.to_owned(), reason };
    if data.len() != meta.size as usize {
        return Err(bad(format!("{} bytes downloaded, metadata says {}", data.len(), meta.size)));
    }
    let announced = meta.md5_hex();
    let actual = crate::proto::blockfile::md5_hex(data);
    if !announced.is_empty() && !announced.eq_ignore_ascii_case(&actual) {
        return Err(bad(format!("MD5 {actual}, metadata says {announced}")));
    }
    Ok(())
}

/// Parses a downloaded board file; an absent (empty) file has no boards.
fn parse_boards(kind: BoardKind, data: &[u8]) -> Result<Vec<Board>, Error> {
    if data.is_empty() {
        return Ok(Vec::new());
    }
    parse_block_file(data).map_err(|e| Error::BadFile { file: kind.file_name().to_owned(), reason: e.to_string() })
}
