// Debian's Chromium, never a downloaded browser. The extra flags keep it from reaching for
// Google's services, which this machine's closed network refuses.
export const chromium = {
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
};
