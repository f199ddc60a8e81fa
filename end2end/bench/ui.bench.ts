import { test, expect } from "@playwright/test";
import { gzipSync } from "zlib";

// Prints one JSON line: the cost of a streamed token on a turn of 10,000 rows, the DOM size of
// that turn in the Transparent Stream, and the gzipped first-load transfer.
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

  await page.locator("[data-mode-switch] button", { hasText: "Trace" }).click();
  await page.getByRole("textbox", { name: "Message" }).fill("/demo trace 10000");
  await page.getByRole("button", { name: "Send" }).click();
  const turn = page.locator("article.turn").last();
  // Wait until all 10,000 tool rows are in and the answer has started streaming.
  await expect(turn).toHaveAttribute("data-row-count", /^(1\d{4}|[2-9]\d{4})$/, { timeout: 300_000 });
  await expect(turn.locator("[data-final-answer='streaming']")).toBeVisible({ timeout: 60_000 });

  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const metric = async () => {
    const { metrics } = await cdp.send("Performance.getMetrics");
    const m = Object.fromEntries(metrics.map((x: any) => [x.name, x.value]));
    return { script: m.ScriptDuration, layout: m.LayoutDuration + m.RecalcStyleDuration, seq: Number(await turn.getAttribute("data-last-seq")) };
  };
  const start = await metric();
  await page.waitForTimeout(3000);
  const end = await metric();
  const tokens = end.seq - start.seq;
  expect(tokens).toBeGreaterThan(20);
  const perToken = ((end.script - start.script + end.layout - start.layout) * 1000) / tokens;

  await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 120_000 });
  const domNodes = await page.evaluate(() => document.getElementsByTagName("*").length);
  const turnNodes = await turn.evaluate((el) => el.getElementsByTagName("*").length);
  const rows = Number(await turn.getAttribute("data-row-count"));

  const total = Object.values(sizes).reduce((a, s) => ({ encoded: a.encoded + s.encoded, gzip9: a.gzip9 + s.gzip9 }), { encoded: 0, gzip9: 0 });
  console.log(JSON.stringify({
    rows,
    tokens_measured: tokens,
    script_and_layout_ms_per_token: Math.round(perToken * 1000) / 1000,
    dom_nodes_page: domNodes,
    dom_nodes_turn: turnNodes,
    first_load: sizes,
    first_load_total_bytes: total,
  }));
});
