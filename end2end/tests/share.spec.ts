import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { hydrated, isPhone, newSession, rowAction, startTurn, waitRunEnd } from "./support";

/** The sidebar, opened first on a phone (where it is a drawer). */
async function sidebar(page: Page) {
  const nav = page.locator("#sidebar");
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  await expect(nav).toBeInViewport();
  return nav;
}

test("a shared link shows the conversation to someone signed out, with no controls, until it is revoked", async ({ page, browser, request }, testInfo) => {
  const session = await newSession(request, "Lighthouse plans");
  const run = await startTurn(request, session, "Where should the lighthouse stand?");
  await waitRunEnd(request, run);
  // The title the conversation has now (its first message names it).
  const title = (await (await request.get(`/api/session?session_id=${session}`)).json()).session.title;
  await page.goto(`/s/${session}`);
  await hydrated(page);

  const nav = await sidebar(page);
  await rowAction(nav.locator(`[data-session-id='${session}']`), "Share");
  // The notice gives the link, with Copy.
  const link = page.locator(".toast .toast-link");
  await expect(link).toBeVisible();
  const address = (await link.getAttribute("href"))!;
  expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/share\/[A-Za-z0-9_-]{22}$/);
  await expect(page.locator(".toast")).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: testInfo.outputPath("made.png") });

  // Someone else, signed out, without JavaScript even.
  const stranger = await browser.newContext({
    javaScriptEnabled: false,
    viewport: page.viewportSize()!,
    isMobile: isPhone(page),
    hasTouch: isPhone(page),
  });
  const reader = await stranger.newPage();
  const res = await reader.goto(address);
  expect(res!.status()).toBe(200);
  await expect(reader.getByRole("heading", { level: 1 })).toHaveText(title);
  await expect(reader.locator(".bubble")).toHaveText("Where should the lighthouse stand?");
  await expect(reader.getByText('You wrote: "Where should the lighthouse stand?"')).toBeVisible();
  await expect(reader.getByText(/\d+ steps?/)).toBeVisible();
  await expect(reader.getByRole("button")).toHaveCount(0);
  await expect(reader.getByRole("textbox")).toHaveCount(0);
  // It fits the screen: nothing wider than the viewport.
  const overflow = await reader.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await reader.screenshot({ path: testInfo.outputPath("shared.png"), fullPage: true });

  // The owner finds it in Settings and revokes it.
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  const links = dialog.getByRole("region", { name: "Shared links" });
  await expect(links.getByRole("link", { name: address })).toBeVisible();
  await links.getByRole("button", { name: `Revoke the link to ${title}` }).click();
  // Gone from the list (other tests of the suite may hold links of their own meanwhile).
  await expect(links.getByRole("link", { name: address })).toHaveCount(0);

  const gone = await reader.reload();
  expect(gone!.status()).toBe(404);
  await expect(reader.getByText("revoked")).toBeVisible();
  await expect(reader.locator(".bubble")).toHaveCount(0);
  await stranger.close();
});
