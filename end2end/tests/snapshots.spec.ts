import { test, expect } from "./fixtures";
import type { Browser, Locator, Page } from "@playwright/test";
import { hydrated, newSession, startTurn, waitRunEnd } from "./support";

// These tests route the page's requests; a service worker's fetches would pass the routes by
// (Playwright sees only the page's own), so the worker stays out (tests/pwa.spec.ts has it).
test.use({ serviceWorkers: "block" });

// A settled turn comes as its snapshot (the answer, the ending, the counts); its rows come when
// the reader opens them, once, and show what a page given the whole journal shows.

/** What the rows of a turn's open process show: each row's id and text, in order. */
async function rows(turn: Locator): Promise<string[]> {
  return turn
    .locator(".worklog-items > [data-row-id], .stream-row > [data-row-id]")
    .evaluateAll((els) => els.map((e) => `${e.getAttribute("data-row-id")} | ${(e as HTMLElement).innerText.trim()}`));
}

/** Requests for journal rows the page makes from now on. */
function journalRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/chat/journal")) seen.push(r.url());
  });
  return seen;
}

/** A page in a browser that chose the Transparent Stream (its pages carry small turns whole). */
async function tracePage(browser: Browser, baseURL: string, like: Page): Promise<Page> {
  const context = await browser.newContext({ viewport: like.viewportSize() });
  await context.addCookies([{ name: "anchorage_mode", value: "transparent_stream", url: baseURL }]);
  return context.newPage();
}

test("an old turn's steps and trace come once when opened, and match the whole journal's", async ({ page, request, browser, baseURL }, testInfo) => {
  test.setTimeout(90_000);
  const session = await newSession(request, "Steps on demand");
  const old = await startTurn(request, session, "/demo tools");
  await waitRunEnd(request, old);
  const later = await startTurn(request, session, "/demo prose");
  await waitRunEnd(request, later);

  await page.goto(`/s/${session}`);
  await hydrated(page);
  const fetched = journalRequests(page);
  const turn = page.locator(`article.turn[data-run-id='${old}']`);
  // Folded, it says what it did and shows its answer: nothing was loaded for that.
  const summary = turn.locator(".worklog-summary");
  await expect(summary).toContainText("6 steps");
  await expect(turn.locator("[data-final-answer='true']")).toContainText("stale sequence cache");
  await expect(turn.locator(".tool-card")).toHaveCount(0);
  expect(fetched).toEqual([]);

  // Opened: the steps come, as the reader sees them in a turn loaded whole.
  await summary.click();
  await expect(turn.locator(".tool-card")).toHaveCount(3);
  await expect(turn.getByText("Ran", { exact: true })).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("worklog-opened.png") });
  const worklog = await rows(turn);
  expect(worklog.length).toBe(6);
  // The trace of the same turn: no second request.
  await turn.getByRole("button", { name: "Show full stream" }).click();
  await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
  await expect(turn.locator(".stream-row").first()).toBeVisible();
  const trace = await rows(turn);
  expect(fetched).toHaveLength(1);
  expect(fetched[0]).toContain(`run_id=${old}`);
  // The other turn was never asked for.
  expect(fetched.join()).not.toContain(later);

  // A fresh page given the whole journal (the reader of the trace gets small turns whole).
  const whole = await tracePage(browser, baseURL!, page);
  const wholeFetched = journalRequests(whole);
  await whole.goto(`/s/${session}`);
  await hydrated(whole);
  const wholeTurn = whole.locator(`article.turn[data-run-id='${old}']`);
  await expect(wholeTurn).toHaveAttribute("data-mode", "transparent_stream");
  await expect(wholeTurn.locator(".stream-row").first()).toBeVisible();
  expect(await rows(wholeTurn)).toEqual(trace);
  await wholeTurn.getByRole("button", { name: "Show as worklog" }).click();
  await wholeTurn.locator(".worklog-summary").click();
  await expect(wholeTurn.locator(".tool-card")).toHaveCount(3);
  expect(await rows(wholeTurn)).toEqual(worklog);
  expect(wholeFetched).toEqual([]);
  // Same counts, same answer, same footer either way.
  await turn.getByRole("button", { name: "Show as worklog" }).click();
  for (const selector of [".worklog-summary", "[data-final-answer]", ".turn-footer"]) {
    expect(await wholeTurn.locator(selector).innerText()).toBe(await page.locator(`article.turn[data-run-id='${old}'] ${selector}`).innerText());
  }
  await whole.context().close();
});

test("a long settled turn's trace waits to be asked for; a running turn switches with no request", async ({ page, request, browser, baseURL }, testInfo) => {
  test.setTimeout(120_000);
  const session = await newSession(request, "A long trace");
  const long = await startTurn(request, session, "/demo trace 450");
  await waitRunEnd(request, long);

  const reader = await tracePage(browser, baseURL!, page);
  const fetched = journalRequests(reader);
  await reader.goto(`/s/${session}`);
  await hydrated(reader);
  const turn = reader.locator(`article.turn[data-run-id='${long}']`);
  await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
  await expect(turn.locator(".stream-head")).toContainText("225 tools");
  // Too long to come with the page: the trace offers its rows instead of fetching them.
  const show = turn.getByRole("button", { name: /^Show 450 events$/ });
  await expect(show).toBeVisible();
  await expect(turn.locator("[data-final-answer='true']")).toContainText("t399");
  await reader.waitForTimeout(300);
  expect(fetched).toEqual([]);
  // The network drops the first try: the turn says so, where the button was, and offers it again.
  await reader.route("**/api/chat/journal**", (route) => route.abort("internetdisconnected"));
  await show.click();
  const failure = turn.getByRole("alert");
  await expect(failure).toContainText("The steps could not be loaded");
  const again = turn.getByRole("button", { name: "Try again" });
  await expect(again).toBeVisible();
  await reader.screenshot({ path: testInfo.outputPath("long-trace-failed.png") });
  await reader.unroute("**/api/chat/journal**");
  await again.click();
  await expect(turn.locator(".stream-row").first()).toBeVisible();
  await expect(failure).toHaveCount(0);
  // Windowed as any long trace: the latest rows, and the earlier ones on request.
  await expect(turn.locator(".stream-row[class*='row-tool']").last()).toContainText("src/f224.rs");
  expect(await turn.locator(".stream-row").count()).toBeLessThanOrEqual(200);
  await expect(turn.getByRole("button", { name: /^Show \d+ earlier$/ })).toBeVisible();
  expect(fetched).toHaveLength(2);
  await reader.screenshot({ path: testInfo.outputPath("long-trace-loaded.png") });
  await reader.context().close();

  // A running turn has its rows: switching it asks the server for nothing.
  const running = await startTurn(request, session, "/demo slow");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const live = page.locator(`article.turn[data-run-id='${running}']`);
  await expect(live.locator(".assistant")).toHaveAttribute("data-state", "running");
  const asked = journalRequests(page);
  await live.getByRole("button", { name: "Show full stream" }).click();
  await expect(live).toHaveAttribute("data-mode", "transparent_stream");
  await live.getByRole("button", { name: "Show as worklog" }).click();
  await expect(live).toHaveAttribute("data-mode", "compact_worklog");
  expect(asked).toEqual([]);
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(live.locator(".assistant")).toHaveAttribute("data-state", "settled");
});
