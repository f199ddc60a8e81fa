import { test, expect } from "./fixtures";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { kill9, startServer, waitHealthy } from "./own_server";
import { provider } from "./provider";
import { hydrated, lastTurn, send } from "./support";

// The model picker with the `openai` backend, against a scripted provider that lists three
// models (one named by its file, as llama.cpp's server does) and answers with the model it
// was asked for.

test("the composer offers the provider's models; a choice holds for the conversation and each answer names its model", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = 3460 + testInfo.parallelIndex + (testInfo.project.name === "phone" ? 20 : 0);
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-models-"));
  const upstream = await provider(["scripted", "b-model", "/models/gemma-3-270m-it-Q4_K_M.gguf"], (r) => `Answered by ${r.model}.`);
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
