import { test, expect } from "./fixtures";
import type { APIRequestContext, Locator, Page } from "@playwright/test";
import { execFileSync } from "child_process";
import { readFileSync } from "fs";
import { join } from "path";
import { hydrated, isPhone, lastTurn, layoutShifts, newSession, openNewSession, send, setMode, settled, startTurn, waitRunEnd, watchLayout } from "./support";

// What a first visit downloads before the page is live, measured as the issue states it:
// `gzip -9` of each file the page fetched from the bundle (wasm, its JS, the stylesheet, the
// split loader). What the page fetches once live (the Markdown renderer) and what a person's
// first use fetches (Settings, talking) are parts of their own, listed apart.
//
// The budget lives in end2end/first-load.json (its goal, and the ceiling this check holds the
// build to until the goal is reached; see BENCHMARKS.md).
const budget = JSON.parse(readFileSync(join(__dirname, "..", "first-load.json"), "utf8"));

// The worker would fetch the whole bundle for its cache beside the page: its requests are
// not the page's, and would hide which parts the page asked for.
test.use({ serviceWorkers: "block" });

/** When the page came alive: the app marks it on the performance timeline as it hydrates,
 * before anything it does once live (the Markdown renderer's fetch) begins. */
async function liveAt(page: Page): Promise<number> {
  return page.evaluate(() => performance.getEntriesByName("anchorage-live")[0]?.startTime ?? 0);
}

type Part = { path: string; start: number; end: number };

/** The bundle's files the page fetched, with when each was asked for. */
async function bundleFiles(page: Page): Promise<Part[]> {
  return page.evaluate(() =>
    (performance.getEntriesByType("resource") as PerformanceResourceTiming[])
      .map((e) => ({ path: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd }))
      .filter((e) => /\/pkg\//.test(e.path)),
  );
}

const gzip9 = (bytes: Buffer) => execFileSync("gzip", ["-9", "-c"], { input: bytes }).length;

test("the first load stays within its budget; Settings come with their first use", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  const live = await liveAt(page);
  expect(live).toBeGreaterThan(0);
  let files = await bundleFiles(page);
  const first = files.filter((f) => f.start < live);
  // A build without split-off parts (`cargo leptos watch`) has nothing to hold to this budget.
  test.skip(!first.some((f) => f.path.includes("__wasm_split")), "the bundle is not split (a dev build)");

  const sizes = new Map<string, number>();
  for (const f of files) {
    const res = await request.get(f.path);
    expect(res.ok(), f.path).toBeTruthy();
    sizes.set(f.path, gzip9(await res.body()));
  }
  const total = first.reduce((sum, f) => sum + sizes.get(f.path)!, 0);
  const table = files.map((f) => `${f.start < live ? "first" : "later"}\t${sizes.get(f.path)}\t${f.path.split("/").pop()}`);
  await testInfo.attach("first-load.tsv", { body: `${table.join("\n")}\nfirst load\t${total}\n`, contentType: "text/plain" });
  console.log(`first load (gzip -9): ${total} bytes, ceiling ${budget.ceiling}, goal ${budget.goal}\n${table.join("\n")}`);
  // The wasm, its JS, the stylesheet and the loader, and nothing split off.
  const names = first.map((f) => f.path.split("/").pop()!);
  expect(names).toEqual(expect.arrayContaining(["anchorage.wasm", "anchorage.js", "anchorage.css"]));
  expect(names.filter((n) => n.startsWith("split_"))).toEqual([]);
  expect(total).toBeLessThanOrEqual(budget.ceiling);

  // Settings: the dialog opens at once with its head; what it lists arrives with its part.
  const before = new Set(files.map((f) => f.path));
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByRole("radio", { name: "System" })).toBeChecked();
  await expect(dialog.getByRole("heading", { name: "Standing permissions" })).toBeVisible();
  // The dialog's own "Loading…" (under its head) is gone once the sections are in.
  await expect(dialog.locator(":scope > p", { hasText: "Loading…" })).toHaveCount(0);
  files = await bundleFiles(page);
  const fetched = files.filter((f) => !before.has(f.path)).map((f) => f.path.split("/").pop()!);
  expect(fetched.some((n) => n.includes("settings_sections"))).toBeTruthy();
  // Closed and opened again: made again, from the part already here.
  await dialog.getByRole("button", { name: "Close settings" }).click();
  await expect(dialog).toBeHidden();
  await expect(dialog.getByRole("heading", { name: "Standing permissions" })).toHaveCount(0);
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  await expect(dialog.getByRole("heading", { name: "Standing permissions" })).toHaveCount(1);
  await expect(dialog.getByRole("radio", { name: "System" })).toBeChecked();
});

