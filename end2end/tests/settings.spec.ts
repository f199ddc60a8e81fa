import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { accessibilityProblems, hydrated, isPhone, lastTurn, openNewSession, send } from "./support";

async function openSettings(page: Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  await expect(dialog).toBeInViewport({ ratio: 0.6 });
  return dialog;
}

const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

test("Settings change the theme and the view turns open in, and both hold after a reload", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  const light = await background(page);
  let dialog = await openSettings(page);
  await expect(dialog.getByRole("radio", { name: "System" })).toBeChecked();
  await dialog.getByRole("radio", { name: "Dark" }).check();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  expect(await background(page)).not.toBe(light);
  const dark = await background(page);
  await dialog.getByRole("radio", { name: "Stream" }).check();
  await page.screenshot({ path: testInfo.outputPath("settings.png") });
  await dialog.getByRole("button", { name: "Close settings" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.locator("[data-mode-switch] button[aria-pressed='true']")).toContainText("Stream");

  // The first HTML is already dark and in the Stream: no flash of the other theme.
  const html = await (await request.get(page.url(), { headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } })).text();
  expect(html).toMatch(/<html[^>]*data-theme="dark"/);
  await page.reload();
  expect(await background(page)).toBe(dark);
  await hydrated(page);
  await expect(page.locator("[data-mode-switch] button[aria-pressed='true']")).toContainText("Stream");

  // Back to the system's theme and the Worklog.
  dialog = await openSettings(page);
  await expect(dialog.getByRole("radio", { name: "Dark" })).toBeChecked();
  await dialog.getByRole("radio", { name: "System" }).check();
  await dialog.getByRole("radio", { name: "Worklog" }).check();
  await expect(page.locator("html")).not.toHaveAttribute("data-theme", /./);
  expect(await background(page)).toBe(light);
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await page.reload();
  await hydrated(page);
  await expect(page.locator("html")).not.toHaveAttribute("data-theme", /./);
  await expect(page.locator("[data-mode-switch] button[aria-pressed='true']")).toContainText("Worklog");
});

test("a standing permission is exactly as wide as the card says, listed in Settings; revoked, the agent asks again", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  await send(page, "/demo approval");
  const card = page.locator("[data-pending='approval']");
  await expect(card).toBeVisible({ timeout: 20_000 });
  // Narrowest first, each saying what it allows; a destructive command is never offered for
  // every conversation.
  await expect(card.getByRole("button")).toHaveText(["Allow once", "Allow rm -rf target/ in this conversation", "Deny"]);
  await expect(card).not.toContainText("every conversation");
  await page.screenshot({ path: testInfo.outputPath("approval-card.png") });
  expect(await accessibilityProblems(page, "[data-pending='approval']")).toEqual([]);
  await card.getByRole("button", { name: "Allow rm -rf target/ in this conversation" }).click();
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 20_000 });
  await expect(lastTurn(page)).toContainText("Allowed rm -rf target/ in this conversation");
  // Allowed here: the same command goes ahead without a card.
  const turns = page.locator("article.turn");
  await send(page, "/demo approval");
  await expect(turns).toHaveCount(2);
  await expect(turns.nth(1).locator("[data-final-answer='true']")).toContainText("approved", { timeout: 20_000 });
  await expect(card).toHaveCount(0);
  // Another rm is another command: `rm -rf /` asks, and is denied.
  await send(page, "/demo approval rm -rf /");
  await expect(turns).toHaveCount(3);
  await expect(card).toBeVisible({ timeout: 20_000 });
  await expect(card.locator(".card-command")).toHaveText("rm -rf /");
  await card.getByRole("button", { name: "Deny" }).click();
  await expect(turns.nth(2).locator("[data-final-answer='true']")).toContainText("left the build directory alone", { timeout: 20_000 });

  const dialog = await openSettings(page);
  const grant = dialog.getByRole("listitem").filter({ hasText: "rm -rf" });
  await expect(grant).toHaveCount(1);
  await expect(grant.locator("code")).toHaveText("rm -rf target/");
  await expect(grant).toContainText("In “Demo: asks before it runs a command”");
  await grant.getByRole("button", { name: "Revoke rm -rf target/" }).click();
  await expect(grant).toHaveCount(0);
  await expect(dialog).toContainText("None: every such action asks first.");
  await dialog.getByRole("button", { name: "Close settings" }).click();

  await send(page, "/demo approval");
  await expect(turns).toHaveCount(4);
  await expect(card).toBeVisible({ timeout: 20_000 });
  await card.getByRole("button", { name: "Deny" }).click();
  await expect(turns.nth(3).locator("[data-final-answer='true']")).toContainText("left the build directory alone", { timeout: 20_000 });
});

test("the keyboard shortcuts Settings lists do what they say", async ({ page, request }, testInfo) => {
  test.skip(testInfo.project.name === "phone", "a phone has no keyboard shortcuts");
  await openNewSession(page, request);
  const dialog = await openSettings(page);
  await expect(dialog.getByRole("region", { name: "Keyboard shortcuts" }).locator("dt")).toHaveText(["Ctrl+Shift+O", "Shift+Esc", "Ctrl+.", "Ctrl+Shift+E"]);
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  // The focus is back on what opened the panel.
  await expect(page.getByRole("button", { name: "Settings" })).toBeFocused();

  await page.keyboard.press("Shift+Escape");
  await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();

  const pressed = page.locator("[data-mode-switch] button[aria-pressed='true']");
  await expect(pressed).toContainText("Worklog");
  await page.keyboard.press("Control+Shift+E");
  await expect(pressed).toContainText("Stream");
  await page.keyboard.press("Control+Shift+E");
  await expect(pressed).toContainText("Worklog");

  await send(page, "/demo long 400");
  const turn = lastTurn(page);
  await expect(turn.locator(".answer")).toBeVisible({ timeout: 20_000 });
  await page.keyboard.press("Control+.");
  await expect(turn.locator("[data-terminal-state='cancelled']")).toBeVisible({ timeout: 20_000 });

  await page.keyboard.press("Control+Shift+O");
  await expect(page).toHaveURL(/\/new$/);
  await expect(page.locator(".empty-chat")).toBeVisible();
});
