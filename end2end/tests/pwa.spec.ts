import { test, expect } from "./fixtures";
import { chromium as browserType, type Page, type BrowserContext } from "@playwright/test";
import { spawnSync, type ChildProcess } from "child_process";
import { appendFileSync, cpSync, mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { chromium } from "../chromium";
import { freePort, kill9, root, serverBinary, startServer, waitHealthy } from "./own_server";
import { hydrated, isPhone, lastTurn, newSession, rowAction, send, startTurn, waitRunEnd } from "./support";

// The app as a phone keeps it: installable, its bundle kept by the service worker, the
// conversations read last opening offline. The worker runs in the rest of the suite too, as in
// a person's browser, but for the files that route requests (which its fetches would pass by).
test.use({ serviceWorkers: "allow" });

/** Resolves once the service worker controls the page (it claims it once installed). */
async function controlled(page: Page): Promise<void> {
  await page.waitForFunction(() => !!navigator.serviceWorker?.controller, null, { timeout: 20_000 });
}

/** The addresses of the pages the worker keeps for offline, per cache. */
async function savedPages(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const out: string[] = [];
    for (const name of await caches.keys()) {
      if (!name.startsWith("anchorage-pages-")) continue;
      for (const req of await (await caches.open(name)).keys()) out.push(new URL(req.url).pathname);
    }
    return out;
  });
}

/** A conversation with one settled turn whose answer contains `word`. */
async function conversation(request: any, word: string): Promise<string> {
  const session = await newSession(request, `Saved ${word}`);
  const run = await startTurn(request, session, `Remember ${word}`);
  await waitRunEnd(request, run);
  return session;
}

test("the manifest passes Chromium's installability check, and a broken one does not", async ({ baseURL }, testInfo) => {
  // The headless shell answers no installability errors whatever the manifest says: the full
  // browser is asked (headless).
  const browser = await browserType.launch({ ...chromium, executablePath: "/usr/bin/chromium" });
  try {
    const phone = testInfo.project.name === "phone";
    const context = await browser.newContext({
      viewport: phone ? { width: 390, height: 844 } : { width: 1280, height: 800 },
      isMobile: phone,
      hasTouch: phone,
    });
    const errors = async (broken: boolean) => {
      const page = await context.newPage();
      if (broken) {
        await page.route("**/manifest.webmanifest", (route) =>
          route.fulfill({ contentType: "application/manifest+json", body: JSON.stringify({ name: "x", display: "browser" }) }),
        );
      }
      await page.goto(`${baseURL}/`);
      await hydrated(page);
      const cdp = await context.newCDPSession(page);
      // Playwright's contexts are incognito ones, which the check always names: every other
      // error counts.
      const found = (await cdp.send("Page.getInstallabilityErrors")).installabilityErrors
        .map((e: any) => e.errorId)
        .filter((id: string) => id !== "in-incognito");
      await page.close();
      return found;
    };
    expect(await errors(false)).toEqual([]);
    expect((await errors(true)).length).toBeGreaterThan(0);
    const manifestUrl = `${baseURL}/manifest.webmanifest`;
    const manifest = await (await fetch(manifestUrl)).json();
    expect(manifest.display).toBe("standalone");
    // Its addresses are relative: the site may live under a path (base_path.spec.ts).
    expect(new URL(manifest.start_url, manifestUrl).pathname).toBe("/");
    const purposes = manifest.icons.map((i: any) => `${i.sizes} ${i.purpose}`);
    expect(purposes).toEqual(expect.arrayContaining(["192x192 any", "512x512 any", "512x512 maskable"]));
  } finally {
    await browser.close();
  }
});

