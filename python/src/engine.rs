//! Every call into the Rust `tdx_engine::Client` lives in this module: the
//! builder, each command, pushes, diagnostics, close. Nothing else in the
//! binding names a client method, so API renames land here only.
//!
//! Blocking: each call's future is polled on the caller's thread with the
//! GIL released; the thread parks until the engine wakes it or 25 ms pass,
//! then takes the GIL to run Python's signal handlers. A handler that
//! raises (Ctrl+C: `KeyboardInterrupt`) drops the future, which cancels the
//! request in the engine, and the exception propagates. The engine's own
//! deadline (`timeout`) ends every request.

use std::collections::{BTreeSet, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3::IntoPyObjectExt;
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::{
    category_sort, mac_board_named, mac_kind_named, mac_sort, Adjust, AuxKind, BarTime, CategoryQuotes, FieldBitmap,
    LegacySecurityList, Period, QuoteCategory, Refresh, RefreshTarget, SortOrder,
};
use tdx_engine::proto::Command;
use tdx_engine::proto::{Date, Market, SecurityCode, TradeDate};
use tdx_engine::runtime::PushFrame;
use tdx_engine::supervisor::RequestError;
use tdx_engine::{Client, Error, Page};

use crate::convert;
use crate::errors::to_py;
use crate::table::Table;

/// How often a blocked call takes the GIL to check for signals.
pub const SIGNAL_CHECK: Duration = Duration::from_millis(25);

/// The engine's commands (`Request::NAMES`), for the binding's coverage test.
pub fn command_names() -> Vec<&'static str> {
    tdx_engine::proto::Request::NAMES.to_vec()
}

/// The F10 entries (`tdx_engine::f10::ENTRIES`), for the binding's coverage test.
pub fn f10_entry_names() -> Vec<&'static str> {
    tdx_engine::f10::ENTRIES.iter().map(|e| e.name).collect()
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Who does a wait's exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// This thread, when a connection is free: it writes the request and
    /// waits in the socket's read, so its calls run one at a time.
    Thread,
    /// The engine's slot tasks, so the future's calls run at once (a code
    /// list fanned out over the pool).
    Concurrent,
}

/// Polls `future` to completion without the GIL, checking for signals
/// every [`SIGNAL_CHECK`]; `until` bounds the wait (`Ok(None)` when it passes).
fn wait_until<T: Send, F: Future<Output = T> + Send>(
    py: Python<'_>,
    future: F,
    until: Option<Instant>,
) -> PyResult<Option<T>> {
    wait_as(py, Caller::Thread, future, until, None)
}

/// Tells a Python callable (a progress bar's `update`) how many more of a
/// code list's codes are done, each time the wait takes the GIL.
struct Progress<'py> {
    done: Arc<AtomicUsize>,
    reported: usize,
    update: Bound<'py, PyAny>,
}

impl Progress<'_> {
    fn report(&mut self) -> PyResult<()> {
        let done = self.done.load(Ordering::Relaxed);
        debug_assert!(done >= self.reported, "progress only grows");
        if done > self.reported {
            self.update.call1((done - self.reported,))?;
            self.reported = done;
        }
        Ok(())
    }
}

fn wait_as<T: Send, F: Future<Output = T> + Send>(
    py: Python<'_>,
    caller: Caller,
    future: F,
    until: Option<Instant>,
    mut progress: Option<&mut Progress<'_>>,
) -> PyResult<Option<T>> {
    let mut future = Box::pin(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    loop {
        let step = py.detach(|| {
            let mut cx = Context::from_waker(&waker);
            let slice_end = Instant::now() + SIGNAL_CHECK;
            loop {
                // This thread does its own exchange when a connection is
                // free, waiting in the socket's read for one slice at most.
                let polled = match caller {
                    Caller::Thread => tdx_engine::runtime::on_blocking_thread(|| future.as_mut().poll(&mut cx)),
                    Caller::Concurrent => future.as_mut().poll(&mut cx),
                };
                if let Poll::Ready(out) = polled {
                    return Some(Some(out));
                }
                let now = Instant::now();
                if until.is_some_and(|u| now >= u) {
                    return Some(None);
                }
                if now >= slice_end {
                    return None;
                }
                let end = until.map_or(slice_end, |u| u.min(slice_end));
                std::thread::park_timeout(end - now);
            }
        });
        if let Some(p) = progress.as_deref_mut() {
            p.report()?;
        }
        match step {
            Some(out) => return Ok(out),
            // A raising handler drops the future here: the engine cancels it.
            None => py.check_signals()?,
        }
    }
}

fn wait<T: Send, F: Future<Output = Result<T, Error>> + Send>(py: Python<'_>, future: F) -> PyResult<T> {
    wait_with(py, Caller::Thread, future)
}

fn wait_with<T: Send, F: Future<Output = Result<T, Error>> + Send>(
    py: Python<'_>,
    caller: Caller,
    future: F,
) -> PyResult<T> {
    // Without a bound the wait ends only with the future's output.
    wait_as(py, caller, future, None, None)?
        .unwrap_or(Err(Error::Request(RequestError::Fatal("wait ended early".into()))))
        .map_err(to_py)
}

/// Calls of a code list in flight at once, as the engine's own
/// `history_trades_many` pages days: enough to spread over the pool.
pub const FAN_OUT_LANES: usize = tdx_engine::HISTORY_TRADES_LANES;

/// `call` for every code, [`FAN_OUT_LANES`] at a time; the outputs in the
/// order of `codes`, `done_count` counting the codes answered. The first
/// error ends it (dropping the rest cancels them).
async fn fan_out<T, Fut>(
    codes: &[SecurityCode],
    done_count: &AtomicUsize,
    call: impl Fn(SecurityCode) -> Fut,
) -> Result<Vec<T>, Error>
where
    Fut: Future<Output = Result<T, Error>>,
{
    let next = AtomicUsize::new(0);
    let lane = || async {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&code) = codes.get(i) else {
                return Ok::<_, Error>(done);
            };
            done.push((i, call(code).await?));
            done_count.fetch_add(1, Ordering::Relaxed);
        }
    };
    let mut lanes: Vec<_> = (0..FAN_OUT_LANES.min(codes.len())).map(|_| Some(Box::pin(lane()))).collect();
    let mut out: Vec<Option<T>> = codes.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| -> Poll<Result<(), Error>> {
        for slot in lanes.iter_mut() {
            let Some(lane) = slot else { continue };
            if let Poll::Ready(done) = lane.as_mut().poll(cx) {
                *slot = None;
                for (i, value) in done? {
                    out[i] = Some(value);
                }
            }
        }
        if lanes.iter().any(Option::is_some) {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await?;
    debug_assert!(out.iter().all(Option::is_some), "every code answered");
    Ok(out.into_iter().flatten().collect())
}

/// `"start"` or `"end"`: which end of its interval a bar's stamp names.
fn bar_time(s: &str) -> PyResult<BarTime> {
    match s.trim().to_ascii_lowercase().as_str() {
        "start" => Ok(BarTime::Start),
        "end" => Ok(BarTime::End),
        other => Err(value_error("bar_time", format!("{other:?}: use \"start\" or \"end\""))),
    }
}

/// A category list's sort key (`code`, `price`, `amount`, `change`, eltdx's
/// Chinese names, or a number) and direction as a 0x054b request.
fn category_request(category: &str, sort: &str, ascending: bool, page: Page) -> PyResult<CategoryQuotes> {
    let cat = category.parse::<QuoteCategory>().map_err(|e| value_error("category", e))?;
    let key = category_sort::parse(sort).map_err(|e| value_error("sort_by", e))?;
    Ok(CategoryQuotes::new(cat, key, page.start, page.count, ascending))
}

/// A JSON value (diagnostics, a ranking) as Python dicts, lists and scalars.
fn json_to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<Py<PyAny>> {
    use serde_json::Value;
    match v {
        Value::Null => Ok(py.None()),
        Value::Bool(b) => b.into_py_any(py),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_py_any(py),
            (None, Some(u)) => u.into_py_any(py),
            (None, None) => n.as_f64().unwrap_or(f64::NAN).into_py_any(py),
        },
        Value::String(s) => s.into_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_py_any(py)
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, item) in map {
                d.set_item(k, json_to_py(py, item)?)?;
            }
            d.into_py_any(py)
        }
    }
}

