import { test, expect } from "./fixtures";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { provider } from "./provider";
import { hydrated, lastTurn, layoutShifts, send, watchLayout } from "./support";

// The model picker with the `openai` backend, against a scripted provider that lists three
// models (one named by its file, as llama.cpp's server does) and answers with the model it
// was asked for.

test("the composer offers the provider's models; a choice holds for the conversation and each answer names its model", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-models-"));
  const upstream = await provider(["scripted", "b-model", "/models/gemma-3-270m-it-Q4_K_M.gguf"], (r) => `Answered by ${r.model}.`);
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
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

test("an answer's footer fills in once, when it settles: its model name and usage do not jump aside", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-footer-"));
  // Word by word, 40 ms apart: the answer streams over many frames, with its model known.
  const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
  const upstream = await provider(["scripted"], () => words, 40);
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
  try {
    await waitHealthy(request, base);
    await page.goto(`${base}/new`);
    await hydrated(page);
    await watchLayout(page);
    // Every frame, where each thing in the last answer's footer is, from the first it shows.
    await page.evaluate(() => {
      const w = window as any;
      w.__footer = { streaming: 0, moves: [] as string[], first: {} as Record<string, { x: number; y: number }> };
      const tick = () => {
        const turn = document.querySelector("article.turn:last-of-type");
        const running = turn?.querySelector(".assistant")?.getAttribute("data-state") !== "settled";
        if (turn && running && turn.querySelector("[data-final-answer='streaming']")) w.__footer.streaming += 1;
        // Within the footer (which moves down as the answer grows, as it should).
        const box = turn?.querySelector(".turn-footer")?.getBoundingClientRect();
        for (const el of (box && turn?.querySelectorAll(".turn-footer > *")) || []) {
          const key = `${el.className || el.tagName} ${el.getAttribute("aria-label") ?? el.getAttribute("title") ?? ""}`.trim();
          const r = el.getBoundingClientRect();
          const at = { x: r.left - box!.left, y: r.top - box!.top };
          const first = w.__footer.first[key];
          if (!first) w.__footer.first[key] = at;
          else if (Math.abs(first.x - at.x) > 0.5 || Math.abs(first.y - at.y) > 0.5) {
            const move = `${key}: ${JSON.stringify(first)} -> ${JSON.stringify(at)}`;
            if (!w.__footer.moves.includes(move)) w.__footer.moves.push(move);
          }
        }
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    await send(page, "hello");
    const turn = lastTurn(page);
    await expect(turn.locator("[data-final-answer='true']")).toHaveText(words, { timeout: 30_000 });
    await expect(turn.locator(".assistant")).toHaveAttribute("data-state", "settled");
    await page.waitForTimeout(400);
    // What a reader sees under the settled answer: when, which model, how many tokens.
    const footer = turn.locator(".turn-footer");
    await expect(footer.locator(".timestamp")).toBeVisible();
    await expect(footer.locator(".turn-model")).toHaveText("scripted");
    await expect(footer.locator(".usage")).toContainText("34");
    await expect(footer.getByRole("button", { name: "Copy answer" })).toBeVisible();
    // On one line, at 390 px too: every button whole and inside the screen.
    const lines = await footer.evaluate((f) => {
      const tallest = Math.max(...[...f.children].map((c) => c.getBoundingClientRect().height));
      return f.getBoundingClientRect().height / tallest;
    });
    expect(lines).toBeLessThan(1.5);
    for (const button of await footer.getByRole("button").all()) {
      await expect(button).toBeInViewport({ ratio: 1 });
      expect(await button.evaluate((b) => b.scrollWidth <= b.clientWidth + 1)).toBe(true);
    }
    const seen = await page.evaluate(() => (window as any).__footer);
    expect(seen.streaming, "the answer streamed over many frames").toBeGreaterThan(10);
    expect(seen.moves).toEqual([]);
    const { shifts } = await layoutShifts(page);
    const footerShifts = shifts.filter((s: any) => s.sources.some((x: string) => /usage|turn-model|timestamp|copy|message-action|menu/i.test(x)));
    expect(footerShifts).toEqual([]);
    await page.screenshot({ path: testInfo.outputPath("footer.png") });
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