test("a repeat visit takes the bundle from the service worker, none of it from the network", async ({ page, context, request }) => {
  const session = await conversation(request, "kept");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await controlled(page);
  // From here on, every bundle file the page loads: who served it, and whether the worker
  // went to the network for it.
  const fromWorker: Record<string, boolean> = {};
  page.on("response", (r) => {
    if (/\/build\/[0-9a-f]+\/pkg\//.test(r.url())) fromWorker[r.url().split("/").pop()!] = r.fromServiceWorker();
  });
  const workerFetches: string[] = [];
  context.on("request", (r) => {
    if (r.serviceWorker() && /\.(wasm|js|css)$/.test(r.url())) workerFetches.push(r.url());
  });
  await page.reload();
  await hydrated(page);
  await expect(lastTurn(page)).toContainText("You wrote: \"Remember kept\"");
  expect(fromWorker["anchorage.wasm"]).toBe(true);
  expect(fromWorker["anchorage.js"]).toBe(true);
  expect(fromWorker["anchorage.css"]).toBe(true);
  // The Markdown renderer, loaded once the page is live, comes from the worker too.
  await expect.poll(() => fromWorker["split_markdown_renderer.wasm"]).toBe(true);
  expect(workerFetches).toEqual([]);
});

test("offline, the conversation read last opens with a banner; a message written offline leaves when the network is back", async ({ page, context, request }, testInfo) => {
  const session = await conversation(request, "harbour");
  await page.goto(`/s/${session}`);
  await hydrated(page);
  await controlled(page);
  // A visit the worker sees keeps the page.
  await page.reload();
  await hydrated(page);
  await expect.poll(() => savedPages(page)).toContain(`/s/${session}`);
  const banner = page.getByRole("status").filter({ hasText: "Offline — showing what was saved" });
  await expect(banner).toHaveCount(0);

  await context.setOffline(true);
  await page.reload();
  await hydrated(page);
  await expect(banner).toBeVisible();
  await expect(lastTurn(page)).toContainText("You wrote: \"Remember harbour\"");
  await page.screenshot({ path: testInfo.outputPath("offline.png") });

  await send(page, "Written offline");
  // Nothing reached the server: it still has one turn.
  const turns = async () =>
    (await (await request.get(`/api/session?session_id=${session}`)).json()).session.messages.filter(
      (m: any) => m.role === "user",
    ).length;
  await expect(page.locator(".send-failed")).toContainText("Not sent yet");
  expect(await turns()).toBe(1);

  await context.setOffline(false);
  await expect(lastTurn(page)).toContainText("You wrote: \"Written offline\"", { timeout: 20_000 });
  await expect.poll(turns, { timeout: 20_000 }).toBe(2);
  await expect(banner).toHaveCount(0);
});

test("offline, a page never read says so instead of the browser's error", async ({ page, context, request }) => {
  await page.goto("/");
  await hydrated(page);
  await controlled(page);
  const session = await newSession(request, "Never opened here");
  await context.setOffline(true);
  await page.goto(`/s/${session}`);
  await expect(page.getByRole("heading", { name: "Offline" })).toBeVisible();
  await expect(page.getByText("not saved on this device")).toBeVisible();
  await context.setOffline(false);
});

test("a conversation deleted here, or gone from the server, does not open offline", async ({ page, context, request }) => {
  const kept = await conversation(request, "lighthouse");
  const deleted = await conversation(request, "shipwreck");
  const goneElsewhere = await conversation(request, "driftwood");
  await page.goto(`/s/${kept}`);
  await hydrated(page);
  await controlled(page);
  for (const session of [deleted, goneElsewhere, kept]) {
    await page.goto(`/s/${session}`);
    await hydrated(page);
  }
  await expect
    .poll(() => savedPages(page))
    .toEqual(expect.arrayContaining([`/s/${kept}`, `/s/${deleted}`, `/s/${goneElsewhere}`]));

  // Deleted from this page's list: its copy goes with it.
  if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
  await rowAction(page.locator(".session-row", { hasText: "Remember shipwreck" }), "Delete");
  await expect(page.locator(".session-row", { hasText: "Remember shipwreck" })).toHaveCount(0);
  await expect.poll(() => savedPages(page)).not.toContain(`/s/${deleted}`);
  // Deleted elsewhere (another device): the next visit finds it gone and drops the copy.
  const res = await request.post("/api/session/delete", { data: { session_id: goneElsewhere } });
  expect(res.ok()).toBeTruthy();
  await page.goto(`/s/${goneElsewhere}`);
  await expect.poll(() => savedPages(page)).not.toContain(`/s/${goneElsewhere}`);
  expect(await savedPages(page)).toContain(`/s/${kept}`);

  await context.setOffline(true);
  for (const session of [deleted, goneElsewhere]) {
    await page.goto(`/s/${session}`);
    await expect(page.getByText("not saved on this device")).toBeVisible();
  }
  await page.goto(`/s/${kept}`);
  await hydrated(page);
  await expect(lastTurn(page)).toContainText("Remember lighthouse");
  await context.setOffline(false);
});

test.describe("a new build", () => {
  // A server of its own, on a copy of the site that the test changes as a new build would.
  let server: ChildProcess | undefined;
  let dataDir = "";
  let site = "";
  let port = 0;

  test.beforeAll(async ({ request }) => {
    port = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), "anchorage-pwa-"));
    site = mkdtempSync(join(tmpdir(), "anchorage-site-"));
    cpSync(join(root, "target", "site"), site, { recursive: true });
    server = startServer(port, dataDir, { LEPTOS_SITE_ROOT: site, ANCHORAGE_CACHE_DIR: join(dataDir, "cache") });
    await waitHealthy(request, `http://127.0.0.1:${port}`);
  });

  test.afterAll(async () => {
    if (server) await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(site, { recursive: true, force: true });
  });

  test("is taken at the next page load and says Updated once", async ({ page, request }) => {
    const base = `http://127.0.0.1:${port}`;
    await page.goto(`${base}/`);
    await hydrated(page);
    await controlled(page);
    const first = await page.locator('meta[name="anchorage-build"]').getAttribute("content");
    const updated = page.locator(".toast").filter({ hasText: "Updated" });
    await page.reload();
    await hydrated(page);
    await expect(updated).toHaveCount(0);

    // The next build: a changed stylesheet is a new bundle, so a new worker and new addresses.
    await kill9(server!);
    appendFileSync(join(site, "pkg", "anchorage.css"), "\n/* the next build */\n");
    server = startServer(port, dataDir, { LEPTOS_SITE_ROOT: site, ANCHORAGE_CACHE_DIR: join(dataDir, "cache") });
    await waitHealthy(request, base);

    await page.reload();
    await hydrated(page);
    const second = await page.locator('meta[name="anchorage-build"]').getAttribute("content");
    expect(second).not.toBe(first);
    await expect(updated).toBeVisible();
    // The page works on the new build: a message goes and is answered.
    await send(page, "After the update");
    await expect(lastTurn(page)).toContainText("You wrote: \"After the update\"");
    // Once: the next load says nothing.
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page)).toContainText("You wrote: \"After the update\"");
    await expect(updated).toHaveCount(0);
  });

  test("a page saved two builds ago still opens offline, styled and live", async ({ page, context, request }) => {
    const base = `http://127.0.0.1:${port}`;
    const made = async (word: string) => {
      const res = await request.post(`${base}/api/session/new`, { data: {} });
      const session = (await res.json()).session.id;
      const run = await request.post(`${base}/api/chat/start`, { data: { session_id: session, message: `Remember ${word}` } });
      expect(run.ok()).toBeTruthy();
      return session;
    };
    const early = await made("anchor chain");
    const later = await made("mooring line");
    const build = () => page.locator('meta[name="anchorage-build"]').getAttribute("content");
    // Read once, then never again while two builds come.
    await page.goto(`${base}/s/${early}`);
    await hydrated(page);
    await controlled(page);
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page)).toContainText("Remember anchor chain");
    await expect.poll(() => savedPages(page)).toContain(`/s/${early}`);
    const seen = [await build()];
    for (const next of ["the second", "the third"]) {
      await kill9(server!);
      appendFileSync(join(site, "pkg", "anchorage.css"), `\n/* ${next} build */\n`);
      server = startServer(port, dataDir, { LEPTOS_SITE_ROOT: site, ANCHORAGE_CACHE_DIR: join(dataDir, "cache") });
      await waitHealthy(request, base);
      await page.goto(`${base}/s/${later}`);
      await hydrated(page);
      const now = await build();
      seen.push(now);
      // This build's worker has installed its bundle and finished taking over (it is
      // "activated" once the earlier bundles it does not keep are gone).
      await expect
        .poll(() =>
          page.evaluate(async (now) => {
            const reg = await navigator.serviceWorker.getRegistration();
            const done = reg?.active?.state === "activated" && !reg.installing && !reg.waiting;
            return done && (await caches.keys()).includes(`anchorage-shell-${now}`);
          }, now),
        )
        .toBe(true);
      await page.reload();
      await hydrated(page);
    }
    expect(new Set(seen).size).toBe(3);
    await expect.poll(() => savedPages(page)).toContain(`/s/${early}`);

    // Offline, the page of the first build opens with its own stylesheet and scripts, from
    // what the worker keeps: the browser's HTTP cache may still hold them too, but that is no
    // promise (a phone short of space empties it first), so it is emptied here.
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.clearBrowserCache");
    await context.setOffline(true);
    await page.goto(`${base}/s/${early}`);
    await hydrated(page);
    expect(await build()).toBe(seen[0]);
    await expect(page.getByRole("status").filter({ hasText: "Offline — showing what was saved" })).toBeVisible();
    await expect(lastTurn(page)).toContainText("Remember anchor chain");
    // Styled: every stylesheet of the page came.
    const styled = await page.evaluate(() => document.styleSheets.length > 0 && [...document.styleSheets].every((s) => s.cssRules.length > 0));
    expect(styled).toBe(true);
    await context.setOffline(false);
  });
});

