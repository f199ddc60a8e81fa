import { defineConfig, devices } from "@playwright/test";
import { chromium as shell } from "./chromium";

// The benchmarks time what a person's browser does: the full Chromium, not the tests' headless
// shell (CHROMIUM_PATH still chooses).
const chromium = { ...shell, executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium" };

// The UI benchmark: run against a release server (see BENCHMARKS.md), never as part of the tests.
export default defineConfig({
  testDir: "./bench",
  testMatch: /.*\.bench\.ts$/,
  timeout: 600_000,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  use: { baseURL: process.env.BASE_URL || "http://127.0.0.1:3000", launchOptions: chromium },
  projects: [{ name: "desktop", use: { ...devices["Desktop Chrome"], launchOptions: chromium } }],
});