fn value_error(field: &str, reason: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{field}: {reason}"))
}

/// `sz000001`, `SZ000001` or `000001.SZ`.
fn code(field: &str, s: &str) -> PyResult<SecurityCode> {
    s.trim().parse::<SecurityCode>().map_err(|e| value_error(field, e))
}

fn ex_code(s: &str) -> PyResult<tdx_engine::proto::ex::ExCode> {
    s.trim().parse().map_err(|e| value_error("code", e))
}

fn ex_period(s: &str) -> PyResult<tdx_engine::proto::ex::ExPeriod> {
    s.trim().parse().map_err(|e: String| value_error("period", e))
}

/// A 7727 market by id (`"47"`) or name (`"cffex"`).
fn ex_market(s: &str) -> PyResult<u8> {
    let s = s.trim();
    match s.parse::<u8>() {
        Ok(id) if !s.starts_with('+') => Ok(id),
        _ => tdx_engine::proto::ex::ExMarket::from_name(&s.to_ascii_lowercase()).map(|m| m.id()).ok_or_else(|| {
            value_error("market", format!("{s:?} is neither a market id 0..=255 nor an extended market's name"))
        }),
    }
}

fn codes(field: &str, list: &[String]) -> PyResult<Vec<SecurityCode>> {
    list.iter().map(|s| code(field, s)).collect()
}

fn market(s: &str) -> PyResult<Market> {
    s.trim().to_ascii_lowercase().parse::<Market>().map_err(|e| value_error("market", e))
}

fn trade_date(field: &str, yyyymmdd: u32) -> PyResult<TradeDate> {
    TradeDate::from_yyyymmdd(yyyymmdd).ok_or_else(|| value_error(field, format!("{yyyymmdd} is not a date")))
}

fn date(field: &str, yyyymmdd: Option<u32>) -> PyResult<Option<Date>> {
    yyyymmdd.map(|d| Date::from_yyyymmdd(d).ok_or_else(|| value_error(field, format!("{d} is not a date")))).transpose()
}

fn u16_arg(field: &str, v: i64) -> PyResult<u16> {
    u16::try_from(v).map_err(|_| value_error(field, format!("{v} is outside 0..=65535")))
}

/// A page size or a count of rows: 1..=65535 (0 asks for nothing).
fn count_arg(field: &str, v: i64) -> PyResult<u16> {
    u16::try_from(v).ok().filter(|n| *n >= 1).ok_or_else(|| value_error(field, format!("{v} is outside 1..=65535")))
}

/// A count of pages: at least 1.
fn pages_arg(field: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).ok().filter(|n| *n >= 1).ok_or_else(|| value_error(field, format!("{v} is not at least 1")))
}

fn usize_arg(field: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| value_error(field, format!("{v} is negative")))
}

fn period(s: &str) -> PyResult<Period> {
    s.trim().to_ascii_lowercase().parse::<Period>().map_err(|e| value_error("period", e))
}

/// Python's `None` and `""` are raw prices.
fn adjust(s: Option<&str>) -> PyResult<Adjust> {
    match s.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Ok(Adjust::None),
        Some(name) => name.parse::<Adjust>().map_err(|e| value_error("adjust", e)),
    }
}

fn aux_kind(s: &str) -> PyResult<AuxKind> {
    s.trim().parse::<AuxKind>().map_err(|e| value_error("kind", e))
}

fn u32_arg(field: &str, v: i64) -> PyResult<u32> {
    u32::try_from(v).map_err(|_| value_error(field, format!("{v} is outside 0..=4294967295")))
}

fn optional_trade_date(field: &str, yyyymmdd: Option<u32>) -> PyResult<Option<TradeDate>> {
    yyyymmdd.map(|d| trade_date(field, d)).transpose()
}

/// Field names or `bit_N`, comma-separated, or `all` (FieldBitmap's parser).
fn fields(s: &str) -> PyResult<FieldBitmap> {
    s.parse::<FieldBitmap>().map_err(|e| value_error("fields", e))
}

/// A board code or category name as a 0x122C id.
fn mac_board(s: &str) -> PyResult<u32> {
    mac_board_named(s).map_err(|e| value_error("board", e))
}

/// A board kind name as a 0x1231 kind.
fn mac_kind(s: &str) -> PyResult<u16> {
    mac_kind_named(s).map_err(|e| value_error("kind", e))
}

/// MAC adjusts on the server: none, qfq or hfq only.
fn mac_adjust(s: Option<&str>) -> PyResult<Adjust> {
    match adjust(s)? {
        a @ (Adjust::None | Adjust::Forward | Adjust::Backward) => Ok(a),
        other => Err(value_error("adjust", format!("{other:?}: MAC servers adjust by none, qfq or hfq only"))),
    }
}

fn seconds(field: &str, v: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(v).map_err(|_| value_error(field, format!("{v} is not a duration in seconds")))
}

/// The builder options, as Python passes them (names of the Rust
/// builder); an absent key keeps the engine's default.
#[derive(Default)]
pub struct Options {
    pub hosts: Vec<String>,
    pub candidates: Option<Vec<String>>,
    pub canary: Option<bool>,
    pub second_opinion: Option<bool>,
    pub rate_cap: Option<Option<i64>>,
    pub connect_concurrency: Option<i64>,
    pub connects_per_host: Option<i64>,
    pub max_connections_per_host: Option<i64>,
    pub server_count: Option<i64>,
    pub connections_per_server: Option<i64>,
    pub pool_size: Option<i64>,
    pub runtime_workers: Option<i64>,
    pub timeout: Option<f64>,
    pub heartbeat_interval: Option<Option<f64>>,
    pub max_pending_requests: Option<i64>,
    pub push_queue_size: Option<i64>,
    pub push_queue_bytes: Option<i64>,
    pub raw_budget_bytes: Option<i64>,
    pub decoded_budget_bytes: Option<i64>,
    pub ranking_file: Option<PathBuf>,
    pub calendar_file: Option<PathBuf>,
    pub rng_seed: Option<u64>,
    pub f10_base_url: Option<String>,
    pub ex_hosts: Vec<String>,
}

