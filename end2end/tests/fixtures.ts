import { test as base, expect } from "@playwright/test";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, startServer } from "./own_server";

// Each worker has a server of its own (the release build in target/, a fresh database, the
// quick demo agent), so that two workers never see each other's conversations, runs or limits.
// With BASE_URL set, every test uses that server instead (one worker: they share it).
export const serverTest = base.extend<{}, { workerServer: string; demoDelayMs: number }>({
  // The demo agent's pause between chunks on the worker's server; a file that needs answers
  // to stream for longer asks for more with `test.use({ demoDelayMs })` (its tests then get a
  // worker of their own).
  demoDelayMs: [8, { scope: "worker", option: true }],
  workerServer: [
    async ({ demoDelayMs }, use) => {
      if (process.env.BASE_URL) {
        await use(process.env.BASE_URL);
        return;
      }
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const dataDir = mkdtempSync(join(tmpdir(), "anchorage-e2e-"));
      const server = startServer(port, dataDir, { ANCHORAGE_DEMO_DELAY_MS: String(demoDelayMs) });
      try {
        await untilHealthy(base);
        await use(base);
      } finally {
        await kill9(server);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    { scope: "worker" },
  ],
  baseURL: async ({ workerServer }, use) => use(workerServer),
});

/** Resolves once `base` answers `/healthz` (a release server starts in well under a second). */
async function untilHealthy(base: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the worker's server at ${base} did not answer within 60 s (${last})`);
}

// Every test's page is watched for Content Security Policy violations: the suite fails on one
// (a `securitypolicyviolation` event, or the console error the browser prints for it).
export const test = serverTest.extend<{ cspGuard: void }>({
  cspGuard: [
    async ({ page }, use) => {
      const violations: string[] = [];
      await page.addInitScript(() => {
        document.addEventListener("securitypolicyviolation", (e) => {
          console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
        });
      });
      page.on("console", (m) => {
        if (m.type() === "error" && /Content Security Policy|CSP violation/i.test(m.text())) violations.push(m.text());
      });
      await use();
      expect(violations, "Content Security Policy violations").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
