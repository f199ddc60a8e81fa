import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { hydrated, isPhone, lastTurn, newSession, openNewSession, rowAction, send } from "./support";

/** The sidebar, opened first on a phone (where it is a drawer). */
async function sidebar(page: Page) {
  const nav = page.locator("#sidebar");
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  await expect(nav).toBeInViewport();
  return nav;
}

async function choose(page: Page, title: string, item: string) {
  const nav = await sidebar(page);
  await rowAction(nav.locator(".session-row", { hasText: title }), item);
}

test("a message says when it was sent: how long ago, the exact time on hover and on a tap", async ({ page, request }) => {
  await openNewSession(page, request);
  await send(page, "/demo prose");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  const stamp = lastTurn(page).locator(".user-message .timestamp");
  await expect(stamp).toBeVisible();
  await expect(stamp).toHaveText("just now");
  const exact = await stamp.getAttribute("title");
  expect(exact).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2}$/);
  // The time is in the browser's zone: the hour and minute it reads from the UTC datetime.
  const local = await stamp.locator("time").evaluate((el) => {
    const d = new Date(el.getAttribute("datetime")!);
    return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
  });
  expect(exact!.slice(-8, -3)).toBe(local);
  await stamp.click();
  await expect(stamp).toHaveText(exact!);
  await stamp.click();
  await expect(stamp).toHaveText("just now");
  // The answer says when it came, after the question.
  const answered = lastTurn(page).locator(".turn-footer .timestamp");
  await expect(answered).toHaveText("just now");
  await expect(answered).toHaveAttribute("aria-label", /^Answered /);
  const [asked, came] = await Promise.all(
    [stamp, answered].map((s) => s.locator("time").evaluate((el) => Date.parse(el.getAttribute("datetime")!))),
  );
  expect(came).toBeGreaterThanOrEqual(asked);
  // The conversation is under Today.
  const nav = await sidebar(page);
  await expect(nav.locator(".session-group h2").first()).toHaveText("Today");
});

test("a reader days later sees the conversation under Previous 7 days and the message by its weekday", async ({ page, request }) => {
  const session = await newSession(request, "From three days ago");
  const run = (await (await request.post("/api/chat/start", { data: { session_id: session, message: "/demo prose" } })).json()).run_id;
  await expect.poll(async () => (await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json()).active).toBe(false);
  // The browser's clock is three days ahead of the server's.
  await page.clock.setFixedTime(new Date(Date.now() + 3 * 86_400_000));
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await expect(lastTurn(page).locator(".user-message .timestamp")).toHaveText(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{2}:\d{2}$/);
  await expect(lastTurn(page).locator(".turn-footer .timestamp")).toHaveText(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{2}:\d{2}$/);
  const nav = await sidebar(page);
  const row = nav.locator(`[data-session-id='${session}']`);
  await expect(row).toBeVisible();
  // Its heading is the last one above it.
  const heading = await row.evaluate((el) => {
    let at: Element | null = el;
    while (at && !at.classList.contains("session-group")) at = at.previousElementSibling;
    return at?.textContent ?? null;
  });
  expect(heading).toBe("Previous 7 days");
});

test("pin and archive a conversation; delete one with Undo instead of a dialog", async ({ page, request }, testInfo) => {
  const tag = `${testInfo.project.name}-${Date.now()}`;
  const older = await newSession(request, `Older ${tag}`);
  const newer = await newSession(request, `Newer ${tag}`);
  let dialogs = 0;
  page.on("dialog", (d) => {
    dialogs += 1;
    void d.dismiss();
  });
  await page.goto(`/s/${newer}`);
  await hydrated(page);

  // Pinned: to the top, under Pinned, also after a reload.
  await choose(page, `Older ${tag}`, "Pin");
  let nav = await sidebar(page);
  await expect(nav.locator(".session-list > li").first()).toHaveText("Pinned");
  await expect(nav.locator(".session-row").first()).toHaveAttribute("data-session-id", older);
  await page.screenshot({ path: testInfo.outputPath("pinned.png") });
  await page.reload();
  await hydrated(page);
  nav = await sidebar(page);
  await expect(nav.locator(".session-row").first()).toHaveAttribute("data-session-id", older);
  await choose(page, `Older ${tag}`, "Unpin");
  await expect(nav.locator(".session-group h2", { hasText: "Pinned" })).toHaveCount(0);

  // Archived: out of the list, in the archive, and back.
  await choose(page, `Newer ${tag}`, "Archive");
  await expect(page.locator(".toast")).toContainText("Conversation archived");
  nav = await sidebar(page);
  await expect(nav.locator(`[data-session-id='${newer}']`)).toHaveCount(0);
  await nav.getByRole("button", { name: "Archived conversations" }).click();
  // The list says what it is.
  await expect(nav.getByRole("heading", { name: "Archived" })).toBeVisible();
  await expect(nav.locator(`[data-session-id='${newer}']`)).toBeVisible();
  await choose(page, `Newer ${tag}`, "Unarchive");
  await nav.getByRole("button", { name: "‹ Conversations" }).click();
  await expect(nav.locator(`[data-session-id='${newer}']`)).toBeVisible();

  // Deleted at once, with Undo; Undo brings it back (the server has it again).
  await choose(page, `Older ${tag}`, "Delete");
  const toast = page.locator(".toast");
  await expect(toast).toContainText("Conversation deleted");
  await expect(nav.locator(`[data-session-id='${older}']`)).toHaveCount(0);
  expect((await request.get(`/api/session?session_id=${older}`)).status()).toBe(404);
  await page.screenshot({ path: testInfo.outputPath("undo.png") });
  await toast.getByRole("button", { name: "Undo" }).click();
  await expect(toast).toBeHidden();
  nav = await sidebar(page);
  await expect(nav.locator(`[data-session-id='${older}']`)).toBeVisible();
  expect((await request.get(`/api/session?session_id=${older}`)).status()).toBe(200);

  // Without Undo it stays deleted (once the server said so: the notice shows, then goes).
  await choose(page, `Older ${tag}`, "Delete");
  await expect(toast).toContainText("Conversation deleted");
  await expect(toast).toBeHidden({ timeout: 15_000 });
  await page.reload();
  await hydrated(page);
  nav = await sidebar(page);
  await expect(nav.locator(`[data-session-id='${older}']`)).toHaveCount(0);
  expect(dialogs).toBe(0);
});
