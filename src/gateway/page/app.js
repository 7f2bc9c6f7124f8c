// The gateway's market page: code search, quote panel, candlestick chart,
// today's minute line and a live board over the WebSocket. Everything it
// loads comes from the gateway (the chart library included).
"use strict";

const params = new URLSearchParams(location.search);
// With a token-protected gateway, open the page as /?access_token=TOKEN.
const token = params.get("access_token");
const state = {
  code: params.get("code") || "sz000001",
  period: params.get("period") || "day",
  adjust: params.get("adjust") || "none",
  codes: [],
  board: JSON.parse(localStorage.getItem("tdx-board") || "null") || ["sz000001", "sh600000", "sh510300"],
  ws: null,
  lastClose: {},
};

function url(path, query) {
  const q = new URLSearchParams(query || {});
  if (token) q.set("access_token", token);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function api(method, query) {
  const response = await fetch(url(`/api/${method}`, query), { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) {
    const e = body.error || {};
    throw new Error(`${method}: ${e.kind || response.status}: ${e.message || ""}`);
  }
  return body;
}

function showError(e) {
  const el = document.getElementById("error");
  el.textContent = String(e && e.message ? e.message : e);
  el.hidden = false;
  setTimeout(() => { el.hidden = true; }, 6000);
}

const fmt = {
  price: (x) => (x == null ? "" : x.toFixed(x >= 1000 ? 2 : 3).replace(/0$/, "")),
  int: (x) => (x == null ? "" : Math.round(x).toLocaleString("en-US")),
  big: (x) => {
    if (x == null) return "";
    const a = Math.abs(x);
    if (a >= 1e8) return (x / 1e8).toFixed(2) + "亿";
    if (a >= 1e4) return (x / 1e4).toFixed(2) + "万";
    return String(Math.round(x));
  },
  pct: (x) => (x == null || !isFinite(x) ? "" : (x > 0 ? "+" : "") + x.toFixed(2) + "%"),
};

function sign(x) {
  return x > 0 ? "up" : x < 0 ? "down" : "";
}

// ---- code search ----

async function loadCodes() {
  const markets = ["sz", "sh", "bj"];
  const lists = await Promise.all(markets.map((m) => api("codes", { market: m, all: "true" })));
  state.codes = lists.flat().map((s) => ({ code: s.code, name: s.name, digits: s.code.slice(2) }));
  state.names = Object.fromEntries(state.codes.map((s) => [s.code, s.name]));
  document.body.dataset.codes = String(state.codes.length);
  renderQuoteName();
}

function search(text) {
  const t = text.trim().toLowerCase();
  if (!t) return [];
  const out = [];
  for (const s of state.codes) {
    if (s.code.startsWith(t) || s.digits.startsWith(t) || s.name.toLowerCase().includes(t)) {
      out.push(s);
      if (out.length >= 30) break;
    }
  }
  return out;
}

function setupSearch() {
  const input = document.getElementById("search");
  const list = document.getElementById("results");
  let active = 0;
  let shown = [];
  const render = () => {
    list.innerHTML = "";
    shown.forEach((s, i) => {
      const li = document.createElement("li");
      li.className = i === active ? "active" : "";
      li.dataset.code = s.code;
      li.innerHTML = `<span class="code"></span><span class="name"></span>`;
      li.firstChild.textContent = s.code;
      li.lastChild.textContent = s.name;
      li.addEventListener("mousedown", (ev) => { ev.preventDefault(); choose(s.code); });
      list.appendChild(li);
    });
    list.hidden = shown.length === 0;
  };
  const choose = (code) => {
    input.value = "";
    shown = [];
    render();
    selectCode(code);
  };
  input.addEventListener("input", () => { shown = search(input.value); active = 0; render(); });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowDown") { active = Math.min(active + 1, shown.length - 1); render(); ev.preventDefault(); }
    else if (ev.key === "ArrowUp") { active = Math.max(active - 1, 0); render(); ev.preventDefault(); }
    else if (ev.key === "Enter") {
      if (shown[active]) choose(shown[active].code);
      else if (/^(sz|sh|bj)\d{6}$/i.test(input.value.trim())) choose(input.value.trim().toLowerCase());
    } else if (ev.key === "Escape") { shown = []; render(); }
  });
  input.addEventListener("blur", () => { shown = []; render(); });
}

// ---- quote panel ----

function field(name) {
  return document.querySelector(`#quote [data-field="${name}"]`);
}

function renderQuoteName() {
  field("code").textContent = state.code;
  field("name").textContent = (state.names && state.names[state.code]) || "";
}

