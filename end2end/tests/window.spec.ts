import { test, expect } from "./fixtures";
import { hydrated, newSession, startTurn, waitRunEnd } from "./support";

/** A conversation of `n` short turns, "Message 0" … "Message n-1"; returns its id and runs. */
async function conversation(request: any, n: number): Promise<{ session: string; runs: string[] }> {
  const session = await newSession(request, "A long conversation");
  const runs: string[] = [];
  for (let i = 0; i < n; i++) {
    const run = await startTurn(request, session, `/demo long 3 · Message ${i}`);
    await waitRunEnd(request, run);
    runs.push(run);
  }
  return { session, runs };
}

test("a long conversation opens on its latest turns; Show earlier puts the older ones above without moving what is read", async ({ page, request }, testInfo) => {
  test.setTimeout(120_000);
  const { session, runs } = await conversation(request, 26);
  await page.goto(`/s/${session}`);
  await hydrated(page);
  const turns = page.locator("article.turn");
  await expect(turns).toHaveCount(20);
  await expect(turns.first()).toHaveAttribute("data-run-id", runs[6]);
  await expect(turns.locator(".user-message").getByText("Message 0", { exact: false })).toHaveCount(0);

  // The reader scrolls to the top and asks for more.
  const transcript = page.locator(".transcript");
  await transcript.evaluate((el) => (el.scrollTop = 0));
  const more = page.getByRole("button", { name: "Show earlier messages" });
  await expect(more).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("show-earlier.png") });
  const reading = page.locator(`article.turn[data-run-id='${runs[6]}']`);
  const before = (await reading.boundingBox())!.y;
  await more.click();
  await expect(turns).toHaveCount(26);
  await expect(turns.first()).toHaveAttribute("data-run-id", runs[0]);
  // What the reader was looking at stays where it was on screen.
  await page.waitForTimeout(200);
  const after = (await reading.boundingBox())!.y;
  expect(Math.abs(after - before)).toBeLessThanOrEqual(2);
  // Nothing older: the button is gone; the first message is there above.
  await expect(more).toHaveCount(0);
  await transcript.evaluate((el) => (el.scrollTop = 0));
  await expect(page.locator("article.turn").first().locator(".user-message")).toContainText("Message 0");
  await page.screenshot({ path: testInfo.outputPath("earlier-loaded.png") });
});

test("a link to an old turn loads the window that holds it and shows that turn", async ({ page, request }) => {
  test.setTimeout(120_000);
  const { session, runs } = await conversation(request, 23);
  await page.goto(`/s/${session}#turn-${runs[1]}`);
  await hydrated(page);
  const target = page.locator(`#turn-${runs[1]}`);
  await expect(target).toBeAttached();
  await expect(target).toBeInViewport();
  await expect(target.locator(".user-message")).toContainText("Message 1");
});

test("the sidebar lists a page of conversations; more come on request, and search finds any", async ({ page, request }) => {
  test.setTimeout(60_000);
  const marker = `Lighthouse ${Date.now()}`;
  const oldest = await newSession(request, `${marker} oldest`);
  for (let i = 0; i < 55; i++) await newSession(request, `Filler ${i}`);
  await page.goto("/new");
  await hydrated(page);
  if ((page.viewportSize()?.width ?? 1280) <= 640) await page.getByRole("button", { name: "Open sessions" }).tap();
  const rows = page.locator(".session-list .session-row");
  await expect(rows).toHaveCount(50);
  await expect(page.locator(`[data-session-id='${oldest}']`)).toHaveCount(0);
  const more = page.getByRole("button", { name: "Show more conversations" });
  await more.scrollIntoViewIfNeeded();
  await more.click();
  // The next page of them (however many other tests left on this server).
  await expect.poll(() => rows.count()).toBeGreaterThan(50);
  // Search reaches what the list has not shown.
  await page.getByRole("searchbox", { name: "Search conversations" }).fill(marker);
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute("data-session-id", oldest);
  await rows.first().locator("a").click();
  await expect(page).toHaveURL(new RegExp(`/s/${oldest}$`));
  await expect(page.locator(".chat-title")).toContainText(marker);
});
