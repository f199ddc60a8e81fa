import { test, expect } from "./fixtures";
import { hydrated, isPhone, lastTurn, newSession, openNewSession, send, setMode, startTurn, waitRunEnd, rowAction } from "./support";

// The small things a person notices in the first minutes: renaming, new chats, the todo dock,
// the phone keyboard, dead links, exports, the phone header, the keyboard and the focus.

async function openDrawer(page: import("@playwright/test").Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
}

test("renaming: the field takes the focus, Escape keeps the old title, Enter saves", async ({ page, request }) => {
  const session = await newSession(request, "Harbour log");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await openDrawer(page);
  const row = page.locator(`[data-session-id='${session}']`);
  await rowAction(row, "Rename");
  const input = row.getByRole("textbox", { name: "Conversation title" });
  await expect(input).toBeFocused();
  await page.keyboard.type("Something else");
  await page.keyboard.press("Escape");
  await expect(input).toHaveCount(0);
  await expect(row).toContainText("Harbour log");
  await page.waitForTimeout(300);
  const s = await (await request.get(`/api/session?session_id=${session}`)).json();
  expect(s.session.title).toBe("Harbour log");
  // The drawer stays open on a phone: Escape left the field only.
  if (isPhone(page)) await expect(page.locator(".app")).toHaveAttribute("data-drawer", "open");
  await rowAction(row, "Rename");
  await expect(input).toBeFocused();
  await input.fill("Harbour notes");
  await input.press("Enter");
  await expect(row).toContainText("Harbour notes");
  await expect.poll(async () => (await (await request.get(`/api/session?session_id=${session}`)).json()).session.title).toBe("Harbour notes");
});

test("New chat stores nothing until its first message", async ({ page, request }) => {
  // The newest session of the list: a session made by the page would come first.
  const newest = async () => (await (await request.get("/api/sessions?limit=1")).json()).sessions[0]?.id;
  await page.goto(`/s/${await newSession(request)}`);
  await hydrated(page);
  await page.evaluate(() => ((window as any).__samePage = true));
  const before = await newest();
  await openDrawer(page);
  await page.getByRole("button", { name: "New chat" }).click();
  await expect(page).toHaveURL(/\/new$/);
  await expect(page.getByRole("heading", { name: "Start a conversation" })).toBeVisible();
  await expect(page.locator(".session-row.current")).toHaveCount(0);
  await openDrawer(page);
  await page.getByRole("button", { name: "New chat" }).click();
  expect(await newest()).toBe(before);
  // A reload of the address shows the same empty conversation.
  await page.reload();
  await hydrated(page);
  await expect(page.getByRole("heading", { name: "Start a conversation" })).toBeVisible();
  expect(await newest()).toBe(before);
  await send(page, "/demo prose");
  await expect(page).toHaveURL(/\/s\/[^/]+$/);
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  const made = new URL(page.url()).pathname.split("/").pop();
  expect(made).not.toBe(before);
  expect(await newest()).toBe(made);
});

test("each todo update's row says what changed, not only that a tool was called", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Stream");
  await send(page, "/demo todo");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  const rows = lastTurn(page).locator(".tool-head");
  await expect(rows).toHaveCount(3);
  const read = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
  expect(read).toEqual([
    "Updated todos 1 of 3 done · now: Fix the cache",
    "Updated todos 2 of 3 done · now: Run the suite again",
    "Updated todos all 3 done",
  ]);
  await expect(lastTurn(page)).not.toContainText("Called todo");
});

test("a finished todo list leaves the dock with the next message and is not docked after a reload", async ({ page, request }) => {
  await openNewSession(page, request);
  await send(page, "/demo todo");
  const dock = page.locator(".transcript-dock .todos");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  await expect(dock).toContainText("Todos · 3/3");
  await page.reload();
  await hydrated(page);
  await expect(dock).toHaveCount(0);
  await send(page, "/demo todo");
  await expect(dock).toBeVisible();
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();
  await send(page, "thanks");
  await expect(dock).toHaveCount(0);
});

test("the phone keyboard opening keeps the end of the answer in view", async ({ page, request }) => {
  test.skip(!isPhone(page), "phone viewport");
  const session = await newSession(request);
  await waitRunEnd(request, await startTurn(request, session, "/demo long 600"));
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const answer = lastTurn(page).locator("[data-final-answer='true']");
  const transcript = page.locator(".transcript");
  const bottomInView = async () => {
    const a = (await answer.boundingBox())!;
    const t = (await transcript.boundingBox())!;
    return a.y + a.height <= t.y + t.height + 1;
  };
  await expect.poll(bottomInView).toBe(true);
  await page.getByRole("textbox", { name: "Message" }).tap();
  // The keyboard takes the lower half of the screen.
  await page.setViewportSize({ width: 390, height: 470 });
  await expect.poll(bottomInView).toBe(true);
  await page.setViewportSize({ width: 390, height: 844 });
});