function renderQuote(q) {
  renderQuoteName();
  const change = q.price - q.last_close;
  const cls = sign(change);
  for (const k of ["price", "open", "high", "low", "last_close"]) {
    field(k).textContent = fmt.price(q[k]);
    field(k).dataset.value = String(q[k]);
  }
  field("price").className = cls;
  field("change").textContent = (change > 0 ? "+" : "") + fmt.price(change);
  field("change").className = cls;
  field("change_pct").textContent = q.last_close ? fmt.pct((change / q.last_close) * 100) : "";
  field("change_pct").className = cls;
  field("total_volume").textContent = fmt.int(q.total_volume);
  field("total_volume").dataset.value = String(q.total_volume);
  field("amount").textContent = fmt.big(q.amount);
  field("amount").dataset.value = String(q.amount);
  field("time").textContent = q.time || "";
  const book = document.getElementById("book");
  const rows = [];
  for (let i = 5; i >= 1; i--) rows.push(["ask" + i, q["ask" + i], q["ask_volume" + i]]);
  for (let i = 1; i <= 5; i++) rows.push(["bid" + i, q["bid" + i], q["bid_volume" + i]]);
  book.innerHTML = "";
  rows.forEach(([label, price, volume], i) => {
    const tr = document.createElement("tr");
    if (i === 5) tr.className = "split";
    tr.innerHTML = "<th></th><td></td><td></td>";
    tr.children[0].textContent = label;
    tr.children[1].textContent = fmt.price(price);
    tr.children[1].className = sign(price - q.last_close);
    tr.children[1].dataset.field = label;
    tr.children[2].textContent = fmt.int(volume);
    book.appendChild(tr);
  });
  document.getElementById("quote").dataset.code = q.code;
}

async function loadQuote() {
  const code = state.code;
  const [q] = await api("quotes", { codes: code });
  if (q && code === state.code) {
    state.lastClose[code] = q.last_close;
    renderQuote(q);
  }
}

// ---- charts ----

const LC = window.LightweightCharts;
const intraday = (p) => /m$/.test(p);

// Exchange-local stamps shown as they are: the chart's clock is UTC.
function chartTime(stamp, period) {
  if (!intraday(period)) return stamp.slice(0, 10);
  const [d, t] = stamp.split("T");
  const [y, mo, da] = d.split("-").map(Number);
  const [h, mi, s] = t.split(":").map(Number);
  return Date.UTC(y, mo - 1, da, h, mi, s || 0) / 1000;
}

function makeCharts() {
  const common = {
    layout: { background: { color: "#ffffff" }, textColor: "#3b4350", fontSize: 11 },
    grid: { vertLines: { color: "#f0f1f4" }, horzLines: { color: "#f0f1f4" } },
    rightPriceScale: { borderColor: "#dde1e6" },
    timeScale: { borderColor: "#dde1e6" },
    autoSize: true,
  };
  const chart = LC.createChart(document.getElementById("chart"), common);
  const candles = chart.addSeries(LC.CandlestickSeries, {
    upColor: "#d4362c", downColor: "#1f9d55", borderVisible: false, wickUpColor: "#d4362c", wickDownColor: "#1f9d55",
  });
  const volume = chart.addSeries(LC.HistogramSeries, { priceScaleId: "", priceFormat: { type: "volume" }, color: "#b8c2cc" });
  volume.priceScale().applyOptions({ scaleMargins: { top: 0.8, bottom: 0 } });
  candles.priceScale().applyOptions({ scaleMargins: { top: 0.05, bottom: 0.25 } });
  const minutes = LC.createChart(document.getElementById("minutes"), {
    ...common, timeScale: { ...common.timeScale, timeVisible: true, secondsVisible: false },
  });
  const price = minutes.addSeries(LC.LineSeries, { color: "#2a5db0", lineWidth: 1.5 });
  const average = minutes.addSeries(LC.LineSeries, { color: "#e0a100", lineWidth: 1, priceLineVisible: false, lastValueVisible: false });
  state.charts = { chart, candles, volume, minutes, price, average };
}

async function loadBars() {
  const { code, period, adjust } = state;
  const bars = await api("bars", { code, period, adjust, count: "800" });
  if (code !== state.code || period !== state.period || adjust !== state.adjust) return;
  const { chart, candles, volume } = state.charts;
  chart.applyOptions({ timeScale: { timeVisible: intraday(period), secondsVisible: false } });
  candles.setData(bars.map((b) => ({ time: chartTime(b.time, period), open: b.open, high: b.high, low: b.low, close: b.close })));
  volume.setData(bars.map((b) => ({
    time: chartTime(b.time, period), value: b.volume, color: b.close >= b.open ? "rgba(212,54,44,.45)" : "rgba(31,157,85,.45)",
  })));
  chart.timeScale().fitContent();
  const el = document.getElementById("chart");
  el.dataset.code = code;
  el.dataset.period = period;
  el.dataset.adjust = adjust;
  el.dataset.bars = String(bars.length);
  el.dataset.first = bars.length ? JSON.stringify(bars[0]) : "";
  el.dataset.last = bars.length ? JSON.stringify(bars[bars.length - 1]) : "";
  const last = bars[bars.length - 1];
  document.getElementById("chart-info").textContent = bars.length
    ? `${bars.length} bars · ${bars[0].time.slice(0, 10)} … ${last.time.slice(0, 10)} · close ${fmt.price(last.close)}`
    : "no bars";
}

