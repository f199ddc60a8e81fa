import { test, expect, type APIRequestContext } from "@playwright/test";
import { median, timeToLive } from "./live";

// Issue 14's sidebar measure: what a page costs with 10 sessions in its sidebar and with 1,000.
// Run against two release servers on fresh data directories (BASE_URL gets 10 sessions,
// OTHER_URL 1,000). For `/s/{id}` of a conversation with one `/demo tools` turn and for `/new`:
// the HTML (bytes as sent uncompressed) and the time until the page is live
// (`data-markdown="ready"`) in Chromium with the CPU throttled 4x, the median of 9 loads taken
// in turns from both; the 1,000 as ratios to the 10. Prints one JSON line.

async function count(request: APIRequestContext, base: string): Promise<number> {
  let total = 0;
  for (;;) {
    const page = await (await request.get(`${base}/api/sessions?offset=${total}&limit=200`)).json();
    total += page.sessions.length;
    if (!page.more) return total;
  }
}

// The two servers: one with 10 sessions, one with 1,000 (both fresh), loaded in turns.
const TEN = process.env.BASE_URL || "http://127.0.0.1:3500";
const THOUSAND = process.env.OTHER_URL || "http://127.0.0.1:3501";

async function fill(request: APIRequestContext, base: string, sessions: number): Promise<string> {
  const existing = await count(request, base);
  expect(existing, "run on fresh data directories").toBeLessThanOrEqual(10);
  const create = async (title: string) =>
    (await (await request.post(`${base}/api/session/new`, { data: { title } })).json()).session.id as string;
  const id = await create("The open conversation");
  const res = await request.post(`${base}/api/chat/start`, { data: { session_id: id, message: "/demo tools" } });
  const run = (await res.json()).run_id;
  await expect
    .poll(async () => (await (await request.get(`${base}/api/chat/stream/status?run_id=${run}`)).json()).active, { timeout: 60_000 })
    .toBe(false);
  for (let n = existing + 1; n < sessions; n++) await create(`Session ${n}`);
  expect(await count(request, base)).toBe(sessions);
  return id;
}

test("a sidebar of 1,000 sessions costs what one of 10 does", async ({ page, request }) => {
  test.setTimeout(1_200_000);
  const ids = { ten: await fill(request, TEN, 10), thousand: await fill(request, THOUSAND, 1000) };
  const bases = { ten: TEN, thousand: THOUSAND };
  const result: Record<string, Record<string, { html_bytes: number; live_ms: number }>> = { ten: {}, thousand: {} };
  for (const [what, path] of [["session", (k: "ten" | "thousand") => `/s/${ids[k]}`], ["new", () => "/new"]] as const) {
    const loads: Record<string, number[]> = { ten: [], thousand: [] };
    // In turns, so that both see the same machine.
    for (let i = 0; i < 9; i++) {
      for (const k of ["ten", "thousand"] as const) loads[k].push(await timeToLive(page, bases[k] + path(k)));
    }
    for (const k of ["ten", "thousand"] as const) {
      const html = await (await request.get(bases[k] + path(k), { headers: { "accept-encoding": "identity" } })).text();
      result[k][what] = { html_bytes: Buffer.byteLength(html), live_ms: median(loads[k]) };
    }
  }
  const ratio = (what: string, key: "html_bytes" | "live_ms") =>
    Math.round((result.thousand[what][key] / result.ten[what][key]) * 100) / 100;
  console.log(
    JSON.stringify({
      sessions_10: result.ten,
      sessions_1000: result.thousand,
      ratio_session: { html: ratio("session", "html_bytes"), live: ratio("session", "live_ms") },
      ratio_new: { html: ratio("new", "html_bytes"), live: ratio("new", "live_ms") },
    }),
  );
});
