import { test, expect } from "./fixtures";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "http";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { accessibilityProblems, hydrated, isPhone, lastTurn, send } from "./support";

// A model that pauses, then one that goes silent for good, on the openai backend against a
// scripted provider over a real socket: the page says it is waiting (never "Live" with nothing
// coming), the silent one ends the turn with an error that keeps what streamed, and Retry
// answers.

const PAUSE_MS = 14_000;
const IDLE_SECS = 18;

function chunk(delta: object, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** The first completion pauses mid-answer and goes on; the second goes silent with the
 * connection open; any later one answers at once. */
function pausingProvider(): Promise<{ server: Server; url: string; held: ServerResponse[] }> {
  let completions = 0;
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "scripted", object: "model" }] }));
        return;
      }
      completions += 1;
      res.writeHead(200, { "content-type": "text/event-stream" });
      const end = (text: string) => {
        res.write(chunk({ content: text }));
        res.write(chunk({}, "stop"));
        res.end("data: [DONE]\n\n");
      };
      if (completions === 1) {
        res.write(chunk({ content: "I started and then " }));
        setTimeout(() => !res.destroyed && end("finished after a pause."), PAUSE_MS);
      } else if (completions === 2) {
        res.write(chunk({ content: "I began to say " }));
        held.push(res);
      } else {
        end("A whole answer, this time.");
      }
    });
  });
  return new Promise((done) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      done({ server, url: `http://127.0.0.1:${port}/v1`, held });
    }),
  );
}

test("a model that pauses is said to be waited for; one that goes silent ends the turn, and Retry answers", async ({ page, request }, testInfo) => {
  test.setTimeout(150_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-quiet-"));
  const upstream = await pausingProvider();
  const server = startServer(port, dataDir, {
    ...openAiEnv(upstream.url, dataDir),
    ANCHORAGE_UPSTREAM_IDLE_SECS: String(IDLE_SECS),
  });
  try {
    await waitHealthy(request, base);
    const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);

    // A pause mid-answer: what streamed stays, and the header says it waits (seconds going up),
    // at either width.
    await send(page, "Hi");
    const first = lastTurn(page);
    await expect(first).toContainText("I started and then", { timeout: 20_000 });
    // A phone's header has room for fewer words.
    const phone = isPhone(page);
    const note = page.locator(phone ? ".connection .connection-short" : ".connection .connection-long");
    const waiting = phone ? /^Waiting (\d+) s$/ : /^Waiting for the model \((\d+) s\)$/;
    if (!phone) await expect(note).toHaveText("Live");
    await expect(note).toHaveText(waiting, { timeout: 15_000 });
    await expect(note).toBeVisible();
    // Whole, inside the header, and the title still shows.
    const box = (await note.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(page.viewportSize()!.width);
    expect(await note.evaluate((el) => el.parentElement!.scrollWidth <= el.parentElement!.clientWidth)).toBe(true);
    await expect(page.locator(".chat-title")).toBeVisible();
    const said = Number((await note.textContent())!.match(waiting)![1]);
    expect(said).toBeGreaterThanOrEqual(10);
    await expect(async () => {
      const now = Number((await note.textContent())!.match(waiting)?.[1] ?? "0");
      expect(now).toBeGreaterThan(said);
    }).toPass({ timeout: 5_000 });
    await page.screenshot({ path: testInfo.outputPath("waiting.png") });
    expect(await accessibilityProblems(page, ".chat-header")).toEqual([]);
    // It goes on: the note gives way, the answer completes.
    await expect(first.locator("[data-final-answer='true']")).toContainText("I started and then finished after a pause.", {
      timeout: 20_000,
    });
    await expect(page.locator(".connection[data-quiet]")).toHaveCount(0);
    await expect(first.locator("[data-terminal-state]")).toHaveCount(0);

    // A model that goes silent for good: past the idle bound the turn ends, saying why, with
    // what it had said kept; never left looking live.
    await send(page, "Again");
    const second = lastTurn(page);
    await expect(second).toContainText("I began to say", { timeout: 20_000 });
    await expect(note).toHaveText(waiting, { timeout: 15_000 });
    const card = second.locator("[data-terminal-state='error']");
    await expect(card).toBeVisible({ timeout: (IDLE_SECS + 15) * 1000 });
    await expect(card).toContainText("The model stopped responding.");
    await expect(second).toContainText("I began to say");
    await expect(page.locator(".connection[data-quiet]")).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath("stopped-responding.png") });

    // A reload shows the same turn.
    await page.reload();
    await hydrated(page);
    const reloaded = lastTurn(page);
    await expect(reloaded.locator("[data-terminal-state='error']")).toContainText("The model stopped responding.");
    await expect(reloaded).toContainText("I began to say");

    // Retry answers.
    await reloaded.locator("[data-terminal-state='error']").getByRole("button", { name: "Retry" }).click();
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("A whole answer, this time.", {
      timeout: 20_000,
    });
  } finally {
    for (const res of upstream.held) res.destroy();
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
