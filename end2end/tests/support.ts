import { expect, type APIRequestContext, type Page } from "@playwright/test";

/** Resolves once the wasm bundle has hydrated the page (an Effect sets the marker). */
export async function hydrated(page: Page): Promise<void> {
  await expect(page.locator(".app[data-hydrated='true']")).toHaveCount(1);
}

/** Resolves once the Markdown renderer is loaded (release builds fetch it after hydration). */
export async function rendererReady(page: Page): Promise<void> {
  await expect(page.locator(".app[data-markdown='ready']")).toHaveCount(1);
}

/** True when the viewport is the phone layout (≤ 640 px wide). */
export function isPhone(page: Page): boolean {
  return (page.viewportSize()?.width ?? 1280) <= 640;
}

/** Creates a session through the API; returns its id. */
export async function newSession(request: APIRequestContext, title?: string): Promise<string> {
  const res = await request.post("/api/session/new", { data: title ? { title } : {} });
  expect(res.ok()).toBeTruthy();
  return (await res.json()).session.id;
}

/** Starts a turn through the API; returns its run id. */
/** Creates a session and opens its page, hydrated; returns its id. */
export async function openNewSession(page: Page, request: APIRequestContext): Promise<string> {
  const session = await newSession(request);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  return session;
}

export async function startTurn(request: APIRequestContext, session: string, message: string): Promise<string> {
  const res = await request.post("/api/chat/start", { data: { session_id: session, message } });
  expect(res.ok()).toBeTruthy();
  return (await res.json()).run_id;
}

/** Waits (through the API) until a run has ended. */
export async function waitRunEnd(request: APIRequestContext, run: string): Promise<any> {
  let status: any = {};
  await expect
    .poll(
      async () => {
        status = await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json();
        return status.terminal_state !== null && status.active === false;
      },
      { timeout: 60_000 },
    )
    .toBeTruthy();
  return status;
}

/** A run's journal (JSON Lines export of its session, filtered to the run). */
export async function journal(request: APIRequestContext, session: string, run: string): Promise<any[]> {
  const text = await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text();
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.run_id === run);
}

/** Activity rows the anchor keeps for a journal: every event whose type is an activity. */
export const ACTIVITY = new Set([
  "token", "interim_assistant", "reasoning", "tool", "tool_complete", "tool_update", "compressing", "compressed",
  "approval", "clarify", "pending_steer_leftover", "goal_continue", "done", "cancel", "error", "apperror",
]);

/** Types a message into the composer and sends it. */
export async function send(page: Page, text: string): Promise<void> {
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill(text);
  await page.getByRole("button", { name: /^(Send|Queue)$/ }).click();
}

/** The last turn on the page. */
export function lastTurn(page: Page) {
  return page.locator("article.turn").last();
}
