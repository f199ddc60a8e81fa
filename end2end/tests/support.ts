import { expect, type Page } from "@playwright/test";

/** Resolves once the wasm bundle has hydrated the page (an Effect sets the marker). */
export async function hydrated(page: Page): Promise<void> {
  await expect(page.locator(".app[data-hydrated='true']")).toHaveCount(1);
}

/** True when the viewport is the phone layout (≤ 640 px wide). */
export function isPhone(page: Page): boolean {
  return (page.viewportSize()?.width ?? 1280) <= 640;
}