impl Options {
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
            match d.get_item(key)? {
                None => Ok(None),
                Some(v) => v.extract::<T>().map(Some).map_err(|e| {
                    let e: PyErr = e.into();
                    PyValueError::new_err(format!("{key}: {}", e.value(d.py())))
                }),
            }
        }
        Ok(Self {
            hosts: get(d, "hosts")?.unwrap_or_default(),
            candidates: get(d, "candidates")?,
            canary: get(d, "canary")?,
            second_opinion: get(d, "second_opinion")?,
            rate_cap: get(d, "rate_cap")?,
            connect_concurrency: get(d, "connect_concurrency")?,
            connects_per_host: get(d, "connects_per_host")?,
            max_connections_per_host: get(d, "max_connections_per_host")?,
            server_count: get(d, "server_count")?,
            connections_per_server: get(d, "connections_per_server")?,
            pool_size: get(d, "pool_size")?,
            runtime_workers: get(d, "runtime_workers")?,
            timeout: get(d, "timeout")?,
            heartbeat_interval: get(d, "heartbeat_interval")?,
            max_pending_requests: get(d, "max_pending_requests")?,
            push_queue_size: get(d, "push_queue_size")?,
            push_queue_bytes: get(d, "push_queue_bytes")?,
            raw_budget_bytes: get(d, "raw_budget_bytes")?,
            decoded_budget_bytes: get(d, "decoded_budget_bytes")?,
            ranking_file: get(d, "ranking_file")?,
            calendar_file: get(d, "calendar_file")?,
            rng_seed: get(d, "rng_seed")?,
            f10_base_url: get(d, "f10_base_url")?,
            ex_hosts: get(d, "ex_hosts")?.unwrap_or_default(),
        })
    }
}

fn build(o: Options) -> PyResult<Client> {
    let mut b = Client::builder();
    if !o.hosts.is_empty() {
        b = b.hosts(o.hosts);
    }
    if let Some(c) = o.candidates {
        b = b.candidates(c);
    }
    if !o.ex_hosts.is_empty() {
        let servers = o.ex_hosts.len().min(2);
        b = b.pool_hosts(tdx_engine::Pool::Ex, o.ex_hosts).pool_servers(tdx_engine::Pool::Ex, servers, 2);
    }
    if let Some(v) = o.canary {
        b = b.canary(v);
    }
    if let Some(v) = o.second_opinion {
        b = b.second_opinion(v);
    }
    if let Some(cap) = o.rate_cap {
        let cap = cap
            .map(|c| u32::try_from(c).map_err(|_| value_error("rate_cap", format!("{c} is outside 0..=4294967295"))))
            .transpose()?;
        b = b.rate_cap(cap);
    }
    macro_rules! sizes {
        ($($field:ident),*) => {$(
            if let Some(v) = o.$field {
                b = b.$field(usize_arg(stringify!($field), v)?);
            }
        )*};
    }
    sizes!(
        connect_concurrency,
        connects_per_host,
        max_connections_per_host,
        server_count,
        connections_per_server,
        pool_size,
        runtime_workers,
        max_pending_requests,
        raw_budget_bytes,
        decoded_budget_bytes
    );
    if let Some(t) = o.timeout {
        b = b.timeout(seconds("timeout", t)?);
    }
    if let Some(h) = o.heartbeat_interval {
        b = b.heartbeat_interval(h.map(|h| seconds("heartbeat_interval", h)).transpose()?);
    }
    if o.push_queue_size.is_some() || o.push_queue_bytes.is_some() {
        let d = tdx_engine::supervisor::SupervisorConfig::default();
        let frames = o.push_queue_size.map_or(Ok(d.push_frames_max), |v| usize_arg("push_queue_size", v))?;
        let bytes = o.push_queue_bytes.map_or(Ok(d.push_bytes_max), |v| usize_arg("push_queue_bytes", v))?;
        b = b.push_queue(frames, bytes);
    }
    if let Some(p) = o.ranking_file {
        b = b.ranking_file(p);
    }
    if let Some(p) = o.calendar_file {
        b = b.calendar_file(p);
    }
    if let Some(s) = o.rng_seed {
        b = b.rng_seed(s);
    }
    if let Some(url) = o.f10_base_url {
        b = b.f10_base_url(url);
    }
    b.build().map_err(to_py)
}

/// Most codes remembered for parsing pushes (pushes of codes past it still
/// parse when they hold one record, as every push seen so far does).
const REFRESHED_CODES_MAX: usize = 65_536;

/// A push frame as a dict; with `parse` (the codes refreshed so far, which
/// delimit a many-record payload), also `quotes`: its 0x0547 records as a
/// Table, or `None` with `parse_error` saying why not.
fn push_dict<'py>(py: Python<'py>, f: &PushFrame, parse: Option<&[RefreshTarget]>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("msg_type", f.header.msg_type)?;
    d.set_item("msg_id", f.header.msg_id)?;
    d.set_item("slot", format!("{:?}", f.slot))?;
    d.set_item("payload", PyBytes::new(py, &f.payload))?;
    if let Some(targets) = parse {
        let parsed = if f.header.msg_type == Refresh::MSG_TYPE {
            Refresh { targets: targets.to_vec() }.parse_reply(&f.payload).map_err(|e| e.to_string())
        } else {
            Err(format!("msg_type {:#06x} is not a quote push (0x0547)", f.header.msg_type))
        };
        match parsed {
            Ok(reply) => {
                d.set_item("quotes", convert::refresh(&reply.records))?;
                d.set_item("parse_error", py.None())?;
            }
            Err(e) => {
                d.set_item("quotes", py.None())?;
                d.set_item("parse_error", e)?;
            }
        }
    }
    Ok(d)
}

/// The engine handle behind `tdx_engine.Client`: flat, one method per
/// command; the Python layer arranges them in eltdx's namespaces.
#[pyclass(frozen, module = "tdx_engine._native")]
pub struct NativeClient {
    client: Client,
    /// Push frames received but not yet handed out by `poll_push`.
    pushes: Mutex<VecDeque<PushFrame>>,
    /// Codes refreshed so far (at most [`REFRESHED_CODES_MAX`]): what
    /// delimits the records of a parsed push.
    refreshed: Mutex<BTreeSet<SecurityCode>>,
}

