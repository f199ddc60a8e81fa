import { serverTest as test, expect } from "./fixtures";
import { hydrated, newSession } from "./support";

// (Not the guarded `test` of ./fixtures: this test makes a violation on purpose.)
test("the page runs no script it did not ship, and cannot be framed", async ({ page, request }) => {
  await page.goto(`/s/${await newSession(request)}`);
  await hydrated(page);
  const blocked = await page.evaluate(
    () =>
      new Promise<string | null>((done) => {
        document.addEventListener("securitypolicyviolation", (e) => done(e.violatedDirective), { once: true });
        const script = document.createElement("script");
        script.textContent = "window.__injected = true";
        document.body.append(script);
        setTimeout(() => done(null), 2000);
      }),
  );
  expect(blocked).toMatch(/^script-src/);
  expect(await page.evaluate(() => (window as any).__injected)).toBeUndefined();
  // A page of another origin cannot show it in a frame.
  const framed = await page.evaluate(async () => {
    const frame = document.createElement("iframe");
    frame.src = location.href;
    const loaded = new Promise((done) => frame.addEventListener("load", done, { once: true }));
    document.body.append(frame);
    await Promise.race([loaded, new Promise((r) => setTimeout(r, 3000))]);
    try {
      return frame.contentDocument?.querySelector(".app") ? "shown" : "blocked";
    } catch {
      return "blocked";
    }
  });
  expect(framed).toBe("blocked");
});