// Everything a first visit (a new conversation) fetches until the network is idle: the page itself, the bundle's
// files (those the page waits for and those it fetches once live: the turns' and the
// renderer's parts), the icons and what the app asks the server; each as `gzip -9` of its
// body. Held to `idle_ceiling` the same way as the first load.
test("everything a first visit fetches until the network is idle stays within its ceiling", async ({ page }, testInfo) => {
  const bodies: Promise<{ path: string; bytes: number } | null>[] = [];
  page.on("response", (res) => {
    // A redirect has no body of its own; an event stream never ends (a first visit has none).
    if (res.status() >= 300 && res.status() < 400) return;
    bodies.push(
      res.body().then(
        (body) => ({ path: new URL(res.url()).pathname, bytes: gzip9(body) }),
        () => null,
      ),
    );
  });
  // A first visit: nothing made yet (`/` would open the worker's newest conversation).
  await page.goto("/new");
  await hydrated(page);
  test.skip(!(await bundleFiles(page)).some((f) => f.path.includes("__wasm_split")), "the bundle is not split (a dev build)");
  await page.waitForLoadState("networkidle");
  const fetched = (await Promise.all(bodies)).filter((b) => b !== null);
  const total = fetched.reduce((sum, f) => sum + f.bytes, 0);
  const table = fetched.map((f) => `${f.bytes}\t${f.path}`).join("\n");
  await testInfo.attach("until-idle.tsv", { body: `${table}\nuntil idle\t${total}\n`, contentType: "text/plain" });
  console.log(`until the network is idle (gzip -9): ${total} bytes, ceiling ${budget.idle_ceiling}\n${table}`);
  // The page, its bundle and the parts it fetches once live, and nothing a person did not ask for.
  const names = fetched.map((f) => f.path.split("/").pop()!);
  expect(names).toEqual(expect.arrayContaining(["anchorage.wasm", "split_turn_views.wasm"]));
  expect(names.some((n) => n.includes("settings_sections"))).toBeFalsy();
  expect(total).toBeLessThanOrEqual(budget.idle_ceiling);
});

test("Settings that cannot fetch their part say so, and open when the network is back", async ({ page, request }) => {
  await openNewSession(page, request);
  const live = await liveAt(page);
  const split = (await bundleFiles(page)).some((f) => f.start < live && f.path.includes("__wasm_split"));
  test.skip(!split, "the bundle is not split (a dev build)");
  // The part's file fails to come, as when the connection drops between two builds.
  await page.route(/\/pkg\/.*settings_sections.*\.wasm$/, (route) => route.abort("internetdisconnected"));
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog.getByRole("alert")).toContainText("Settings could not be loaded");
  await expect(dialog.getByRole("button", { name: "Close settings" })).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await page.unroute(/\/pkg\/.*settings_sections.*\.wasm$/);
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  await expect(dialog.getByRole("heading", { name: "Standing permissions" })).toBeVisible();
  await expect(dialog.getByRole("alert")).toHaveCount(0);
});

/** The turns' part came (`data-turns` on the app: the page can draw turns). */
async function turnsReady(page: Page) {
  await expect(page.locator(".app[data-turns='ready']")).toHaveCount(1);
}

test("a new conversation comes alive without the turns' part, and the first answer has it", async ({ page, request }) => {
  await openNewSession(page, request);
  const live = await liveAt(page);
  const first = (await bundleFiles(page)).filter((f) => f.start < live);
  test.skip(!first.some((f) => f.path.includes("__wasm_split")), "the bundle is not split (a dev build)");
  // Fetched right after the page is live, before anyone could have typed: once, and not
  // before. (A file's timing is listed once it has come, which may be a little after the
  // page has used it: asked until it is there.)
  await turnsReady(page);
  await expect
    .poll(async () =>
      (await bundleFiles(page)).filter((f) => f.path.includes("split_turn_views")).map((f) => f.start >= live),
    )
    .toEqual([true]);
  await send(page, "Hello");
  await expect(page.locator("article.turn")).toHaveCount(1);
  await settled(page);
  await expect(lastTurn(page).locator(".assistant .answer")).not.toBeEmpty();
});

