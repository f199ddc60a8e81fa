import { test, expect } from "./fixtures";
import { layoutShifts, openNewSession, sendQuietly, setMode, settled, watchLayout } from "./support";

// Nothing on screen moves while a turn streams and settles, whatever the turn does: every
// /demo scenario, in both views. The answers stream long enough (the demo agent pauses 30 ms
// between chunks on this file's server) for the page to be seen showing them streaming,
// however late its stream connects on a busy machine.
test.use({ demoDelayMs: 30 });

const SCENARIOS: [string, boolean][] = [
  // [message, its answer streams over many frames before it settles (then its place at settle
  // is checked too)]
  ["/demo prose", true],
  ["/demo tools", false],
  ["/demo compress", false],
  ["/demo todo", false],
  ["/demo artifact", false],
  ["/demo long 160", true],
  ["/demo trace 400", true],
  ["tell me about lighthouses", true],
  ["/demo error", false],
  ["/demo no_response", false],
  ["/demo tool_limit", false],
  ["/demo exhausted", false],
  ["/demo degraded", false],
];

for (const mode of ["Worklog", "Stream"] as const) {
  test(`${mode}: no /demo scenario moves what is on screen, from send to settle`, async ({ page, request }, testInfo) => {
    test.setTimeout(180_000);
    await openNewSession(page, request);
    await setMode(page, mode);
    const failures: string[] = [];
    for (const [message, answers] of SCENARIOS) {
      await openNewSession(page, request);
      await watchLayout(page);
      await sendQuietly(page, message);
      await settled(page);
      const { total, shifts, settle } = await layoutShifts(page);
      if (total > 0.01) failures.push(`${message}: layout shift ${total.toFixed(4)} ${JSON.stringify(shifts.slice(0, 4))}`);
      if (answers) {
        if (!settle) failures.push(`${message}: the answer never settled in view`);
        else if (Math.abs(settle.after - settle.before) > 1) failures.push(`${message}: the answer moved ${settle.before} -> ${settle.after} at settle`);
      }
    }
    await page.screenshot({ path: testInfo.outputPath(`settled-${mode}.png`) });
    expect(failures).toEqual([]);
  });
}