impl NativeClient {
    /// One Table of every code's rows, a `code` column first: `call` per
    /// code fanned out over the pool, each reply through `convert`.
    fn per_code<T: Send, Fut>(
        &self,
        py: Python<'_>,
        codes_: &[String],
        call: impl Fn(SecurityCode) -> Fut + Send + Sync,
        convert: impl Fn(&T) -> Table,
    ) -> PyResult<Table>
    where
        Fut: Future<Output = Result<T, Error>> + Send,
    {
        self.per_code_progress(py, codes_, None, call, convert)
    }

    /// [`per_code`](Self::per_code), calling `progress` (if any) with the
    /// number of codes done since its last call, every time the wait wakes.
    fn per_code_progress<T: Send, Fut>(
        &self,
        py: Python<'_>,
        codes_: &[String],
        progress: Option<Bound<'_, PyAny>>,
        call: impl Fn(SecurityCode) -> Fut + Send + Sync,
        convert: impl Fn(&T) -> Table,
    ) -> PyResult<Table>
    where
        Fut: Future<Output = Result<T, Error>> + Send,
    {
        let cs = codes("code", codes_)?;
        if cs.is_empty() {
            return Err(value_error("code", "an empty list of codes"));
        }
        let done = Arc::new(AtomicUsize::new(0));
        let mut progress = progress.map(|update| Progress { done: done.clone(), reported: 0, update });
        let replies = wait_as(py, Caller::Concurrent, fan_out(&cs, &done, call), None, progress.as_mut())?
            .unwrap_or(Err(Error::Request(RequestError::Fatal("wait ended early".into()))))
            .map_err(to_py)?;
        assert_eq!(replies.len(), cs.len(), "one reply per code");
        Ok(Table::with_codes(cs.iter().zip(&replies).map(|(c, r)| (c.to_string(), convert(r))).collect()))
    }

    fn refresh_targets(&self) -> Vec<RefreshTarget> {
        self.refreshed.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|&c| RefreshTarget::from(c)).collect()
    }
}

#[pymethods]
impl NativeClient {
    /// `options`: a dict of builder options (absent keys: the engine's defaults).
    #[new]
    fn new(options: &Bound<'_, PyDict>) -> PyResult<Self> {
        Ok(Self {
            client: build(Options::from_dict(options)?)?,
            pushes: Mutex::new(VecDeque::new()),
            refreshed: Mutex::new(BTreeSet::new()),
        })
    }

    fn count(&self, py: Python<'_>, market_: &str) -> PyResult<u16> {
        let m = market(market_)?;
        wait(py, self.client.count(m))
    }

    fn codes(&self, py: Python<'_>, market_: &str, start: i64, limit: i64) -> PyResult<Table> {
        let m = market(market_)?;
        let page = Page::new(u16_arg("start", start)?, count_arg("limit", limit)?);
        wait(py, self.client.codes(m, page)).map(|r| convert::securities(&r))
    }

    fn all_codes(&self, py: Python<'_>, market_: &str) -> PyResult<Table> {
        let m = market(market_)?;
        wait(py, self.client.all_codes(m, None)).map(|r| convert::securities(&r))
    }

    fn legacy_codes(&self, py: Python<'_>, market_: &str, start: i64) -> PyResult<Table> {
        let cmd = LegacySecurityList { market: market(market_)?, start: u16_arg("start", start)? };
        wait(py, self.client.call(cmd)).map(|r| convert::legacy_securities(&r))
    }

    #[pyo3(signature = (code_, period_, adjust_, start, count, bar_time_="start"))]
    #[allow(clippy::too_many_arguments)]
    fn bars(
        &self,
        py: Python<'_>,
        code_: &str,
        period_: &str,
        adjust_: Option<&str>,
        start: i64,
        count: i64,
        bar_time_: &str,
    ) -> PyResult<Table> {
        let (c, p, a, t) = (code("code", code_)?, period(period_)?, adjust(adjust_)?, bar_time(bar_time_)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.bars(c, p, a, Page::new(s, n))).map(|r| convert::stamped_bars(&r, p, t))
    }

    #[pyo3(signature = (code_, period_, adjust_, max_pages, bar_time_="start"))]
    fn all_bars(
        &self,
        py: Python<'_>,
        code_: &str,
        period_: &str,
        adjust_: Option<&str>,
        max_pages: i64,
        bar_time_: &str,
    ) -> PyResult<Table> {
        let (c, p, a, t) = (code("code", code_)?, period(period_)?, adjust(adjust_)?, bar_time(bar_time_)?);
        let pages = pages_arg("max_pages", max_pages)?;
        wait(py, self.client.all_bars(c, p, a, Some(pages))).map(|r| convert::stamped_bars(&r, p, t))
    }

