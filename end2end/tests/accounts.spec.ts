import { test, expect } from "./fixtures";
import { spawnSync, type ChildProcess } from "child_process";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { type Page } from "@playwright/test";
import { cli, freePort, kill9, root, serverBinary, startServer, waitHealthy } from "./own_server";
import { accessibilityProblems, hydrated, isPhone, lastTurn, send } from "./support";

// A server of its own with accounts, made as a person makes them: with the CLI.
let server: ChildProcess | undefined;
let dataDir = "";
let base = "";

function addUser(name: string, password: string, admin = false): void {
  const said = cli(dataDir, ["user", "add", name, ...(admin ? ["--admin"] : [])], `${password}\n`);
  expect(said).toContain(`"${name}"`);
}

test.beforeAll(async ({ request }, testInfo) => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dataDir = mkdtempSync(join(tmpdir(), "anchorage-accounts-"));
  // The CLI refuses a short password, with a message, before anything is stored.
  const short = spawnSync(serverBinary(), ["--data-dir", dataDir, "user", "add", "alice"], {
    input: "short\n",
    encoding: "utf8",
  });
  expect(short.status).toBe(2);
  expect(short.stderr).toContain("at least 10 characters");
  addUser("alice", "alice-password-1", true);
  addUser("bob", "bob-password-22");
  server = startServer(port, dataDir);
  await waitHealthy(request, base);
});

test.afterAll(async () => {
  if (server) await kill9(server);
  rmSync(dataDir, { recursive: true, force: true });
});

async function signIn(page: Page, name: string, password: string): Promise<void> {
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** The sidebar's account line (on a phone, inside the drawer, which this opens). */
async function account(page: Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  const who = page.locator("[data-account]");
  // The drawer has slid all the way in.
  await expect(who).toBeInViewport({ ratio: 1 });
  return who;
}

test("sign in, chat, reload and sign out", async ({ page }, testInfo) => {
  await page.goto(`${base}/`);
  // Not signed in: the sign-in page, which came back to where the browser was going.
  await expect(page).toHaveURL(`${base}/login?next=/`);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await expect(page.getByLabel("Name")).toBeFocused();
  await page.screenshot({ path: testInfo.outputPath("login.png") });
  const form = await page.locator(".login-form").boundingBox();
  const viewport = page.viewportSize()!;
  expect(form!.x).toBeGreaterThanOrEqual(0);
  expect(form!.x + form!.width).toBeLessThanOrEqual(viewport.width);
  // The command in the note is on one line, to be read and typed whole.
  const command = page.locator(".login-note code");
  await expect(command).toHaveText("server user add NAME");
  expect(await command.evaluate((c) => c.getClientRects().length)).toBe(1);
  expect(await accessibilityProblems(page)).toEqual([]);
  await page.emulateMedia({ colorScheme: "dark" });
  expect(await accessibilityProblems(page)).toEqual([]);
  await page.emulateMedia({ colorScheme: "light" });

  await signIn(page, "alice", "not-her-password");
  await expect(page.getByRole("alert")).toHaveText("wrong name or password");
  // The name stays; the password is typed again.
  await expect(page.getByLabel("Name")).toHaveValue("alice");
  await expect(page.getByLabel("Password")).toBeFocused();
  // The address is the sign-in page's still (a reload there never asks an API route).
  expect(page.url()).toBe(`${base}/login`);
  await page.screenshot({ path: testInfo.outputPath("login-error.png") });

  await page.getByLabel("Password").fill("alice-password-1");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(`${base}/`);
  await hydrated(page);
  await send(page, "/demo");
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 20_000 });
  const answer = await lastTurn(page).locator("[data-final-answer='true']").innerText();
  await expect(page).toHaveURL(/\/s\/[0-9a-f]+$/);

  await page.reload();
  await hydrated(page);
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText(answer);
  const who = await account(page);
  await expect(who).toBeVisible();
  await expect(who).toContainText("alice");
  await page.screenshot({ path: testInfo.outputPath("signed-in.png") });

  const chat = page.url();
  await who.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(`${base}/login`);
  // Signed out on the server: the conversation's address asks to sign in again.
  await page.goto(chat);
  await expect(page).toHaveURL(/\/login\?next=/);
  await expect(page.getByText(answer.slice(0, 20))).toHaveCount(0);
});

test("two people in two browsers see only their own conversations", async ({ browser, page }) => {
  const bobContext = await browser.newContext({
    viewport: page.viewportSize()!,
    hasTouch: isPhone(page),
    isMobile: isPhone(page),
  });
  const bob = await bobContext.newPage();
  try {
    await page.goto(`${base}/new`);
    await signIn(page, "alice", "alice-password-1");
    await expect(page).toHaveURL(`${base}/new`);
    await hydrated(page);
    await send(page, "/demo alice's private plan");
    await expect(page).toHaveURL(/\/s\/[0-9a-f]+$/);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 20_000 });
    const hers = page.url();

    // Bob follows a link to her conversation: he signs in and lands on his own (empty) app.
    await bob.goto(hers);
    await expect(bob).toHaveURL(/\/login\?next=%2Fs%2F|\/login\?next=\/s\//);
    await signIn(bob, "bob", "bob-password-22");
    await hydrated(bob);
    await expect(bob.locator("article.turn")).toHaveCount(0);
    await expect(bob.getByText("alice's private plan")).toHaveCount(0);
    const who = await account(bob);
    await expect(who).toContainText("bob");
    await expect(bob.locator(".session-list li")).toHaveCount(0);
    // Her stream is not his either.
    const run = await page.evaluate(() => [...document.querySelectorAll("article.turn")].pop()?.getAttribute("data-run-id"));
    expect(run).toBeTruthy();
    const res = await bob.request.get(`${base}/api/chat/stream/status?run_id=${run}`);
    expect(res.status()).toBe(404);
    // And she still has it.
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).getByText("alice's private plan").first()).toBeVisible();
  } finally {
    await bobContext.close();
  }
});
