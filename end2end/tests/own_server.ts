import { expect, type APIRequestContext } from "@playwright/test";
import { spawn, spawnSync, type ChildProcess } from "child_process";
import { closeSync, existsSync, openSync, rmSync, statSync } from "fs";
import { createServer } from "net";
import { tmpdir } from "os";
import { join, resolve } from "path";

// A server of a test's own, on its own port and database, so that the test can kill it or give
// it another backend without disturbing the one every other test uses. It runs the binary the
// suite was built with.
export const root = resolve(__dirname, "..", "..");

export function serverBinary(): string {
  if (process.env.ANCHORAGE_SERVER_BIN) return process.env.ANCHORAGE_SERVER_BIN;
  const built = ["release", "debug"]
    .map((profile) => join(root, "target", profile, "server"))
    .filter((path) => existsSync(path));
  if (built.length === 0) throw new Error("no server binary under target/; build the site first");
  return built.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

/** A port nothing listens on now (the OS's choice), for a server a test starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export function startServer(
  port: number,
  dataDir: string,
  env: Record<string, string> = {},
  args: string[] = [],
): ChildProcess {
  // A DATABASE_URL of the shell's would point the server elsewhere: only `args` choose.
  const { DATABASE_URL: _unused, ...inherited } = process.env;
  return spawn(serverBinary(), ["--addr", `127.0.0.1:${port}`, "--data-dir", dataDir, ...args], {
    cwd: root,
    env: {
      ...inherited,
      LEPTOS_OUTPUT_NAME: "anchorage",
      LEPTOS_SITE_ROOT: join(root, "target", "site"),
      LEPTOS_SITE_PKG_DIR: "pkg",
      LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
      ANCHORAGE_DEMO_DELAY_MS: "20",
      // One build's compressed copies, shared by every server of the run (each would
      // otherwise spend seconds of a core on brotli 11 while the tests run).
      ANCHORAGE_CACHE_DIR: join(root, "target", "bundle-cache"),
      RUST_LOG: "warn",
      ...env,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** Runs `server ARGS` on the data directory `dataDir` (the CLI: `user add`, `user passwd`…) with
 * `input` on stdin; its output. The command must succeed. */
export function cli(dataDir: string, args: string[], input = ""): string {
  const run = spawnSync(serverBinary(), ["--data-dir", dataDir, ...args], {
    cwd: root,
    input,
    env: { ...process.env, RUST_LOG: "warn" },
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

/** The environment of a server on the `openai` backend against `url`, its workspace in `dataDir`. */
export function openAiEnv(url: string, dataDir: string, model = "scripted", key = "test-key"): Record<string, string> {
  return {
    ANCHORAGE_BACKEND: "openai",
    OPENAI_BASE_URL: url,
    OPENAI_API_KEY: key,
    ANCHORAGE_MODEL: model,
    ANCHORAGE_WORKSPACE: join(dataDir, "workspace"),
  };
}

export async function waitHealthy(request: APIRequestContext, base: string): Promise<void> {
  await expect
    .poll(async () => (await request.get(`${base}/healthz`).catch(() => null))?.ok() ?? false, { timeout: 30_000 })
    .toBeTruthy();
}

export function kill9(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    // Gone already: it exited, or a signal (an earlier kill9) ended it. Waiting for an exit
    // that came before would wait forever.
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once("exit", () => done());
    child.kill("SIGKILL");
  });
}

/**
 * Holds a lock across the suite's workers until the returned function is called: for tests
 * that share one thing outside their own servers (the model server, which answers one request
 * at a time). A lock older than ten minutes is taken to be left by a worker that died.
 */
export async function exclusive(name: string): Promise<() => void> {
  const path = join(tmpdir(), `anchorage-e2e-${name}.lock`);
  for (;;) {
    try {
      closeSync(openSync(path, "wx"));
      return () => rmSync(path, { force: true });
    } catch (err: any) {
      if (err?.code !== "EEXIST") throw err;
      try {
        if (Date.now() - statSync(path).mtimeMs > 10 * 60_000) rmSync(path, { force: true });
      } catch {
        // Released meanwhile.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
