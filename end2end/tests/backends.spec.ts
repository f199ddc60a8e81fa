import { test, expect } from "./fixtures";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "http";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn, send } from "./support";

// The page with the `openai` backend, against a scripted OpenAI-compatible provider that speaks
// the streaming protocol over a real socket: reasoning and text deltas, a tool call whose
// arguments arrive in pieces, then the answer once the tool result comes back.

type Chunk = Record<string, unknown>;

function frame(delta: Chunk, finish: string | null = null): string {
  const chunk = { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function writeCall(piece: string, first: boolean): Chunk {
  const fn: Chunk = { arguments: piece };
  if (first) fn.name = "write_file";
  const call: Chunk = { index: 0, type: "function", function: fn };
  if (first) call.id = "call_w1";
  return { tool_calls: [call] };
}

function provider(): Promise<{ server: Server; url: string; requests: any[] }> {
  const requests: any[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        // The composer's model picker asks for the list.
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "scripted", object: "model" }] }));
        return;
      }
      const parsed = JSON.parse(body || "{}");
      requests.push(parsed);
      const last = parsed.messages?.[parsed.messages.length - 1];
      res.writeHead(200, { "content-type": "text/event-stream" });
      const frames =
        last?.role === "tool"
          ? [
              frame({ content: "Saved it to " }),
              frame({ content: "**notes/todo.md** — <img src=x onerror=alert(1)>" }),
              frame({}, "stop"),
              `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 321, completion_tokens: 12 } })}\n\n`,
              "data: [DONE]\n\n",
            ]
          : [
              frame({ reasoning_content: "The user wants a note saved. " }),
              frame({ content: "I'll write that down. " }),
              frame(writeCall('{"path": "notes/to', true)),
              frame(writeCall('do.md", "content": "- mi', false)),
              frame(writeCall('lk\\n"}', false)),
              frame({}, "tool_calls"),
              "data: [DONE]\n\n",
            ];
      for (const f of frames) {
        res.write(f);
        await new Promise((r) => setTimeout(r, 30));
      }
      res.end();
    });
  });
  return new Promise((done) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      done({ server, url: `http://127.0.0.1:${port}/v1`, requests });
    }),
  );
}

test("a turn on the openai backend streams, asks before writing a file and settles", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-openai-"));
  const workspace = join(dataDir, "workspace");
  const upstream = await provider();
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
  let dialogs = 0;
  page.on("dialog", (d) => {
    dialogs += 1;
    void d.dismiss();
  });
  try {
    await waitHealthy(request, base);
    const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);
    // The sidebar says who answers.
    await expect(page.locator("[data-agent]")).toHaveText(`scripted · ${new URL(upstream.url).host}`);
    await send(page, "Remember to buy milk");

    const card = page.locator("[data-pending='approval']");
    await expect(card).toBeVisible({ timeout: 20_000 });
    await expect(card).toContainText("write_file notes/todo.md");
    expect(existsSync(join(workspace, "notes", "todo.md"))).toBe(false);
    await card.getByRole("button", { name: "Allow once" }).click();
    await expect(card).toHaveCount(0);

    const turn = lastTurn(page);
    const answer = turn.locator("[data-final-answer='true']");
    await expect(answer).toContainText("Saved it to notes/todo.md", { timeout: 20_000 });
    // Markup from the model is text, not elements.
    await expect(answer).toContainText("<img src=x onerror=alert(1)>");
    await expect(answer.locator("img")).toHaveCount(0);
    await expect(turn.locator("[data-terminal-state]")).toHaveCount(0);
    expect(readFileSync(join(workspace, "notes", "todo.md"), "utf8")).toBe("- milk\n");

    // The process is all there in the Stream: reasoning, the tool with its arguments and result.
    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
    await expect(turn).toContainText("The user wants a note saved.");
    // The approval row says what the user answered.
    await expect(turn.locator(".note-answer")).toHaveText("Allowed once");
    const tool = turn.locator(".tool-card[data-tool-state='done']");
    await expect(tool.locator(".tool-head")).toHaveAttribute("title", "write_file");
    await expect(tool.locator(".tool-action")).toHaveText("Wrote");
    await expect(tool.locator(".tool-target")).toHaveText("notes/todo.md");
    // Detail bodies are built on expand.
    await tool.locator(".tool-head").click();
    await expect(tool.locator(".tool-detail")).toContainText("Wrote 7 bytes to notes/todo.md.");
    await page.screenshot({ path: testInfo.outputPath("openai-turn.png"), fullPage: true });

    // The provider got the tool result back with the call's id, and the first message had
    // the user's text.
    expect(upstream.requests).toHaveLength(2);
    expect(upstream.requests[0].messages.at(-1)).toEqual({ role: "user", content: "Remember to buy milk" });
    expect(upstream.requests[1].messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_w1" });

    // A reload rebuilds the same settled turn from the journal.
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toContainText("Saved it to notes/todo.md");
    expect(dialogs).toBe(0);
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
