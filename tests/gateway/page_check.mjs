// The gateway's page in a real browser: Debian's chromium, driven by
// playwright-core, with a fresh profile and no network but loopback. The
// page must load with no console errors and nothing fetched from anywhere
// but the gateway; the chart must draw the chosen code's bars (the values
// `tdx-sim truth` gives, and coloured candles on its canvas); the quote
// panel must show truth's quote; search, periods and adjustment must
// work; the live board must receive pushes. A screenshot is saved.
//
//   node page_check.mjs --url http://127.0.0.1:PORT --sim target/debug/tdx-sim --out target/gateway-page.png

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const base = args.url.replace(/\/$/, "");
const results = { passed: 0, failed: 0 };

function check(name, ok, detail = "") {
  if (ok) results.passed += 1;
  else {
    results.failed += 1;
    console.log(`FAIL ${name}: ${detail}`);
  }
}

function eq(name, got, want) {
  check(name, JSON.stringify(got) === JSON.stringify(want), `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

function truth(...query) {
  return JSON.parse(execFileSync(args.sim, ["truth", "--seed", "1", ...query.map(String)], { encoding: "utf8" }));
}

const profile = mkdtempSync(join(tmpdir(), "tdx-page-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1440, height: 900 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
const page = context.pages()[0] || (await context.newPage());
const errors = [];
const elsewhere = [];
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
page.on("pageerror", (e) => errors.push(String(e)));
page.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("data:")) elsewhere.push(r.url()); });

try {
  // Not on the live board, so its quote panel keeps the quote it loaded
  // (a board code's panel follows the pushes).
  const code = "sh600036";
  await page.goto(`${base}/?code=${code}`, { waitUntil: "load" });

  // The chart: the bars of the chosen code, as truth has them.
  const chart = page.locator(`#chart[data-code="${code}"][data-period="day"]`);
  await chart.waitFor({ timeout: 20000 });
  const want = truth("bars", code, "--period", "day", "--count", 800).bars;
  const shown = await chart.evaluate((el) => ({ bars: Number(el.dataset.bars), first: JSON.parse(el.dataset.first), last: JSON.parse(el.dataset.last) }));
  eq("chart bar count", shown.bars, want.length);
  for (const [label, got, exp] of [["first", shown.first, want[0]], ["last", shown.last, want[want.length - 1]]]) {
    eq(`chart ${label} bar`, [got.time.replace("T", " ").slice(0, 16), got.open, got.high, got.low, got.close], [exp.time, exp.open, exp.high, exp.low, exp.close]);
  }
  // Candles are on the canvas: pixels in the up and down colours.
  await page.waitForTimeout(300);
  const coloured = await page.evaluate(() => {
    let n = 0;
    for (const canvas of document.querySelectorAll("#chart canvas")) {
      const { width, height } = canvas;
      if (!width || !height) continue;
      const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
        if ((r > 180 && g < 90 && b < 80) || (r < 60 && g > 130 && b < 110)) n += 1;
      }
    }
    return n;
  });
  check("candles drawn on the canvas", coloured > 2000, `${coloured} coloured pixels`);

  // The quote panel shows truth's quote.
  await page.locator(`#quote[data-code="${code}"]`).waitFor({ timeout: 10000 });
  const q = truth("quotes", code).quotes[0];
  const panel = await page.evaluate(() => Object.fromEntries(
    [...document.querySelectorAll("#quote [data-value]")].map((el) => [el.dataset.field, Number(el.dataset.value)]),
  ));
  for (const f of ["price", "open", "high", "low", "last_close", "total_volume"]) eq(`quote ${f}`, panel[f], q[f]);
  eq("quote bid1 shown", Number(await page.locator('#book [data-field="bid1"]').textContent()), q.bids[0][0]);

  // Periods and adjustment.
  await page.click('#periods button[data-period="week"]');
  await page.locator(`#chart[data-code="${code}"][data-period="week"]`).waitFor({ timeout: 10000 });
  const weeks = truth("bars", code, "--period", "week", "--count", 800).bars;
  eq("week bars", Number(await page.locator("#chart").getAttribute("data-bars")), weeks.length);
  await page.click('#adjusts button[data-adjust="qfq"]');
  await page.locator(`#chart[data-adjust="qfq"][data-period="week"]`).waitFor({ timeout: 10000 });
  const qfq = truth("bars", code, "--period", "week", "--count", 800, "--adjust", "qfq").bars;
  const first = JSON.parse(await page.locator("#chart").getAttribute("data-first"));
  eq("qfq first close", first.close, qfq[0].close);
  await page.click('#periods button[data-period="5m"]');
  await page.locator(`#chart[data-adjust="qfq"][data-period="5m"]`).waitFor({ timeout: 10000 });
  check("5m bars drawn", Number(await page.locator("#chart").getAttribute("data-bars")) > 0);
  await page.click('#periods button[data-period="day"]');
  await page.click('#adjusts button[data-adjust="none"]');

  // Today's minute line.
  const minutes = truth("minutes", code).points;
  await page.locator(`#minutes[data-code="${code}"]`).waitFor({ timeout: 10000 });
  eq("minute points", Number(await page.locator("#minutes").getAttribute("data-points")), minutes.length);

  // Search by digits and by name, then pick.
  await page.waitForFunction(() => Number(document.body.dataset.codes) > 0, null, { timeout: 20000 });
  await page.fill("#search", "600000");
  await page.locator('#results li[data-code="sh600000"]').waitFor({ timeout: 5000 });
  await page.keyboard.press("Enter");
  await page.locator('#chart[data-code="sh600000"][data-period="day"][data-adjust="none"]').waitFor({ timeout: 10000 });
  eq("searched code's bars", Number(await page.locator("#chart").getAttribute("data-bars")), truth("bars", "sh600000", "--count", 800).bars.length);
  const name = truth("codes", "sz", "--limit", 1).items[0].name;
  await page.fill("#search", name);
  await page.locator("#results li").first().waitFor({ timeout: 5000 });
  check("search by name", (await page.locator("#results li .name").first().textContent()).includes(name));
  await page.keyboard.press("Escape");

  // The live board receives pushes over the WebSocket.
  await page.waitForFunction(() => Number(document.getElementById("board").dataset.updates || 0) >= 6, null, { timeout: 15000 });
  const row = page.locator('#board tr[data-code="sz000001"]');
  check("board row updated", Number(await row.getAttribute("data-updates")) >= 1);
  check("board shows a price", /\d/.test(await row.locator('[data-field="price"]').textContent()));
  eq("live status", await page.locator("#ws-state").textContent(), "live");

  await page.locator("#search").blur();
  await page.screenshot({ path: args.out, fullPage: true });
  check("no console errors", errors.length === 0, errors.join(" | "));
  check("nothing fetched from elsewhere", elsewhere.length === 0, elsewhere.join(" "));
} catch (e) {
  check("page check ran to the end", false, String(e && e.stack ? e.stack : e));
  await page.screenshot({ path: args.out, fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

console.log(`page checks: ${results.passed} passed, ${results.failed} failed (screenshot: ${args.out})`);
process.exit(results.failed ? 1 : 0);
