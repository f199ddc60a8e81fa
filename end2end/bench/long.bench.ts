import { test, expect, type APIRequestContext } from "@playwright/test";
import { median, timeToLive } from "./live";

// Issue 14's measure: what a long conversation costs to open. Three sessions filled through the
// demo agent (run the server with ANCHORAGE_DEMO_DELAY_MS=0): A = 20 `/demo tools` turns;
// B = 4 `/demo trace 5000` turns, then 400 `/demo tools` turns; C = 20 `/demo tools` turns,
// then 3 `/demo trace 5000` turns. For each, the HTML of `/s/{id}` (bytes as sent uncompressed)
// and the time until the page is live (`data-markdown="ready"`) in Chromium with the CPU
// throttled 4x, the median of 5 loads; B and C as ratios to A, measured in the same run.
// Prints one JSON line.

async function turn(request: APIRequestContext, session: string, message: string): Promise<void> {
  const res = await request.post("/api/chat/start", { data: { session_id: session, message } });
  expect(res.ok()).toBeTruthy();
  const run = (await res.json()).run_id;
  await expect
    .poll(async () => (await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json()).active, {
      timeout: 120_000,
      intervals: [50, 100, 250],
    })
    .toBe(false);
}

async function session(request: APIRequestContext, title: string, turns: string[]): Promise<string> {
  const id = (await (await request.post("/api/session/new", { data: { title } })).json()).session.id;
  for (const message of turns) await turn(request, id, message);
  return id;
}

const times = (n: number, message: string) => Array.from({ length: n }, () => message);

test("long conversations open as fast as short ones", async ({ page, request }) => {
  test.setTimeout(1_800_000);
  const a = await session(request, "A", times(20, "/demo tools"));
  const b = await session(request, "B", [...times(4, "/demo trace 5000"), ...times(400, "/demo tools")]);
  const c = await session(request, "C", [...times(20, "/demo tools"), ...times(3, "/demo trace 5000")]);

  const measured: Record<string, { html_bytes: number; live_ms: number; turns_shown: number }> = {};
  for (const [name, id] of [["A", a], ["B", b], ["C", c]] as const) {
    const html = await (await request.get(`/s/${id}`, { headers: { "accept-encoding": "identity" } })).text();
    const loads: number[] = [];
    for (let i = 0; i < 5; i++) loads.push(await timeToLive(page, `/s/${id}`));
    measured[name] = {
      html_bytes: Buffer.byteLength(html),
      live_ms: median(loads),
      turns_shown: await page.locator("article.turn").count(),
    };
  }
  const ratio = (x: string, key: "html_bytes" | "live_ms") =>
    Math.round((measured[x][key] / measured.A[key]) * 100) / 100;
  console.log(
    JSON.stringify({
      ...measured,
      B_over_A: { html: ratio("B", "html_bytes"), live: ratio("B", "live_ms") },
      C_over_A: { html: ratio("C", "html_bytes"), live: ratio("C", "live_ms") },
    }),
  );
});
