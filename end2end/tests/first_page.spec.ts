import { test, expect } from "./fixtures";
import { hydrated, lastTurn } from "./support";

test("a new conversation says what Anchorage is, offers prompts to try, and one starts it", async ({ page }, testInfo) => {
  await page.goto("/new");
  await hydrated(page);
  const empty = page.locator(".empty-chat");
  await expect(empty.getByRole("heading", { name: "Start a conversation" })).toBeVisible();
  await expect(empty).toContainText("AI agent");
  // The demo agent's three scenarios, each a button that shows what it sends.
  const examples = empty.getByRole("group", { name: "Try one" }).getByRole("button");
  await expect(examples).toHaveCount(3);
  await expect(examples.nth(0)).toContainText("/demo tools");
  await expect(examples.nth(1)).toContainText("/demo approval");
  await expect(examples.nth(2)).toContainText("/demo long 400");
  for (const button of await examples.all()) await expect(button).toBeInViewport();
  // The demo agent offers no choice of model: no picker.
  await expect(page.getByRole("combobox", { name: "Model" })).toHaveCount(0);
  // The two views of a turn, one line each.
  await expect(empty.locator("dt")).toHaveText(["Worklog", "Stream"]);
  await page.screenshot({ path: testInfo.outputPath("empty.png") });

  await examples.nth(0).click();
  await expect(page).toHaveURL(/\/s\/[^/]+$/);
  await expect(lastTurn(page).locator(".bubble")).toHaveText("/demo tools");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
  await expect(page.locator(".empty-chat")).toHaveCount(0);
});
