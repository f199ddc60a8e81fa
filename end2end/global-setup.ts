import type { FullConfig } from "@playwright/test";
import { existsSync } from "fs";
import { join } from "path";

// Each worker starts a server of its own from the release build (tests/fixtures.ts): it must be
// there. With BASE_URL, the tests use that server instead: wait until it answers.
export default async function globalSetup(config: FullConfig): Promise<void> {
  const baseURL = process.env.BASE_URL;
  if (!baseURL) {
    const root = join(__dirname, "..");
    for (const needed of ["target/site/pkg/anchorage.wasm"]) {
      if (!existsSync(join(root, needed))) {
        throw new Error(`${needed} is missing: build the site first (make e2e builds it)`);
      }
    }
    return;
  }
  const deadline = Date.now() + 120_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(new URL("/healthz", baseURL));
      if (res.ok) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server at ${baseURL} (BASE_URL) did not answer within 120 s (${last}); config ${config.rootDir}`);
}
