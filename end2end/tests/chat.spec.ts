import { test, expect } from "./fixtures";
import { ACTIVITY, hydrated, isPhone, journal, lastTurn, newSession, openNewSession, rendererReady, send, startTurn, waitRunEnd, rowAction } from "./support";

test.describe("chatting", () => {
  test("a message streams, then settles in place in the same element", async ({ page, request }) => {
    await openNewSession(page, request);
    // Every answer element seen streaming, caught as the page changes. The answer streams
    // for seconds: a short one can be over before the page's stream connects on a busy
    // machine, and the page then rightly shows it settled at once, never streaming.
    await page.evaluate(() => {
      const w = window as any;
      w.__streaming = [];
      const look = () =>
        document.querySelectorAll("[data-final-answer='streaming']").forEach((el) => {
          if (!w.__streaming.includes(el)) w.__streaming.push(el);
        });
      new MutationObserver(look).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ["data-final-answer"],
      });
    });
    await send(page, "/demo long 500");
    const turn = lastTurn(page);
    const answer = turn.locator("[data-final-answer]");
    await expect(answer).toHaveAttribute("data-final-answer", "true", { timeout: 60_000 });
    // It streamed, and settling replaced the streaming answer in place: the same node, now
    // holding the final text.
    expect(await page.evaluate(() => (window as any).__streaming.length)).toBe(1);
    expect(
      await answer.evaluate((el) => (window as any).__streaming[0] === el),
    ).toBeTruthy();
    await expect(answer).toContainText("w0 w1 w2");
    await expect(answer).toContainText("w499");
    await expect(page.locator("article.turn")).toHaveCount(1);
    await expect(turn.locator("[data-terminal-state]")).toHaveCount(0);
    await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("");
    // Reloading shows the same turn from the journal.
    const before = await answer.innerText();
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText(before);
  });

  test("a streamed answer is rendered as Markdown in the browser, as the server renders it", async ({ page, request }) => {
    await openNewSession(page, request);
    await send(page, "/demo prose");
    const answer = lastTurn(page).locator("[data-final-answer='true']");
    await expect(answer).toBeVisible();
    await expect(answer.locator("strong")).toHaveText("demo agent");
    await expect(answer.locator("li")).toHaveCount(3);
    await expect(answer.locator(".plain")).toHaveCount(0);
    // What a reader gets: the chunks' HTML, without the comments a renderer may leave.
    const chunks = (el: typeof answer) =>
      el.locator(".chunk").evaluateAll((cs) => cs.map((c) => c.innerHTML.replaceAll("<!---->", "")));
    const live = await chunks(answer);

    await page.reload();
    await hydrated(page);
    const settled = lastTurn(page).locator("[data-final-answer='true']");
    await expect(settled.locator("strong")).toHaveText("demo agent");
    await expect(settled.locator("li")).toHaveCount(3);
    expect(await chunks(settled)).toEqual(live);
  });

  test("switching modes changes the view at once; a settled turn brings its rows once", async ({ page, request }) => {
    const session = await newSession(request);
    const run = await startTurn(request, session, "/demo tools");
    await waitRunEnd(request, run);
    await page.goto(`/s/${session}`);
    await hydrated(page);
    // The page fetches the Markdown renderer once live; from then on nothing is fetched.
    await rendererReady(page);
    const turn = lastTurn(page);
    await expect(turn).toHaveAttribute("data-mode", "compact_worklog");
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));

    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
    // The settled turn came as its snapshot: its rows arrive with the journal it now fetches.
    const rows = turn.locator("[data-row-id]");
    await expect.poll(() => rows.count()).toBeGreaterThan(5);
    const traceRows = await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-row-id")));
    expect(new Set(traceRows).size).toBe(traceRows.length);

    await page.locator("[data-mode-switch] button", { hasText: "Worklog" }).click();
    await expect(turn).toHaveAttribute("data-mode", "compact_worklog");
    // The view shown stands out in the header: filled, the other not.
    const [pressed, other] = await Promise.all(
      ["Worklog", "Stream"].map((name) =>
        page.locator("[data-mode-switch] button", { hasText: name }).evaluate((el) => getComputedStyle(el).backgroundColor),
      ),
    );
    expect(pressed).not.toBe(other);
    // The per-turn switch overrides the page's mode for this turn only, and says so.
    await expect(turn.locator(".turn-mode")).toHaveText("Show full stream");
    await turn.getByRole("button", { name: "Show full stream" }).click();
    await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
    await turn.getByRole("button", { name: "Show as worklog" }).click();
    await expect(turn).toHaveAttribute("data-mode", "compact_worklog");
    // The turn came as its snapshot: its rows came once, with the first switch to the Stream.
    expect(requests).toHaveLength(1);
    const asked = new URL(requests[0]);
    expect(asked.pathname).toBe("/api/chat/journal");
    expect(asked.searchParams.get("run_id")).toBe(run);

    // The worklog folds the process once settled; opening it shows the tool calls.
    const summary = turn.locator(".worklog-summary");
    await expect(summary).toHaveAttribute("aria-expanded", "false");
    await summary.click();
    await expect(turn.locator(".tool-card")).toHaveCount(3);
    await expect(turn.locator(".tool-card[data-tool-state='failed']")).toHaveCount(1);
    await expect(turn.locator("[data-final-answer='true']")).toContainText("stale sequence cache");
    expect(requests).toHaveLength(1);
  });

  test("a reload mid-run shows the partial turn from the server, then continues to the same end", async ({ page, request, browser }) => {
    const session = await newSession(request);
    const run = await startTurn(request, session, "/demo long 400");
    await expect.poll(async () => (await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json()).last_seq, { timeout: 20_000 }).toBeGreaterThan(20);
    // Without scripts: the server's HTML already holds the turn as of the journal.
    const noJs = await browser.newContext({ javaScriptEnabled: false });
    const raw = await noJs.newPage();
    await raw.goto(`/s/${session}`);
    await expect(raw.locator(`article.turn[data-run-id='${run}'] [data-final-answer='streaming']`)).toContainText("w1 ");
    const ssrSeq = Number(await raw.locator(`article.turn[data-run-id='${run}']`).getAttribute("data-last-seq"));
    expect(ssrSeq).toBeGreaterThan(20);
    await noJs.close();

    await page.goto(`/s/${session}`);
    await hydrated(page);
    const turn = page.locator(`article.turn[data-run-id='${run}']`);
    await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 60_000 });
    const rows = journal(request, session, run);
    const expected = (await rows).filter((r) => ACTIVITY.has(r.event)).length;
    await expect(turn).toHaveAttribute("data-row-count", String(expected));
    const settled = (await rows).find((r) => r.event === "settled_message");
    expect(await turn.locator("[data-final-answer='true']").innerText()).toBe(settled.payload.content.trim());
  });

  test("twenty dropped connections during a long run lose nothing and double nothing", async ({ page, request, context }) => {
    test.skip(isPhone(page), "the network drop test runs once, on the desktop project");
    test.setTimeout(120_000);
    const session = await openNewSession(page, request);
    await send(page, "/demo long 1500");
    const turn = lastTurn(page);
    await expect(turn).toHaveAttribute("data-run-id", /.+/);
    const run = (await turn.getAttribute("data-run-id"))!;
    let drops = 0;
    while (drops < 20) {
      const status = await (await request.get(`/api/chat/stream/status?run_id=${run}`)).json();
      if (!status.active) break;
      await page.waitForTimeout(50 + Math.floor(Math.random() * 250));
      await context.setOffline(true);
      await page.waitForTimeout(50 + Math.floor(Math.random() * 200));
      await context.setOffline(false);
      drops += 1;
    }
    expect(drops).toBeGreaterThanOrEqual(10);
    await waitRunEnd(request, run);
    await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 60_000 });
    const rows = await journal(request, session, run);
    await expect(turn).toHaveAttribute("data-last-seq", String(rows.length));
    await expect(turn).toHaveAttribute("data-row-count", String(rows.filter((r) => ACTIVITY.has(r.event)).length));
    const settled = rows.find((r) => r.event === "settled_message");
    expect(await turn.locator("[data-final-answer='true']").innerText()).toBe(settled.payload.content.trim());
  });

  test("Stop cancels the turn on the server and shows the cancelled card", async ({ page, request }) => {
    await openNewSession(page, request);
    await send(page, "/demo slow");
    const turn = lastTurn(page);
    await expect(turn.locator("[data-final-answer='streaming']")).toBeVisible();
    await page.getByRole("button", { name: "Stop" }).click();
    const card = turn.locator("[data-terminal-state='cancelled']");
    await expect(card).toBeVisible();
    await expect(card).toContainText("Task cancelled");
    // The partial work stays.
    await expect(turn.locator(".worklog, [data-final-answer]")).not.toHaveCount(0);
    await expect(page.getByRole("button", { name: "Send" })).toBeVisible();
  });

  test("an approval can be allowed or denied and survives a reload", async ({ page, request }) => {
    for (const [button, expected] of [["Allow once", "approved: once"], ["Deny", "left the build directory alone"]]) {
      await openNewSession(page, request);
      await send(page, "/demo approval");
      const card = page.locator("[data-pending='approval']");
      await expect(card).toBeVisible();
      await expect(card).toContainText("rm -rf target/");
      await page.reload();
      await hydrated(page);
      await expect(card).toBeVisible();
      await card.getByRole("button", { name: button }).click();
      await expect(card).toHaveCount(0);
      await expect(lastTurn(page).locator("[data-final-answer='true']")).toContainText(expected);
    }
  });

  test("a clarification is answered with a choice", async ({ page, request }) => {
    await openNewSession(page, request);
    await send(page, "/demo clarify");
    const card = page.locator("[data-pending='clarify']");
    await expect(card).toContainText("Which environment");
    await card.getByRole("button", { name: /production/ }).click();
    await expect(card).toHaveCount(0);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toContainText("production");
    // The Stream keeps the question with its answer, after a reload too.
    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await expect(lastTurn(page).locator(".note-answer")).toHaveText("Answered: production");
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator(".note-answer")).toHaveText("Answered: production");
  });

  test("a clarification is answered in free text, with the keyboard alone", async ({ page, request }) => {
    test.skip(isPhone(page), "keyboard flow");
    const session = await openNewSession(page, request);
    // Enter sends from the composer.
    await page.getByRole("textbox", { name: "Message" }).focus();
    await page.keyboard.type("/demo clarify");
    await page.keyboard.press("Enter");
    const card = page.locator("[data-pending='clarify']");
    await expect(card).toContainText("Which environment");
    await card.getByRole("textbox", { name: "Your answer" }).focus();
    await page.keyboard.type("qa-cluster");
    await page.keyboard.press("Enter");
    await expect(card).toHaveCount(0);
    const answer = lastTurn(page).locator("[data-final-answer='true']");
    await expect(answer).toContainText("qa-cluster");
    // The mode switch works from the keyboard too.
    const stream = page.locator("[data-mode-switch] button", { hasText: "Stream" });
    await stream.focus();
    await page.keyboard.press("Space");
    await expect(lastTurn(page)).toHaveAttribute("data-mode", "transparent_stream");
  });

  for (const [scenario, state, label] of [
    ["/demo error", "error", "Error"],
    ["/demo no_response", "no_response", "No response from provider"],
    ["/demo tool_limit", "tool_limit_reached", "Tool iteration limit reached"],
    ["/demo exhausted", "compression_exhausted", "Too long for the model's context"],
    ["/demo degraded", "degraded", "Only partly done"],
  ]) {
    test(`a turn ending ${state} shows its card`, async ({ page, request }) => {
      const session = await openNewSession(page, request);
      await send(page, scenario);
      const card = lastTurn(page).locator(`[data-terminal-state='${state}']`);
      await expect(card).toBeVisible({ timeout: 30_000 });
      await expect(card).toContainText(label);
      await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveCount(0);
      // Each card offers its next step.
      const next: Record<string, string> = {
        error: "Retry",
        no_response: "Retry",
        tool_limit_reached: "Continue",
        compression_exhausted: "New conversation",
        degraded: "Retry",
      };
      const step = card.getByRole("button", { name: next[state] });
      await expect(step).toBeVisible();
      if (state === "degraded") {
        // What fell short, named in the card and marked where it stands.
        await expect(card).toContainText("2 of the 5 parts of notes/long.md");
        await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
        const step = lastTurn(page).locator(".tool-card");
        await expect(step).toHaveAttribute("data-tool-state", "failed");
        await expect(step.locator(".tool-head")).toContainText("Could not read");
        const dot = await step.locator(".tool-dot").evaluate((d) => getComputedStyle(d).backgroundColor);
        const ok = await page.evaluate(() => {
          const probe = document.createElement("span");
          probe.className = "tool-dot";
          const card = document.createElement("div");
          card.className = "tool-card";
          card.dataset.toolState = "done";
          card.appendChild(probe);
          document.body.appendChild(card);
          const colour = getComputedStyle(probe).backgroundColor;
          card.remove();
          return colour;
        });
        expect(dot).not.toBe(ok);
      }
      if (state === "compression_exhausted") {
        await expect(card).not.toContainText("session");
        await step.click();
        await expect(page).toHaveURL(/\/new$/);
        await expect(page.locator("article.turn")).toHaveCount(0);
      }
    });
  }

  test("markup in messages, tool output, titles and answers renders as text", async ({ page, request }) => {
    const dialogs: string[] = [];
    page.on("dialog", async (d) => {
      dialogs.push(d.message());
      await d.dismiss();
    });
    await openNewSession(page, request);
    const evil = `<img src=x onerror=alert(1)> <script>alert(2)</script> [x](javascript:alert(3))`;
    await send(page, evil);
    const turn = lastTurn(page);
    await expect(turn.locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
    await expect(turn.locator(".bubble")).toHaveText(evil);
    await expect(turn.locator("[data-final-answer='true']")).toContainText("<img src=x onerror=alert(1)>");
    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await turn.locator(".tool-head").first().click();
    await expect(turn.locator(".tool-args").first()).toContainText("<img src=x");
    await expect(page.locator("img[src='x']")).toHaveCount(0);
    await expect(page.locator("a[href^='javascript']")).toHaveCount(0);
    await expect(page.locator("script:not([type]):not([src])", { hasText: "alert(2)" })).toHaveCount(0);
    await expect(page.locator(".chat-title")).toContainText("<img");
    expect(dialogs).toEqual([]);
  });

  test("a follow-up sent while running is queued and runs next", async ({ page, request }) => {
    const session = await openNewSession(page, request);
    await send(page, "/demo long 300");
    await expect(lastTurn(page).locator("[data-final-answer='streaming']")).toBeVisible();
    await send(page, "/demo prose");
    await expect(page.locator(".queued")).toContainText("/demo prose");
    // When the first run ends the server starts the queued one; a reload shows both turns.
    await expect.poll(async () => {
      const s = await (await request.get(`/api/session?session_id=${session}`)).json();
      return s.session.messages.length;
    }, { timeout: 60_000 }).toBe(4);
    await page.reload();
    await hydrated(page);
    await expect(page.locator("article.turn")).toHaveCount(2);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toContainText("demo agent");
  });

  test("sessions can be renamed, searched and deleted from the sidebar", async ({ page, request }) => {
    const session = await newSession(request, "Sidebar subject");
    const run = await startTurn(request, session, "tell me about quokkas");
    await waitRunEnd(request, run);
    await page.goto(`/s/${session}`);
    await hydrated(page);
    if (isPhone(page)) await page.getByRole("button", { name: "Open sessions" }).tap();
    const row = page.locator(`[data-session-id='${session}']`);
    await expect(row).toBeVisible();
    await rowAction(row, "Rename");
    const input = row.getByRole("textbox", { name: "Conversation title" });
    await input.fill("Quokka notes");
    await input.press("Enter");
    await expect(row).toContainText("Quokka notes");
    await expect(page.locator(".chat-title")).toHaveText("Quokka notes");
    await page.getByRole("searchbox", { name: "Search conversations" }).fill("quokkas");
    await expect(page.locator(".session-row")).toHaveCount(1);
    // Deleted at once, no browser dialog; the notice offers Undo.
    let dialogs = 0;
    page.on("dialog", (d) => {
      dialogs += 1;
      void d.dismiss();
    });
    await rowAction(row, "Delete");
    await expect(page.locator(`[data-session-id='${session}']`)).toHaveCount(0);
    await expect(page.locator(".toast")).toContainText("Conversation deleted");
    expect(dialogs).toBe(0);
    expect((await request.get(`/api/session?session_id=${session}`)).status()).toBe(404);
  });

  test("on a phone the composer and cards fit the screen", async ({ page, request }, testInfo) => {
    test.skip(!isPhone(page), "phone layout");
    await openNewSession(page, request);
    await send(page, "/demo approval");
    const card = page.locator("[data-pending='approval']");
    await expect(card).toBeVisible();
    for (const name of ["Allow once", "Deny"]) {
      const box = await card.getByRole("button", { name }).boundingBox();
      expect(box!.height).toBeGreaterThanOrEqual(44);
      expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    }
    const composer = await page.locator(".composer").boundingBox();
    expect(composer!.y + composer!.height).toBeLessThanOrEqual(844);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await page.screenshot({ path: testInfo.outputPath("phone-approval.png"), fullPage: false });
    await card.getByRole("button", { name: "Allow once" }).tap();
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toBeVisible({ timeout: 30_000 });
    await page.screenshot({ path: testInfo.outputPath("phone-settled.png"), fullPage: false });
  });
});
