import { test, expect } from "./fixtures";
import { type ChildProcess } from "child_process";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { type Page } from "@playwright/test";
import { cli as runCli, freePort, kill9, startServer, waitHealthy } from "./own_server";
import { accessibilityProblems, hydrated, isPhone } from "./support";

// Passkeys with Chromium's virtual authenticator (CDP's WebAuthn domain: a platform
// authenticator that verifies its user by itself), on a server of its own with an account.
// A passkey belongs to a name: the site is opened at localhost, not at 127.0.0.1.
let server: ChildProcess | undefined;
let dataDir = "";
let port = 0;
const base = () => `http://localhost:${port}`;

function cli(args: string[], input = ""): string {
  return runCli(dataDir, args, input);
}

test.beforeAll(async ({ request }) => {
  port = await freePort();
  dataDir = mkdtempSync(join(tmpdir(), "anchorage-passkeys-"));
  cli(["user", "add", "dora"], "dora-password-1\n");
  // A sign-in's proof is fresh for three seconds here (five minutes by default).
  server = startServer(port, dataDir, { ANCHORAGE_FRESH_PROOF_SECS: "3" });
  await waitHealthy(request, base());
});

test.afterAll(async () => {
  if (server) await kill9(server);
  rmSync(dataDir, { recursive: true, force: true });
});

/** A virtual authenticator in this page's browser, as a phone's or a laptop's own. */
async function authenticator(page: Page): Promise<{ credentials: () => Promise<any[]> }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    credentials: async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials,
  };
}

async function openSettings(page: Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  await expect(dialog).toBeVisible();
  return dialog;
}

async function signOut(page: Page) {
  await page.keyboard.press("Escape");
  if (isPhone(page) && (await page.locator("[data-drawer='open']").count()) === 0) {
    await page.getByRole("button", { name: "Open sessions" }).tap();
  }
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
}

test("a passkey added in Settings signs in after a restart; the password stays; removed, it is gone", async ({ page, request }, testInfo) => {
  const key = await authenticator(page);
  await page.goto(`${base()}/`);
  // No passkey on the server yet: the password form alone.
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Sign in with a passkey" })).toHaveCount(0);
  await page.getByLabel("Name").fill("dora");
  await page.getByLabel("Password").fill("dora-password-1");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await hydrated(page);

  let dialog = await openSettings(page);
  const section = dialog.getByRole("region", { name: "Passkeys" });
  await expect(section.getByText("None yet.")).toBeVisible();
  // The sign-in is no longer fresh: a passkey lasts, so adding one asks for the password.
  await page.waitForTimeout(3_500);
  await section.getByRole("button", { name: "Add a passkey" }).click();
  const confirm = section.getByRole("form", { name: "Confirm it is you" });
  await expect(confirm).toBeVisible();
  await expect(confirm.getByLabel("Password")).toBeFocused();
  await page.screenshot({ path: testInfo.outputPath("confirm.png") });
  expect(await accessibilityProblems(page, "dialog[open]")).toEqual([]);
  await confirm.getByLabel("Password").fill("not dora's password");
  await confirm.getByRole("button", { name: "Confirm" }).click();
  await expect(section.getByRole("alert")).toContainText("not the password");
  await expect(section.getByText("None yet.")).toBeVisible();
  expect(await key.credentials()).toHaveLength(0);
  await confirm.getByLabel("Password").fill("dora-password-1");
  await confirm.getByRole("button", { name: "Confirm" }).click();
  // Named after the browser and system that made it, with when.
  const row = section.locator(".grant.passkey");
  await expect(row).toHaveCount(1);
  await expect(row.locator(".share-title")).toHaveText(/^Chrome on (Windows|Android|Linux|Mac)$/);
  await expect(confirm).toHaveCount(0);
  await expect(row.locator(".grant-scope")).toHaveText("Added just now · not used yet");
  // Renamed in place: the field takes the focus, Enter keeps the new name.
  await row.getByRole("button", { name: /^Rename / }).click();
  const field = row.getByRole("textbox", { name: "Passkey name" });
  await expect(field).toBeFocused();
  await field.fill("Dora's laptop");
  await page.keyboard.press("Enter");
  await expect(row.locator(".share-title")).toHaveText("Dora's laptop");
  // Kept on the device with whose it is (a discoverable credential).
  const made = await key.credentials();
  expect(made).toHaveLength(1);
  expect(made[0].isResidentCredential).toBe(true);
  await page.screenshot({ path: testInfo.outputPath("added.png") });
  await signOut(page);

  // The server restarts: the passkey is kept.
  await kill9(server!);
  server = startServer(port, dataDir, { ANCHORAGE_FRESH_PROOF_SECS: "3" });
  await waitHealthy(request, base());
  // `server user passwd --keep-passkeys` changes the password and leaves the passkeys.
  cli(["user", "passwd", "dora", "--keep-passkeys"], "dora-password-2\n");

  await page.goto(`${base()}/login`);
  const passkey = page.getByRole("button", { name: "Sign in with a passkey" });
  await expect(passkey).toBeVisible();
  // No name: the passkey says whose it is.
  await expect(page.getByLabel("Name")).toHaveValue("");
  await page.screenshot({ path: testInfo.outputPath("sign-in.png") });
  await passkey.click();
  await hydrated(page);
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await expect(page.locator("[data-account]")).toContainText("dora");
  if (isPhone(page)) await page.keyboard.press("Escape");

  dialog = await openSettings(page);
  const keys = dialog.getByRole("region", { name: "Passkeys" });
  await expect(keys.locator(".grant-scope")).toContainText("last used just now");
  await expect(keys.locator(".share-title")).toHaveText("Dora's laptop · this browser signed in with it");
  await expect(dialog.getByRole("region", { name: "Signed-in devices" }).locator("[data-current]")).toContainText("with the passkey “Dora's laptop”");
  // Removing asks first, and says what it ends; "Keep it" keeps it.
  await keys.getByRole("button", { name: "Remove Dora's laptop" }).click();
  const question = keys.getByRole("group", { name: "Remove Dora's laptop?" });
  await expect(question).toContainText("This browser signed in with it and will be signed out.");
  await expect(question.getByRole("button", { name: "Remove passkey" })).toBeFocused();
  await page.screenshot({ path: testInfo.outputPath("remove-question.png") });
  expect(await accessibilityProblems(page, "dialog[open]")).toEqual([]);
  await question.getByRole("button", { name: "Keep it" }).click();
  await expect(question).toHaveCount(0);
  await expect(keys.locator(".grant.passkey")).toHaveCount(1);
  // Removed, it takes the sign-in it made with it: this device is signed out.
  await keys.getByRole("button", { name: "Remove Dora's laptop" }).click();
  await question.getByRole("button", { name: "Remove passkey" }).click();
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  // No passkey left: the page offers none, and the new password signs in.
  await expect(page.getByRole("button", { name: "Sign in with a passkey" })).toHaveCount(0);
  await page.getByLabel("Name").fill("dora");
  await page.getByLabel("Password").fill("dora-password-2");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await hydrated(page);
});
