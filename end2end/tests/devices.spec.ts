import { test, expect } from "./fixtures";
import { type ChildProcess } from "child_process";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { type Browser, type Page } from "@playwright/test";
import { cli, freePort, kill9, startServer, waitHealthy } from "./own_server";
import { accessibilityProblems, hydrated, isPhone } from "./support";

// One device, two people; one person, several devices. A server of its own with two accounts.
// The service worker is kept out: these tests cut one tab off the network by hand, which a
// worker answering for the page would get in the way of.
test.use({ serviceWorkers: "block" });

let server: ChildProcess | undefined;
let dataDir = "";
let base = "";

function addUser(name: string, password: string): void {
  cli(dataDir, ["user", "add", name], `${password}\n`);
}

test.beforeAll(async ({ request }) => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dataDir = mkdtempSync(join(tmpdir(), "anchorage-devices-"));
  addUser("alice", "alice-password-1");
  addUser("bob", "bob-password-22");
  server = startServer(port, dataDir);
  await waitHealthy(request, base);
});

test.afterAll(async () => {
  if (server) await kill9(server);
  rmSync(dataDir, { recursive: true, force: true });
});

/** A new browser context as this project's (its viewport, touch, agent), without a worker. */
function contextOf(project: any, agent?: string) {
  const { viewport, isMobile, hasTouch, deviceScaleFactor, userAgent } = project;
  return { viewport, isMobile, hasTouch, deviceScaleFactor, userAgent: agent ?? userAgent, serviceWorkers: "block" as const };
}

async function signIn(page: Page, name: string, password: string, next = "/new"): Promise<void> {
  await page.goto(`${base}/login?next=${next}`);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await hydrated(page);
}

async function openDrawer(page: Page): Promise<void> {
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
}

async function signOut(page: Page): Promise<void> {
  await openDrawer(page);
  await page.getByRole("button", { name: "Sign out" }).click();
}

async function openSettings(page: Page) {
  await openDrawer(page);
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  return dialog;
}

/** The drafts this browser keeps, by key. */
async function drafts(page: Page): Promise<Record<string, string>> {
  return page.evaluate(() => {
    const kept: Record<string, string> = {};
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i)!;
      if (key.startsWith("anchorage.draft.")) kept[key] = localStorage.getItem(key)!;
    }
    return kept;
  });
}

/** Whether any conversation of the account signed in on `page` holds `text`. */
async function found(page: Page, text: string): Promise<number> {
  const res = await page.request.get(`${base}/api/sessions/search?q=${encodeURIComponent(text)}`);
  expect(res.ok()).toBeTruthy();
  return (await res.json()).sessions.length;
}

