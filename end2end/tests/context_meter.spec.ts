import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { provider } from "./provider";
import { hydrated, lastTurn, send } from "./support";

// The context meter under the composer, with the `openai` backend against a scripted provider
// and a small window: it fills as the conversation grows and says what the next turn would
// leave out, before it is sent; the turn then leaves out just that.

const WINDOW = 6000;
const RESERVE = 500;

/** `n` bytes of words starting with `letter`. */
function words(n: number, letter: string): string {
  let out = "";
  while (out.length < n) out += `${letter}bcd `;
  return out.slice(0, n - 1) + ".";
}

const fill = async (page: Page) =>
  page.locator(".context-fill").evaluate((el) => el.getBoundingClientRect().width);

test("the context meter fills as the conversation grows and says what the next message would leave out", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-meter-"));
  const upstream = await provider(["scripted"], () => "Noted.");
  const server = startServer(port, dataDir, {
    ...openAiEnv(upstream.url, dataDir),
    ANCHORAGE_CONTEXT_TOKENS: String(WINDOW),
    ANCHORAGE_MAX_TOKENS: String(RESERVE),
  });
  try {
    await waitHealthy(request, base);
    // What a request takes before any history (instructions, tools): the room left is split
    // so that two long messages fit with a third typed, and three do not.
    const probe = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    const fixed = (await (await request.get(`${base}/api/session/context?session_id=${probe}&draft_bytes=0`)).json()).used;
    const room = WINDOW - RESERVE - fixed;
    expect(room).toBeGreaterThan(600);
    const bytes = Math.floor(room * 0.4) * 3;

    await page.goto(`${base}/new`);
    await hydrated(page);
    const meter = page.getByRole("meter", { name: "Context used" });
    // A new conversation has nothing to measure yet.
    await expect(meter).toHaveCount(0);
    await send(page, words(bytes, "a"));
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Noted.", { timeout: 20_000 });
    await expect(meter).toBeVisible();
    await expect(meter).toBeInViewport();
    await expect(meter).toHaveAttribute("data-level", "ok");
    await expect(meter.locator(".context-text")).toHaveText(/ \/ 6\.0k$/);
    const afterOne = await fill(page);
    expect(afterOne).toBeGreaterThan(0);

    await send(page, words(bytes, "b"));
    await expect(page.locator("article.turn")).toHaveCount(2);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Noted.", { timeout: 20_000 });
    // The long message fills it further, past the warning mark.
    await expect.poll(() => fill(page)).toBeGreaterThan(afterOne);
    await expect(meter).toHaveAttribute("data-level", "warn");
    await expect(meter.locator(".context-note")).toHaveCount(0);

    // A third long message, typed: the next turn would leave out the first exchange, and the
    // meter says so before anything is sent.
    const field = page.getByRole("textbox", { name: "Message" });
    const third = words(bytes, "c");
    await field.fill(third);
    await expect(meter.locator(".context-note")).toHaveText("The oldest 2 messages will be left out");
    await expect(meter).toHaveAttribute("data-level", "full");
    await expect(meter).toHaveAttribute("aria-valuetext", /The oldest 2 messages will be left out/);
    await page.screenshot({ path: testInfo.outputPath("meter.png") });
    // Shorter again, it fits.
    await field.fill("short");
    await expect(meter.locator(".context-note")).toHaveCount(0);

    // Sent, the turn leaves out exactly the first exchange.
    await field.fill(third);
    await expect(meter.locator(".context-note")).toBeVisible();
    await page.getByRole("button", { name: "Send" }).click();
    await expect(page.locator("article.turn")).toHaveCount(3);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Noted.", { timeout: 20_000 });
    const sent = upstream.completions[2].messages.map((m: any) => m.content);
    expect(sent.some((c: string) => c.startsWith("abcd"))).toBe(false);
    expect(sent.some((c: string) => c.startsWith("bbcd"))).toBe(true);
    expect(sent[sent.length - 1]).toBe(third);
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("no meter where the window is not known", async ({ page, request }) => {
  // A provider's model of no known size, and no --context-tokens: nothing to measure against.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-meter-"));
  const upstream = await provider(["scripted"], () => "Noted.");
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
  try {
    await waitHealthy(request, base);
    const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);
    await send(page, "hello");
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Noted.", { timeout: 20_000 });
    const answer = await (await request.get(`${base}/api/session/context?session_id=${session}&draft_bytes=10`)).json();
    expect(answer.window).toBeNull();
    await expect(page.getByRole("meter", { name: "Context used" })).toHaveCount(0);
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("the demo agent's pretend window has a meter from the first HTML on", async ({ page, request }) => {
  // The suite's own server runs the demo agent, which says its model has 16,384 tokens.
  const session = (await (await request.post("/api/session/new", { data: {} })).json()).session.id;
  const html = await (await request.get(`/s/${session}`)).text();
  expect(html).toContain("meter-only");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await expect(page.getByRole("meter", { name: "Context used" })).toContainText("/ 16k");
});
