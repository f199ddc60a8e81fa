import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, startServer, waitHealthy } from "./own_server";
import {
  hydrated,
  isPhone,
  journal,
  lastTurn,
  layoutShifts,
  newSession,
  openNewSession,
  send,
  sendQuietly,
  setMode,
  settled,
  startTurn,
  waitRunEnd,
  watchLayout,
} from "./support";

// These tests route the page's requests; a service worker's fetches would pass the routes by
// (Playwright sees only the page's own), so the worker stays out (tests/pwa.spec.ts has it).
test.use({ serviceWorkers: "block" });

// The turn keeps its promise where people look: nothing jumps, nothing vanishes, nothing is lost.

/** Every token the run streamed, in order (its answer is the end of them: the anchor's rule,
 * which the server applied to the settled message, says where it starts). */
function allTokens(rows: any[]): string {
  return rows.filter((r) => r.event === "token").map((r) => r.payload.text).join("");
}

/** The partial answer the server settled the turn with, checked to be the end of what streamed. */
function settledPartial(rows: any[]): string {
  const settled = rows.find((r) => r.event === "settled_message");
  expect(settled.payload.partial).toBe(true);
  const text: string = settled.payload.content;
  expect(text.trim().length).toBeGreaterThan(0);
  expect(allTokens(rows).endsWith(text)).toBe(true);
  return text;
}