test("a link to a deleted conversation shows the newest one under its own address", async ({ page, request }) => {
  const gone = await newSession(request, "Soon gone");
  await request.post("/api/session/delete", { data: { session_id: gone } });
  const newest = await newSession(request, "Still here");
  await page.goto(`/s/${gone}`);
  await hydrated(page);
  await expect(page.getByRole("alert").filter({ hasText: "does not exist" })).toBeVisible();
  // The newest of the account's conversations: this test's, or one a test running beside it
  // made since (they share the account). Its address is the one in the bar, and the title
  // shown is that conversation's.
  await expect(page).toHaveURL(/\/s\/[0-9a-f]+$/);
  const shown = new URL(page.url()).pathname.split("/").pop()!;
  expect(shown).not.toBe(gone);
  const data = await (await request.get(`/api/page?session_id=${shown}`)).json();
  expect(data.missing).toBe(false);
  if (shown === newest) expect(data.session.title).toBe("Still here");
  await expect(page.locator(".chat-title")).toHaveText(data.session.title);
});

test("exports are named after the conversation and its date; the menu closes after a download", async ({ page, request }) => {
  test.skip(isPhone(page), "downloads: desktop");
  const session = await newSession(request);
  await request.post("/api/session/rename", { data: { session_id: session, title: "Lighthouse keeping" } });
  await waitRunEnd(request, await startTurn(request, session, "/demo prose"));
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const trigger = page.getByRole("button", { name: "Share or export" });
  await trigger.click();
  const markdown = page.getByRole("menuitem", { name: "Export Markdown" });
  // Open, with the focus on its first item (the menu every "⋯" of the app is).
  await expect(markdown).toBeFocused();
  const [download] = await Promise.all([page.waitForEvent("download"), markdown.click()]);
  expect(download.suggestedFilename()).toMatch(/^Lighthouse keeping \d{4}-\d{2}-\d{2}\.md$/);
  // A download leaves the page as it was: the menu closed, the focus back on its "⋯".
  await expect(markdown).toBeHidden();
  await expect(trigger).toBeFocused();
  await trigger.click();
  await page.keyboard.press("ArrowDown");
  const journalItem = page.getByRole("menuitem", { name: "Export journal (JSONL)" });
  await expect(journalItem).toBeFocused();
  const [journal] = await Promise.all([page.waitForEvent("download"), page.keyboard.press("Enter")]);
  expect(journal.suggestedFilename()).toMatch(/^Lighthouse keeping \d{4}-\d{2}-\d{2}\.jsonl$/);
  await expect(journalItem).toBeHidden();
  const lines = (await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
  expect(lines[0].type).toBe("user_message");
  expect(lines[0].payload.content).toBe("/demo prose");
});

test("on a phone the message box takes most of the row, says its placeholder whole and grows upward", async ({ page, request }, testInfo) => {
  test.skip(!isPhone(page), "phone composer");
  await openNewSession(page, request);
  const field = page.getByRole("textbox", { name: "Message" });
  const row = await page.locator("form.composer").evaluate((el) => {
    const style = getComputedStyle(el);
    return el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  });
  const box = (await field.boundingBox())!;
  expect(box.width / row).toBeGreaterThanOrEqual(0.6);
  // The placeholder fits on its line.
  const fits = await field.evaluate((el: HTMLTextAreaElement) => {
    const style = getComputedStyle(el);
    const ctx = document.createElement("canvas").getContext("2d")!;
    ctx.font = `${style.fontSize} ${style.fontFamily}`;
    const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return ctx.measureText(el.placeholder).width <= room;
  });
  expect(fits).toBe(true);
  // The buttons are a finger's size, and keep their names.
  const send = page.getByRole("button", { name: "Send" });
  for (const button of [send, page.getByRole("button", { name: "Attach files" })]) {
    const b = (await button.boundingBox())!;
    expect(b.width).toBeGreaterThanOrEqual(44);
    expect(b.width).toBeLessThanOrEqual(48);
  }
  // A long message grows the field upward: its bottom stays on the composer's line.
  await field.fill("word ".repeat(40));
  const grown = (await field.boundingBox())!;
  expect(grown.height).toBeGreaterThan(box.height * 2);
  expect(Math.abs(grown.y + grown.height - (box.y + box.height))).toBeLessThanOrEqual(1);
  await page.screenshot({ path: testInfo.outputPath("phone-composer.png") });
  await field.fill("/demo slow");
  await send.click();
  await expect(page.getByRole("button", { name: "Stop" })).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("phone-composer-stop.png") });
  await page.getByRole("button", { name: "Stop" }).click();
});

