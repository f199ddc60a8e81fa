import { expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";

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
      // A demo turn ends within a fraction of a second: asked often, a test that makes many
      // of them does not spend most of its time between two questions.
      { timeout: 60_000, intervals: [20, 40, 80, 160, 250] },
    )
    .toBeTruthy();
  return status;
}

/** A run's journal (JSON Lines export of its session, filtered to the run's journal rows). */
export async function journal(request: APIRequestContext, session: string, run: string): Promise<any[]> {
  const text = await (await request.get(`/api/session/export?session_id=${session}&format=jsonl`)).text();
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.run_id === run && r.seq !== undefined);
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

/** Chooses `item` in the "⋯" menu of a conversation's row in the sidebar. */
export async function rowAction(row: Locator, item: string): Promise<void> {
  await row.getByRole("button", { name: "More for this conversation" }).click();
  await row.getByRole("menuitem", { name: item, exact: true }).click();
}

/** The last turn on the page. */
export function lastTurn(page: Page) {
  return page.locator("article.turn").last();
}

/**
 * Sends a message the way a script would, not a person: no input event, so every layout shift
 * that follows counts (a person's click or key hides the shifts of the next 500 ms).
 */
export async function sendQuietly(page: Page, text: string): Promise<void> {
  await page.evaluate((text) => {
    const field = document.querySelector<HTMLTextAreaElement>("#composer-input")!;
    field.value = text;
    field.dispatchEvent(new Event("input", { bubbles: true }));
    field.form!.requestSubmit();
  }, text);
}

/**
 * Watches what a person would see move: the layout shifts not caused by their own input
 * (summed from now on), and the top edge of the last turn's answer in the frame before it
 * settled and in the frame it settled.
 */
export async function watchLayout(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as any;
    w.__shifts = [];
    w.__settle = null;
    if (!w.__observer) {
      w.__observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries() as any[]) {
          if (!e.hadRecentInput) {
            w.__shifts.push({
              value: e.value,
              at: e.startTime,
              sources: (e.sources || []).map((s: any) => `${s.node?.nodeName ?? "?"}.${(s.node as Element)?.className ?? ""} ${JSON.stringify(s.previousRect)} -> ${JSON.stringify(s.currentRect)}`),
            });
          }
        }
      });
      w.__observer.observe({ type: "layout-shift" });
    }
    let previous: { state: string | null; top: number | null; screen: number | null } | null = null;
    const measure = () => {
      const answer = document.querySelector("article.turn:last-of-type .answer");
      const state = answer?.getAttribute("data-final-answer") ?? null;
      // Where the answer is laid out in the conversation: from where the transcript's content
      // begins, so that following the bottom (scrolling is not moving) does not count, and
      // exactly (scrollTop is rounded to a whole pixel, a box's edge is not).
      const origin = document.querySelector(".transcript > *")?.getBoundingClientRect().top ?? 0;
      const top = answer ? answer.getBoundingClientRect().top - origin : null;
      // And where it is on screen, in the transcript's window: a worklog that folds above it
      // while the transcript scrolls by as much moves it in the conversation, not on screen.
      const window = document.querySelector(".transcript")?.getBoundingClientRect().top ?? 0;
      const screen = answer ? answer.getBoundingClientRect().top - window : null;
      if (w.__settle === null && previous?.state === "streaming" && state && state !== "streaming") {
        // The move a person sees: none if it kept its place either way.
        const moved = (a: number | null, b: number | null) => (a === null || b === null ? Infinity : Math.abs(a - b));
        const still = moved(previous.top, top) <= moved(previous.screen, screen) ? { before: previous.top, after: top } : { before: previous.screen, after: screen };
        w.__settle = { ...still, state };
      }
      previous = { state, top, screen };
    };
    // Once per frame, after it is painted: as the reader saw it.
    const tick = () => {
      setTimeout(measure, 0);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

/** The layout shifts seen since `watchLayout`: their sum and what moved. */
export async function layoutShifts(page: Page): Promise<{ total: number; shifts: any[]; settle: any }> {
  return page.evaluate(() => {
    const w = window as any;
    const shifts = w.__shifts as any[];
    return { total: shifts.reduce((a, s) => a + s.value, 0), shifts, settle: w.__settle };
  });
}

/** Chooses the view every turn opens in (the header's switch). */
export async function setMode(page: Page, mode: "Worklog" | "Stream") {
  await page.locator("[data-mode-switch] button", { hasText: mode }).click();
}

/** Waits until the last turn has ended, on the page. */
export async function settled(page: Page) {
  await expect(lastTurn(page).locator(".assistant")).toHaveAttribute("data-state", "settled", { timeout: 60_000 });
  // The settled message and the follower's last frames land in the next frames.
  await page.waitForTimeout(400);
}

/**
 * axe-core's serious and critical findings in what `selector` matches (the whole page
 * without one), as "rule: where" lines: a test expects none.
 */
export async function accessibilityProblems(page: Page, selector?: string): Promise<string[]> {
  const { default: AxeBuilder } = await import("@axe-core/playwright");
  let builder = new AxeBuilder({ page });
  if (selector) builder = builder.include(selector);
  const result = await builder.analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}
