import { existsSync } from "fs";

// Debian's Chromium, never a downloaded browser: its headless shell (Debian's
// `chromium-headless-shell`, the same engine build as `chromium`, without the desktop
// browser around it), which Playwright itself runs headless tests in. On two cores it does
// the suite's work with about half the CPU time of the full browser in headless mode, and the
// suite is CPU-bound. CHROMIUM_PATH=/usr/bin/chromium runs the full browser instead. The extra
// flags keep it from reaching for Google's services, which this machine's closed network
// refuses.
const SHELL = "/usr/bin/chromium-headless-shell";

export const chromium = {
  executablePath: process.env.CHROMIUM_PATH || (existsSync(SHELL) ? SHELL : "/usr/bin/chromium"),
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
};
