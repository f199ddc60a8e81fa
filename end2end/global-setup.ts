import type { FullConfig } from "@playwright/test";

// `cargo leptos end-to-end` starts the server and the tests at the same moment, so wait until
// the server answers before any test runs.
export default async function globalSetup(config: FullConfig): Promise<void> {
  const baseURL = config.projects[0]?.use?.baseURL ?? "http://127.0.0.1:3000";
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
  throw new Error(`server at ${baseURL} did not answer within 120 s (${last})`);
}
