import { test, expect } from "./fixtures";
import { type Page } from "@playwright/test";
import { spawnSync, type ChildProcess } from "child_process";
import { createServer, request as forward, type Server } from "http";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, root, serverBinary, startServer, waitHealthy } from "./own_server";
import { hydrated, isPhone, lastTurn, send } from "./support";

// The site behind a reverse proxy under a path of its own (`--public-url
// http://host/team/chat`), as nginx's `location /team/chat/ { proxy_pass http://app/; }` puts
// it: the proxy takes the path off before the server sees a request. Every address the
// browser is given must carry the path; the proxy answers 404 to any other and notes it.
test.use({ serviceWorkers: "allow" });

const BASE = "/team/chat";

/** A reverse proxy on `port` that serves `target`'s root under BASE, and notes requests elsewhere. */
function pathProxy(port: number, target: number, outside: string[]): Promise<Server> {
  const proxy = createServer((req, res) => {
    const url = req.url ?? "/";
    if (!(url === BASE || url.startsWith(`${BASE}/`) || url.startsWith(`${BASE}?`))) {
      outside.push(`${req.method} ${url}`);
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not under the proxy's path");
      return;
    }
    const rest = url.slice(BASE.length);
    const upstream = forward(
      {
        host: "127.0.0.1",
        port: target,
        method: req.method,
        path: rest.startsWith("/") ? rest : `/${rest}`,
        headers: { ...req.headers, "x-forwarded-for": "127.0.0.1" },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((done) => proxy.listen(port, "127.0.0.1", () => done(proxy)));
}

/** The addresses of the pages the worker keeps for offline. */
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

test.describe("behind a proxy under a path", () => {
  let server: ChildProcess | undefined;
  let proxy: Server | undefined;
  let dataDir = "";
  let site = "";
  const outside: string[] = [];

  test.beforeAll(async ({ request }) => {
    const port = await freePort();
    const proxyPort = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), "anchorage-base-"));
    // Behind a proxy the server is not open to everyone: an account.
    const add = spawnSync(serverBinary(), ["--data-dir", dataDir, "user", "add", "dana"], {
      cwd: root,
      input: "dana-password-1\n",
      env: { ...process.env, RUST_LOG: "warn" },
      encoding: "utf8",
    });
    expect(add.status, add.stderr).toBe(0);
    site = `http://127.0.0.1:${proxyPort}${BASE}`;
    server = startServer(port, dataDir, {}, ["--public-url", site]);
    proxy = await pathProxy(proxyPort, port, outside);
    await waitHealthy(request, site);
  });

  test.afterAll(async () => {
    if (server) await kill9(server);
    await new Promise((done) => (proxy ? proxy.close(done) : done(undefined)));
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("signs in, streams, moves between conversations, installs and opens offline, all under the path", async ({ page, context }, testInfo) => {
    outside.length = 0;
    const path = () => new URL(page.url()).pathname;
    await page.goto(`${site}/`);
    // Signing in: the sign-in page is under the path, and sends the browser back there.
    await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
    expect(path()).toBe(`${BASE}/login`);
    await page.getByLabel("Name").fill("dana");
    await page.getByLabel("Password").fill("dana-password-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await hydrated(page);
    expect(path()).toBe(`${BASE}/`);
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === "anchorage_session")?.path).toBe(BASE);

    // A message goes and its answer streams in through the proxy; the address names the
    // conversation under the path.
    await send(page, "Hello under a path");
    await expect(lastTurn(page)).toContainText('You wrote: "Hello under a path"');
    await expect.poll(path).toMatch(new RegExp(`^${BASE}/s/[^/]+$`));
    const first = path();
    await send(page, "A second conversation needs a first");
    await expect(lastTurn(page)).toContainText('You wrote: "A second conversation needs a first"');

    // A new conversation, then back to the first from the list, in place.
    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.getByRole("button", { name: "New chat" }).click();
    await expect.poll(path).toBe(`${BASE}/new`);
    await send(page, "Another one");
    await expect(lastTurn(page)).toContainText('You wrote: "Another one"');
    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    const row = page.locator(".session-row", { hasText: "Hello under a path" });
    await expect(row.locator("a.session-link")).toHaveAttribute("href", first);
    await row.locator("a.session-link").click();
    await expect.poll(path).toBe(first);
    await expect(lastTurn(page)).toContainText('You wrote: "A second conversation needs a first"');
    // Back goes back, in place.
    await page.goBack();
    await expect.poll(path).not.toBe(first);
    await expect(lastTurn(page)).toContainText('You wrote: "Another one"');
    await page.goForward();
    await expect.poll(path).toBe(first);

    // The manifest starts the installed app at the path.
    const manifest = await page.evaluate(async () => {
      const link = document.querySelector<HTMLLinkElement>('link[rel="manifest"]')!;
      const json = await (await fetch(link.href)).json();
      return { start: new URL(json.start_url, link.href).pathname, scope: new URL(json.scope, link.href).pathname };
    });
    expect(manifest).toEqual({ start: `${BASE}/`, scope: `${BASE}/` });

    // The worker is the path's, keeps the bundle under it, and the conversation for offline.
    await page.waitForFunction(() => !!navigator.serviceWorker?.controller, null, { timeout: 20_000 });
    expect(await page.evaluate(() => navigator.serviceWorker.controller!.scriptURL)).toBe(`${site}/sw.js`);
    await page.reload();
    await hydrated(page);
    await expect.poll(() => savedPages(page)).toContain(first);
    const kept = await page.evaluate(async () => {
      const out: string[] = [];
      for (const name of await caches.keys()) {
        if (!name.startsWith("anchorage-shell-")) continue;
        for (const req of await (await caches.open(name)).keys()) out.push(new URL(req.url).pathname);
      }
      return out;
    });
    expect(kept.length).toBeGreaterThan(0);
    for (const address of kept) expect(address.startsWith(`${BASE}/build/`)).toBe(true);

    await context.setOffline(true);
    await page.reload();
    await hydrated(page);
    await expect(page.getByRole("status").filter({ hasText: "Offline — showing what was saved" })).toBeVisible();
    await expect(lastTurn(page)).toContainText('You wrote: "A second conversation needs a first"');
    await page.screenshot({ path: testInfo.outputPath("offline-under-a-path.png") });
    await context.setOffline(false);

    // Nothing the browser was given pointed outside the path.
    expect(outside).toEqual([]);
  });
});
