import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { hydrated, isPhone, lastTurn, newSession, openNewSession, send, startTurn, waitRunEnd } from "./support";

// Small things a new user trips on in the first hour: a button over an empty page, a list of
// keys on a phone without keys, a menu choice on two lines, a notice over the newest turn.

async function openDrawer(page: Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
}

test("Jump to latest never shows over an empty conversation, typed draft or not", async ({ page, request }) => {
  await openNewSession(page, request);
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("a draft that is not sent yet");
  // The reader scrolls up (on a phone, the page itself; the transcript elsewhere).
  const transcript = page.locator(".transcript");
  await transcript.hover().catch(() => {});
  await page.mouse.wheel(0, -600).catch(() => {});
  await transcript.evaluate((t) => t.dispatchEvent(new Event("scroll")));
  await page.waitForTimeout(300);
  await expect(page.locator(".jump-latest")).toHaveCount(0);
  await expect(page.locator(".empty-chat")).toBeVisible();
});

test("Settings lists keyboard shortcuts where there is a keyboard, not on a touch phone", async ({ page, request }) => {
  await openNewSession(page, request);
  await openDrawer(page);
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  const keys = dialog.getByRole("heading", { name: "Keyboard shortcuts" });
  if (isPhone(page)) await expect(keys).toBeHidden();
  else await expect(keys).toBeVisible();
});

test("every choice of a conversation's menu is on one line", async ({ page, request }) => {
  const session = await newSession(request, "A conversation with a menu");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await openDrawer(page);
  const row = page.locator(`[data-session-id='${session}']`);
  await row.getByRole("button", { name: "More for this conversation" }).click();
  const items = row.getByRole("menuitem");
  await expect(items.first()).toBeVisible();
  const heights = await items.evaluateAll((all) => all.map((i) => [i.textContent, i.getBoundingClientRect().height]));
  const one = heights.find(([text]) => text === "Rename")![1] as number;
  for (const [text, height] of heights) expect(height, `${text}`).toBeLessThanOrEqual(one + 1);
  expect(heights.map(([text]) => text)).toContain("Duplicate all versions");
  // Nothing of the menu is outside the screen.
  const menu = await row.locator(".menu-items").boundingBox();
  expect(menu!.x).toBeGreaterThanOrEqual(0);
  expect(menu!.x + menu!.width).toBeLessThanOrEqual(page.viewportSize()!.width);
});

test("the share link's notice leaves the newest turn's footer in view and usable", async ({ page, request }) => {
  const session = await openNewSession(page, request);
  await send(page, "/demo prose");
  const footer = lastTurn(page).locator(".turn-footer");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  // From the conversation's own menu: on a phone too, without the drawer.
  await page.getByRole("button", { name: "Share or export" }).click();
  await page.getByRole("menuitem", { name: "Share a read-only link" }).click();
  const notice = page.locator(".toast");
  await expect(notice).toContainText("Anyone with this link");
  await expect(footer).toBeVisible();
  const a = (await notice.boundingBox())!;
  const b = (await footer.boundingBox())!;
  const overlaps = a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  expect(overlaps, `notice ${JSON.stringify(a)} footer ${JSON.stringify(b)}`).toBe(false);
  // And the message box is not under it either.
  const box = (await page.getByRole("textbox", { name: "Message" }).boundingBox())!;
  expect(a.y + a.height).toBeLessThan(box.y);
  // The link is the conversation's, and works.
  const link = (await notice.locator(".toast-link").innerText()).trim();
  expect(link).toContain("/share/");
  const shared = await request.get(link);
  expect(shared.status()).toBe(200);
  expect(await shared.text()).toContain("/demo prose");
  // Revoked again (Settings' list is the account's, which other tests read).
  const mine = (await (await request.get("/api/shares")).json()).shares.filter((s: any) => link.endsWith(s.path));
  expect(mine).toHaveLength(1);
  await request.post("/api/share/revoke", { data: { id: mine[0].id } });
  expect(session).toBeTruthy();
});