test("interim prose stays where it streamed when the next tool call starts", async ({ page, request }, testInfo) => {
  // A server of its own, paced like a model (60 ms a chunk), so the sentence streams over many
  // frames as the answer before the next tool call makes it interim.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-interim-"));
  const server = startServer(port, dataDir, { ANCHORAGE_DEMO_DELAY_MS: "60" });
  try {
    await waitHealthy(request, base);
    for (const mode of ["Worklog", "Stream"] as const) {
      const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
      await page.goto(`${base}/s/${session}`);
      await hydrated(page);
      await setMode(page, mode);
      // Where the sentence "One test fails…" is laid out in each frame, and in which element.
      await page.evaluate(() => {
        const w = window as any;
        w.__interim = [];
        const tick = () => {
          // Where the transcript's content begins: positions from there do not depend on how
          // far it is scrolled (scrollTop is rounded, a box's edge is not).
          const origin = document.querySelector(".transcript > *")?.getBoundingClientRect().top ?? 0;
          for (const el of document.querySelectorAll("article.turn:last-of-type .answer, article.turn:last-of-type .process-prose")) {
            if (el.textContent?.includes("One test fails")) {
              const r = el.getBoundingClientRect();
              w.__interim.push({ kind: el.classList.contains("answer") ? "answer" : "process", left: r.left, top: r.top - origin });
            }
          }
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      await sendQuietly(page, "/demo tools");
      await settled(page);
      const seen: { kind: string; left: number; top: number }[] = await page.evaluate(() => (window as any).__interim);
      expect(new Set(seen.map((s) => s.kind))).toEqual(new Set(["answer", "process"]));
      for (const s of seen) {
        expect(Math.abs(s.left - seen[0].left), `${mode}: ${JSON.stringify(s)} vs ${JSON.stringify(seen[0])}`).toBeLessThanOrEqual(1);
        expect(Math.abs(s.top - seen[0].top), `${mode}: ${JSON.stringify(s)} vs ${JSON.stringify(seen[0])}`).toBeLessThanOrEqual(1);
      }
    }
  } finally {
    await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("an approval and Stop move nothing that the reader did not move", async ({ page, request }) => {
  await openNewSession(page, request);
  await watchLayout(page);
  await sendQuietly(page, "/demo approval");
  const card = page.locator("[data-pending='approval']");
  await expect(card).toBeVisible();
  await card.getByRole("button", { name: "Allow once" }).click();
  await settled(page);
  expect((await layoutShifts(page)).total).toBeLessThanOrEqual(0.01);

  await openNewSession(page, request);
  await watchLayout(page);
  await sendQuietly(page, "/demo long 5000");
  await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();
  await page.waitForTimeout(1500);
  await page.getByRole("button", { name: "Stop" }).click();
  await settled(page);
  const { total, shifts } = await layoutShifts(page);
  expect(total, JSON.stringify(shifts)).toBeLessThanOrEqual(0.01);
});

test("a reader scrolled up into the worklog keeps their place when the turn settles", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Worklog");
  // Enough before it that the transcript scrolls, then a turn with work to read.
  const session = new URL(page.url()).pathname.split("/").pop()!;
  await waitRunEnd(request, await startTurn(request, session, "/demo long 400"));
  await page.reload();
  await hydrated(page);
  await sendQuietly(page, "/demo trace 60");
  const turn = lastTurn(page);
  const card = turn.locator(".tool-card").nth(3);
  await expect(card).toBeVisible();
  // The reader scrolls up to read a tool call while the answer streams.
  await card.scrollIntoViewIfNeeded();
  await page.locator(".transcript").evaluate((el) => el.scrollBy(0, -40));
  await watchLayout(page);
  const before = await card.boundingBox();
  const scrollBefore = await page.locator(".transcript").evaluate((el) => el.scrollTop);
  await settled(page);
  await expect(turn.locator("[data-final-answer='true']")).toBeAttached();
  expect(await card.boundingBox()).toEqual(before);
  expect(await page.locator(".transcript").evaluate((el) => el.scrollTop)).toBe(scrollBefore);
  await expect(turn.locator(".worklog-summary")).toHaveAttribute("aria-expanded", "true");
  expect((await layoutShifts(page)).total).toBeLessThanOrEqual(0.01);
});

test("Stop keeps the streamed answer where it was, as a partial answer, through a reload and in the exports", async ({ page, request }) => {
  const session = await openNewSession(page, request);
  await send(page, "/demo long 5000");
  const turn = lastTurn(page);
  const answer = turn.locator("[data-final-answer]");
  await expect(answer).toHaveAttribute("data-final-answer", "streaming");
  await page.waitForTimeout(1500);
  const node = await answer.elementHandle();
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(turn.locator("[data-terminal-state='cancelled']")).toBeVisible();
  await expect(answer).toHaveAttribute("data-final-answer", "partial");
  // The same element, where it was, holding every word that was streamed.
  expect(await node!.evaluate((el) => el.isConnected)).toBe(true);
  const run = (await turn.getAttribute("data-run-id"))!;
  await waitRunEnd(request, run);
  const rows = await journal(request, session, run);
  const streamed = settledPartial(rows);
  expect(streamed.split(" ").length).toBeGreaterThan(20);
  await expect(answer.locator(".prose")).toHaveText(streamed.trim());
  await expect(answer).toContainText("Partial answer");
  await expect(answer).toBeInViewport();

  const s = await (await request.get(`/api/session?session_id=${session}`)).json();
  const message = s.session.messages[1];
  expect(message.content).toBe(streamed);
  expect(message.partial).toBe(true);
  const md = await (await request.get(`/api/session/export?session_id=${session}&format=md`)).text();
  expect(md).toContain(streamed.trim());
  expect(md).not.toContain("no final answer");

  await page.reload();
  await hydrated(page);
  const after = lastTurn(page).locator("[data-final-answer='partial']");
  await expect(after.locator(".prose")).toHaveText(streamed.trim());
  await expect(lastTurn(page).locator("[data-terminal-state='cancelled']")).toBeVisible();
});

for (const [message, state, text] of [
  ["/demo slow", "cancelled", "Working on it"],
  ["/demo error", "error", "Let me check"],
]) {
  test(`a turn ending ${state} keeps "${text}…" visible as its partial answer`, async ({ page, request }) => {
    const session = await openNewSession(page, request);
    await send(page, message);
    const turn = lastTurn(page);
    if (state === "cancelled") {
      await expect(turn.locator("[data-final-answer='streaming']")).toContainText(text);
      await page.getByRole("button", { name: "Stop" }).click();
    }
    await expect(turn.locator(`[data-terminal-state='${state}']`)).toBeVisible();
    const partial = turn.locator("[data-final-answer='partial']");
    await expect(partial).toContainText(text);
    await expect(partial).toBeVisible();
    const run = (await turn.getAttribute("data-run-id"))!;
    await waitRunEnd(request, run);
    const streamed = settledPartial(await journal(request, session, run));
    await expect(partial.locator(".prose")).toHaveText(streamed.trim());
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-final-answer='partial'] .prose")).toHaveText(streamed.trim());
    const jsonl = await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text();
    const settledRow = jsonl.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((r) => r.event === "settled_message");
    expect(settledRow.payload.content).toBe(streamed);
  });
}

test("a queued follow-up appears and streams in the same page; a second Enter never cancels", async ({ page, request }) => {
  test.setTimeout(150_000);
  await openNewSession(page, request);
  await page.evaluate(() => ((window as any).__samePage = true));
  // Long enough (10 s of tokens) to be still running when the follow-up is typed, however
  // slow the machine; the follow-up streams long enough to be seen streaming.
  await send(page, "/demo long 1200");
  await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("/demo long 500");
  // Enter sends on a desktop; a phone's Enter is a new line and the button sends.
  if (isPhone(page)) await page.getByRole("button", { name: "Queue" }).tap();
  else await input.press("Enter");
  await expect(page.locator(".queued")).toContainText("/demo long 500");
  await expect(input).toHaveValue("");
  // A stray Enter on the empty field does nothing; the first turn goes on.
  await input.press("Enter");
  await input.press("Enter");
  await page.waitForTimeout(500);
  await expect(page.locator("[data-terminal-state='cancelled']")).toHaveCount(0);
  const first = page.locator("article.turn").first();
  await expect(first.locator("[data-final-answer='true']")).toBeVisible({ timeout: 60_000 });
  // The follow-up turns up by itself and streams live, no reload.
  await expect(page.locator("article.turn")).toHaveCount(2, { timeout: 10_000 });
  await expect(page.locator(".queued")).toHaveCount(0);
  const second = lastTurn(page);
  await expect(second.locator(".bubble")).toHaveText("/demo long 500");
  await expect(second.locator("[data-final-answer='streaming']")).toBeVisible();
  await expect(second.locator("[data-final-answer='true']")).toBeVisible({ timeout: 60_000 });
  await expect(first.locator("[data-terminal-state]")).toHaveCount(0);
  expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);
});

test("a follow-up whose queueing is answered after the turn ended still appears", async ({ page, request }) => {
  await openNewSession(page, request);
  await send(page, "/demo long 300");
  await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();
  // The server queues the follow-up at once; its answer reaches the page only once the
  // first turn has ended there (a slow network, a busy machine): the turn's end found no
  // follow-up on the page to look for.
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route("**/api/chat/queue", async (route) => {
    const response = await route.fetch();
    await held;
    await route.fulfill({ response });
  });
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("/demo prose");
  if (isPhone(page)) await page.getByRole("button", { name: "Queue" }).tap();
  else await input.press("Enter");
  await expect(page.locator("article.turn").first().locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  release();
  await expect(page.locator("article.turn")).toHaveCount(2);
  await expect(lastTurn(page).locator(".bubble")).toHaveText("/demo prose");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(page.locator(".queued")).toHaveCount(0);
});

test("a follow-up that starts between the server's read of the turns and of the queue still appears", async ({ page, request }) => {
  await openNewSession(page, request);
  // The first catch-up after the turn ends is answered as if the follow-up had started just
  // between the two reads: in neither the new turns nor the queue.
  let doctored = 0;
  await page.route(/\/api\/page\?.*after_run_id=/, async (route) => {
    const response = await route.fetch();
    if (doctored > 0) return route.fulfill({ response });
    doctored++;
    const json = await response.json();
    if (json.session) {
      json.session.turns = [];
      json.session.queued = [];
    }
    return route.fulfill({ response, json });
  });
  await send(page, "/demo long 400");
  await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();
  // Whether the queued line ever goes while the follow-up's turn is not there.
  await page.evaluate(() => {
    const w = window as any;
    w.__neither = false;
    new MutationObserver(() => {
      const queued = !!document.querySelector(".queued");
      if (queued) w.__queuedSeen = true;
      else if (w.__queuedSeen && document.querySelectorAll("article.turn").length < 2) w.__neither = true;
    }).observe(document.body, { childList: true, subtree: true });
  });
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("/demo prose");
  if (isPhone(page)) await page.getByRole("button", { name: "Queue" }).tap();
  else await input.press("Enter");
  const queued = page.locator(".queued");
  await expect(queued).toContainText("/demo prose");
  await expect(page.locator("article.turn").first().locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  // It appears by itself, and the queued line never went before its turn came.
  await expect(page.locator("article.turn")).toHaveCount(2);
  await expect(lastTurn(page).locator(".bubble")).toHaveText("/demo prose");
  await expect(queued).toHaveCount(0);
  expect(doctored).toBe(1);
  expect(await page.evaluate(() => (window as any).__neither)).toBe(false);
});

test("a message typed while the server cannot be reached is kept, sent once it can, and only once", async ({ page, request, context }) => {
  const session = await openNewSession(page, request);
  const input = page.getByRole("textbox", { name: "Message" });
  await context.setOffline(true);
  await input.fill("/demo prose");
  await page.getByRole("button", { name: "Send" }).click();
  const banner = page.locator(".send-failed");
  await expect(banner).toBeVisible();
  await expect(banner).toContainText("Not sent yet");
  await expect(input).toHaveValue("/demo prose");
  await expect(page.locator("article.turn")).toHaveCount(0);
  await context.setOffline(false);
  // Sent by itself once the server answers; the field empties and the banner goes.
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(banner).toHaveCount(0);
  await expect(page.locator(".error-banner")).toHaveCount(0);
  await expect(input).toHaveValue("");
  const s = await (await request.get(`/api/session?session_id=${session}`)).json();
  expect(s.session.messages.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["/demo prose"]);
});

test("a send whose answer was lost is retried without starting the turn twice", async ({ page, request }) => {
  const session = await openNewSession(page, request);
  let lost = 0;
  await page.route("**/api/chat/start", async (route) => {
    if (lost === 0) {
      lost += 1;
      // The server takes it, but the browser never hears back.
      await route.fetch();
      return route.abort("connectionreset");
    }
    return route.continue();
  });
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("/demo prose");
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.locator(".send-failed")).toBeVisible();
  await expect(input).toHaveValue("/demo prose");
  await page.getByRole("button", { name: "Retry now" }).click();
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(page.locator("article.turn")).toHaveCount(1);
  await expect(input).toHaveValue("");
  const s = await (await request.get(`/api/session?session_id=${session}`)).json();
  expect(s.session.messages.filter((m: any) => m.role === "user")).toHaveLength(1);
});

test("a draft survives a reload and stays with its conversation", async ({ page, request }) => {
  const first = await openNewSession(page, request);
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("half a thought");
  await page.reload();
  await hydrated(page);
  await expect(input).toHaveValue("half a thought");
  const second = await newSession(request);
  await page.goto(`/s/${second}`);
  await hydrated(page);
  await expect(input).toHaveValue("");
  await page.goto(`/s/${first}`);
  await hydrated(page);
  await expect(input).toHaveValue("half a thought");
  await input.fill("");
  await page.reload();
  await hydrated(page);
  await expect(input).toHaveValue("");
});

test("scrolling up while an answer streams stays up; Jump to latest brings the reader back", async ({ page, request }) => {
  test.skip(isPhone(page), "wheel steps: desktop (the phone's keyboard and touch follow the same rule)");
  test.setTimeout(60_000);
  await openNewSession(page, request);
  await send(page, "/demo long 2000");
  const transcript = page.locator(".transcript");
  // Wait until the answer is taller than the view.
  await expect.poll(() => transcript.evaluate((el) => el.scrollHeight - el.clientHeight), { timeout: 20_000 }).toBeGreaterThan(300);
  // Where the view is as each wheel step arrives (it was following the bottom until then).
  await transcript.evaluate((el) => {
    (window as any).__atWheel = [];
    el.addEventListener("wheel", () => (window as any).__atWheel.push(el.scrollTop));
  });
  const box = (await transcript.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  let top = Infinity;
  for (let i = 0; i < 6; i++) {
    await page.mouse.wheel(0, -10);
    // The step lands (a busy machine may take a while to scroll): the view is above where it
    // was when the wheel turned, and above the step before.
    await expect.poll(() => page.evaluate((i) => (window as any).__atWheel.length > i, i)).toBe(true);
    const before = await page.evaluate((i) => (window as any).__atWheel[i], i);
    await expect
      .poll(() => transcript.evaluate((el) => el.scrollTop), { message: `wheel step ${i} moved the view up from where it was` })
      .toBeLessThan(Math.min(before, top));
    top = await transcript.evaluate((el) => el.scrollTop);
  }
  // New lines keep coming below; the reader stays where they are.
  await page.waitForTimeout(500);
  expect(await transcript.evaluate((el) => el.scrollTop)).toBe(top);
  const jump = page.getByRole("button", { name: /Jump to latest/ });
  await expect(jump).toBeVisible();
  // With a dot: there is more below.
  await expect(jump).toHaveAttribute("data-unseen", "true");
  expect(await jump.evaluate((el) => getComputedStyle(el, "::before").backgroundColor)).not.toBe("rgba(0, 0, 0, 0)");
  const away = await transcript.evaluate((el) => el.scrollTop);
  await jump.click();
  await expect(jump).toHaveCount(0);
  // Following again: the view goes down with the answer to its end.
  await expect.poll(() => transcript.evaluate((el) => el.scrollTop)).toBeGreaterThan(away + 100);
  await settled(page);
  const gap = await transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  expect(gap).toBeLessThanOrEqual(2);
});

test("content above the view that shrinks as the answer grows below does not stop following; the reader's scroll does", async ({ page, request }) => {
  test.setTimeout(60_000);
  await openNewSession(page, request);
  await send(page, "/demo long 2000");
  const transcript = page.locator(".transcript");
  await expect.poll(() => transcript.evaluate((el) => el.scrollHeight - el.clientHeight), { timeout: 20_000 }).toBeGreaterThan(300);
  await expect.poll(() => transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeLessThanOrEqual(2);
  const jump = page.getByRole("button", { name: /Jump to latest/ });
  await page.evaluate(() => {
    (window as any).__jumps = 0;
    new MutationObserver(() => {
      if (document.querySelector(".jump-latest")) (window as any).__jumps++;
    }).observe(document.body, { subtree: true, childList: true });
  });
  // What a long turn's row window does in one update: rows leave above the view as more
  // arrive below. The browser keeps what is on screen in place (its scroll position drops by
  // what left); that is not the reader scrolling up.
  const dropped = await transcript.evaluate((el) => {
    const before = el.scrollTop;
    (el.querySelector(".turn .user-message") as HTMLElement).style.display = "none";
    (el.querySelector(".transcript-dock") as HTMLElement).style.paddingBottom = "400px";
    return before - el.scrollTop;
  });
  expect(dropped).toBeGreaterThan(0);
  // Still following: the view goes back to the bottom as the answer grows, and Jump to latest
  // never showed.
  await expect
    .poll(() => transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight), { timeout: 10_000 })
    .toBeLessThanOrEqual(2);
  expect(await page.evaluate(() => (window as any).__jumps)).toBe(0);
  await expect(jump).toHaveCount(0);
  // The reader scrolling up (a drag, the scroll bar) stops following.
  await transcript.evaluate((el) => el.scrollBy(0, -200));
  await expect(jump).toBeVisible();
  const away = await transcript.evaluate((el) => el.scrollTop);
  await expect.poll(() => transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeGreaterThan(100);
  expect(await transcript.evaluate((el) => el.scrollTop)).toBe(away);
});

test("a settled turn reads in the past tense, one row per tool call", async ({ page, request }) => {
  for (const mode of ["Stream", "Worklog"] as const) {
    await openNewSession(page, request);
    await setMode(page, mode);
    await send(page, "/demo tools");
    const turn = lastTurn(page);
    await expect(turn.locator("[data-final-answer='true']")).toBeVisible();
    const summary = turn.locator(".worklog-summary");
    if (mode === "Worklog" && (await summary.getAttribute("aria-expanded")) === "false") await summary.click();
    await expect(turn.locator(".tool-card")).toHaveCount(3);
    await expect(turn.locator(".tool-card", { hasText: /Running|Started|Reading|Searching/ })).toHaveCount(0);
    await expect(turn.locator(".tool-card").first()).toContainText("Ran");
    await expect(turn.locator(".tool-card[data-tool-state='failed']")).toContainText("Could not read");
    await page.reload();
    await hydrated(page);
    if (mode === "Worklog") await lastTurn(page).locator(".worklog-summary").click();
    await expect(lastTurn(page).locator(".tool-card")).toHaveCount(3);
    await expect(lastTurn(page).locator(".assistant")).not.toContainText(/Running|Started/);
  }
  await setMode(page, "Stream");
  await openNewSession(page, request);
  await send(page, "/demo exhausted");
  const turn = lastTurn(page);
  await expect(turn.locator("[data-terminal-state='compression_exhausted']")).toBeVisible();
  await expect(turn.locator(".note-label")).toHaveCount(1);
  await expect(turn.locator(".note-label")).toHaveText("Context compression did not finish");
  await expect(turn.locator(".assistant")).not.toContainText("Compressing context");
});
