import { expect, type Page } from "@playwright/test";

// What the page-load benchmarks share: how long a page takes to be live on a slow phone.

/** Milliseconds from navigating to `url` until the page is live (`data-markdown="ready"`),
 * with the CPU throttled 4x. */
export async function timeToLive(page: Page, url: string): Promise<number> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
  const started = Date.now();
  await page.goto(url);
  await expect(page.locator(".app[data-markdown='ready']")).toHaveCount(1, { timeout: 120_000 });
  const ms = Date.now() - started;
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
  await cdp.detach();
  return ms;
}

/** The middle value (the upper one of an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
