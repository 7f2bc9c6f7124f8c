//! `/metrics`: the gateway's counters and the engine's snapshot in
//! Prometheus' text format (version 0.0.4).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tdx_engine::supervisor::Verdict;
use tdx_engine::EngineDiagnostics;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default)]
struct CommandStats {
    by_status: BTreeMap<u16, u64>,
    errors: BTreeMap<&'static str, u64>,
    /// Cumulative counts per bucket, then the `+Inf` count.
    buckets: [u64; BUCKETS.len()],
    seconds_sum: f64,
    count: u64,
    rows: u64,
}

/// What the gateway counts.
#[derive(Debug, Default)]
pub struct Metrics {
    commands: Mutex<BTreeMap<&'static str, CommandStats>>,
    rejected: Mutex<BTreeMap<&'static str, u64>>,
    pub ws_clients: AtomicU64,
    pub ws_messages: AtomicU64,
    pub ws_dropped: AtomicU64,
    pub ws_queued: AtomicU64,
    pub engine_push_overflow: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Metrics {
    /// One command request's end: its status, error kind, time and rows.
    pub fn record(&self, command: &'static str, status: u16, error: Option<&'static str>, took: Duration, rows: u64) {
        let mut all = lock(&self.commands);
        let s = all.entry(command).or_default();
        *s.by_status.entry(status).or_default() += 1;
        if let Some(kind) = error {
            *s.errors.entry(kind).or_default() += 1;
        }
        let secs = took.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                s.buckets[i] += 1;
            }
        }
        s.seconds_sum += secs;
        s.count += 1;
        s.rows += rows;
    }

    /// A request turned away before any command ran (`Unauthorized`, `RateLimited`, ...).
    pub fn reject(&self, kind: &'static str) {
        *lock(&self.rejected).entry(kind).or_default() += 1;
    }

    /// The text exposition of these counters and `engine`'s snapshot.
    pub fn render(&self, engine: &EngineDiagnostics) -> String {
        let mut out = String::new();
        let mut lines: Vec<String> = Vec::new();
        {
            let all = lock(&self.commands);
            let name = family(&mut out, "tdx_gateway_requests_total", "counter", "Command requests by HTTP status.");
            for (cmd, s) in all.iter() {
                for (status, n) in &s.by_status {
                    lines.push(format!("{name}{{command=\"{cmd}\",status=\"{status}\"}} {n}"));
                }
            }
            flush(&mut out, &mut lines);
            let name =
                family(&mut out, "tdx_gateway_errors_total", "counter", "Failed command requests by error kind.");
            for (cmd, s) in all.iter() {
                for (kind, n) in &s.errors {
                    lines.push(format!("{name}{{command=\"{cmd}\",kind=\"{kind}\"}} {n}"));
                }
            }
            flush(&mut out, &mut lines);
            let name = family(&mut out, "tdx_gateway_rows_total", "counter", "Rows sent per command.");
            for (cmd, s) in all.iter() {
                lines.push(format!("{name}{{command=\"{cmd}\"}} {}", s.rows));
            }
            flush(&mut out, &mut lines);
            let name = family(
                &mut out,
                "tdx_gateway_request_duration_seconds",
                "histogram",
                "Time from a command request to its last byte.",
            );
            for (cmd, s) in all.iter() {
                for (i, le) in BUCKETS.iter().enumerate() {
                    lines.push(format!("{name}_bucket{{command=\"{cmd}\",le=\"{le}\"}} {}", s.buckets[i]));
                }
                lines.push(format!("{name}_bucket{{command=\"{cmd}\",le=\"+Inf\"}} {}", s.count));
                lines.push(format!("{name}_sum{{command=\"{cmd}\"}} {}", s.seconds_sum));
                lines.push(format!("{name}_count{{command=\"{cmd}\"}} {}", s.count));
            }
            flush(&mut out, &mut lines);
        }
        let name =
            family(&mut out, "tdx_gateway_rejected_total", "counter", "Requests turned away before a command ran.");
        for (kind, n) in lock(&self.rejected).iter() {
            lines.push(format!("{name}{{kind=\"{kind}\"}} {n}"));
        }
        flush(&mut out, &mut lines);
        let gauges: [(&str, &str, &str, u64); 5] = [
            (
                "tdx_gateway_ws_clients",
                "gauge",
                "WebSocket clients connected.",
                self.ws_clients.load(Ordering::Relaxed),
            ),
            (
                "tdx_gateway_ws_queued_messages",
                "gauge",
                "Quote messages waiting in the WebSocket clients' queues.",
                self.ws_queued.load(Ordering::Relaxed),
            ),
            (
                "tdx_gateway_ws_messages_total",
                "counter",
                "Quote messages sent.",
                self.ws_messages.load(Ordering::Relaxed),
            ),
            (
                "tdx_gateway_ws_dropped_total",
                "counter",
                "Quote messages dropped from full client queues (the oldest first).",
                self.ws_dropped.load(Ordering::Relaxed),
            ),
            (
                "tdx_gateway_engine_push_overflow_total",
                "counter",
                "Pushes the engine dropped because the gateway read them too slowly.",
                self.engine_push_overflow.load(Ordering::Relaxed),
            ),
        ];
        for (name, kind, help, value) in gauges {
            family(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
        render_engine(&mut out, engine);
        out
    }
}

/// A metric family's `HELP` and `TYPE` lines; its name.
fn family(out: &mut String, name: &str, kind: &str, help: &str) -> String {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    name.to_owned()
}

fn flush(out: &mut String, lines: &mut Vec<String>) {
    for l in lines.drain(..) {
        out.push_str(&l);
        out.push('\n');
    }
}

/// A label value, escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn render_engine(out: &mut String, d: &EngineDiagnostics) {
    let mut w = |name: &str, kind: &str, help: &str, samples: Vec<(String, f64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let budgets = |f: fn(&tdx_engine::runtime::BudgetDiagnostics) -> usize| {
        d.budgets.iter().map(|b| (format!("{{budget=\"{}\"}}", label(b.name)), f(b) as f64)).collect::<Vec<_>>()
    };
    w("tdx_engine_budget_used_bytes", "gauge", "Bytes reserved in each engine budget.", budgets(|b| b.used));
    w("tdx_engine_budget_limit_bytes", "gauge", "Each engine budget's limit.", budgets(|b| b.limit));
    w("tdx_engine_budget_peak_bytes", "gauge", "Most bytes ever reserved in each budget.", budgets(|b| b.peak));
    w("tdx_engine_budget_refusals_total", "counter", "Reservations each budget refused.", budgets(|b| b.refusals));
    let s = &d.supervisor;
    let verdicts: Vec<(String, f64)> = s
        .endpoints
        .iter()
        .zip(&s.verdicts)
        .map(|(endpoint, verdict)| {
            let (verdict, reason) = match verdict {
                None => ("untried", String::new()),
                Some(Verdict::Good) => ("good", String::new()),
                Some(Verdict::Rejected(r)) => ("rejected", r.name().to_owned()),
            };
            (format!("{{endpoint=\"{}\",verdict=\"{verdict}\",reason=\"{reason}\"}}", label(endpoint)), 1.0)
        })
        .collect();
    w("tdx_engine_server_verdict", "gauge", "What establishment found about each server (1 per server).", verdicts);
    let mut states: BTreeMap<&str, f64> = BTreeMap::new();
    for slot in &s.slots {
        *states.entry(slot.state).or_default() += 1.0;
    }
    w(
        "tdx_engine_slots",
        "gauge",
        "Connection slots by state.",
        states.into_iter().map(|(k, v)| (format!("{{state=\"{k}\"}}"), v)).collect(),
    );
    let c = &s.counters;
    let counters: [(&str, u64); 8] = [
        ("admitted", c.admitted),
        ("refused", c.refused),
        ("replies", c.replies),
        ("errors", c.errors),
        ("timeouts", c.timeouts),
        ("retries", c.retries),
        ("cancels", c.cancels),
        ("bad_replies", c.bad_replies),
    ];
    w(
        "tdx_engine_requests_total",
        "counter",
        "Engine requests by outcome since start.",
        counters.iter().map(|(k, v)| (format!("{{outcome=\"{k}\"}}"), *v as f64)).collect(),
    );
    w(
        "tdx_engine_waiting_requests",
        "gauge",
        "Requests waiting for a connection.",
        vec![(String::new(), s.waiting as f64)],
    );
    w("tdx_engine_active_requests", "gauge", "Requests in flight.", vec![(String::new(), s.active as f64)]);
    w(
        "tdx_engine_push_frames",
        "gauge",
        "Push frames buffered in the engine.",
        vec![(String::new(), s.push_frames as f64)],
    );
    w(
        "tdx_engine_push_dropped_total",
        "counter",
        "Push frames the engine dropped since start.",
        vec![(String::new(), s.push_dropped_total as f64)],
    );
    w(
        "tdx_engine_bytes_read_total",
        "counter",
        "Bytes read from the servers.",
        vec![(String::new(), d.bytes_read as f64)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.record("bars", 200, None, Duration::from_millis(3), 10);
        m.record("bars", 504, Some("TimedOut"), Duration::from_secs(20), 0);
        let all = lock(&m.commands);
        let s = &all["bars"];
        assert_eq!(s.buckets[BUCKETS.iter().position(|b| *b == 0.005).unwrap()], 1);
        assert_eq!(s.buckets[BUCKETS.len() - 1], 1, "20 s is only in +Inf");
        assert_eq!(s.count, 2);
        assert_eq!(s.errors["TimedOut"], 1);
    }
}