test("on a phone the header leaves the title its room", async ({ page, request }, testInfo) => {
  test.skip(!isPhone(page), "phone header");
  const session = await newSession(request);
  await waitRunEnd(request, await startTurn(request, session, "/demo trace 10"));
  await request.post("/api/session/rename", { data: { session_id: session, title: "Harbour trace" } });
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const title = page.locator(".chat-title");
  await expect(title).toHaveText("Harbour trace");
  const fits = await title.evaluate((el) => el.scrollWidth <= el.clientWidth);
  expect(fits).toBe(true);
  const modes = (await page.locator("[data-mode-switch]").boundingBox())!;
  expect(modes.width).toBeLessThanOrEqual(100);
  for (const button of await page.locator("[data-mode-switch] button").all()) {
    const box = (await button.boundingBox())!;
    expect(box.height).toBeGreaterThanOrEqual(44);
    expect(box.width).toBeGreaterThanOrEqual(44);
  }
  await page.screenshot({ path: testInfo.outputPath("phone-header.png") });
});

test("the keyboard: the message field has the focus, a skip link leads to it", async ({ page, request }) => {
  test.skip(isPhone(page), "keyboard: desktop");
  // 30 conversations in the sidebar: without the skip link, the field is far down the tab order.
  for (let i = 0; i < 30; i++) await newSession(request, `Keyboard ${i}`);
  const session = await newSession(request);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const input = page.getByRole("textbox", { name: "Message" });
  await expect(input).toBeFocused();
  // The first stop of the tab order, hidden until it has the focus.
  const skip = page.getByRole("link", { name: "Skip to the message box" });
  await expect(skip).not.toBeInViewport();
  const first = await page.evaluate(() => {
    const all = Array.from(document.querySelectorAll<HTMLElement>("a[href], button, input, textarea, select, [tabindex]"));
    const tabbable = all.filter((el) => el.tabIndex >= 0 && !el.closest("[inert]") && el.getClientRects().length > 0);
    tabbable[0].focus();
    return tabbable[0].textContent;
  });
  expect(first).toBe("Skip to the message box");
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  // One key from there to the message field; through the sidebar it would take 20 and more.
  await page.keyboard.press("Enter");
  await expect(input).toBeFocused();
  const stops = await page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>("#sidebar a[href], #sidebar button, #sidebar input")).filter((el) => el.tabIndex >= 0 && el.getClientRects().length > 0).length);
  expect(stops).toBeGreaterThan(20);
});

test("a question puts the focus on its first answer when it appears and gives it back to the message field", async ({ page, request }) => {
  test.skip(isPhone(page), "keyboard: desktop");
  await openNewSession(page, request);
  await send(page, "/demo approval");
  const card = page.locator("[data-pending='approval']");
  // On its first answer: Enter answers it.
  await expect(card.getByRole("button", { name: "Allow once" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(card).toHaveCount(0);
  await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible();

  await send(page, "/demo clarify");
  const question = page.locator("[data-pending='clarify']");
  await expect(question.locator(":focus")).toHaveCount(1);
  await question.getByRole("button", { name: /staging/ }).click();
  await expect(question).toHaveCount(0);
  await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();
});

test("the phone drawer is a modal: the focus is inside, the rest is inert, Escape and a tap outside close it", async ({ page, request }) => {
  test.skip(!isPhone(page), "phone drawer");
  await openNewSession(page, request);
  const menu = page.getByRole("button", { name: "Open sessions" });
  await menu.tap();
  const drawer = page.getByRole("navigation", { name: "Sessions" });
  await expect(page.getByRole("button", { name: "Close sessions" })).toBeFocused();
  await expect(page.locator("main.chat")).toHaveAttribute("inert", "");
  // Tab stays in the drawer.
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press("Tab");
    const inside = await page.evaluate(() => !!document.activeElement?.closest("#sidebar") || document.activeElement === document.body);
    expect(inside).toBe(true);
  }
  await page.keyboard.press("Escape");
  await expect(drawer).not.toBeInViewport();
  await expect(menu).toBeFocused();
  await expect(page.locator("main.chat")).not.toHaveAttribute("inert", "");
  // A closed drawer cannot be reached with Tab.
  await menu.tap();
  await expect(drawer).toBeInViewport({ ratio: 0.9 });
  await page.touchscreen.tap(370, 400);
  await expect(drawer).not.toBeInViewport();
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await expect.poll(() => page.locator(".session-search").evaluate((el) => getComputedStyle(el).visibility)).toBe("hidden");
});
