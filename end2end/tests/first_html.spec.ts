import { test, expect } from "./fixtures";
import { hydrated, lastTurn, newSession, rendererReady, startTurn, waitRunEnd } from "./support";

test("a reader who chose the Stream gets it in the first HTML, and nothing moves while the page comes alive", async ({ page, request }, testInfo) => {
  const session = await newSession(request);
  const run = await startTurn(request, session, "/demo tools");
  await waitRunEnd(request, run);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await expect(lastTurn(page)).toHaveAttribute("data-mode", "compact_worklog");
  await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
  await expect(lastTurn(page)).toHaveAttribute("data-mode", "transparent_stream");

  // The server knows the choice: the HTML it sends this browser is already in that mode.
  const html = await (await page.request.get(`/s/${session}`)).text();
  expect(html).toContain('data-mode="transparent_stream"');
  // Another browser, without the choice, still gets the worklog.
  const other = await (await request.get(`/s/${session}`)).text();
  expect(other).toContain('data-mode="compact_worklog"');

  // A reload: what the first paint shows, and every layout shift until the page is live.
  await page.addInitScript(() => {
    const w = window as any;
    w.__shifts = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as any[]) if (!e.hadRecentInput) w.__shifts.push(e.value);
    }).observe({ type: "layout-shift", buffered: true });
    document.addEventListener("DOMContentLoaded", () => {
      const turns = [...document.querySelectorAll("article.turn")];
      w.__firstMode = turns.length ? turns[turns.length - 1].getAttribute("data-mode") : null;
      w.__firstPressed = document.querySelector("[data-mode-switch] button[aria-pressed='true']")?.textContent;
    });
  });
  await page.reload();
  await hydrated(page);
  await rendererReady(page);
  await page.waitForTimeout(300);
  const seen = await page.evaluate(() => {
    const w = window as any;
    return { first: w.__firstMode, pressed: w.__firstPressed, shifts: w.__shifts as number[] };
  });
  expect(seen.first).toBe("transparent_stream");
  expect(seen.pressed).toContain("Stream");
  await expect(lastTurn(page)).toHaveAttribute("data-mode", "transparent_stream");
  expect(seen.shifts.reduce((a, b) => a + b, 0)).toBe(0);
  await page.screenshot({ path: testInfo.outputPath("trace-after-reload.png") });

  // Back to the worklog: the next load is in the worklog again.
  await page.locator("[data-mode-switch] button", { hasText: "Worklog" }).click();
  const again = await (await page.request.get(`/s/${session}`)).text();
  expect(again).toContain('data-mode="compact_worklog"');
});