test.describe("signing out", () => {
  let server: ChildProcess | undefined;
  let dataDir = "";
  let port = 0;

  test.beforeAll(async ({ request }) => {
    port = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), "anchorage-pwa-accounts-"));
    const run = spawnSync(serverBinary(), ["--data-dir", dataDir, "user", "add", "carol"], {
      cwd: root,
      input: "carol-password-1\n",
      env: { ...process.env, RUST_LOG: "warn" },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    server = startServer(port, dataDir);
    await waitHealthy(request, `http://127.0.0.1:${port}`);
  });

  test.afterAll(async () => {
    if (server) await kill9(server);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("forgets the conversations kept for offline", async ({ page }) => {
    const base = `http://127.0.0.1:${port}`;
    await page.goto(`${base}/`);
    await page.getByLabel("Name").fill("carol");
    await page.getByLabel("Password").fill("carol-password-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await hydrated(page);
    await send(page, "Private words");
    await expect(lastTurn(page)).toContainText("You wrote: \"Private words\"");
    await controlled(page);
    await page.reload();
    await hydrated(page);
    await expect.poll(async () => (await savedPages(page)).length).toBeGreaterThan(0);

    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
    await expect.poll(() => savedPages(page)).toEqual([]);

    // Signed out elsewhere (a new password signs the account out everywhere): the next page
    // load goes to sign in, and what was kept goes too.
    await page.getByLabel("Name").fill("carol");
    await page.getByLabel("Password").fill("carol-password-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await hydrated(page);
    await page.reload();
    await hydrated(page);
    await expect.poll(async () => (await savedPages(page)).length).toBeGreaterThan(0);
    const passwd = spawnSync(serverBinary(), ["--data-dir", dataDir, "user", "passwd", "carol"], {
      cwd: root,
      input: "carol-password-2\n",
      env: { ...process.env, RUST_LOG: "warn" },
      encoding: "utf8",
    });
    expect(passwd.status, passwd.stderr).toBe(0);
    await page.reload();
    await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
    await expect.poll(() => savedPages(page)).toEqual([]);
  });
});
