import type { APIRequestContext, Page, TestInfo } from "@playwright/test";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { test, expect } from "./fixtures";
import { freePort, kill9, startServer, waitHealthy } from "./own_server";
import { hydrated, newSession, rendererReady, startTurn, waitRunEnd } from "./support";

/** A conversation of `n` short turns, "Message 0" … "Message n-1"; returns its id and runs. */
async function conversation(request: any, n: number): Promise<{ session: string; runs: string[] }> {
  const session = await newSession(request, "A long conversation");
  const runs: string[] = [];
  for (let i = 0; i < n; i++) {
    const run = await startTurn(request, session, `/demo long 3 · Message ${i}`);
    await waitRunEnd(request, run);
    runs.push(run);
  }
  return { session, runs };
}

test("a long conversation opens on its latest turns; Show earlier puts the older ones above without moving what is read", async ({ page, request }, testInfo) => {
  test.setTimeout(120_000);
  const { session, runs } = await conversation(request, 26);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const turns = page.locator("article.turn");
  await expect(turns).toHaveCount(20);
  await expect(turns.first()).toHaveAttribute("data-run-id", runs[6]);
  await expect(turns.locator(".user-message").getByText("Message 0", { exact: false })).toHaveCount(0);

  // The reader scrolls to the top and asks for more.
  const transcript = page.locator(".transcript");
  await transcript.evaluate((el) => (el.scrollTop = 0));
  const more = page.getByRole("button", { name: "Show earlier messages" });
  await expect(more).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("show-earlier.png") });
  const reading = page.locator(`article.turn[data-run-id='${runs[6]}']`);
  const before = (await reading.boundingBox())!.y;
  await more.click();
  await expect(turns).toHaveCount(26);
  await expect(turns.first()).toHaveAttribute("data-run-id", runs[0]);
  // What the reader was looking at stays where it was on screen.
  await page.waitForTimeout(200);
  const after = (await reading.boundingBox())!.y;
  expect(Math.abs(after - before)).toBeLessThanOrEqual(2);
  // Nothing older: the button is gone; the first message is there above.
  await expect(more).toHaveCount(0);
  await transcript.evaluate((el) => (el.scrollTop = 0));
  await expect(page.locator("article.turn").first().locator(".user-message")).toContainText("Message 0");
  await page.screenshot({ path: testInfo.outputPath("earlier-loaded.png") });
});

test("a link to an old turn loads the window that holds it and shows that turn", async ({ page, request }) => {
  test.setTimeout(120_000);
  const { session, runs } = await conversation(request, 23);
  await page.goto(`/s/${session}#turn-${runs[1]}`);
  await hydrated(page);
  const target = page.locator(`#turn-${runs[1]}`);
  await expect(target).toBeAttached();
  await expect(target).toBeInViewport();
  await expect(target.locator(".user-message")).toContainText("Message 1");
});