test("a conversation with turns takes its part before it comes alive, and its turns work", async ({ page, request }) => {
  const session = await newSession(request);
  await waitRunEnd(request, await startTurn(request, session, "/demo tools"));
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const live = await liveAt(page);
  const files = await bundleFiles(page);
  test.skip(!files.some((f) => f.path.includes("__wasm_split")), "the bundle is not split (a dev build)");
  const part = files.find((f) => f.path.includes("split_turn_views"));
  expect(part, "the turns' part").toBeTruthy();
  expect(part!.start).toBeLessThan(live);
  // Asked for beside the main bundle (the page's head names it), not once that has come and
  // started; and fetched once, the preload being what the loader then takes.
  const main = files.find((f) => f.path.endsWith("/anchorage.wasm"))!;
  expect(part!.start).toBeLessThan(main.end);
  expect(files.filter((f) => f.path.includes("split_turn_views"))).toHaveLength(1);
  // What such a page loads before it is live (the main bundle, the turns' part and the chunks
  // it shares) is held to a ceiling of its own.
  let total = 0;
  for (const f of files.filter((f) => f.start < live)) {
    total += gzip9(await (await request.get(f.path)).body());
  }
  console.log(`a conversation's first load (gzip -9): ${total} bytes, ceiling ${budget.conversation_ceiling}`);
  expect(total).toBeLessThanOrEqual(budget.conversation_ceiling);
  // The turn the server drew is the one the page now runs: its view switches in place.
  const turn = lastTurn(page);
  await expect(turn).toBeVisible();
  await setMode(page, "Stream");
  await expect(turn.locator(".stream")).toBeVisible();
  await setMode(page, "Worklog");
  await expect(turn.locator(".stream")).toHaveCount(0);
});

const TURN_PART = /\/pkg\/.*split_turn_views.*\.wasm$/;

/** Opens a new conversation with the turns' part blocked; skips a build that is not split. */
async function withoutTurnPart(page: Page, request: APIRequestContext): Promise<string> {
  await page.route(TURN_PART, (route) => route.abort("internetdisconnected"));
  const session = await openNewSession(page, request);
  const live = await liveAt(page);
  const split = (await bundleFiles(page)).some((f) => f.start < live && f.path.includes("__wasm_split"));
  test.skip(!split, "the bundle is not split (a dev build)");
  return session;
}

/** Holds the turns' part's file on its way until the answer is called. */
async function holdTurnPart(page: Page): Promise<() => void> {
  let release!: () => void;
  const gate = new Promise<void>((go) => (release = go));
  await page.route(TURN_PART, async (route) => {
    await gate;
    await route.continue();
  });
  return release;
}

/** Opens a new conversation while the turns' part is held; skips a build that is not split. */
async function beforeTurnPart(page: Page, request: APIRequestContext): Promise<() => void> {
  const release = await holdTurnPart(page);
  await openNewSession(page, request);
  const live = await liveAt(page);
  const split = (await bundleFiles(page)).some((f) => f.start < live && f.path.includes("__wasm_split"));
  test.skip(!split, "the bundle is not split (a dev build)");
  await expect(page.locator(".app[data-turns='ready']")).toHaveCount(0);
  // On a phone the list is a drawer, opened by the page's own button.
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  return release;
}

/** Where `locator` is once it stopped moving (a drawer slides in). */
async function restingBox(locator: Locator) {
  let last = await locator.boundingBox();
  await expect
    .poll(async () => {
      const now = await locator.boundingBox();
      const same = JSON.stringify(now) === JSON.stringify(last);
      last = now;
      return same;
    }, { intervals: [100] })
    .toBe(true);
  return last;
}

