import { test, expect } from "./fixtures";
import { hydrated, isPhone, lastTurn, newSession, send, startTurn, waitRunEnd } from "./support";

// These tests route the page's requests; a service worker's fetches would pass the routes by
// (Playwright sees only the page's own), so the worker stays out (tests/pwa.spec.ts has it).
test.use({ serviceWorkers: "block" });

test.describe("app shell", () => {
  test("the server renders sidebar, empty chat and composer before any script runs", async ({ browser, request }) => {
    const session = await newSession(request);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const response = await page.goto(`/s/${session}`);
    expect(response?.status()).toBe(200);

    // (On a phone the closed drawer is hidden from the accessibility tree too.)
    await expect(page.locator("nav#sidebar[aria-label='Sessions']")).toBeAttached();
    await expect(page.getByRole("heading", { name: "Start a conversation" })).toBeVisible();
    await expect(page.getByRole("textbox", { name: "Message" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Send" })).toBeDisabled();
    // No Effect has run, so the hydration marker is absent from the server's HTML.
    await expect(page.locator(".app[data-hydrated]")).toHaveCount(0);
    await context.close();
  });

  test("the composer's Send button follows the draft once hydrated", async ({ page, request }) => {
    await page.goto(`/s/${await newSession(request)}`);
    await hydrated(page);

    const input = page.getByRole("textbox", { name: "Message" });
    const sendButton = page.getByRole("button", { name: "Send" });
    await expect(sendButton).toBeDisabled();
    await input.fill("Where is the anchor?");
    await expect(sendButton).toBeEnabled();
    await input.fill("   ");
    await expect(sendButton).toBeDisabled();
  });

  test("without the wasm bundle the page never hydrates and the composer stays inert", async ({ page, request }) => {
    let wasmRequests = 0;
    await page.route("**/*.wasm", (route) => {
      wasmRequests += 1;
      return route.abort();
    });
    await page.goto(`/s/${await newSession(request)}`);
    await expect.poll(() => wasmRequests).toBeGreaterThan(0);

    const input = page.getByRole("textbox", { name: "Message" });
    await input.fill("typed before any wasm");
    // Give a hydrating page every chance to react, then check that nothing did.
    await page.waitForTimeout(1500);
    await expect(page.locator(".app[data-hydrated]")).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Send" })).toBeDisabled();
  });

  test("the sessions drawer opens and closes on a phone; the sidebar stays put on a desktop", async ({ page, request }, testInfo) => {
    await page.goto(`/s/${await newSession(request)}`);
    await hydrated(page);
    const sidebar = page.getByRole("navigation", { name: "Sessions" });
    const menu = page.getByRole("button", { name: "Open sessions" });

    if (!isPhone(page)) {
      await expect(sidebar).toBeInViewport();
      await expect(menu).toBeHidden();
      return;
    }

    await expect(sidebar).not.toBeInViewport();
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    const box = await menu.boundingBox();
    expect(box?.width ?? 0).toBeGreaterThanOrEqual(44);
    expect(box?.height ?? 0).toBeGreaterThanOrEqual(44);

    await menu.tap();
    await expect(menu).toHaveAttribute("aria-expanded", "true");
    await expect(sidebar).toBeInViewport({ ratio: 0.9 });
    await page.screenshot({ path: testInfo.outputPath("drawer-open.png") });

    await page.getByRole("button", { name: "Close sessions" }).tap();
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    await expect(sidebar).not.toBeInViewport();

    // A keyboard closes it too.
    await menu.tap();
    await expect(sidebar).toBeInViewport({ ratio: 0.9 });
    await page.keyboard.press("Escape");
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    await expect(sidebar).not.toBeInViewport();
  });

  test("the web app manifest and its icons are served", async ({ request }) => {
    const manifest = await (await request.get("/manifest.webmanifest")).json();
    expect(manifest.display).toBe("standalone");
    for (const icon of manifest.icons) {
      const res = await request.get(icon.src);
      expect(res.ok(), icon.src).toBeTruthy();
    }
  });

  test("opening another session from the sidebar swaps the conversation in place; Back returns", async ({ page, request }) => {
    // Words no other test uses: sessions of parallel tests share the sidebar and the search.
    const first = await newSession(request);
    await waitRunEnd(request, await startTurn(request, first, "tell me about narwhals"));
    const second = await newSession(request);
    await waitRunEnd(request, await startTurn(request, second, "tell me about axolotls"));
    // Titled after the first message otherwise.
    for (const [id, title] of [[first, "First harbour"], [second, "Second harbour"]]) {
      const res = await request.post("/api/session/rename", { data: { session_id: id, title } });
      expect(res.ok()).toBeTruthy();
    }

    const pageData: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/page")) pageData.push(r.url());
    });
    await page.goto(`/s/${first}`);
    await hydrated(page);
    await expect(page).toHaveTitle("First harbour · Anchorage");
    // The page hydrates from the data in its HTML.
    expect(pageData).toEqual([]);
    // A full page load would drop this.
    await page.evaluate(() => ((window as any).__samePage = true));

    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.locator(`[data-session-id='${second}'] a.session-link`).click();
    await expect(page).toHaveURL(new RegExp(`/s/${second}$`));
    await expect(page.locator(".chat-title")).toHaveText("Second harbour");
    await expect(page).toHaveTitle("Second harbour · Anchorage");
    await expect(page.locator("article.turn")).toHaveCount(1);
    await expect(page.locator("article.turn .user-message .bubble")).toHaveText("tell me about axolotls");
    await expect(page.locator("article.turn [data-final-answer='true']")).toBeVisible();
    await expect(page.locator(`[data-session-id='${second}']`)).toHaveClass(/current/);
    expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);

    await page.goBack();
    await expect(page).toHaveURL(new RegExp(`/s/${first}$`));
    await expect(page.locator("article.turn .user-message .bubble")).toHaveText("tell me about narwhals");
    expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);
    expect(pageData).toHaveLength(2);

    // A fragment (a `#` link) is not another page: nothing is loaded again.
    await page.evaluate(() => (location.hash = "somewhere"));
    await page.waitForTimeout(300);
    expect(pageData).toHaveLength(2);

    // The server renders the same conversation for the address.
    await page.goto(`/s/${second}`);
    await hydrated(page);
    await expect(page.locator("article.turn .user-message .bubble")).toHaveText("tell me about axolotls");
  });

  test("opening the conversation already shown, mid-run, keeps following its turn", async ({ page, request }) => {
    const session = await newSession(request);
    await page.goto(`/s/${session}`);
    await hydrated(page);
    await send(page, "/demo long 600");
    await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();

    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.locator(`[data-session-id='${session}'] a.session-link`).click();
    // The reloaded turn is drawn and followed to its end: one turn, settled, every token in it.
    await expect(page.locator("article.turn")).toHaveCount(1);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
    const run = await lastTurn(page).getAttribute("data-run-id");
    const status = await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json();
    expect(status.active).toBe(false);
    await expect(lastTurn(page)).toHaveAttribute("data-last-seq", String(status.last_seq));
  });

  test("without the split-off Markdown renderer, answers stream and settle as plain text", async ({ page, request }) => {
    let blocked = 0;
    await page.route("**/split_markdown_renderer*.wasm", (route) => {
      blocked += 1;
      return route.abort();
    });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`/s/${await newSession(request)}`);
    await hydrated(page);
    await expect.poll(() => blocked).toBeGreaterThan(0);
    await expect(page.locator(".app[data-markdown='ready']")).toHaveCount(0);

    await send(page, "/demo prose");
    const answer = lastTurn(page).locator("[data-final-answer='true']");
    await expect(answer).toBeVisible();
    await expect(answer.locator(".plain").first()).toBeVisible();
    await expect(answer).toContainText("**demo agent**");
    await expect(answer).toContainText("explicit terminal state");
    // Still a working page: the mode switch answers.
    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await expect(lastTurn(page)).toHaveAttribute("data-mode", "transparent_stream");
    // The split loader (cargo-leptos's generated `__wasm_split.js`) starts a part's fetch
    // before the chunks it shares with other parts, and hands it on only once those are in:
    // a fetch that fails meanwhile is reported as an unhandled rejection, though the page
    // receives the failure (and shows plain text). Anything else is a defect of the page.
    expect(errors.filter((e) => e !== "TypeError: Failed to fetch")).toEqual([]);
  });

  test("a conversation that cannot be loaded leaves the page and its address as they were", async ({ page, request }) => {
    const first = await newSession(request);
    const second = await newSession(request);
    await page.goto(`/s/${first}`);
    await hydrated(page);
    await page.route("**/api/page*", (route) => route.abort());

    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.locator(`[data-session-id='${second}'] a.session-link`).click();
    await expect(page.locator(".error-banner")).toBeVisible();
    await expect(page).toHaveURL(new RegExp(`/s/${first}$`));
    await expect(page.locator(`[data-session-id='${first}']`)).toHaveClass(/current/);
    await expect(page.locator(".transcript")).toHaveAttribute("aria-busy", "false");

    // Once the server answers again, the same click opens it.
    await page.unroute("**/api/page*");
    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.locator(`[data-session-id='${second}'] a.session-link`).click();
    await expect(page).toHaveURL(new RegExp(`/s/${second}$`));
    await expect(page.locator(`[data-session-id='${second}']`)).toHaveClass(/current/);
  });

  test("New chat opens an empty conversation in place", async ({ page, request }) => {
    await page.goto(`/s/${await newSession(request)}`);
    await hydrated(page);
    await page.evaluate(() => ((window as any).__samePage = true));
    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    await page.getByRole("button", { name: "New chat" }).click();
    await expect(page).toHaveURL(/\/new$/);
    await expect(page.getByRole("heading", { name: "Start a conversation" })).toBeVisible();
    await expect(page.locator(".chat-title")).toHaveText("New chat");
    expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);
  });

  test("an unknown address is a 404 page; page data is JSON; an unknown session falls back with a notice", async ({ page, request }) => {
    const missing = await request.get("/no/such/page");
    expect(missing.status()).toBe(404);
    expect(await missing.text()).toContain("Page not found");

    const session = await newSession(request, "Page data subject");
    const data = await (await request.get(`/api/page?session_id=${session}`)).json();
    expect(data.session.id).toBe(session);
    expect(data.session.title).toBe("Page data subject");
    expect(data.sessions.some((s: any) => s.id === session)).toBe(true);
    expect(data.missing).toBe(false);

    const gone = await (await request.get("/api/page?session_id=no-such-session")).json();
    expect(gone.missing).toBe(true);
    await page.goto("/s/no-such-session");
    await hydrated(page);
    await expect(page.getByRole("alert").filter({ hasText: "does not exist" })).toBeVisible();
  });
});
