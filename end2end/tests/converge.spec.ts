import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { hydrated, isPhone, lastTurn, layoutShifts, newSession, openNewSession, rowAction, send, sendQuietly, setMode, settled, watchLayout } from "./support";

// A turn watched as it runs settles into the shape a reload shows: the same words on screen,
// in both views, with nothing moving under the reader as it settles. And what a new user
// tripped on around it: the time a turn waited for them, a summary line lost with a version,
// the sidebar's groups live, an empty conversation left by a refused message.

// Long enough to be seen running, however late the page's stream connects.
test.use({ demoDelayMs: 12 });

/** What a person reads of the last turn's assistant part (the answer, the summary line, the
 * steps when open, the footer), whitespace folded. */
async function shown(page: Page): Promise<string> {
  const text = await lastTurn(page).locator(".assistant").innerText();
  return text.replace(/\s+/g, " ").trim();
}

/** Answers what the turn asks, if it asks: allows the approval. */
async function answerIfAsked(page: Page, message: string) {
  if (message !== "/demo approval") return;
  const card = page.locator("[data-pending='approval']");
  await expect(card).toBeVisible({ timeout: 30_000 });
  await card.getByRole("button", { name: "Allow once" }).click();
}

for (const mode of ["Worklog", "Stream"] as const) {
  test(`${mode}: a watched turn reads the same after a reload, and nothing moved as it settled`, async ({ page, request }, testInfo) => {
    test.setTimeout(120_000);
    await openNewSession(page, request);
    await setMode(page, mode);
    const differences: string[] = [];
    for (const message of ["/demo tools", "/demo todo", "/demo approval", "/demo flaky"]) {
      await openNewSession(page, request);
      // A conversation already longer than the screen (a short one: see the next test).
      await sendQuietly(page, "/demo long 400");
      await settled(page);
      await sendQuietly(page, message);
      // From the new turn on (what the send itself changes, the last turn's Retry gone, is
      // the person's doing: a send by hand is input, which the browser does not count).
      await expect(page.locator("article.turn")).toHaveCount(2);
      await expect(page.locator("article.turn").first().locator("[data-retry]")).toHaveCount(0);
      await watchLayout(page);
      await answerIfAsked(page, message);
      await settled(page);
      const watched = await shown(page);
      const { total, shifts } = await layoutShifts(page);
      // The approval's answer is a click: the shifts of the next half second are the
      // reader's own, as the browser counts them; every other turn is sent by script.
      if (total > 0.01) differences.push(`${message}: layout shift ${total.toFixed(4)} ${JSON.stringify(shifts.slice(0, 3))}`);
      if (mode === "Worklog") {
        // A turn that answered is folded: its steps are under the summary line, not on
        // screen (one that failed keeps them open, watched or reloaded).
        const summary = lastTurn(page).locator(".worklog-summary");
        await expect(summary).toBeVisible();
        const failed = (await lastTurn(page).locator("[data-terminal-state]").count()) > 0;
        if (!failed && !(await summary.isDisabled())) await expect(summary).toHaveAttribute("aria-expanded", "false");
      }
      await page.screenshot({ path: testInfo.outputPath(`${message.slice(6)}-watched.png`) });
      await page.reload();
      await hydrated(page);
      await expect(lastTurn(page).locator(".assistant")).toHaveAttribute("data-state", "settled");
      const reloaded = await shown(page);
      if (watched !== reloaded) differences.push(`${message}: watched «${watched}» reloaded «${reloaded}»`);
    }
    expect(differences).toEqual([]);
  });
}

test("in a conversation shorter than the screen the steps fold once out of view, never moving the answer", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Worklog");
  await watchLayout(page);
  await sendQuietly(page, "/demo tools");
  await settled(page);
  // Folding now would pull the answer up the screen: the steps stay.
  expect((await layoutShifts(page)).total).toBeLessThanOrEqual(0.01);
  const first = page.locator("article.turn").first();
  await expect(first.locator(".worklog-summary")).toHaveAttribute("aria-expanded", "true");
  // The next turn pushes them out of view: folded then, as a reload shows them.
  await send(page, "/demo long 60");
  await settled(page);
  await expect(first.locator(".worklog-summary")).toHaveAttribute("aria-expanded", "false");
  const watched = (await first.locator(".assistant").innerText()).replace(/\s+/g, " ").trim();
  await page.reload();
  await hydrated(page);
  const reloaded = (await page.locator("article.turn").first().locator(".assistant").innerText()).replace(/\s+/g, " ").trim();
  expect(reloaded).toBe(watched);
});