async function loadMinutes() {
  const code = state.code;
  const points = await api("minutes", { code });
  if (code !== state.code) return;
  const today = new Date();
  const day = [today.getFullYear(), today.getMonth() + 1, today.getDate()];
  const stamp = (hhmm) => {
    const [h, m] = hhmm.split(":").map(Number);
    return Date.UTC(day[0], day[1] - 1, day[2], h, m) / 1000;
  };
  const rows = points.filter((p) => p.time);
  state.charts.price.setData(rows.map((p) => ({ time: stamp(p.time), value: p.price })));
  state.charts.average.setData(rows.map((p) => ({ time: stamp(p.time), value: p.average })));
  state.charts.minutes.timeScale().fitContent();
  const el = document.getElementById("minutes");
  el.dataset.code = code;
  el.dataset.points = String(rows.length);
  document.getElementById("minutes-info").textContent = rows.length ? `${rows.length} minutes · last ${fmt.price(rows[rows.length - 1].price)}` : "no trading today";
}

// ---- live board ----

function saveBoard() {
  localStorage.setItem("tdx-board", JSON.stringify(state.board));
}

function renderBoard() {
  const body = document.querySelector("#board tbody");
  const have = new Set([...body.children].map((tr) => tr.dataset.code));
  for (const code of state.board) {
    if (have.has(code)) continue;
    const tr = document.createElement("tr");
    tr.dataset.code = code;
    tr.innerHTML = "<td></td><td data-field=\"price\"></td><td data-field=\"pct\"></td><td data-field=\"volume\"></td><td data-field=\"time\"></td><td><button title=\"Remove\">×</button></td>";
    tr.children[0].textContent = code;
    tr.addEventListener("click", () => selectCode(code));
    tr.querySelector("button").addEventListener("click", (ev) => {
      ev.stopPropagation();
      state.board = state.board.filter((c) => c !== code);
      saveBoard();
      tr.remove();
      send({ unsubscribe: [code] });
    });
    body.appendChild(tr);
  }
}

function boardQuote(q) {
  const tr = document.querySelector(`#board tr[data-code="${q.code}"]`);
  if (!tr) return;
  const change = q.last_close ? ((q.price - q.last_close) / q.last_close) * 100 : 0;
  const cells = {
    price: fmt.price(q.price), pct: fmt.pct(change), volume: fmt.int(q.total_volume), time: q.time || "",
  };
  for (const [k, v] of Object.entries(cells)) {
    const td = tr.querySelector(`[data-field="${k}"]`);
    td.textContent = v;
    if (k === "price" || k === "pct") td.className = sign(change);
  }
  tr.dataset.updates = String(Number(tr.dataset.updates || 0) + 1);
  tr.classList.remove("flash");
  void tr.offsetWidth;
  tr.classList.add("flash");
  if (q.code === state.code && q.last_close) renderQuote({ ...q, time: q.time });
}

function send(message) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(message));
}

function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}${url("/ws")}`);
  state.ws = ws;
  const status = document.getElementById("ws-state");
  let received = 0;
  let dropped = 0;
  ws.addEventListener("open", () => {
    status.textContent = "live";
    status.className = "ws-state live";
    send({ subscribe: state.board });
  });
  ws.addEventListener("message", (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "quote") {
      received += 1;
      boardQuote(m.quote);
    } else if (m.type === "dropped") {
      dropped = m.total;
    } else if (m.type === "error") {
      showError(`live board: ${m.error.kind}: ${m.error.message}`);
    }
    document.getElementById("board-info").textContent = `${received} updates` + (dropped ? ` · ${dropped} dropped` : "");
    document.getElementById("board").dataset.updates = String(received);
  });
  ws.addEventListener("close", () => {
    status.textContent = "live: reconnecting";
    status.className = "ws-state";
    setTimeout(connect, 2000);
  });
}

// ---- wiring ----

function selectCode(code) {
  state.code = code;
  const q = new URLSearchParams(location.search);
  q.set("code", code);
  history.replaceState(null, "", `?${q}`);
  renderQuoteName();
  loadAll();
}

function loadAll() {
  Promise.all([loadQuote(), loadBars(), loadMinutes()]).catch(showError);
}

function setupControls() {
  const pick = (groupId, attr, key) => {
    const group = document.getElementById(groupId);
    group.querySelectorAll("button").forEach((b) => {
      b.classList.toggle("on", b.dataset[attr] === state[key]);
      b.addEventListener("click", () => {
        state[key] = b.dataset[attr];
        group.querySelectorAll("button").forEach((x) => x.classList.toggle("on", x === b));
        loadBars().catch(showError);
      });
    });
  };
  pick("periods", "period", "period");
  pick("adjusts", "adjust", "adjust");
  document.getElementById("watch").addEventListener("click", () => {
    if (!state.board.includes(state.code)) {
      state.board.push(state.code);
      saveBoard();
      renderBoard();
      send({ subscribe: [state.code] });
    }
  });
}

makeCharts();
setupSearch();
setupControls();
renderBoard();
loadAll();
loadCodes().catch(showError);
connect();
