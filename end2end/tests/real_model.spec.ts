import { test, expect } from "./fixtures";
import type { APIRequestContext, Page, TestInfo } from "@playwright/test";
import type { ChildProcess } from "child_process";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { exclusive, freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn, layoutShifts, send, watchLayout } from "./support";

// The page on the `openai` backend against a real model: llama.cpp's server with Gemma 3 270M,
// which scripts/with-model.sh starts (ANCHORAGE_TEST_LLAMA_URL). What is asserted is what a
// person sees happen, never what the model says: a 270M model answers poorly.

const LLAMA = process.env.ANCHORAGE_TEST_LLAMA_URL;

test.describe.configure({ mode: "serial" });
test.skip(!LLAMA, "needs a real model server (scripts/with-model.sh sets ANCHORAGE_TEST_LLAMA_URL)");

// The model server answers one request at a time (and the Stop test asks it whether it is
// free): one test of this file at a time across the workers.
let release: (() => void) | undefined;
test.beforeEach(async () => {
  release = await exclusive("model");
});
test.afterEach(() => release?.());

type Own = { base: string; server: ChildProcess; dataDir: string };

async function modelId(request: APIRequestContext): Promise<string> {
  const list = await (await request.get(`${LLAMA}/models`)).json();
  return list.data[0].id;
}

/** A server of the test's own on the real model, with `args` (--max-tokens, --context-tokens). */
async function own(request: APIRequestContext, testInfo: TestInfo, slot: number, args: string[]): Promise<Own> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-llama-"));
  const server = startServer(
    port,
    dataDir,
    { ...openAiEnv(LLAMA!, dataDir, await modelId(request), "local"), ANCHORAGE_MAX_ITERATIONS: "2" },
    args,
  );
  await waitHealthy(request, base);
  return { base, server, dataDir };
}

async function stop(o: Own): Promise<void> {
  await kill9(o.server);
  rmSync(o.dataDir, { recursive: true, force: true });
}

async function openSession(page: Page, request: APIRequestContext, base: string): Promise<string> {
  const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
  await page.goto(`${base}/s/${session}`);
  await hydrated(page);
  return session;
}

async function storedAnswer(request: APIRequestContext, base: string, session: string): Promise<any> {
  const s = await (await request.get(`${base}/api/session?session_id=${session}`)).json();
  return s.session.messages.filter((m: any) => m.role === "assistant").at(-1);
}

/** About `n` characters of prose. */
function filler(n: number): string {
  const words = ["harbour", "lantern", "tide", "granite", "gull", "rope", "keeper", "storm", "light", "shore"];
  let out = "";
  for (let i = 0; out.length < n; i++) out += words[i % words.length] + (i % 11 === 10 ? ". " : " ");
  return out.slice(0, n);
}

test("a real model's answer streams in place, survives a reload mid-answer and settles once", async ({ page, request }, testInfo) => {
  test.setTimeout(180_000);
  const o = await own(request, testInfo, 0, ["--max-tokens", "160", "--context-tokens", "4096"]);
  try {
    const session = await openSession(page, request, o.base);
    // The picker names the model by its file's stem, not its path.
    const picked = page.locator("#model-select option:checked");
    await expect(picked).toHaveText("gemma-3-270m-q4_k_m");
    expect(await picked.getAttribute("value")).toBe(await modelId(request));
    await watchLayout(page);
    await send(page, "Count from one to fifty, one number per line.");
    const answer = lastTurn(page).locator(".answer");
    await expect(answer).toHaveAttribute("data-final-answer", "streaming", { timeout: 60_000 });
    // It grows while the model writes.
    const first = (await answer.innerText()).length;
    await expect.poll(async () => (await answer.innerText()).length, { timeout: 30_000 }).toBeGreaterThan(first);
    // Reload while it streams: the same turn comes back and goes on.
    await page.reload();
    await hydrated(page);
    await expect(page.locator("article.turn")).toHaveCount(1);
    const settled = lastTurn(page).locator(".answer[data-final-answer='true']");
    await expect(settled).toBeVisible({ timeout: 90_000 });
    await expect(lastTurn(page).locator(".answer")).toHaveCount(1);
    const stored = await storedAnswer(request, o.base, session);
    expect(stored.terminal_state).toBe("completed");
    // What is on screen is what was stored (as Markdown renders it: compare the words).
    const words = (t: string) => t.replace(/[^\p{L}\p{N}]+/gu, " ").trim();
    expect(words(await settled.innerText())).toBe(words(stored.content));
    await expect(lastTurn(page).locator("[data-terminal-state]")).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath("real-model-settled.png"), fullPage: true });

    // A second answer in the same page, watched to its end without a reload: its text does not
    // jump when it settles.
    await watchLayout(page);
    await send(page, "Name three fruits.");
    await expect(page.locator("article.turn")).toHaveCount(2);
    await expect(lastTurn(page).locator(".answer[data-final-answer='true']")).toBeVisible({ timeout: 90_000 });
    const { settle } = await layoutShifts(page);
    if (settle) expect(Math.abs(settle.after - settle.before)).toBeLessThan(1);
    expect(words(await lastTurn(page).locator(".answer").innerText())).toBe(
      words((await storedAnswer(request, o.base, session)).content),
    );
  } finally {
    await stop(o);
  }
});