test("a reader who opened the steps while the turn ran keeps them open when it settles", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Worklog");
  await send(page, "/demo trace 200");
  const summary = lastTurn(page).locator(".worklog-summary");
  await expect(summary).toBeEnabled({ timeout: 30_000 });
  await expect(lastTurn(page).locator(".assistant")).toHaveAttribute("data-state", "running");
  // Closed, then opened again: the reader's choice.
  await summary.click();
  await expect(summary).toHaveAttribute("aria-expanded", "false");
  await summary.click();
  await expect(summary).toHaveAttribute("aria-expanded", "true");
  await settled(page);
  await expect(summary).toHaveAttribute("aria-expanded", "true");
  await expect(lastTurn(page).locator(".worklog-items")).toBeVisible();
});

test("the worklog says the agent's time, and the time it waited for the person apart", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Worklog");
  await send(page, "/demo approval");
  const card = page.locator("[data-pending='approval']");
  await expect(card).toBeVisible({ timeout: 30_000 });
  // The person takes their time.
  await page.waitForTimeout(3_000);
  await card.getByRole("button", { name: "Allow once" }).click();
  await settled(page);
  const line = lastTurn(page).locator(".worklog-summary");
  await expect(line).toHaveText(/waited [3-9]s for you/);
  const agent = Number((await line.innerText()).match(/Processed (\d+)s/)?.[1]);
  expect(agent).toBeLessThan(3);
  await page.reload();
  await hydrated(page);
  await expect(lastTurn(page).locator(".worklog-summary")).toHaveText(await line.innerText());
});

test("every version of a turn has its summary line", async ({ page, request }) => {
  await openNewSession(page, request);
  await setMode(page, "Worklog");
  await send(page, "/demo flaky");
  const card = lastTurn(page).locator("[data-terminal-state='error']");
  await expect(card).toBeVisible({ timeout: 30_000 });
  await card.getByRole("button", { name: "Retry" }).click();
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await settled(page);
  const line = lastTurn(page).locator(".worklog-summary");
  await expect(line).toHaveText(/^Answered/);
  const answered = await line.innerText();
  await lastTurn(page).getByRole("button", { name: "Previous version" }).click();
  await expect(lastTurn(page).locator(".version-label")).toHaveText("1 / 2");
  await expect(lastTurn(page).locator(".worklog-summary")).toBeVisible();
  await lastTurn(page).getByRole("button", { name: "Next version" }).click();
  await expect(lastTurn(page).locator(".version-label")).toHaveText("2 / 2");
  await expect(lastTurn(page).locator(".worklog-summary")).toHaveText(answered);
});

/** The sidebar as a person reads it: each heading with the titles under it. */
async function groups(page: Page): Promise<string[]> {
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  const nav = page.locator("#sidebar");
  await expect(nav).toBeInViewport();
  return nav.locator(".session-list > li").evaluateAll((items) =>
    items.map((li) => (li.classList.contains("session-group") ? `## ${li.textContent}` : li.getAttribute("data-session-id") ?? li.querySelector("[data-session-id]")?.getAttribute("data-session-id") ?? "?")),
  );
}

test("the sidebar's groups are the same live as after a reload, with a pinned conversation and a new one", async ({ page, request }) => {
  const tag = `${test.info().project.name}-${Date.now()}`;
  const pinned = await newSession(request, `Pinned ${tag}`);
  await newSession(request, `Other ${tag}`);
  await page.goto(`/s/${pinned}`);
  await hydrated(page);
  const nav = page.locator("#sidebar");
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await rowAction(nav.locator(".session-row", { hasText: `Pinned ${tag}` }), "Pin");
  await expect(nav.locator(".session-list > li").first()).toHaveText("Pinned");
  if (isPhone(page)) await page.keyboard.press("Escape");
  // A new chat, and a message.
  await page.goto("/new");
  await hydrated(page);
  await send(page, "/demo prose");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(page).toHaveURL(/\/s\/[0-9a-f]+$/);
  const live = await groups(page);
  expect(live[0]).toBe("## Pinned");
  expect(live[1]).toBe(pinned);
  expect(live[2]).toBe("## Today");
  expect(live.filter((g) => g === "## Pinned")).toHaveLength(1);
  expect(live.filter((g) => g === "## Today")).toHaveLength(1);
  await page.reload();
  await hydrated(page);
  // The same list (a reload shows the first page of it: the live list may hold one more).
  const reloaded = await groups(page);
  expect(reloaded.length).toBeGreaterThanOrEqual(live.length - 1);
  expect(live.slice(0, reloaded.length)).toEqual(reloaded);
});

test("a refused first message leaves no conversation behind, and keeps its text", async ({ page, request }) => {
  await page.goto("/new");
  await hydrated(page);
  const rows = async () => page.locator("#sidebar .session-row").count();
  const before = await rows();
  const input = page.getByRole("textbox", { name: "Message" });
  const text = "x".repeat(150_000);
  await input.fill(text);
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /too long|too large|limit/i })).toBeVisible({ timeout: 15_000 });
  await expect(input).toHaveValue(text);
  expect(new URL(page.url()).pathname).not.toMatch(/\/s\//);
  await expect.poll(rows).toBe(before);
  await page.reload();
  await hydrated(page);
  expect(await rows()).toBe(before);
});