test("the demo agent's context meter shows, fills as the conversation grows and moves nothing as it comes", async ({ page, request }) => {
  const session = await newSession(request);
  // Its answer held back until released, to see the page before the meter and after.
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  await page.route("**/api/session/context*", async (route) => {
    await released;
    await route.continue();
  });
  await page.goto(`/s/${session}`);
  await hydrated(page);
  // The page's parts have come (the held answer is all it waits for).
  await page.waitForTimeout(1_500);
  const meter = page.getByRole("meter", { name: "Context used" });
  await expect(page.locator(".model-picker")).toBeVisible();
  await expect(meter).toHaveCount(0);
  const place = () =>
    page.evaluate(() => ({
      row: document.querySelector(".model-picker")!.getBoundingClientRect().height,
      field: document.querySelector("textarea")!.getBoundingClientRect().top,
    }));
  const before = await place();
  release();
  await expect(meter).toBeVisible();
  await expect(meter).toContainText("/ 16k");
  await page.waitForTimeout(300);
  expect(await place()).toEqual(before);
  const empty = Number(await meter.getAttribute("aria-valuenow"));
  await send(page, "/demo long 400");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  await expect.poll(async () => Number(await meter.getAttribute("aria-valuenow"))).toBeGreaterThan(empty + 300);
  await expect(meter).toHaveAttribute("aria-valuemax", "16384");
});

test("search shows the matching words under each hit and says how many archived conversations match", async ({ page, request }, testInfo) => {
  const word = `quahog${Date.now().toString(36)}`;
  const listed = await newSession(request);
  await waitRunEnd(request, await startTurn(request, listed, `${"before ".repeat(30)}dig the ${word} out at low tide ${"after ".repeat(30)}`));
  const archived = await newSession(request);
  await waitRunEnd(request, await startTurn(request, archived, `an old ${word} recipe`));
  expect((await request.post("/api/session/archive", { data: { session_id: archived, on: true } })).ok()).toBeTruthy();
  await page.goto(`/s/${listed}`);
  await hydrated(page);
  await openDrawer(page);
  await page.getByRole("searchbox", { name: "Search conversations" }).fill(word);
  const nav = page.locator("#sidebar");
  const hit = nav.locator(`[data-session-id='${listed}']`);
  await expect(hit.locator(".session-snippet")).toContainText(`dig the ${word} out at low tide`);
  await expect(hit.locator(".session-snippet mark")).toHaveText(word);
  // The archived one is not left out silently: counted, and listed when asked.
  await expect(nav.locator(`[data-session-id='${archived}']`)).toHaveCount(0);
  const more = nav.getByRole("button", { name: "Also in archived: 1" });
  await expect(more).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("search.png") });
  await more.click();
  await expect(nav.getByRole("heading", { name: "Archived" })).toBeVisible();
  await expect(nav.locator(`[data-session-id='${archived}'] .session-snippet`)).toContainText(`an old ${word} recipe`);
  await expect(more).toHaveCount(0);
});

test("a conversation started with a demo command is titled by what it does, and a second copy is told apart", async ({ page, request }) => {
  await page.goto("/new");
  await hydrated(page);
  await send(page, "/demo approval");
  const title = "Demo: asks before it runs a command";
  await expect(page.locator(".chat-title")).toHaveText(title);
  const session = new URL(page.url()).pathname.split("/").pop()!;
  await openDrawer(page);
  const row = page.locator(`[data-session-id='${session}']`);
  await expect(row.locator(".session-title")).toHaveText(title);
  // Copies: "(copy)", then "(copy 2)".
  for (const expected of [`${title} (copy)`, `${title} (copy 2)`]) {
    const copied = await request.post("/api/session/duplicate", { data: { session_id: session } });
    expect(copied.ok()).toBeTruthy();
    expect((await copied.json()).session.title).toBe(expected);
  }
});

test("the file /demo artifact wrote is there under the answer, and downloads, watched and after a reload", async ({ page, request }) => {
  await openNewSession(page, request);
  await send(page, "/demo artifact");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  const file = lastTurn(page).locator(".turn-file");
  await expect(file).toHaveCount(1);
  await expect(file.locator(".turn-file-what")).toHaveText("Created notes/summary.md");
  const download = file.getByRole("link", { name: "Download" });
  await expect(download).toBeVisible();
  const check = async () => {
    const href = (await download.getAttribute("href"))!;
    const res = await request.get(href);
    expect(res.status()).toBe(200);
    expect(res.headers()["content-disposition"]).toContain("summary.md");
    expect((await res.text()).split("\n").filter((l, i, all) => i < all.length - 1 || l).length).toBe(14);
  };
  await check();
  if (!isPhone(page)) {
    const [got] = await Promise.all([page.waitForEvent("download"), download.click()]);
    expect(got.suggestedFilename()).toBe("summary.md");
  }
  await page.reload();
  await hydrated(page);
  await expect(file.locator(".turn-file-what")).toHaveText("Created notes/summary.md");
  await check();
});
