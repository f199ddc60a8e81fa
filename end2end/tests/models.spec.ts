import { test, expect } from "./fixtures";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "http";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { kill9, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn, send } from "./support";

// The model picker with the `openai` backend, against a scripted provider that lists three
// models (one named by its file, as llama.cpp's server does) and answers with the model it
// was asked for.

type Provider = { server: Server; url: string; completions: any[]; listings: number };

function provider(): Promise<Provider> {
  const state: Provider = { server: null as unknown as Server, url: "", completions: [], listings: 0 };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        state.listings += 1;
        res.writeHead(200, { "content-type": "application/json" });
        const ids = ["scripted", "b-model", "/models/gemma-3-270m-it-Q4_K_M.gguf"];
        res.end(JSON.stringify({ object: "list", data: ids.map((id) => ({ id, object: "model" })) }));
        return;
      }
      const parsed = JSON.parse(body || "{}");
      state.completions.push(parsed);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ content: `Answered by ${parsed.model}.` }));
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
    });
  });
  return new Promise((done) =>
    state.server.listen(0, "127.0.0.1", () => {
      const address = state.server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      state.url = `http://127.0.0.1:${port}/v1`;
      done(state);
    }),
  );
}

test("the composer offers the provider's models; a choice holds for the conversation and each answer names its model", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = 3460 + testInfo.parallelIndex + (testInfo.project.name === "phone" ? 20 : 0);
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-models-"));
  const upstream = await provider();
  const server = startServer(port, dataDir, {
    ANCHORAGE_BACKEND: "openai",
    OPENAI_BASE_URL: upstream.url,
    OPENAI_API_KEY: "test-key",
    ANCHORAGE_MODEL: "scripted",
    ANCHORAGE_WORKSPACE: join(dataDir, "workspace"),
  });
  try {
    await waitHealthy(request, base);
    await page.goto(`${base}/new`);
    await hydrated(page);
    const picker = page.getByRole("combobox", { name: "Model" });
    await expect(picker).toBeVisible();
    await expect(picker).toBeInViewport();
    // The default is chosen; the provider's list comes in, a file by its name.
    await expect(picker).toHaveValue("scripted");
    await expect(picker.locator("option")).toHaveText(["gemma-3-270m-it-Q4_K_M", "b-model", "scripted"]);
    await page.screenshot({ path: testInfo.outputPath("picker.png") });

    // A new conversation's first message goes to the model picked for it.
    await picker.selectOption("b-model");
    await send(page, "hello");
    const first = lastTurn(page);
    await expect(first.locator("[data-final-answer='true']")).toHaveText("Answered by b-model.", { timeout: 20_000 });
    await expect(first.locator(".turn-model")).toHaveText("b-model");
    expect(upstream.completions.map((c) => c.model)).toEqual(["b-model"]);

    // The choice is the conversation's: it is still there after a reload.
    await page.reload();
    await hydrated(page);
    await expect(picker).toHaveValue("b-model");
    await expect(lastTurn(page).locator(".turn-model")).toHaveText("b-model");

    // Another model for the next turn; the first answer keeps its name.
    await picker.selectOption("scripted");
    await expect.poll(async () => (await (await request.get(`${base}/api/page?session_id=${page.url().split("/s/")[1]}`)).json()).session.model).toBe("scripted");
    await send(page, "again");
    const second = lastTurn(page);
    await expect(second.locator("[data-final-answer='true']")).toHaveText("Answered by scripted.", { timeout: 20_000 });
    await expect(second.locator(".turn-model")).toHaveText("scripted");
    await expect(page.locator("article.turn").first().locator(".turn-model")).toHaveText("b-model");
    expect(upstream.completions.map((c) => c.model)).toEqual(["b-model", "scripted"]);

    // ↻ asks the provider again.
    const asked = upstream.listings;
    await page.waitForTimeout(2_100); // the server asks the provider again at most every 2 s
    await page.getByRole("button", { name: "Refresh the list of models" }).click();
    await expect.poll(() => upstream.listings).toBe(asked + 1);
    await page.screenshot({ path: testInfo.outputPath("turns.png") });
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