test("the sidebar the server drew takes a press before its part comes, and nothing moves when the page takes it over", async ({ page, request }) => {
  const other = await newSession(request);
  await waitRunEnd(request, await startTurn(request, other, "tell me about lighthouses"));
  const release = await beforeTurnPart(page, request);
  const row = page.locator(`[data-session-id='${other}']`);
  await expect(row).toBeVisible();
  const before = await restingBox(row);
  const search = page.getByRole("searchbox", { name: "Search conversations" });
  const searchBefore = await search.boundingBox();
  await watchLayout(page);
  // The row's "⋯", pressed before the code that opens its menu is here: nothing yet.
  await row.getByRole("button", { name: "More for this conversation" }).click();
  await expect(row.getByRole("menuitem")).toHaveCount(0);
  release();
  await expect(page.locator(".app[data-turns='ready']")).toHaveCount(1);
  // The press was kept: the menu opens, its first item focused, as a press after would.
  await expect(row.getByRole("menuitem", { name: "Rename" })).toBeVisible();
  await expect(row.getByRole("menuitem").first()).toBeFocused();
  // The same list, in the same place: what the server drew was taken over, not moved.
  expect(await row.boundingBox()).toEqual(before);
  expect(await search.boundingBox()).toEqual(searchBefore);
  expect((await layoutShifts(page)).total).toBe(0);
  await page.keyboard.press("Escape");
  await expect(row.getByRole("menuitem")).toHaveCount(0);
  await expect(row.getByRole("button", { name: "More for this conversation" })).toBeFocused();
});

test("a search typed before the sidebar's part comes is run when it comes, the focus kept", async ({ page, request }) => {
  const word = `lighthouses${Date.now()}`;
  const found = await newSession(request);
  await waitRunEnd(request, await startTurn(request, found, `tell me about ${word}`));
  const other = await newSession(request);
  await waitRunEnd(request, await startTurn(request, other, "tell me about penguins"));
  const release = await beforeTurnPart(page, request);
  const search = page.getByRole("searchbox", { name: "Search conversations" });
  await search.fill(word);
  // Not searched yet: every conversation is still listed.
  await expect(page.locator(`[data-session-id='${other}']`)).toBeVisible();
  release();
  await expect(page.locator(".session-row")).toHaveCount(1);
  await expect(page.locator(`[data-session-id='${found}']`)).toBeVisible();
  await expect(search).toHaveValue(word);
  await expect(search).toBeFocused();
});

test("a message sent while the turns' part cannot come waits, and goes once it can", async ({ page, request }) => {
  await withoutTurnPart(page, request);
  await send(page, "Hello there");
  // What sends a message and draws its answer comes with that part: the message is kept, as
  // for a server that cannot be reached, and nothing half-made shows.
  await expect(page.locator(".send-failed")).toContainText("Not sent yet");
  await expect(page.locator("article.turn")).toHaveCount(0);
  await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("Hello there");
  await page.unroute(TURN_PART);
  // The page asks again by itself; the message goes, once, and its answer streams in.
  await expect(page.locator("article.turn")).toHaveCount(1, { timeout: 20_000 });
  await expect(lastTurn(page).locator(".user-message")).toContainText("Hello there");
  await settled(page);
  await expect(page.locator(".send-failed")).toHaveCount(0);
  const answer = (await lastTurn(page).locator(".assistant .answer").innerText()).trim();
  expect(answer.length).toBeGreaterThan(0);
  // The page the server draws from the journal shows the same, once.
  await page.reload();
  await hydrated(page);
  await expect(page.locator("article.turn")).toHaveCount(1);
  await expect
    .poll(async () => (await lastTurn(page).locator(".assistant .answer").innerText()).trim())
    .toBe(answer);
});

test("turns whose part cannot come say so, and appear on Try again", async ({ page, request }) => {
  const other = await newSession(request);
  await waitRunEnd(request, await startTurn(request, other, "tell me about lighthouses"));
  await withoutTurnPart(page, request);
  // Another conversation, opened in the page: its turns need the part.
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.locator(`[data-session-id='${other}'] a.session-link`).click();
  const notice = page.locator(".turns-loading");
  await expect(notice).toContainText("The conversation could not be shown");
  await expect(page.locator("article.turn")).toHaveCount(0);
  await page.unroute(TURN_PART);
  await notice.getByRole("button", { name: "Try again" }).click();
  await expect(notice).toHaveCount(0);
  await expect(lastTurn(page).locator(".user-message")).toContainText("lighthouses");
  await expect(lastTurn(page).locator(".assistant .answer")).not.toBeEmpty();
});
