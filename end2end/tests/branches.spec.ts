import { test, expect } from "./fixtures";
import { hydrated, isPhone, lastTurn, openNewSession, send } from "./support";
import type { Locator, Page } from "@playwright/test";

/** Where an element is in the conversation (not on screen: the conversation may scroll). */
async function placeIn(el: Locator): Promise<number> {
  return el.evaluate((node) => {
    const transcript = node.closest(".transcript")!;
    return node.getBoundingClientRect().top - transcript.getBoundingClientRect().top + transcript.scrollTop;
  });
}

/** The action buttons under a user's message show on hover with a mouse, always on touch. */
async function reveal(page: Page, turn: Locator) {
  if (!isPhone(page)) await turn.locator(".user-message .bubble").hover();
}

test("a failed turn's Retry answers the message again; the failed version stays one step back", async ({ page, request }, testInfo) => {
  const session = await openNewSession(page, request);
  await send(page, "/demo prose");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await send(page, "/demo flaky");
  const turn = lastTurn(page);
  const card = turn.locator("[data-terminal-state='error']");
  await expect(card).toBeVisible({ timeout: 30_000 });
  const retry = card.getByRole("button", { name: "Retry" });
  await expect(retry).toBeEnabled();
  const failedRun = await turn.getAttribute("data-run-id");
  const userTop = await placeIn(turn.locator(".user-message"));
  await retry.click();

  // The new version takes the failed turn's place: the same message, where it was, answered.
  const answer = lastTurn(page).locator("[data-final-answer='true']");
  await expect(answer).toHaveText("Answered on attempt 2.", { timeout: 30_000 });
  await expect(page.locator("article.turn")).toHaveCount(2);
  const now = lastTurn(page);
  expect(await now.getAttribute("data-run-id")).not.toBe(failedRun);
  await expect(now.locator(".bubble")).toHaveText("/demo flaky");
  expect(Math.abs((await placeIn(now.locator(".user-message"))) - userTop)).toBeLessThan(2);
  await expect(now.locator(".version-label")).toHaveText("2 / 2");
  await expect(now.locator("[data-terminal-state]")).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath("retried.png") });

  // A reload shows the same; the first version is one step back, with its card.
  await page.reload();
  await hydrated(page);
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Answered on attempt 2.");
  await lastTurn(page).getByRole("button", { name: "Previous version" }).click();
  await expect(lastTurn(page).locator("[data-terminal-state='error']")).toBeVisible();
  await expect(lastTurn(page).locator(".version-label")).toHaveText("1 / 2");
  expect(await lastTurn(page).getAttribute("data-run-id")).toBe(failedRun);
  await expect(page.locator("article.turn")).toHaveCount(2);
  await page.reload();
  await hydrated(page);
  await expect(lastTurn(page).locator(".version-label")).toHaveText("1 / 2");
  await expect(lastTurn(page).getByRole("button", { name: "Next version" })).toBeEnabled();
  const exported = await (await request.get(`/api/session/export?session_id=${session}&format=md`)).text();
  expect(exported).not.toContain("Answered on attempt 2.");
});

test("a card keeps its size when the next turn starts: its Retry stays, unusable while that turn runs", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  await send(page, "/demo error");
  const failed = page.locator("article.turn").first();
  const card = failed.locator("[data-terminal-state='error']");
  await expect(card).toBeVisible({ timeout: 30_000 });
  const before = (await card.boundingBox())!.height;
  await page.screenshot({ path: testInfo.outputPath("error-card.png") });
  await send(page, "/demo slow");
  await expect(page.locator("article.turn")).toHaveCount(2);
  const retry = card.getByRole("button", { name: "Retry" });
  await expect(retry).toBeDisabled();
  expect((await card.boundingBox())!.height).toBe(before);
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(lastTurn(page).locator("[data-terminal-state='cancelled']")).toBeVisible({ timeout: 30_000 });
  await expect(retry).toBeEnabled();
});

