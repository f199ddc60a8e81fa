// Prints one line CI can read from Playwright's JSON report.
const path = require("path");
const report = require(path.join(__dirname, "test-results", "results.json"));
const s = report.stats;
console.log(`e2e: ${s.expected + s.flaky} passed, ${s.unexpected} failed, ${s.skipped} skipped`);
process.exit(s.unexpected > 0 ? 1 : 0);