test("Stop ends a real model's answer where it is, and a reload shows the same partial answer", async ({ page, request }, testInfo) => {
  test.setTimeout(180_000);
  // The phone's Stop is tested on the demo agent (chat.spec.ts); what the model's server does
  // when a turn stops is the same whatever the screen.
  test.skip(testInfo.project.name === "phone", "the model's side of Stop is the same on a phone");
  const o = await own(request, testInfo, 1, ["--max-tokens", "2000", "--context-tokens", "4096"]);
  try {
    const session = await openSession(page, request, o.base);
    await send(page, "Write a very long story about a lighthouse keeper, with many chapters.");
    const answer = lastTurn(page).locator(".answer");
    await expect(answer).toHaveAttribute("data-final-answer", "streaming", { timeout: 60_000 });
    await expect.poll(async () => (await answer.innerText()).length, { timeout: 30_000 }).toBeGreaterThan(40);
    await page.getByRole("button", { name: "Stop" }).click();
    const card = lastTurn(page).locator("[data-terminal-state='cancelled']");
    await expect(card).toBeVisible({ timeout: 20_000 });
    await expect(answer).toHaveAttribute("data-final-answer", "partial");
    // Nothing more arrives.
    const stopped = await answer.innerText();
    await page.waitForTimeout(1500);
    expect(await answer.innerText()).toBe(stopped);
    // The model server is free again: its generation ended with the Stop (a request to it would
    // otherwise wait for the rest of a 2,000-token story). A one-token answer on a busy machine
    // took over 5 s once, so the bound is 30 s.
    const probe = await request.post(`${LLAMA}/chat/completions`, {
      data: { model: await modelId(request), messages: [{ role: "user", content: "Hi" }], max_tokens: 1 },
      timeout: 30_000,
    });
    expect(probe.ok()).toBe(true);
    // The composer is back to Send, with the focus where the person can type.
    await expect(page.getByRole("button", { name: "Send" })).toBeVisible();
    await page.screenshot({ path: testInfo.outputPath("real-model-stopped.png"), fullPage: true });
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-terminal-state='cancelled']")).toBeVisible();
    const words = (t: string) => t.replace(/[^\p{L}\p{N}]+/gu, " ").trim();
    expect(words(await lastTurn(page).locator(".answer").innerText())).toBe(words(stopped));
    await expect(lastTurn(page).locator(".partial-note")).toBeVisible();
    const stored = await storedAnswer(request, o.base, session);
    expect(stored.partial).toBe(true);
  } finally {
    await stop(o);
  }
});

