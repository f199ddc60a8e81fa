import { test, expect } from "./fixtures";
import { mkdirSync, mkdtempSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { provider } from "./provider";
import { accessibilityProblems, hydrated, isPhone, lastTurn, send } from "./support";

// The agent's workspace in view, with the `openai` backend (whose tools work in a workspace)
// against a scripted provider that has the agent write a file.

/** A 1×1 PNG. */
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63000100000500010d0a2db40000000049454e44ae426082",
  "hex",
);

test("the Files panel lists the workspace and previews Markdown, code and images; the file the agent wrote opens from its tool row", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-files-"));
  const workspace = join(dataDir, "workspace");
  mkdirSync(join(workspace, "notes"), { recursive: true });
  mkdirSync(join(workspace, "src"), { recursive: true });
  writeFileSync(join(workspace, "src", "fib.rs"), "pub fn fib(n: u32) -> u64 {\n    n as u64\n}\n");
  writeFileSync(join(workspace, "dot.png"), PNG);
  // The agent writes the plans (the person allows it), then answers.
  const upstream = await provider(["scripted"], (req) =>
    req.messages.some((m: any) => m.role === "tool")
      ? "Written."
      : { tool: "write_file", args: { path: "notes/plans.md", content: "# Plans\n\nWe **sail** at dawn.\n" } },
  );
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
  try {
    await waitHealthy(request, base);
    await page.goto(`${base}/new`);
    await hydrated(page);
    await send(page, "Write down my plans");
    await page.getByRole("button", { name: "Allow once" }).click();
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Written.", { timeout: 20_000 });

    // The header's Files opens the panel on the workspace's top.
    const files = page.getByRole("button", { name: "Files", exact: true });
    await files.click();
    const panel = page.locator("#files-panel");
    await expect(panel).toBeVisible();
    await expect(panel).toBeInViewport();
    const entries = panel.locator(".files-entry .files-name");
    await expect(entries).toHaveText(["notes/", "src/", "dot.png"]);
    await page.screenshot({ path: testInfo.outputPath("files.png") });
    expect(await accessibilityProblems(page, "#files-panel")).toEqual([]);

    // Markdown is rendered.
    await panel.getByRole("button", { name: "notes/" }).click();
    await expect(entries).toHaveText(["plans.md"]);
    await panel.locator(".files-entry", { hasText: "plans.md" }).click();
    await expect(panel.locator(".files-markdown strong")).toHaveText("sail");
    await expect(panel.locator(".files-preview a", { hasText: "Download" })).toHaveAttribute("href", /download=true/);
    await page.screenshot({ path: testInfo.outputPath("markdown.png") });

    // Code is coloured; an image is shown.
    await panel.locator(".files-crumb", { hasText: "Workspace" }).click();
    await panel.getByRole("button", { name: "src/" }).click();
    await panel.locator(".files-entry", { hasText: "fib.rs" }).click();
    await expect(panel.locator(".files-text .hl-keyword").first()).toHaveText("pub");
    await expect(panel.locator(".files-text")).toContainText("pub fn fib(n: u32) -> u64 {");
    await panel.locator(".files-crumb", { hasText: "Workspace" }).click();
    await panel.locator(".files-entry", { hasText: "dot.png" }).click();
    await expect.poll(() => panel.locator(".files-image").evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);

    if (!isPhone(page)) {
      // On a desktop its edge is dragged to make it wider.
      const before = (await panel.boundingBox())!.width;
      const edge = (await panel.locator(".files-resize").boundingBox())!;
      await page.mouse.move(edge.x + edge.width / 2, edge.y + 200);
      await page.mouse.down();
      await page.mouse.move(edge.x - 120, edge.y + 200, { steps: 4 });
      await page.mouse.up();
      expect((await panel.boundingBox())!.width).toBeGreaterThan(before + 80);
    }

    // Closed; then the tool row that wrote the plans opens the panel at them.
    await panel.getByRole("button", { name: "Close files" }).click();
    await expect(panel).toBeHidden();
    const turn = lastTurn(page);
    if ((await turn.locator(".tool-card").count()) === 0 || !(await turn.locator(".tool-card").first().isVisible())) {
      await turn.locator(".worklog-summary").click();
    }
    await turn.locator(".tool-card .tool-head").first().click();
    await turn.getByRole("button", { name: "Show in Files" }).click();
    await expect(panel).toBeVisible();
    await expect(panel.locator(".files-markdown strong")).toHaveText("sail");
    await expect(panel.locator(".files-entry[aria-current='true']")).toContainText("plans.md");
    await page.screenshot({ path: testInfo.outputPath("from-tool-row.png") });
    await page.keyboard.press("Escape");
    await expect(panel).toBeHidden();
  } finally {
    await kill9(server);
    upstream.server.close();
  }
});
