import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { accessibilityProblems, isPhone, lastTurn, openNewSession } from "./support";

// The message box's `/` menu: what a person sees when typing a command, on a desktop with a
// keyboard and on a phone with a finger.

const field = (page: Page) => page.getByRole("textbox", { name: "Message" });
const menu = (page: Page) => page.getByRole("listbox", { name: "Commands" });
const options = (page: Page) => menu(page).getByRole("option");
const shownMode = (page: Page) => page.locator("[data-mode-switch] button[aria-pressed='true']");

/** A new conversation, live, with the part that brings the menu. */
async function ready(page: Page, request: any) {
  await openNewSession(page, request);
  await expect(page.locator(".app[data-turns='ready']")).toHaveCount(1);
  const input = field(page);
  if (isPhone(page)) await input.tap();
  else await input.click();
  await expect(input).toBeFocused();
  return input;
}

test("typing / lists the commands above the message box; /mo filters to /mode and Enter switches the view", async ({ page, request }, testInfo) => {
  const input = await ready(page, request);
  await expect(menu(page)).toHaveCount(0);
  await page.keyboard.type("/");
  await expect(menu(page)).toBeVisible();
  await expect(menu(page)).toBeInViewport();
  // The box names the list it offers while it is open (a textarea carries no aria-expanded).
  await expect(input).toHaveAttribute("aria-controls", (await menu(page).getAttribute("id"))!);
  await expect(input).toHaveAttribute("aria-haspopup", "listbox");
  expect(await accessibilityProblems(page)).toEqual([]);
  const names = await menu(page).locator(".slash-name").allTextContents();
  expect(names).toEqual(expect.arrayContaining(["/new", "/mode", "/theme", "/export", "/retry", "/stop", "/help", "/demo"]));
  // The demo agent offers no choice of model: no /model.
  expect(names).not.toContain("/model");
  // Above the message box, over the transcript: it covers neither the field nor the button.
  const list = (await menu(page).boundingBox())!;
  const box = (await input.boundingBox())!;
  expect(list.y + list.height).toBeLessThanOrEqual(box.y + 1);
  expect(list.x).toBeGreaterThanOrEqual(0);
  expect(list.x + list.width).toBeLessThanOrEqual(page.viewportSize()!.width);
  await page.screenshot({ path: testInfo.outputPath("slash-menu.png") });

  await page.keyboard.type("mo");
  await expect(options(page)).toHaveCount(1);
  await expect(options(page).first()).toContainText("/mode");
  await expect(options(page).first()).toHaveAttribute("aria-selected", "true");
  await expect(input).toHaveAttribute("aria-activedescendant", (await options(page).first().getAttribute("id"))!);
  await expect(shownMode(page)).toContainText("Worklog");
  await page.keyboard.press("Enter");
  await expect(shownMode(page)).toContainText("Stream");
  await expect(input).toHaveValue("");
  await expect(menu(page)).toHaveCount(0);
  await expect(input).toBeFocused();
  await expect(input).not.toHaveAttribute("aria-controls", /./);
  await expect(input).not.toHaveAttribute("aria-activedescendant", /./);

  // Typed in full and sent with the button: the page's command, never a message.
  await input.fill("/mode worklog");
  await expect(menu(page)).toHaveCount(0);
  await page.getByRole("button", { name: "Send" }).click();
  await expect(shownMode(page)).toContainText("Worklog");
  await expect(input).toHaveValue("");
  await expect(page.locator("article.turn")).toHaveCount(0);
});

test("arrows move, Tab fills in, Escape closes; a theme is chosen from the list; /help opens Settings", async ({ page, request }) => {
  const input = await ready(page, request);
  await page.keyboard.type("/demo ");
  const scenarios = await options(page).count();
  expect(scenarios).toBeGreaterThan(10);
  await expect(options(page).filter({ hasText: "/demo tools" })).toContainText("Reads, searches and writes files with tools");
  await page.keyboard.type("a");
  await expect(options(page)).toHaveCount(2);
  const selected = menu(page).locator("[aria-selected='true']");
  await expect(selected).toContainText("/demo approval");
  await page.keyboard.press("ArrowDown");
  await expect(selected).toContainText("/demo artifact");
  await page.keyboard.press("ArrowDown");
  await expect(selected).toContainText("/demo approval");
  await page.keyboard.press("ArrowUp");
  await expect(selected).toContainText("/demo artifact");
  // Escape closes the list and keeps the text; typing on opens it again.
  await page.keyboard.press("Escape");
  await expect(menu(page)).toHaveCount(0);
  await expect(input).toHaveValue("/demo a");
  await page.keyboard.type("p");
  await expect(options(page)).toHaveCount(1);
  await page.keyboard.press("Tab");
  await expect(input).toHaveValue("/demo approval");
  await expect(input).toBeFocused();
  await expect(menu(page)).toHaveCount(0);

  // A command with choices: Tab fills it in and lists them.
  await input.fill("");
  await page.keyboard.type("/th");
  await page.keyboard.press("Tab");
  await expect(input).toHaveValue("/theme ");
  await expect(menu(page).locator(".slash-name")).toHaveText(["/theme light", "/theme dark", "/theme system"]);
  await page.keyboard.type("d");
  await page.keyboard.press("Enter");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(input).toHaveValue("");
  // The theme holds after a reload (the same cookie as Settings).
  await page.reload();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");

  await expect(page.locator(".app[data-turns='ready']")).toHaveCount(1);
  await input.focus();
  await page.keyboard.type("/help");
  await page.keyboard.press("Enter");
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  const section = dialog.getByRole("region", { name: "Slash commands" });
  await section.scrollIntoViewIfNeeded();
  await expect(section).toBeInViewport();
  await expect(section).toContainText("/mode worklog|stream");
  await expect(section).toContainText("/demo tools");
});

test("an agent's command is tapped or clicked and sent; /stop stops the turn; an unknown command goes to the agent as typed", async ({ page, request }, testInfo) => {
  const input = await ready(page, request);
  await page.keyboard.type("/demo too");
  const tools = options(page).filter({ hasText: "/demo tools" });
  await expect(tools).toHaveCount(1);
  if (isPhone(page)) await tools.tap();
  else await tools.click();
  await expect(menu(page)).toHaveCount(0);
  await expect(input).toHaveValue("");
  const turn = lastTurn(page);
  await expect(turn.locator(".user-message")).toContainText("/demo tools");
  await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 20_000 });
  // The field kept the focus (and a phone its keyboard): the list never took it.
  await expect(input).toBeFocused();

  await input.fill("/demo slow");
  await page.getByRole("button", { name: "Send" }).click();
  const slow = page.locator("article.turn").nth(1);
  await expect(slow.locator("[data-final-answer='streaming']")).toBeVisible();
  await input.fill("/st");
  await expect(options(page)).toHaveCount(1);
  await page.screenshot({ path: testInfo.outputPath("slash-stop.png") });
  await page.keyboard.press("Enter");
  await expect(slow.locator("[data-terminal-state='cancelled']")).toBeVisible();
  await expect(input).toHaveValue("");

  // Nothing runs: /stop says so, and sends nothing.
  await input.fill("/stop");
  await page.keyboard.press("Enter");
  await expect(page.locator(".toast")).toContainText("Nothing is running.");
  await expect(page.locator("article.turn")).toHaveCount(2);

  // Not a command of the page: the agent gets it as typed.
  await input.fill("/deploy prod");
  await expect(menu(page)).toHaveCount(0);
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.locator("article.turn")).toHaveCount(3);
  await expect(lastTurn(page).locator(".user-message")).toContainText("/deploy prod");
});