test("an answer cut off by --max-tokens says so and Continue asks for the rest", async ({ page, request }, testInfo) => {
  test.setTimeout(180_000);
  const o = await own(request, testInfo, 2, ["--max-tokens", "24", "--context-tokens", "4096"]);
  try {
    await openSession(page, request, o.base);
    await send(page, "Write a long essay about the history of ships, at least ten paragraphs.");
    const turn = lastTurn(page);
    const notice = turn.locator("[data-notice='cut-off']");
    await expect(notice).toBeVisible({ timeout: 90_000 });
    await expect(notice).toContainText("24 tokens");
    // A notice, not a failure: the answer is final and no error card shows.
    await expect(turn.locator(".answer[data-final-answer='true']")).toBeVisible();
    await expect(turn.locator("[data-terminal-state]")).toHaveCount(0);
    // It sits below the answer, inside the screen's width.
    const a = (await turn.locator(".answer").boundingBox())!;
    const n = (await notice.boundingBox())!;
    expect(n.y).toBeGreaterThanOrEqual(a.y + a.height - 1);
    expect(n.x + n.width).toBeLessThanOrEqual(page.viewportSize()!.width);
    const button = notice.getByRole("button", { name: "Continue" });
    await expect(button).toBeEnabled();
    await page.screenshot({ path: testInfo.outputPath("real-model-cut-off.png"), fullPage: true });
    // After a reload it still says so.
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-notice='cut-off']")).toBeVisible();
    await lastTurn(page).locator("[data-notice='cut-off']").getByRole("button", { name: "Continue" }).click();
    await expect(page.locator("article.turn")).toHaveCount(2);
    await expect(lastTurn(page).locator(".user-message")).toContainText("Continue");
    await expect(lastTurn(page).locator(".answer[data-final-answer='true']")).toBeVisible({ timeout: 90_000 });
    // Only the last turn's notice offers Continue.
    await expect(page.locator("article.turn").first().locator("[data-continue]")).toBeDisabled();
  } finally {
    await stop(o);
  }
});

test("a conversation longer than the model's context is still answered, saying earlier context was left out", async ({ page, request }, testInfo) => {
  test.setTimeout(240_000);
  test.skip(testInfo.project.name === "phone", "which turns fit the model's window does not depend on the screen");
  // A window of 2,048 tokens (the model server's is larger): the same story with half the
  // prompt for the model to read on two cores.
  const o = await own(request, testInfo, 3, ["--max-tokens", "16", "--context-tokens", "2048"]);
  try {
    await openSession(page, request, o.base);
    let noted = -1;
    for (let round = 0; round < 4 && noted < 0; round++) {
      await send(page, `Note ${round}: ${filler(2250)} Reply with one word.`);
      await expect(page.locator("article.turn")).toHaveCount(round + 1);
      const turn = lastTurn(page);
      await expect(turn.locator(".assistant[data-state='settled']")).toBeVisible({ timeout: 90_000 });
      await expect(turn.locator("[data-terminal-state]")).toHaveCount(0);
      if ((await turn.locator("[data-notice='left-out']").count()) > 0) noted = round;
    }
    expect(noted, "a turn left earlier context out").toBeGreaterThan(0);
    const note = lastTurn(page).locator("[data-notice='left-out']");
    await expect(note).toContainText("2,048");
    // The note comes before the answer.
    const answer = lastTurn(page).locator(".answer");
    await expect(answer).toBeVisible();
    expect((await note.boundingBox())!.y).toBeLessThan((await answer.boundingBox())!.y);
    // Earlier turns that were answered in full say nothing of the kind.
    await expect(page.locator("article.turn").first().locator("[data-notice='left-out']")).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath("real-model-left-out.png"), fullPage: true });
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-notice='left-out']")).toBeVisible();
    // Only the turn that left context out says so.
    await expect(page.locator("[data-notice='left-out']")).toHaveCount(1);
  } finally {
    await stop(o);
  }
});

test("one message larger than the model's context ends with a card that says what to do", async ({ page, request }, testInfo) => {
  test.setTimeout(120_000);
  const o = await own(request, testInfo, 4, ["--max-tokens", "64", "--context-tokens", "4096"]);
  try {
    await openSession(page, request, o.base);
    await send(page, filler(40_000));
    const card = lastTurn(page).locator("[data-terminal-state='compression_exhausted']");
    await expect(card).toBeVisible({ timeout: 30_000 });
    await expect(card).toContainText("4,096");
    await expect(card).toContainText("Shorten");
    await expect(lastTurn(page).locator(".answer")).toHaveCount(0);
    // Not offered again as it is (it cannot fit): no Retry on the card.
    await expect(card.getByRole("button", { name: "Retry" })).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath("real-model-overflow.png"), fullPage: false });
  } finally {
    await stop(o);
  }
});
