import { test, expect } from "./fixtures";
import type { APIRequestContext, Page } from "@playwright/test";
import { writeFileSync } from "node:fs";
import { hydrated, isPhone, newSession, rowAction, startTurn, waitRunEnd } from "./support";

/** The sidebar, opened first on a phone (where it is a drawer). */
async function sidebar(page: Page) {
  const nav = page.locator("#sidebar");
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  await expect(nav).toBeInViewport();
  return nav;
}

/** A conversation of two turns whose second was answered twice (a failure, then its retry). */
async function branched(request: APIRequestContext, title: string): Promise<string> {
  const session = await newSession(request);
  await waitRunEnd(request, await startTurn(request, session, "/demo prose"));
  const failed = await startTurn(request, session, "/demo flaky");
  await waitRunEnd(request, failed);
  const retried = await request.post("/api/chat/retry", { data: { run_id: failed } });
  expect(retried.ok()).toBeTruthy();
  await waitRunEnd(request, (await retried.json()).run_id);
  const renamed = await request.post("/api/session/rename", { data: { session_id: session, title } });
  expect(renamed.ok()).toBeTruthy();
  return session;
}

/** What the page shows of the conversation: each turn's message, answer and version label. */
async function shownTurns(page: Page) {
  const turns = page.locator("article.turn");
  await expect(turns.last().locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  return turns.evaluateAll((all) =>
    all.map((turn) => ({
      message: turn.querySelector(".user-message .bubble")?.textContent?.trim(),
      answer: turn.querySelector("[data-final-answer='true']")?.textContent?.trim(),
      versions: turn.querySelector(".version-label")?.textContent?.trim() ?? null,
    })),
  );
}

test("an export imported from the sidebar is the conversation again, every version kept", async ({ page, request }, testInfo) => {
  const title = `Harbour log ${testInfo.project.name} ${Date.now()}`;
  const session = await branched(request, title);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const original = await shownTurns(page);
  expect(original.map((t) => t.versions)).toEqual([null, "2 / 2"]);
  const file = testInfo.outputPath("harbour.jsonl");
  writeFileSync(file, await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text());

  await page.goto("/");
  await hydrated(page);
  const nav = await sidebar(page);
  const entry = nav.getByText("Import a conversation…");
  await expect(entry).toBeVisible();
  await entry.scrollIntoViewIfNeeded();
  await nav.locator(".import-conversation input[type=file]").setInputFiles(file);

  // The new conversation opens, first in the list, under the title it was exported with,
  // told apart from the original (which this account still has).
  await expect(page).toHaveURL(/\/s\/[0-9a-f]{32}$/);
  const copy = page.url().split("/s/")[1];
  expect(copy).not.toBe(session);
  await expect(page.locator(".chat-title")).toHaveText(`${title} (copy)`);
  await expect(page.locator(".toast")).toContainText(`Imported as “${title} (copy)”`);
  expect(await shownTurns(page)).toEqual(original);
  await page.screenshot({ path: testInfo.outputPath("imported.png") });
  const rows = (await sidebar(page)).locator(".session-row");
  await expect(rows.first()).toHaveAttribute("data-session-id", copy);
  await expect(rows.first()).toContainText(title);
  if (isPhone(page)) await page.getByRole("button", { name: "Close sessions" }).tap();

  // The other version is there: the failed first answer, one step back.
  const last = page.locator("article.turn").last();
  await last.getByRole("button", { name: "Previous version" }).click();
  await expect(last.locator(".version-label")).toHaveText("1 / 2");
  await expect(page.locator("article.turn").last().locator("[data-terminal-state='error']")).toBeVisible();

  // A file that is no export says why, naming the line, and opens nothing.
  const bad = testInfo.outputPath("notes.jsonl");
  writeFileSync(bad, '{"type": "user_message"}\n');
  const before = page.url();
  await (await sidebar(page)).locator(".import-conversation input[type=file]").setInputFiles(bad);
  const banner = page.locator(".error-banner");
  await expect(banner).toContainText("That file could not be imported: line 1:");
  expect(page.url()).toBe(before);
  await page.screenshot({ path: testInfo.outputPath("import-refused.png") });
});

test("Duplicate copies the branch shown; Duplicate all versions copies every branch", async ({ page, request }, testInfo) => {
  const title = `Tide table ${testInfo.project.name} ${Date.now()}`;
  const session = await branched(request, title);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const original = await shownTurns(page);

  await rowAction((await sidebar(page)).locator(".session-row", { hasText: title }).first(), "Duplicate");
  await expect(page.locator(".chat-title")).toHaveText(`${title} (copy)`);
  const first = page.url();
  expect(first).not.toContain(session);
  await expect(page.locator(".toast")).toContainText(`Copied as “${title} (copy)”`);
  const branch = await shownTurns(page);
  expect(branch.map((t) => [t.message, t.answer])).toEqual(original.map((t) => [t.message, t.answer]));
  expect(branch.map((t) => t.versions)).toEqual([null, null]);
  await page.screenshot({ path: testInfo.outputPath("duplicated.png") });

  await rowAction((await sidebar(page)).locator(".session-row", { hasText: title }).last(), "Duplicate all versions");
  await expect(page).not.toHaveURL(first);
  // A second copy is told apart from the first.
  await expect(page.locator(".chat-title")).toHaveText(`${title} (copy 2)`);
  expect(await shownTurns(page)).toEqual(original);
  // The original is as it was.
  const source = await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text();
  expect(source.split("\n").filter((l) => l.includes('"user_message"')).length).toBe(3);
});