test("a message typed by one person is never sent as the next one's", async ({ browser }, testInfo) => {
  const context = await browser.newContext(contextOf(testInfo.project.use));
  const first = await context.newPage();
  await signIn(first, "alice", "alice-password-1");
  // Alice's tab loses the server; what she sends waits.
  await first.route("**/*", (route) => route.abort("internetdisconnected"));
  const box = first.getByRole("textbox", { name: "Message" });
  await box.fill("alice's private note to herself");
  await first.getByRole("button", { name: "Send" }).click();
  await expect(first.locator(".send-failed")).toContainText("Not sent yet");

  // On the same device, in another tab: alice signs out, bob signs in.
  const second = await context.newPage();
  await second.goto(`${base}/new`);
  await hydrated(second);
  await signOut(second);
  await expect(second.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await signIn(second, "bob", "bob-password-22");
  // Bob's new chat has none of alice's words.
  await expect(second.getByRole("textbox", { name: "Message" })).toHaveValue("");

  // Alice's tab reaches the server again: her message is refused as bob's, and stays.
  await first.unroute("**/*");
  await first.evaluate(() => window.dispatchEvent(new Event("online")));
  const stranded = first.locator(".send-failed[data-stranded]");
  await expect(stranded).toContainText("will not be sent", { timeout: 20_000 });
  await expect(box).toHaveValue("alice's private note to herself");
  await expect(first.getByRole("button", { name: "Retry now" })).toHaveCount(0);
  // Nothing on the page sends it.
  await expect(first.locator(".composer-send")).toHaveText("Not sent");
  await expect(first.locator(".composer-send")).toBeDisabled();
  await first.screenshot({ path: testInfo.outputPath("stranded.png") });
  expect(await accessibilityProblems(first, ".send-failed")).toEqual([]);
  // Nothing tries again.
  await first.waitForTimeout(3_000);
  expect(await found(second, "private note")).toBe(0);
  await expect(stranded).toBeVisible();
  await context.close();
});

test("a draft stays with its account and goes at sign-out", async ({ page }) => {
  await signIn(page, "alice", "alice-password-1");
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("alice's unsent draft");
  await expect.poll(async () => Object.values(await drafts(page))).toContain("alice's unsent draft");
  await signOut(page);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  expect(Object.values(await drafts(page))).not.toContain("alice's unsent draft");
  await signIn(page, "bob", "bob-password-22");
  await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("");
  await page.getByRole("textbox", { name: "Message" }).fill("bob's own draft");
  await page.reload();
  await hydrated(page);
  // Kept across a reload, for him.
  await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("bob's own draft");
  await signOut(page);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  expect(await drafts(page)).toEqual({});
});

test("a sign-out that cannot reach the server says so and clears what it can", async ({ page }, testInfo) => {
  await signIn(page, "alice", "alice-password-1");
  await page.getByRole("textbox", { name: "Message" }).fill("a draft on a train");
  await expect.poll(async () => Object.values(await drafts(page))).toContain("a draft on a train");
  await page.route("**/*", (route) => route.abort("internetdisconnected"));
  await signOut(page);
  const said = page.getByRole("alert").filter({ hasText: "Not signed out" });
  await expect(said).toBeVisible();
  await expect(said).toContainText("still signed in");
  expect(Object.values(await drafts(page))).not.toContain("a draft on a train");
  await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("");
  // In view: on a phone the drawer has given way to it.
  await expect(said).toBeInViewport();
  await expect(page.locator("[data-drawer='open']")).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath("offline-sign-out.png") });
  expect(await accessibilityProblems(page, ".error-banner")).toEqual([]);
  // Back online, signing out signs out.
  await page.unroute("**/*");
  await signOut(page);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
});

async function deviceOf(browser: Browser, project: any, agent: string): Promise<Page> {
  const context = await browser.newContext(contextOf(project, agent));
  const page = await context.newPage();
  await signIn(page, "bob", "bob-password-22");
  return page;
}

test("Settings lists where the account is signed in, and signs any of it out", async ({ page, browser, playwright }, testInfo) => {
  // Bob starts signed in nowhere (the other viewport's run signed him in too).
  const api = await playwright.request.newContext({ baseURL: base });
  const login = await api.post("/api/auth/login", { data: { username: "bob", password: "bob-password-22" } });
  expect(login.ok()).toBeTruthy();
  expect((await api.post("/api/auth/sign-ins/end-all", { data: {} })).ok()).toBeTruthy();
  await api.dispose();
  const phone = await deviceOf(
    browser,
    testInfo.project.use,
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
  );
  const laptop = await deviceOf(
    browser,
    testInfo.project.use,
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
  );
  await signIn(page, "bob", "bob-password-22");
  const dialog = await openSettings(page);
  const section = dialog.getByRole("region", { name: "Signed-in devices" });
  await section.scrollIntoViewIfNeeded();
  await expect(section.getByRole("listitem")).toHaveCount(3);
  await expect(section.getByRole("listitem").filter({ hasText: "Safari on iPad" })).toHaveCount(1);
  await expect(section.getByRole("listitem").filter({ hasText: "Firefox on Linux" })).toHaveCount(1);
  await expect(section.locator("[data-current]")).toContainText("this device");
  await expect(section.locator("[data-current]")).toContainText("with the password");
  await section.screenshot({ path: testInfo.outputPath("devices.png") });
  expect(await accessibilityProblems(page, "dialog[open]")).toEqual([]);
  // The phone is signed out: its next page is the sign-in page; the laptop stays.
  await section.getByRole("button", { name: "Sign out Safari on iPad" }).click();
  await expect(section.getByRole("listitem").filter({ hasText: "Safari on iPad" })).toHaveCount(0);
  await phone.reload();
  await expect(phone.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await laptop.reload();
  await hydrated(laptop);
  // Storage: what the account keeps, against its quota.
  const storage = dialog.getByRole("region", { name: "Storage" });
  await expect(storage).toContainText("of 2.0 GB used");
  await expect(storage.locator("meter")).toHaveCount(1);
  // Everywhere: this device too.
  await section.getByRole("button", { name: "Sign out everywhere" }).click();
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await laptop.reload();
  await expect(laptop.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await phone.context().close();
  await laptop.context().close();
});