test("an edited message forks the conversation; each version keeps what followed it", async ({ page, request }, testInfo) => {
  const session = await openNewSession(page, request);
  // Each message is sent once the answer before it has settled on the page: its own turn
  // first, then its answer (else a message sent early is queued behind the running turn).
  const turns = page.locator("article.turn");
  for (const [i, message] of ["/demo prose", "what the first answer said", "and a follow-up"].entries()) {
    await send(page, message);
    await expect(turns).toHaveCount(i + 1);
    await expect(turns.nth(i).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  }

  const second = page.locator("article.turn").nth(1);
  await reveal(page, second);
  const edit = second.getByRole("button", { name: "Edit message" });
  await edit.click();
  const field = second.getByRole("textbox", { name: "Edit your message" });
  await expect(field).toBeFocused();
  await expect(field).toHaveValue("what the first answer said");
  // Escape leaves the message as it was, and the focus where it was.
  await field.press("Escape");
  await expect(field).toHaveCount(0);
  await expect(edit).toBeFocused();
  await reveal(page, second);
  await edit.click();
  await field.fill("/demo tools");
  await page.screenshot({ path: testInfo.outputPath("editing.png") });
  await second.getByRole("button", { name: "Send" }).click();

  // The conversation forks there: the edited turn, and nothing after it.
  await expect(page.locator("article.turn")).toHaveCount(2);
  const edited = lastTurn(page);
  await expect(edited.locator(".bubble")).toHaveText("/demo tools");
  await expect(edited.locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(edited.locator(".version-label")).toHaveText("2 / 2");
  if (!isPhone(page)) await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();
  await page.screenshot({ path: testInfo.outputPath("edited.png") });

  // Version 1 brings back the message and the follow-up after it.
  await edited.getByRole("button", { name: "Previous version" }).click();
  await expect(page.locator("article.turn")).toHaveCount(3);
  await expect(page.locator("article.turn").nth(1).locator(".bubble")).toHaveText("what the first answer said");
  await expect(page.locator("article.turn").nth(1).locator(".version-label")).toHaveText("1 / 2");
  await expect(lastTurn(page).locator(".bubble")).toHaveText("and a follow-up");
  await page.reload();
  await hydrated(page);
  await expect(page.locator("article.turn")).toHaveCount(3);
  await page.locator("article.turn").nth(1).getByRole("button", { name: "Next version" }).click();
  await expect(page.locator("article.turn")).toHaveCount(2);
  await expect(lastTurn(page).locator(".bubble")).toHaveText("/demo tools");

  // The Markdown export is the branch shown; the JSON lines keep both, with parent ids.
  const md = await (await request.get(`/api/session/export?session_id=${session}&format=md`)).text();
  expect(md).toContain("/demo tools");
  expect(md).not.toContain("and a follow-up");
  const lines = (await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text())
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === "user_message");
  expect(lines.map((l) => l.payload.content)).toEqual(
    expect.arrayContaining(["/demo prose", "what the first answer said", "and a follow-up", "/demo tools"]),
  );
  const first = lines.find((l) => l.payload.content === "/demo prose");
  expect(lines.filter((l) => l.parent_run_id === first.run_id).map((l) => l.payload.content).sort()).toEqual([
    "/demo tools",
    "what the first answer said",
  ]);
});

test("Copy puts the answer's Markdown on the clipboard, and a message's text", async ({ page, request, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const session = await openNewSession(page, request);
  await send(page, "/demo prose");
  const turn = lastTurn(page);
  await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await turn.getByRole("button", { name: "Copy answer" }).click();
  await expect(turn.getByRole("button", { name: "Copy answer" })).toHaveText("Copied");
  const data = await (await request.get(`/api/session?session_id=${session}`)).json();
  const markdown = data.session.messages.find((m: any) => m.role === "assistant").content;
  expect(markdown).toContain("**demo agent**");
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(markdown);
  await reveal(page, turn);
  await turn.getByRole("button", { name: "Copy message" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("/demo prose");

  // The turn's "⋯" copies a link that opens the conversation at the turn.
  // Its menu opens with the focus on the first item, moves with the arrows, closes on Escape
  // with the focus back on the "⋯", and on a choice.
  const more = turn.getByRole("button", { name: "More for this turn" });
  await more.click();
  await expect(more).toHaveAttribute("aria-expanded", "true");
  await expect(turn.getByRole("menuitem", { name: "Copy answer" })).toBeFocused();
  await page.keyboard.press("ArrowUp");
  await expect(turn.getByRole("menuitem", { name: "Copy link to this turn" })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(turn.getByRole("menu")).toHaveCount(0);
  await expect(more).toBeFocused();
  await more.click();
  const copyLink = turn.getByRole("menuitem", { name: "Copy link to this turn" });
  await expect(copyLink).toBeVisible();
  await copyLink.click();
  await expect(copyLink).toBeHidden();
  const turnId = await turn.getAttribute("data-turn-id");
  const link = await page.evaluate(() => navigator.clipboard.readText());
  expect(link).toBe(new URL(`/s/${session}#${turnId}`, page.url()).href);
  await page.goto(link);
  await hydrated(page);
  await expect(page.locator(`[data-turn-id='${turnId}']`)).toBeInViewport();
});

test("a search hit in an earlier version opens that version, at its turn", async ({ page, request }, testInfo) => {
  const word = `okapi${testInfo.project.name}${Date.now() % 100000}`;
  const session = (await (await request.post("/api/session/new", { data: {} })).json()).session.id;
  const start = async (message: string) => {
    const run = (await (await request.post("/api/chat/start", { data: { session_id: session, message } })).json()).run_id;
    await expect.poll(async () => (await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json()).active).toBe(false);
    return run;
  };
  const first = await start(`tell me about the ${word}`);
  const edited = (await (await request.post("/api/chat/edit", { data: { run_id: first, message: "something else" } })).json()).run_id;
  await expect.poll(async () => (await (await request.get(`/api/chat/stream/status?run_id=${edited}`)).json()).active).toBe(false);
  await start("and a follow-up");

  await page.goto(`/s/${session}`);
  await hydrated(page);
  await expect(page.locator(".user-message .bubble", { hasText: "something else" })).toBeVisible();
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("searchbox", { name: "Search conversations" }).fill(word);
  const hit = page.locator(`[data-session-id='${session}'] a`).first();
  await expect(hit).toHaveAttribute("href", `/s/${session}#turn-${first}`);
  await hit.click();
  // The version the hit is in, with its "1 / 2", in view; the other branch's follow-up is not shown.
  const turn = page.locator(`#turn-${first}`);
  await expect(turn).toBeVisible();
  await expect(turn).toBeInViewport();
  await expect(turn.locator(".user-message .bubble")).toHaveText(`tell me about the ${word}`);
  await expect(turn.locator(".version-label")).toHaveText("1 / 2");
  await expect(page.locator(".user-message .bubble", { hasText: "and a follow-up" })).toHaveCount(0);
  await expect(page.locator(".user-message .bubble", { hasText: "something else" })).toHaveCount(0);
});
