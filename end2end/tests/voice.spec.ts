import { test, expect } from "./fixtures";
import type { APIRequestContext, Page } from "@playwright/test";
import { hydrated, lastTurn, openNewSession } from "./support";

// Chromium here has the recognition API but no speech service behind it: the browser's
// recognizer is replaced by a scripted one (a protocol stand-in), driven from the test with
// `window.__speak(text, final)`. `window.__deny = true` makes it refuse the microphone.
async function scriptedRecognizer(page: Page) {
  await page.addInitScript(() => {
    const w = window as any;
    class Scripted {
      continuous = false;
      interimResults = false;
      lang = "";
      onresult: ((e: any) => void) | null = null;
      onerror: ((e: any) => void) | null = null;
      onend: (() => void) | null = null;
      private finals: string[] = [];
      start() {
        w.__recognizer = this;
        w.__listening = true;
        if (w.__deny) {
          setTimeout(() => {
            this.onerror?.({ error: "not-allowed" });
            this.end();
          }, 10);
        }
      }
      stop() {
        setTimeout(() => this.end(), 10);
      }
      abort() {
        this.end();
      }
      end() {
        if (!w.__listening) return;
        w.__listening = false;
        this.onend?.();
      }
      say(text: string, final: boolean) {
        const results: any[] = this.finals.map((t) => Object.assign([{ transcript: t }], { isFinal: true }));
        results.push(Object.assign([{ transcript: text }], { isFinal: final }));
        if (final) this.finals.push(text);
        this.onresult?.({ resultIndex: results.length - 1, results });
      }
    }
    w.webkitSpeechRecognition = Scripted;
    w.SpeechRecognition = Scripted;
    w.__speak = (text: string, final: boolean) => w.__recognizer?.say(text, final);
  });
}

test("words spoken fill the message box after what was typed, and nothing is sent until Send", async ({ page, request }, testInfo) => {
  await scriptedRecognizer(page);
  const session = await openNewSession(page, request);
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("Note:");
  const talk = page.getByRole("button", { name: "Talk" });
  await expect(talk).toBeVisible();
  await talk.click();
  const stop = page.getByRole("button", { name: "Stop listening" });
  await expect(stop).toHaveAttribute("aria-pressed", "true");

  await page.evaluate(() => (window as any).__speak("buy", false));
  await expect(input).toHaveValue("Note: buy");
  await page.evaluate(() => (window as any).__speak("buy rope", true));
  await expect(input).toHaveValue("Note: buy rope");
  await page.screenshot({ path: testInfo.outputPath("listening.png") });
  await page.evaluate(() => (window as any).__speak(" and a lantern", true));
  await expect(input).toHaveValue("Note: buy rope and a lantern");
  // A pause ends listening by itself.
  await expect(page.getByRole("button", { name: "Talk" })).toHaveAttribute("aria-pressed", "false", { timeout: 5_000 });
  expect(await page.evaluate(() => (window as any).__listening)).toBe(false);
  // Nothing went to the server.
  await expect(page.locator("article.turn")).toHaveCount(0);
  const before = await (await request.get(`/api/session?session_id=${session}`)).json();
  expect(before.session.messages).toHaveLength(0);

  // Talking again adds to the text, and a tap stops it.
  await page.getByRole("button", { name: "Talk" }).click();
  await expect(stop).toHaveAttribute("aria-pressed", "true");
  await page.evaluate(() => (window as any).__speak("tonight", true));
  await expect(input).toHaveValue("Note: buy rope and a lantern tonight");
  await page.getByRole("button", { name: "Stop listening" }).click();
  await expect(page.getByRole("button", { name: "Talk" })).toHaveAttribute("aria-pressed", "false");

  await page.getByRole("button", { name: "Send" }).click();
  await expect(lastTurn(page)).toContainText("Note: buy rope and a lantern tonight");
  await expect(input).toHaveValue("");
});

/** A new conversation listening (its code may be fetched first: listening shows on the
 * button before any word counts) that has heard `words`; answers the message box. */
async function listeningIn(page: Page, request: APIRequestContext, words: string) {
  await scriptedRecognizer(page);
  await openNewSession(page, request);
  const input = page.getByRole("textbox", { name: "Message" });
  await page.getByRole("button", { name: "Talk" }).click();
  await expect(page.getByRole("button", { name: "Stop listening" })).toHaveAttribute("aria-pressed", "true");
  await page.evaluate((w) => (window as any).__speak(w, true), words);
  await expect(input).toHaveValue(words);
  return input;
}

test("opening another conversation ends listening, and its words stay where they were said", async ({ page, request }) => {
  const input = await listeningIn(page, request, "first thoughts");
  // Ctrl+Shift+O: a new chat.
  await page.keyboard.press("Control+Shift+O");
  await expect(page).toHaveURL(/\/new$/);
  await expect.poll(() => page.evaluate(() => (window as any).__listening)).toBe(false);
  await expect(page.getByRole("button", { name: "Talk" })).toHaveAttribute("aria-pressed", "false");
  await page.evaluate(() => (window as any).__speak("first thoughts and more", true));
  await expect(input).toHaveValue("");
});

test("words the recognizer reports after it ended go nowhere", async ({ page, request }) => {
  const input = await listeningIn(page, request, "kept words");
  // The recognizer ends by itself and, in the same task, reports one more result (a late
  // event, as a busy page may get it before the handlers are let go).
  await page.evaluate(() => {
    const r = (window as any).__recognizer;
    r.abort();
    r.say("late words", true);
  });
  await expect(page.getByRole("button", { name: "Talk" })).toHaveAttribute("aria-pressed", "false");
  await page.waitForTimeout(200);
  await expect(input).toHaveValue("kept words");
});

test("a refused microphone says so", async ({ page, request }) => {
  await scriptedRecognizer(page);
  await page.addInitScript(() => ((window as any).__deny = true));
  await openNewSession(page, request);
  await page.getByRole("button", { name: "Talk" }).click();
  await expect(page.getByText("The microphone is not allowed")).toBeVisible();
  await expect(page.getByRole("button", { name: "Talk" })).toHaveAttribute("aria-pressed", "false");
});

test("where the browser recognizes no speech there is no microphone button", async ({ page, request }) => {
  await page.addInitScript(() => {
    delete (window as any).webkitSpeechRecognition;
    delete (window as any).SpeechRecognition;
  });
  await openNewSession(page, request);
  await hydrated(page);
  await expect(page.getByRole("button", { name: "Attach files" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Talk" })).toHaveCount(0);
});
