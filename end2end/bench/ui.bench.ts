import { test, expect } from "@playwright/test";
import { gzipSync } from "zlib";

// Prints one JSON line: the cost of a streamed token on a turn of 10,000 rows, the DOM size of
// that turn in the Transparent Stream, and the gzipped first-load transfer.
const round = (x: number) => Math.round(x * 1000) / 1000;

test("token append cost, DOM size on a 10k-row turn, first-load transfer", async ({ page, request }) => {
  const session = (await (await request.post("/api/session/new", { data: {} })).json()).session.id;

  // First load: what the browser downloads for the page, as sent (compressed) and gzip -9.
  const sizes: Record<string, { encoded: number; gzip9: number }> = {};
  page.on("response", async (res) => {
    const url = res.url();
    if (/\/pkg\/.+\.(wasm|js|css)$/.test(url)) {
      const body = await res.body();
      const encoded = (await res.request().sizes()).responseBodySize;
      sizes[url.split("/").pop()!] = { encoded, gzip9: gzipSync(body, { level: 9 }).length };
    }
  });
  await page.goto(`/s/${session}`);
  await expect(page.locator(".app[data-hydrated='true']")).toHaveCount(1);
  await expect(page.locator(".app[data-markdown='ready']")).toHaveCount(1);

  await page.locator("[data-mode-switch] button", { hasText: "Trace" }).click();
  await page.getByRole("textbox", { name: "Message" }).fill("/demo trace 10000");
  await page.getByRole("button", { name: "Send" }).click();
  const turn = page.locator("article.turn").last();
  // Wait until all 10,000 tool rows are in and the answer has started streaming.
  await expect(turn).toHaveAttribute("data-row-count", /^(1\d{4}|[2-9]\d{4})$/, { timeout: 300_000 });
  await expect(turn.locator("[data-final-answer='streaming']")).toBeVisible({ timeout: 60_000 });

  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  // Script + style/layout time per applied token, over short windows; the median window is
  // the figure (a window is ~400 ms of live streaming, so a GC pause skews one window, not all).
  const tokenCost = async (t: typeof turn) => {
    const metric = async () => {
      const { metrics } = await cdp.send("Performance.getMetrics");
      const m = Object.fromEntries(metrics.map((x: any) => [x.name, x.value]));
      return { script: m.ScriptDuration, layout: m.LayoutDuration + m.RecalcStyleDuration, seq: Number(await t.getAttribute("data-last-seq")) };
    };
    const perWindow: number[] = [];
    let tokens = 0;
    let prev = await metric();
    for (let i = 0; i < 15; i++) {
      await page.waitForTimeout(400);
      const now = await metric();
      const n = now.seq - prev.seq;
      if (n > 0) {
        perWindow.push(((now.script - prev.script + now.layout - prev.layout) * 1000) / n);
        tokens += n;
      }
      prev = now;
    }
    expect(perWindow.length).toBeGreaterThan(5);
    perWindow.sort((a, b) => a - b);
    return { tokens, median: perWindow[Math.floor(perWindow.length / 2)], p90: perWindow[Math.floor(perWindow.length * 0.9)] };
  };
  const long = await tokenCost(turn);

  await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 120_000 });
  const domNodes = await page.evaluate(() => document.getElementsByTagName("*").length);
  const turnNodes = await turn.evaluate((el) => el.getElementsByTagName("*").length);
  const rows = Number(await turn.getAttribute("data-row-count"));

  // Baseline, same page and run: a token appended to a fresh turn with no activity rows.
  await page.getByRole("textbox", { name: "Message" }).fill("/demo long 400");
  await page.getByRole("button", { name: "Send" }).click();
  const short = page.locator("article.turn").last();
  await expect(short.locator("[data-final-answer='streaming']")).toBeVisible({ timeout: 60_000 });
  const base = await tokenCost(short);

  // Split-off parts (`split_*.wasm`) are fetched once the page is live, not before it is usable.
  const sum = (deferred: boolean) =>
    Object.entries(sizes)
      .filter(([name]) => name.startsWith("split_") === deferred)
      .reduce((a, [, s]) => ({ encoded: a.encoded + s.encoded, gzip9: a.gzip9 + s.gzip9 }), { encoded: 0, gzip9: 0 });
  const total = sum(false);
  const deferred = sum(true);
  console.log(JSON.stringify({
    rows,
    token_ms_10k_turn: { median: round(long.median), p90: round(long.p90), tokens: long.tokens },
    token_ms_empty_turn: { median: round(base.median), p90: round(base.p90), tokens: base.tokens },
    ratio_10k_vs_empty: round(long.median / base.median),
    dom_nodes_page: domNodes,
    dom_nodes_turn: turnNodes,
    first_load: sizes,
    first_load_total_bytes: total,
    fetched_once_live_bytes: deferred,
  }));
});