test("the sidebar comes with the top of the list; more come on request and as it is scrolled, and search finds any", async ({ page, request }) => {
  test.setTimeout(90_000);
  // A server of its own: the counts below are of this test's conversations alone (the
  // suite's server gets other tests' meanwhile, and a page of the list is a place in it).
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-sidebar-"));
  const server = startServer(port, dataDir);
  try {
    await waitHealthy(request, base);
    const made = async (title: string): Promise<string> =>
      (await (await request.post(`${base}/api/session/new`, { data: { title } })).json()).session.id;
    const marker = `Lighthouse ${Date.now()}`;
    const oldest = await made(`${marker} oldest`);
    for (let i = 0; i < 65; i++) await made(`Filler ${i}`);
    // The page itself lists the first ten.
    const html = await (await request.get(`${base}/new`)).text();
    expect(html.match(/class="session-row/g)?.length).toBe(10);
    await page.goto(`${base}/new`);
    await hydrated(page);
    if ((page.viewportSize()?.width ?? 1280) <= 640) await page.getByRole("button", { name: "Open sessions" }).tap();
    const rows = page.locator(".session-list .session-row");
    await expect(rows).toHaveCount(10);
    await page.waitForTimeout(300);
    await expect(rows).toHaveCount(10);
    // Asked for, the next ones: one page more. Bringing the button into view to press it loads
    // nothing by itself, so it stays under the pointer.
    const more = page.getByRole("button", { name: "Show more conversations" });
    await more.click();
    await expect(rows).toHaveCount(60);
    await expect(page.locator(`[data-session-id='${oldest}']`)).toHaveCount(0);
    // Scrolled by hand (a wheel; a finger on the phone) to its end, the list brings more, page
    // after page, and the Settings button below
    // it stays where it was, in view: a reader on their way to it never has it moved away.
    const settings = page.getByRole("button", { name: "Settings" });
    await expect(settings).toBeInViewport();
    const before = await settings.boundingBox();
    const list = page.locator("#sidebar .sidebar-scroll");
    const box = (await list.boundingBox())!;
    const phone = (page.viewportSize()?.width ?? 1280) <= 640;
    const cdp = phone ? await page.context().newCDPSession(page) : undefined;
    const reached = page.locator(`[data-session-id='${oldest}']`);
    await expect
      .poll(async () => {
        if (cdp) {
          // A finger drawn up the list.
          const x = box.x + box.width / 2;
          const from = box.y + box.height - 20;
          await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: [{ x, y: from }] });
          for (let step = 1; step <= 8; step++) {
            await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: [{ x, y: from - step * 50 }] });
          }
          await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
        } else {
          await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
          await page.mouse.wheel(0, 4000);
        }
        return reached.count();
      }, { timeout: 30_000 })
      .toBe(1);
    await expect(settings).toBeInViewport();
    expect(await settings.boundingBox()).toEqual(before);
    // Search finds it by its title.
    await page.getByRole("searchbox", { name: "Search conversations" }).fill(marker);
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toHaveAttribute("data-session-id", oldest);
    await rows.first().locator("a").click();
    await expect(page).toHaveURL(new RegExp(`/s/${oldest}$`));
    await expect(page.locator(".chat-title")).toContainText(marker);
  } finally {
    await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("a search hit deep in a long conversation opens at its turn", async ({ page, request }, testInfo) => {
  test.setTimeout(120_000);
  const word = `Quokka${Date.now()}`;
  const session = await newSession(request, "A long conversation to search");
  const runs: string[] = [];
  for (let i = 0; i < 45; i++) {
    const run = await startTurn(request, session, `/demo long 3 · Message ${i}${i === 2 ? ` about the ${word}` : ""}`);
    await waitRunEnd(request, run);
    runs.push(run);
  }
  // From another conversation: the hit opens the page at its turn.
  await page.goto("/new");
  await hydrated(page);
  const openSidebar = async () => {
    if ((page.viewportSize()?.width ?? 1280) <= 640) await page.getByRole("button", { name: "Open sessions" }).tap();
  };
  await openSidebar();
  await page.getByRole("searchbox", { name: "Search conversations" }).fill(word);
  const hits = page.locator(".session-list .session-row");
  await expect(hits).toHaveCount(1);
  await hits.first().locator("a").click();
  // The turn that matched, two windows before the latest, is on screen.
  await expect(page).toHaveURL(new RegExp(`/s/${session}#turn-${runs[2]}$`));
  await hydrated(page);
  const target = page.locator(`#turn-${runs[2]}`);
  await expect(target).toBeInViewport();
  await expect(target.locator(".user-message")).toContainText(word);
  await page.screenshot({ path: testInfo.outputPath("search-hit.png") });

  // In the conversation shown, opened on its latest turns: the hit loads the windows up to it.
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await expect(page.locator(`#turn-${runs[2]}`)).toHaveCount(0);
  await openSidebar();
  await page.getByRole("searchbox", { name: "Search conversations" }).fill(word);
  await expect(hits).toHaveCount(1);
  await hits.first().locator("a").click();
  await expect(page).toHaveURL(new RegExp(`/s/${session}#turn-${runs[2]}$`));
  await expect(target).toBeInViewport();
});

test("a search hit lands on its turn every time, on a slow phone too", async ({ page, request }, testInfo) => {
  test.skip(testInfo.project.name !== "phone", "the phone is where it went wrong; the desktop has the two tests above");
  test.setTimeout(600_000);
  const word = `Wombat${Date.now()}`;
  const session = await newSession(request, "A conversation searched again and again");
  const runs: string[] = [];
  for (let i = 0; i < 45; i++) {
    const run = await startTurn(request, session, `/demo long 3 · Message ${i}${i === 2 ? ` about the ${word}` : ""}`);
    await waitRunEnd(request, run);
    runs.push(run);
  }
  const other = await newSession(request, "Somewhere else");
  // A phone four times slower than this machine: layout, hydration and the renderer all late.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
  const phone = (page.viewportSize()?.width ?? 1280) <= 640;
  const target = page.locator(`#turn-${runs[2]}`);
  const misses: string[] = [];
  for (let attempt = 0; attempt < 20; attempt++) {
    // Alternately from another conversation (the page loads at the link) and from the
    // conversation itself, opened on its latest turns (only the fragment changes).
    const fromItself = attempt % 2 === 1;
    await page.goto(fromItself ? `/s/${session}` : `/s/${other}`);
    await hydrated(page);
    if (phone) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.getByRole("searchbox", { name: "Search conversations" }).fill(word);
    const hits = page.locator(".session-list .session-row");
    await expect(hits).toHaveCount(1);
    if (phone) await hits.first().locator("a").tap();
    else await hits.first().locator("a").click();
    await expect(page).toHaveURL(new RegExp(`/s/${session}#turn-${runs[2]}$`));
    await hydrated(page);
    try {
      await expect(target).toBeInViewport({ timeout: 15_000 });
      // And it stays there once the Markdown renderer has come and laid the answers out again.
      await rendererReady(page);
      await expect(target).toBeInViewport({ timeout: 1_000 });
    } catch {
      misses.push(`attempt ${attempt} (${fromItself ? "same conversation" : "page load"})`);
      await page.screenshot({ path: testInfo.outputPath(`miss-${attempt}.png`) });
    }
  }
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
  expect(misses, "every hit shows its turn").toEqual([]);
});

test("scrolling back through a conversation of 404 turns reaches its first message", async ({ page, request }, testInfo) => {
  test.skip(testInfo.project.name !== "desktop", "filling 404 turns once is enough");
  test.setTimeout(600_000);
  // A server of its own whose demo agent does not pause between chunks: the 20,000 rows of
  // the long turns are written in seconds, not minutes.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-window-"));
  const server = startServer(port, dataDir, { ANCHORAGE_DEMO_DELAY_MS: "0" });
  try {
    await waitHealthy(request, base);
    await scrollBackThrough404Turns(page, request, base, testInfo);
  } finally {
    await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

async function scrollBackThrough404Turns(page: Page, request: APIRequestContext, base: string, testInfo: TestInfo) {
  // Issue 14's session B: four turns of 5,000 tool rows, then 400 turns with tool calls.
  const session = (await (await request.post(`${base}/api/session/new`, { data: { title: "Session B" } })).json()).session.id;
  const runs: string[] = [];
  const messages = [...Array.from({ length: 4 }, (_, i) => `/demo trace 5000 · long ${i}`), ...Array.from({ length: 400 }, (_, i) => `/demo tools · short ${i}`)];
  for (const message of messages) {
    const res = await request.post(`${base}/api/chat/start`, { data: { session_id: session, message } });
    expect(res.ok()).toBeTruthy();
    const run = (await res.json()).run_id;
    await expect
      .poll(async () => (await (await request.get(`${base}/api/chat/stream/status?run_id=${run}`)).json()).active, { intervals: [10, 20, 40, 80], timeout: 120_000 })
      .toBe(false);
    runs.push(run);
  }
  await page.goto(`${base}/s/${session}`);
  await hydrated(page);
  const turns = page.locator("article.turn");
  await expect(turns).toHaveCount(20);
  const transcript = page.locator(".transcript");
  const more = page.getByRole("button", { name: "Show earlier messages" });
  let windows = 0;
  while ((await more.count()) > 0) {
    // The reader scrolls to the top, where the button is, and asks for more.
    await transcript.evaluate((el) => (el.scrollTop = 0));
    const shown = await turns.count();
    await more.click();
    await expect.poll(() => turns.count()).toBeGreaterThan(shown);
    windows++;
    expect(windows).toBeLessThan(30);
  }
  await expect(turns).toHaveCount(404);
  await transcript.evaluate((el) => (el.scrollTop = 0));
  const first = turns.first();
  await expect(first).toHaveAttribute("data-run-id", runs[0]);
  await expect(first.locator(".user-message")).toContainText("long 0");
  await expect(first.locator(".user-message")).toBeInViewport();
  // The long turns came folded: their answers, not their 5,000 rows.
  await expect(first.locator(".worklog-summary")).toContainText("steps");
  await expect(first.locator(".tool-card")).toHaveCount(0);
  expect(await page.evaluate(() => document.querySelectorAll("*").length)).toBeLessThan(40_000);
  await page.screenshot({ path: testInfo.outputPath("first-message.png") });
}
