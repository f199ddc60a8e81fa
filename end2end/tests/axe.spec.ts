import { test, expect } from "./fixtures";
import type { Page } from "@playwright/test";
import { accessibilityProblems, hydrated, isPhone, openNewSession, send, setMode, settled } from "./support";

// axe-core (serious and critical findings) on every page a person meets here, in the light
// and the dark, on both viewports (the projects): a new chat, a settled turn in each view,
// Settings and a shared conversation. Sign-in and Files are audited where their servers run
// (accounts.spec, files.spec).

async function openSettings(page: Page) {
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await page.getByRole("button", { name: "Settings" }).click();
  await expect(page.getByRole("dialog", { name: "Settings" })).toBeVisible();
}

for (const scheme of ["light", "dark"] as const) {
  test(`${scheme}: axe finds nothing serious on the pages a person meets`, async ({ page, request }) => {
    test.setTimeout(120_000);
    await page.emulateMedia({ colorScheme: scheme });
    const found: Record<string, string[]> = {};

    await page.goto("/new");
    await hydrated(page);
    expect(await page.evaluate(() => matchMedia("(prefers-color-scheme: dark)").matches)).toBe(scheme === "dark");
    found["new chat"] = await accessibilityProblems(page);

    const session = await openNewSession(page, request);
    await send(page, "/demo tools");
    await settled(page);
    await setMode(page, "Worklog");
    found["settled turn, Worklog"] = await accessibilityProblems(page);
    await setMode(page, "Stream");
    found["settled turn, Stream"] = await accessibilityProblems(page);

    await openSettings(page);
    found["Settings"] = await accessibilityProblems(page, "dialog[open]");
    await page.keyboard.press("Escape");

    const shared = await request.post("/api/share", { data: { session_id: session } });
    expect(shared.ok()).toBeTruthy();
    const share = (await shared.json()).share;
    await page.goto(share.path);
    await expect(page.getByText("/demo tools").first()).toBeVisible();
    found["shared conversation"] = await accessibilityProblems(page);
    await request.post("/api/share/revoke", { data: { id: share.id } });

    expect(found).toEqual({
      "new chat": [],
      "settled turn, Worklog": [],
      "settled turn, Stream": [],
      Settings: [],
      "shared conversation": [],
    });
  });
}
