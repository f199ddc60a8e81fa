import { test, expect } from "./fixtures";
import { mkdtempSync, rmSync } from "fs";
import { createConnection, createServer, type Server, type Socket } from "net";
import { tmpdir } from "os";
import { join } from "path";
import { freePort, kill9, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn } from "./support";

// Two server instances on one PostgreSQL database behind a load balancer: a page served by one
// follows and settles a run that executes on the other, and a reload that lands on the other
// instance shows the same turn and goes on from where it was.

const DATABASE = process.env.ANCHORAGE_TEST_DATABASE_URL ?? "";

/** A TCP load balancer on loopback whose next connections go where `route` says. */
class Balancer {
  route: "a" | "b" | "both" = "both";
  served = { a: 0, b: 0 };
  private turn = 0;
  private sockets = new Set<Socket>();
  private server: Server;

  constructor(readonly port: number, private backends: { a: number; b: number }) {
    this.server = createServer((client) => {
      const to = this.route === "both" ? (this.turn++ % 2 === 0 ? "a" : "b") : this.route;
      this.served[to] += 1;
      const upstream = createConnection({ host: "127.0.0.1", port: this.backends[to] });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
  }

  listen(): Promise<void> {
    return new Promise((done) => this.server.listen(this.port, "127.0.0.1", done));
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((done) => this.server.close(() => done()));
  }
}

test("a page on one instance follows a run on the other, and a reload on either converges", async ({ page, request }, testInfo) => {
  if (!DATABASE) {
    if (process.env.CI) throw new Error("ANCHORAGE_TEST_DATABASE_URL is not set: make test runs this inside scripts/with-postgres.sh");
    test.skip(true, "needs PostgreSQL (scripts/with-postgres.sh sets ANCHORAGE_TEST_DATABASE_URL)");
  }
  test.setTimeout(120_000);
  const ports = { a: await freePort(), b: await freePort() };
  const lb = new Balancer(await freePort(), ports);
  const base = `http://127.0.0.1:${lb.port}`;
  const baseA = `http://127.0.0.1:${ports.a}`;
  const dirs = [mkdtempSync(join(tmpdir(), "anchorage-a-")), mkdtempSync(join(tmpdir(), "anchorage-b-"))];
  const args = ["--database-url", DATABASE, "--lease-secs", "3"];
  const servers = [
    startServer(ports.a, dirs[0], { ANCHORAGE_DEMO_DELAY_MS: "25" }, args),
    startServer(ports.b, dirs[1], { ANCHORAGE_DEMO_DELAY_MS: "25" }, args),
  ];
  try {
    await waitHealthy(request, baseA);
    await waitHealthy(request, `http://127.0.0.1:${ports.b}`);
    await lb.listen();

    // The run executes on A: started through A itself.
    const session = (await (await request.post(`${baseA}/api/session/new`, { data: {} })).json()).session.id;
    const started = await request.post(`${baseA}/api/chat/start`, {
      data: { session_id: session, message: "/demo long 500" },
    });
    expect(started.ok()).toBeTruthy();
    const run = (await started.json()).run_id;

    // The page, its stream and its requests all go to B.
    lb.route = "b";
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);
    const turn = lastTurn(page);
    const answer = turn.locator(".answer");
    await expect(turn.locator("[data-final-answer='streaming']")).toBeVisible();
    await expect(answer).toContainText("w30 ");
    // It grows while we watch: live, not a snapshot of the moment the page was made.
    const seenOnB = Number(await turn.getAttribute("data-last-seq"));
    await expect.poll(async () => Number(await turn.getAttribute("data-last-seq"))).toBeGreaterThan(seenOnB + 20);
    expect(lb.served.a).toBe(0);

    // A reload that lands on A, mid-run: the same turn, further on, still following.
    lb.route = "a";
    const beforeReload = Number(await turn.getAttribute("data-last-seq"));
    await page.reload();
    await hydrated(page);
    const again = lastTurn(page);
    expect(await page.locator("article.turn").count()).toBe(1);
    await expect(again.locator("[data-final-answer='streaming']")).toBeVisible();
    expect(Number(await again.getAttribute("data-last-seq"))).toBeGreaterThanOrEqual(beforeReload);
    await expect.poll(async () => Number(await again.getAttribute("data-last-seq"))).toBeGreaterThan(beforeReload + 20);
    expect(lb.served.a).toBeGreaterThan(0);

    // And once more with each connection to the next instance in turn (the page from one, its
    // stream from the other): it settles once, with every word once, in order.
    lb.route = "both";
    await page.reload();
    await hydrated(page);
    const settled = lastTurn(page);
    await expect(settled.locator("[data-final-answer='true']")).toBeVisible({ timeout: 60_000 });
    const words = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
    await expect(settled.locator(".answer")).toHaveText(words, { useInnerText: true });
    await expect(settled.locator("[data-terminal-state]")).toHaveCount(0);
    expect(await page.locator("article.turn").count()).toBe(1);

    // What every instance says of it agrees.
    for (const b of [baseA, `http://127.0.0.1:${ports.b}`]) {
      const status = await (await request.get(`${b}/api/chat/stream/status?run_id=${run}`)).json();
      expect(status.terminal_state).toBe("completed");
      expect(status.active).toBe(false);
    }
    await page.screenshot({ path: testInfo.outputPath("settled-through-both.png") });
  } finally {
    await lb.close();
    await Promise.all(servers.map(kill9));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
});