    /// `bars` of every code in `codes_`, fanned out over the pool: one
    /// Table with a `code` column.
    #[pyo3(signature = (codes_, period_, adjust_, start, count, bar_time_="start"))]
    #[allow(clippy::too_many_arguments)]
    fn bars_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        period_: &str,
        adjust_: Option<&str>,
        start: i64,
        count: i64,
        bar_time_: &str,
    ) -> PyResult<Table> {
        let (p, a, t) = (period(period_)?, adjust(adjust_)?, bar_time(bar_time_)?);
        let page = Page::new(u16_arg("start", start)?, count_arg("count", count)?);
        self.per_code(py, &codes_, |c| self.client.bars(c, p, a, page), |r| convert::stamped_bars(r, p, t))
    }

    /// `progress`: called with the number of codes done since its last call.
    #[pyo3(signature = (codes_, period_, adjust_, max_pages, bar_time_="start", progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn all_bars_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        period_: &str,
        adjust_: Option<&str>,
        max_pages: i64,
        bar_time_: &str,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Table> {
        let (p, a, t) = (period(period_)?, adjust(adjust_)?, bar_time(bar_time_)?);
        let pages = pages_arg("max_pages", max_pages)?;
        let call = |c| self.client.all_bars(c, p, a, Some(pages));
        self.per_code_progress(py, &codes_, progress, call, |r| convert::stamped_bars(r, p, t))
    }

    fn quotes(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        let cs = codes("codes", &codes_)?;
        wait(py, self.client.quotes(&cs)).map(|r| convert::quotes(&r))
    }

    fn snapshots(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        let cs = codes("codes", &codes_)?;
        wait(py, self.client.snapshots(&cs)).map(|r| convert::snapshots(&r))
    }

    fn refresh(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        let cs = codes("codes", &codes_)?;
        {
            let mut refreshed = self.refreshed.lock().unwrap_or_else(|e| e.into_inner());
            for &c in &cs {
                if refreshed.len() < REFRESHED_CODES_MAX {
                    refreshed.insert(c);
                }
            }
        }
        wait(py, self.client.refresh_quotes(&cs)).map(|r| convert::refresh(&r))
    }

    /// One page of a category's list, sorted by the server by `sort`
    /// (descending unless `ascending`; code order ignores the direction).
    #[pyo3(signature = (category, start, count, sort="code", ascending=false))]
    fn category_quotes(
        &self,
        py: Python<'_>,
        category: &str,
        start: i64,
        count: i64,
        sort: &str,
        ascending: bool,
    ) -> PyResult<Table> {
        let page = Page::new(u16_arg("start", start)?, count_arg("count", count)?);
        let request = category_request(category, sort, ascending, page)?;
        wait(py, self.client.call(request)).map(|r| convert::snapshots(&r.snapshots))
    }

    /// Every page of a category's list, sorted as `category_quotes` sorts.
    #[pyo3(signature = (category, sort="code", ascending=false))]
    fn all_category_quotes(&self, py: Python<'_>, category: &str, sort: &str, ascending: bool) -> PyResult<Table> {
        let request = category_request(category, sort, ascending, Page::new(0, 0))?;
        wait(py, self.client.all_pages(request, None)).map(|r| convert::snapshots(&r))
    }

    fn minutes(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.minutes(c)).map(|r| convert::minutes(&r))
    }

    fn history_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: u32) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        wait(py, self.client.history_minutes(c, d)).map(|r| convert::history_minutes(&r.points))
    }

    fn recent_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: u32) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        wait(py, self.client.recent_minutes(c, d)).map(|r| convert::recent_minutes(&r.points))
    }

    fn legacy_minutes(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.legacy_minutes(c)).map(|r| convert::history_minutes(&r.points))
    }

    #[pyo3(signature = (code_, yyyymmdd=None))]
    fn auction(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>) -> PyResult<Table> {
        let c = code("code", code_)?;
        let d = yyyymmdd.map(|d| trade_date("date", d)).transpose()?;
        wait(py, self.client.auction(c, d)).map(|r| convert::auction(&r))
    }

    fn trades(&self, py: Python<'_>, code_: &str, start: i64, count: i64) -> PyResult<Table> {
        let c = code("code", code_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.trades(c, Page::new(s, n))).map(|r| convert::ticks(&r))
    }

    fn history_trades(&self, py: Python<'_>, code_: &str, yyyymmdd: u32, start: i64, count: i64) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.history_trades(c, d, Page::new(s, n))).map(|r| convert::ticks(&r))
    }

    fn all_history_trades(&self, py: Python<'_>, code_: &str, yyyymmdd: u32) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        wait(py, self.client.all_history_trades(c, d, None)).map(|r| convert::ticks(&r))
    }

    fn history_trades_many(&self, py: Python<'_>, days: Vec<(String, u32)>) -> PyResult<Vec<Table>> {
        let days = days
            .iter()
            .map(|(c, d)| Ok((code("code", c)?, trade_date("trading_date", *d)?)))
            .collect::<PyResult<Vec<_>>>()?;
        // Its days page at once: slot tasks do the exchanges, not this thread one by one.
        wait_with(py, Caller::Concurrent, self.client.history_trades_many(&days))
            .map(|r| r.iter().map(|t| convert::ticks(t)).collect())
    }

    fn detailed_history_trades(
        &self,
        py: Python<'_>,
        code_: &str,
        yyyymmdd: u32,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.detailed_history_trades(c, d, Page::new(s, n))).map(|r| convert::ticks(&r))
    }

    fn all_detailed_history_trades(&self, py: Python<'_>, code_: &str, yyyymmdd: u32) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, trade_date("trading_date", yyyymmdd)?);
        wait(py, self.client.all_detailed_history_trades(c, d, None)).map(|r| convert::ticks(&r))
    }

    fn minutes_codes(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        self.per_code(py, &codes_, |c| self.client.minutes(c), convert::minutes)
    }

    fn history_minutes_codes(&self, py: Python<'_>, codes_: Vec<String>, yyyymmdd: u32) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        self.per_code(py, &codes_, |c| self.client.history_minutes(c, d), |r| convert::history_minutes(&r.points))
    }

    fn recent_minutes_codes(&self, py: Python<'_>, codes_: Vec<String>, yyyymmdd: u32) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        self.per_code(py, &codes_, |c| self.client.recent_minutes(c, d), |r| convert::recent_minutes(&r.points))
    }

    fn legacy_minutes_codes(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        self.per_code(py, &codes_, |c| self.client.legacy_minutes(c), |r| convert::history_minutes(&r.points))
    }

    fn minute_aux_codes(&self, py: Python<'_>, codes_: Vec<String>, kind: &str) -> PyResult<Table> {
        let k = aux_kind(kind)?;
        self.per_code(py, &codes_, |c| self.client.minute_aux(c, k), convert::minute_aux)
    }

    fn sparkline_codes(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        self.per_code(py, &codes_, |c| self.client.sparkline(c), convert::sparkline)
    }

    fn trades_codes(&self, py: Python<'_>, codes_: Vec<String>, start: i64, count: i64) -> PyResult<Table> {
        let page = Page::new(u16_arg("start", start)?, count_arg("count", count)?);
        self.per_code(py, &codes_, |c| self.client.trades(c, page), |r| convert::ticks(r))
    }

    fn history_trades_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        yyyymmdd: u32,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        let page = Page::new(u16_arg("start", start)?, count_arg("count", count)?);
        self.per_code(py, &codes_, |c| self.client.history_trades(c, d, page), |r| convert::ticks(r))
    }

    #[pyo3(signature = (codes_, yyyymmdd, progress=None))]
    fn all_history_trades_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        yyyymmdd: u32,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        let call = |c| self.client.all_history_trades(c, d, None);
        self.per_code_progress(py, &codes_, progress, call, |r| convert::ticks(r))
    }

    fn detailed_history_trades_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        yyyymmdd: u32,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        let page = Page::new(u16_arg("start", start)?, count_arg("count", count)?);
        self.per_code(py, &codes_, |c| self.client.detailed_history_trades(c, d, page), |r| convert::ticks(r))
    }

    #[pyo3(signature = (codes_, yyyymmdd, progress=None))]
    fn all_detailed_history_trades_codes(
        &self,
        py: Python<'_>,
        codes_: Vec<String>,
        yyyymmdd: u32,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Table> {
        let d = trade_date("trading_date", yyyymmdd)?;
        let call = |c| self.client.all_detailed_history_trades(c, d, None);
        self.per_code_progress(py, &codes_, progress, call, |r| convert::ticks(r))
    }

    fn minute_aux(&self, py: Python<'_>, code_: &str, kind: &str) -> PyResult<Table> {
        let (c, k) = (code("code", code_)?, aux_kind(kind)?);
        wait(py, self.client.minute_aux(c, k)).map(|r| convert::minute_aux(&r))
    }

    fn sparkline(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.sparkline(c)).map(|r| convert::sparkline(&r))
    }

    fn capital_changes(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        let cs = codes("codes", &codes_)?;
        wait(py, self.client.capital_changes(&cs)).map(|r| convert::capital_changes(&r))
    }

    fn finance(&self, py: Python<'_>, codes_: Vec<String>) -> PyResult<Table> {
        let cs = codes("codes", &codes_)?;
        wait(py, self.client.finance(&cs)).map(|r| convert::finance(&r))
    }

    #[pyo3(signature = (code_, start=None, anchor=None))]
    fn adjustment_factors(
        &self,
        py: Python<'_>,
        code_: &str,
        start: Option<u32>,
        anchor: Option<u32>,
    ) -> PyResult<Table> {
        let c = code("code", code_)?;
        let (s, a) = (date("start", start)?, date("anchor", anchor)?);
        wait(py, self.client.adjustment_factors(c, s, a)).map(|r| convert::adjustment_factors(&r))
    }

    fn company_info(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.company_info(c)).map(|r| convert::company_info(&r))
    }

    /// Every result set of one F10 entry, parameters as `NAME=VALUE` text.
    #[pyo3(signature = (entry, code_=None, params=Vec::new()))]
    fn f10(
        &self,
        py: Python<'_>,
        entry: &str,
        code_: Option<&str>,
        params: Vec<(String, String)>,
    ) -> PyResult<Vec<Table>> {
        let c = code_.map(|s| code("code", s)).transpose()?;
        let query =
            tdx_engine::f10::F10Query::parse(entry, c, &params).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let f10 = self.client.f10();
        wait(py, async move { f10.query(&query).await }).map(|r| r.tables.iter().map(convert::f10_table).collect())
    }

    fn limits(&self, py: Python<'_>) -> PyResult<Table> {
        wait(py, self.client.all_special_limits(None)).map(|r| convert::limits(&r))
    }

    fn delisted_bars(&self, py: Python<'_>, code_: &str, start: i64, count: i64) -> PyResult<Table> {
        let c = code("code", code_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.delisted_bars(c, Page::new(s, n))).map(|r| convert::delisted_bars(&r))
    }

    fn all_delisted_bars(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.all_delisted_bars(c, None)).map(|r| convert::delisted_bars(&r))
    }

    fn file_meta<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        let m = wait(py, self.client.file_meta(name))?;
        let d = PyDict::new(py);
        d.set_item("size", m.size)?;
        let hash: String = m.hash.iter().map(|&b| char::from(b)).filter(|c| c.is_ascii_hexdigit()).collect();
        d.set_item("md5", hash)?;
        Ok(d)
    }

    fn download_file<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = wait(py, self.client.download_file(name))?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn boards(&self, py: Python<'_>, kind: &str) -> PyResult<Table> {
        let k = kind.parse::<BoardKind>().map_err(|e| value_error("kind", e))?;
        wait(py, self.client.boards(k)).map(|r| convert::boards(&r))
    }

    fn board_members<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some((kind, board)) = wait(py, self.client.board_members(name))? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("kind", kind.name())?;
        d.set_item("name", board.name)?;
        d.set_item("kind_raw", board.kind_raw)?;
        d.set_item("codes", board.codes)?;
        Ok(Some(d))
    }

    fn money_flow(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.money_flow(c)).map(|r| convert::tabular(&r))
    }

    fn mac_server_info(&self, py: Python<'_>) -> PyResult<Table> {
        wait(py, self.client.mac_server_info()).map(|r| convert::tabular(&r))
    }

    fn mac_quotes(&self, py: Python<'_>, codes_: Vec<String>, fields_: &str) -> PyResult<Table> {
        let (cs, f) = (codes("codes", &codes_)?, fields(fields_)?);
        if cs.len() > tdx_engine::proto::limits::MAC_QUOTE_CODES_MAX {
            return Err(value_error("codes", format!("{} codes: at most 80 per call", cs.len())));
        }
        wait(py, self.client.mac_quotes(&cs, f)).map(|r| convert::tabular(&r))
    }

    /// `page` is (start, count).
    fn mac_board_members(
        &self,
        py: Python<'_>,
        board: &str,
        sort: &str,
        ascending: bool,
        fields_: &str,
        page: (i64, i64),
    ) -> PyResult<Table> {
        let (start, count) = page;
        let (b, f) = (mac_board(board)?, fields(fields_)?.truncated(128));
        let sort = mac_sort::parse(sort.trim()).map_err(|e| value_error("sort", e))?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        if ascending {
            // The listed method sorts descending; the order is the request's.
            let mut request = tdx_engine::proto::commands::MacBoardMembers::new(b, sort, s.into(), n, f);
            request.order = SortOrder::Ascending;
            return wait(py, self.client.call(request)).map(|r| convert::tabular(&r.rows));
        }
        wait(py, self.client.mac_board_members(b, sort, f, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn mac_snapshot(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.mac_snapshot(c)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, period_, adjust_, start, count))]
    fn mac_bars(
        &self,
        py: Python<'_>,
        code_: &str,
        period_: &str,
        adjust_: Option<&str>,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let (c, p, a) = (code("code", code_)?, period(period_)?, mac_adjust(adjust_)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.mac_bars(c, p, a, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd=None))]
    fn mac_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, optional_trade_date("date", yyyymmdd)?);
        wait(py, self.client.mac_minutes(c, d)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd, days))]
    fn mac_multi_day_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>, days: i64) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, optional_trade_date("date", yyyymmdd)?);
        let most = tdx_engine::proto::limits::MAC_MINUTE_DAYS_MAX;
        let n = u16::try_from(days)
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| value_error("days", format!("{days} is outside 1..={most}")))?;
        wait(py, self.client.mac_multi_day_minutes(c, d, n)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd, start, count))]
    fn mac_ticks(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>, start: i64, count: i64) -> PyResult<Table> {
        let (c, d) = (code("code", code_)?, optional_trade_date("date", yyyymmdd)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.mac_ticks(c, d, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn mac_board_list(&self, py: Python<'_>, kind: &str, start: i64, count: i64) -> PyResult<Table> {
        let k = mac_kind(kind)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.mac_board_list(k, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn mac_stock_boards(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.mac_stock_boards(c)).map(|r| convert::tabular(&r))
    }

    fn mac_capital_flow(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.mac_capital_flow(c)).map(|r| convert::tabular(&r))
    }

    fn mac_auction(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.mac_auction(c)).map(|r| convert::tabular(&r))
    }

    fn mac_unusual(&self, py: Python<'_>, market_: &str, start: i64, count: i64) -> PyResult<Table> {
        let m = market(market_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.mac_unusual(m, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn mac_bar_offset(&self, py: Python<'_>, offset: i64, count: i64) -> PyResult<Table> {
        let (o, n) = (u32_arg("offset", offset)?, u32::from(count_arg("count", count)?));
        wait(py, self.client.mac_bar_offset(o, n)).map(|r| convert::tabular(&r))
    }

    fn mac_sparkline(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = code("code", code_)?;
        wait(py, self.client.mac_sparkline(c)).map(|r| convert::tabular(&r))
    }

    fn mac_goods(&self, py: Python<'_>, market_: i64, start: i64, count: i64) -> PyResult<Table> {
        let m = u16_arg("market", market_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.mac_goods(m, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn mac_file_meta(&self, py: Python<'_>, name: &str) -> PyResult<Table> {
        wait(py, self.client.mac_file_meta(name)).map(|r| convert::tabular(&r))
    }

    fn mac_file_chunk<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        index: i64,
        offset: i64,
        size: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let i = u32_arg("index", index).and_then(|i| {
            if i == 0 {
                Err(value_error("index", "chunks count from 1"))
            } else {
                Ok(i)
            }
        })?;
        let (o, n) = (u32_arg("offset", offset)?, u32_arg("size", size)?);
        if n == 0 || n > tdx_engine::proto::limits::MAC_FILE_CHUNK_BYTES_MAX {
            return Err(value_error("size", format!("{n} is outside 1..=30000")));
        }
        let bytes = wait(py, self.client.mac_file_chunk(name, i, o, n))?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn ex_markets(&self, py: Python<'_>) -> PyResult<Table> {
        wait(py, self.client.ex_markets()).map(|r| convert::tabular(&r))
    }

    fn ex_instrument_count(&self, py: Python<'_>) -> PyResult<Table> {
        wait(py, self.client.ex_instrument_count()).map(|r| convert::tabular(&r))
    }

    fn ex_instruments(&self, py: Python<'_>, start: i64, count: i64) -> PyResult<Table> {
        let (s, n) = (u32_arg("start", start)?, count_arg("count", count)?);
        if n > tdx_engine::proto::limits::EX_INSTRUMENTS_PER_PAGE_MAX {
            return Err(value_error("count", format!("{n} is outside 1..=1000")));
        }
        wait(py, self.client.ex_instruments(s, n)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (market_=None, max_pages=None))]
    fn all_ex_instruments(&self, py: Python<'_>, market_: Option<&str>, max_pages: Option<i64>) -> PyResult<Table> {
        let m = market_.map(ex_market).transpose()?;
        let pages = max_pages.map(|p| pages_arg("max_pages", p)).transpose()?;
        let mut all = wait(py, self.client.all_ex_instruments(pages))?;
        if let Some(m) = m {
            all.retain(|i| i.code.market_id() == m);
        }
        Ok(convert::tabular(&all))
    }

    fn ex_quote(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = ex_code(code_)?;
        wait(py, self.client.ex_quote(&c)).map(|r| convert::tabular(&r))
    }

    fn ex_quote_list(&self, py: Python<'_>, market_: &str, start: i64, count: i64) -> PyResult<Table> {
        let m = ex_market(market_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.ex_quote_list(m, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn ex_bars(&self, py: Python<'_>, code_: &str, period_: &str, start: i64, count: i64) -> PyResult<Table> {
        let (c, p) = (ex_code(code_)?, ex_period(period_)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.ex_bars(&c, p, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn ex_bars_range(&self, py: Python<'_>, code_: &str, period_: &str, start: u32, end: u32) -> PyResult<Table> {
        let (c, p) = (ex_code(code_)?, ex_period(period_)?);
        let (s, e) = (trade_date("start", start)?, trade_date("end", end)?);
        wait(py, self.client.ex_bars_range(&c, p, s, e)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd=None))]
    fn ex_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>) -> PyResult<Table> {
        let c = ex_code(code_)?;
        match yyyymmdd {
            None => wait(py, self.client.ex_minutes(&c)).map(|r| convert::tabular(&r)),
            Some(d) => {
                let d = trade_date("date", d)?;
                wait(py, self.client.ex_history_minutes(&c, d)).map(|r| convert::tabular(&r))
            }
        }
    }

    #[pyo3(signature = (code_, yyyymmdd, start, count))]
    fn ex_ticks(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>, start: i64, count: i64) -> PyResult<Table> {
        let c = ex_code(code_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        match yyyymmdd {
            None => wait(py, self.client.ex_ticks(&c, Page::new(s, n))).map(|r| convert::tabular(&r)),
            Some(d) => {
                let d = trade_date("date", d)?;
                wait(py, self.client.ex_history_ticks(&c, d, Page::new(s, n))).map(|r| convert::tabular(&r))
            }
        }
    }

    fn ex_mac_quotes(&self, py: Python<'_>, codes_: Vec<String>, fields_: &str) -> PyResult<Table> {
        let cs =
            codes_.iter().map(|c| ex_code(c).map_err(|_| value_error("codes", format!("{c:?} is not MARKET#CODE"))));
        let (cs, f) = (cs.collect::<PyResult<Vec<_>>>()?, fields(fields_)?);
        if cs.is_empty() || cs.len() > tdx_engine::proto::limits::MAC_QUOTE_CODES_MAX {
            return Err(value_error("codes", format!("{} instruments: give 1 to 80 per call", cs.len())));
        }
        wait(py, self.client.ex_mac_quotes(&cs, f)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, period_, adjust_, start, count))]
    fn ex_mac_bars(
        &self,
        py: Python<'_>,
        code_: &str,
        period_: &str,
        adjust_: Option<&str>,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let (c, p, a) = (ex_code(code_)?, period(period_)?, mac_adjust(adjust_)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.ex_mac_bars(&c, p, a, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd=None))]
    fn ex_mac_minutes(&self, py: Python<'_>, code_: &str, yyyymmdd: Option<u32>) -> PyResult<Table> {
        let (c, d) = (ex_code(code_)?, optional_trade_date("date", yyyymmdd)?);
        wait(py, self.client.ex_mac_minutes(&c, d)).map(|r| convert::tabular(&r))
    }

    #[pyo3(signature = (code_, yyyymmdd, start, count))]
    fn ex_mac_ticks(
        &self,
        py: Python<'_>,
        code_: &str,
        yyyymmdd: Option<u32>,
        start: i64,
        count: i64,
    ) -> PyResult<Table> {
        let (c, d) = (ex_code(code_)?, optional_trade_date("date", yyyymmdd)?);
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.ex_mac_ticks(&c, d, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    fn ex_mac_sparkline(&self, py: Python<'_>, code_: &str) -> PyResult<Table> {
        let c = ex_code(code_)?;
        wait(py, self.client.ex_mac_sparkline(&c)).map(|r| convert::tabular(&r))
    }

    fn ex_mac_goods(&self, py: Python<'_>, market_: &str, start: i64, count: i64) -> PyResult<Table> {
        let m = ex_market(market_)?;
        let (s, n) = (u16_arg("start", start)?, count_arg("count", count)?);
        wait(py, self.client.ex_mac_goods(m, Page::new(s, n))).map(|r| convert::tabular(&r))
    }

    /// One push frame, waiting up to `timeout` seconds (`None`: until one
    /// arrives or the engine closes); `None` if none came.
    #[pyo3(signature = (timeout=Some(0.0), parse=false), text_signature = "(self, /, timeout=0.0, parse=False)")]
    fn poll_push<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
        parse: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let until = timeout.map(|t| seconds("timeout", t).map(|d| Instant::now() + d)).transpose()?;
        loop {
            if let Some(f) = self.pushes.lock().unwrap_or_else(|e| e.into_inner()).pop_front() {
                let targets = parse.then(|| self.refresh_targets());
                return push_dict(py, &f, targets.as_deref()).map(Some);
            }
            let batch = if until.is_some_and(|u| u <= Instant::now()) {
                wait_until(py, self.client.drain_pushes(), None)?
            } else {
                // `None` twice over: the wait ran out, or the engine closed.
                wait_until(py, self.client.recv_pushes(64), until)?.flatten()
            };
            let Some(batch) = batch else { return Ok(None) };
            if batch.frames.is_empty() {
                if batch.overflow_total.is_some() && until.is_none_or(|u| u > Instant::now()) {
                    // Only the news that pushes were dropped: keep waiting.
                    continue;
                }
                // Drained, or (waiting) the engine closed.
                return Ok(None);
            }
            self.pushes.lock().unwrap_or_else(|e| e.into_inner()).extend(batch.frames);
        }
    }

    /// Every push frame received so far, without waiting.
    #[pyo3(signature = (parse=false))]
    fn drain_pushes<'py>(&self, py: Python<'py>, parse: bool) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut frames: Vec<PushFrame> = self.pushes.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
        if let Some(batch) = wait_until(py, self.client.drain_pushes(), None)? {
            frames.extend(batch.frames);
        }
        let targets = parse.then(|| self.refresh_targets());
        frames.iter().map(|f| push_dict(py, f, targets.as_deref())).collect()
    }

    /// Probes the candidate servers and saves the ranking, as a dict.
    fn rank(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // The probes need a tokio runtime's sockets and timers: a small one for this call.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| crate::errors::TdxError::new_err(format!("cannot start the probe runtime: {e}")))?;
        let client = self.client.clone();
        let task = rt.spawn(async move { client.refresh_ranking().await });
        let outcome = wait_until(py, task, None);
        rt.shutdown_background();
        let ranking =
            match outcome?.transpose().map_err(|e| crate::errors::TdxError::new_err(format!("ranking failed: {e}")))? {
                None => Default::default(),
                Some(Ok(ranking)) => ranking,
                Some(Err(unsaved)) => {
                    // The ranking is computed and in use; only its file is missing.
                    let message = std::ffi::CString::new(unsaved.to_string()).unwrap_or_default();
                    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, 1)?;
                    unsaved.ranking
                }
            };
        let value = serde_json::to_value(&ranking).map_err(|e| PyValueError::new_err(e.to_string()))?;
        json_to_py(py, &value)
    }

    /// The trading days from `since` (YYYYMMDD; `None`: every day the
    /// server has) to the newest, as YYYYMMDD, oldest first.
    #[pyo3(signature = (since=None))]
    fn trading_days(&self, py: Python<'_>, since: Option<u32>) -> PyResult<Vec<u32>> {
        let s = date("since", since)?;
        wait(py, self.client.trading_calendar(s)).map(|c| c.days().iter().map(|d| d.yyyymmdd()).collect())
    }

    /// Runs a backfill (the library side of `tdx backfill`) into the store
    /// at `store` on this engine, without the GIL; returns its summary as
    /// a dict. `shard`: `(index, count)`, writing that shard's fragment.
    /// `storage`: S3 settings by their `AWS_*` names (a store at `s3://`).
    #[pyo3(signature = (store, kinds, start, end, codes_=None, markets=None, shard=None, jobs=None, storage=None))]
    #[allow(clippy::too_many_arguments)]
    fn backfill_shard(
        &self,
        py: Python<'_>,
        store: PathBuf,
        kinds: Vec<String>,
        start: u32,
        end: u32,
        codes_: Option<Vec<String>>,
        markets: Option<Vec<String>>,
        shard: Option<(u32, u32)>,
        jobs: Option<i64>,
        storage: Option<std::collections::BTreeMap<String, String>>,
    ) -> PyResult<Py<PyAny>> {
        use tdx_store::backfill::{BackfillError, Kind, Plan};
        let kinds = kinds
            .iter()
            .map(|k| match k.as_str() {
                "ticks" => Ok(Kind::Ticks),
                "minutes" => Ok(Kind::Minutes),
                other => Err(value_error("kind", format!("{other:?} is not \"ticks\" or \"minutes\""))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let day = |field: &str, d: u32| {
            Date::from_yyyymmdd(d).ok_or_else(|| value_error(field, format!("{d} is not a date")))
        };
        let markets = match markets {
            Some(list) => list.iter().map(|m| market(m)).collect::<PyResult<Vec<_>>>()?,
            None => vec![Market::Sz, Market::Sh, Market::Bj],
        };
        let shard = shard
            .map(|(index, count)| {
                tdx_store::shard::parse_shard(&format!("{index}/{count}")).map_err(|e| value_error("shard", e))
            })
            .transpose()?;
        let plan = Plan {
            out: store,
            kinds,
            from: day("start", start)?,
            to: day("end", end)?,
            markets,
            codes: codes("codes", codes_.as_deref().unwrap_or_default())?,
            shard,
            jobs: jobs.map(|j| pages_arg("jobs", j)).transpose()?,
            storage: storage.unwrap_or_default().into_iter().collect(),
        };
        // The backfill spawns its security-days as tokio tasks: a small runtime for this call.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| crate::errors::TdxError::new_err(format!("cannot start the backfill runtime: {e}")))?;
        let client = self.client.clone();
        let task = rt.spawn(async move { tdx_store::backfill::run(&client, &plan).await });
        let outcome = wait_until(py, task, None);
        rt.shutdown_background();
        let summary = match outcome? {
            None => return Err(crate::errors::TdxError::new_err("the backfill ended early")),
            Some(Err(join)) => {
                return Err(crate::errors::TdxError::new_err(format!("the backfill task failed: {join}")))
            }
            Some(Ok(Err(BackfillError::Engine(e)))) => return Err(to_py(e)),
            Some(Ok(Err(e @ BackfillError::Dates { .. }))) => return Err(value_error("start", e)),
            Some(Ok(Err(e))) => return Err(crate::errors::TdxError::new_err(e.to_string())),
            Some(Ok(Ok(summary))) => summary,
        };
        json_to_py(py, &summary.to_json())
    }

    /// The engine's diagnostics snapshot, as a dict.
    fn diagnostics(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value =
            serde_json::to_value(&*self.client.diagnostics()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        json_to_py(py, &value)
    }

    /// Closes the engine: in-flight calls end with `Closed`; returns the
    /// final state's name (`Closed` or `FailedClosed`).
    fn close(&self, py: Python<'_>) -> PyResult<String> {
        let state = wait_until(py, self.client.close(), None)?;
        Ok(state.map_or_else(String::new, |s| format!("{s:?}")))
    }
}
