import { defineConfig, devices } from "@playwright/test";
import { chromium } from "./chromium";

export default defineConfig({
  testDir: "./tests",
  globalSetup: "./global-setup.ts",
  timeout: 30_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  // Three test files at once, each worker on a server of its own (tests/fixtures.ts): on two
  // cores the third fills the time the others wait on a stream (measured: BENCHMARKS.md);
  // E2E_WORKERS chooses another number. Against a server given by BASE_URL, one at a time:
  // they share it.
  workers: process.env.BASE_URL ? 1 : Number(process.env.E2E_WORKERS ?? 3),
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [["list"], ["json", { outputFile: "test-results/results.json" }]],
  use: {
    // Each worker's own server (tests/fixtures.ts), or BASE_URL.
    baseURL: process.env.BASE_URL,
    launchOptions: chromium,
    trace: { mode: "retain-on-failure", screenshots: false },
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "desktop",
      use: { ...devices["Desktop Chrome"], viewport: { width: 1280, height: 800 }, launchOptions: chromium },
    },
    {
      name: "phone",
      use: {
        ...devices["Pixel 7"],
        viewport: { width: 390, height: 844 },
        hasTouch: true,
        isMobile: true,
        launchOptions: chromium,
      },
    },
  ],
});
