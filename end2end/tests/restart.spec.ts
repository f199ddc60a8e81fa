import { test, expect } from "./fixtures";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn, newSession, send } from "./support";

test("a server killed mid-run comes back and the page shows the turn as interrupted", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-restart-"));
  let server = startServer(port, dataDir);
  try {
    await waitHealthy(request, base);
    const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);
    await send(page, "/demo long 100000");
    const turn = lastTurn(page);
    await expect(turn.locator("[data-final-answer='streaming']")).toBeVisible();
    await expect.poll(async () => Number(await turn.getAttribute("data-last-seq")), { timeout: 20_000 }).toBeGreaterThan(20);

    await kill9(server);
    await expect(page.locator("span.connection")).toHaveAttribute("data-connection", /reconnecting|offline/);
    // Not an empty "running" shell: the turn says it is reconnecting and from where, the last
    // event it shows (frames that arrived before the drop may still be applied at the next
    // paint: the two are read together, once they agree).
    const evidence = turn.locator("[data-evidence='restoring']");
    let seenBefore = 0;
    await expect
      .poll(async () => {
        seenBefore = Number(await turn.getAttribute("data-last-seq"));
        return ((await evidence.textContent()) ?? "").includes(`after event ${seenBefore}`);
      })
      .toBe(true);

    server = startServer(port, dataDir);
    await waitHealthy(request, base);
    // The follower reconnects on its own, resumes after what it had and receives the verdict.
    const card = turn.locator("[data-terminal-state='interrupted']");
    await expect(card).toBeVisible({ timeout: 30_000 });
    await expect(card).toContainText(/interrupted/i);
    await expect(turn.locator("[data-evidence]")).toHaveCount(0);
    // The partial work stays: the streamed words are still on the page, as a partial answer.
    await expect(turn.locator("[data-final-answer='partial']")).toContainText("w0 w1 w2");
    expect(Number(await turn.getAttribute("data-last-seq"))).toBeGreaterThanOrEqual(seenBefore);
    await expect(page.getByRole("button", { name: "Send" })).toBeVisible();

    // A reload rebuilds the same picture from the journal.
    const rows = await turn.getAttribute("data-row-count");
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-terminal-state='interrupted']")).toBeVisible();
    await expect(lastTurn(page)).toHaveAttribute("data-row-count", rows!);
    await expect(lastTurn(page).locator("[data-final-answer='partial']")).toContainText("w0 w1 w2");
  } finally {
    await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
