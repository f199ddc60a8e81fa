import { test, expect, type APIRequestContext } from "@playwright/test";
import { spawn, type ChildProcess } from "child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "fs";
import { tmpdir } from "os";
import { join, resolve } from "path";
import { hydrated, lastTurn, newSession, send } from "./support";

// A second server of our own, so that the test can kill it without disturbing the one every
// other test uses. It runs the binary the suite was built with, on its own port and database.
const root = resolve(__dirname, "..", "..");

function serverBinary(): string {
  if (process.env.ANCHORAGE_SERVER_BIN) return process.env.ANCHORAGE_SERVER_BIN;
  const built = ["release", "debug"]
    .map((profile) => join(root, "target", profile, "server"))
    .filter((path) => existsSync(path));
  if (built.length === 0) throw new Error("no server binary under target/; build the site first");
  return built.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

function startServer(port: number, dataDir: string): ChildProcess {
  const child = spawn(serverBinary(), ["--addr", `127.0.0.1:${port}`, "--data-dir", dataDir], {
    cwd: root,
    env: {
      ...process.env,
      LEPTOS_OUTPUT_NAME: "anchorage",
      LEPTOS_SITE_ROOT: join(root, "target", "site"),
      LEPTOS_SITE_PKG_DIR: "pkg",
      LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
      ANCHORAGE_DEMO_DELAY_MS: "20",
      RUST_LOG: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return child;
}

async function waitHealthy(request: APIRequestContext, base: string): Promise<void> {
  await expect
    .poll(async () => (await request.get(`${base}/healthz`).catch(() => null))?.ok() ?? false, { timeout: 30_000 })
    .toBeTruthy();
}

function kill9(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once("exit", () => done());
    child.kill("SIGKILL");
  });
}

test("a server killed mid-run comes back and the page shows the turn as interrupted", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = 3300 + testInfo.parallelIndex + (testInfo.project.name === "phone" ? 50 : 0);
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
    const seenBefore = Number(await turn.getAttribute("data-last-seq"));
    // Not an empty "running" shell: the turn says it is reconnecting and from where.
    await expect(turn.locator("[data-evidence='restoring']")).toContainText(`after event ${seenBefore}`);

    server = startServer(port, dataDir);
    await waitHealthy(request, base);
    // The follower reconnects on its own, resumes after what it had and receives the verdict.
    const card = turn.locator("[data-terminal-state='interrupted']");
    await expect(card).toBeVisible({ timeout: 30_000 });
    await expect(card).toContainText(/interrupted/i);
    await expect(turn.locator("[data-evidence]")).toHaveCount(0);
    // The partial work stays: the streamed words are still on the page, in the worklog.
    await expect(turn.locator("[data-final-answer]")).toHaveCount(0);
    await expect(turn.locator(".worklog")).toContainText("w0 w1 w2");
    expect(Number(await turn.getAttribute("data-last-seq"))).toBeGreaterThanOrEqual(seenBefore);
    await expect(page.getByRole("button", { name: "Send" })).toBeVisible();

    // A reload rebuilds the same picture from the journal.
    const rows = await turn.getAttribute("data-row-count");
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-terminal-state='interrupted']")).toBeVisible();
    await expect(lastTurn(page)).toHaveAttribute("data-row-count", rows!);
  } finally {
    await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
