// Prints what CI needs from Playwright's JSON report: one count line, and for each failed test
// its project, file:line, title and the first lines of its error (enough for a short diff's
// received lines), so the end of a CI log says what broke even when the list reporter's output
// scrolled away.
const fs = require("fs");
const path = require("path");

const file = path.join(__dirname, "test-results", "results.json");
if (!fs.existsSync(file)) {
  console.log("e2e: no report (the build or the server failed before Playwright ran)");
  process.exit(1);
}
const report = JSON.parse(fs.readFileSync(file, "utf8"));

const failures = [];
function walk(suite, titles) {
  const here = suite.title ? [...titles, suite.title] : titles;
  for (const spec of suite.specs || []) {
    for (const test of spec.tests || []) {
      if (test.status !== "unexpected") continue;
      const last = test.results[test.results.length - 1] || {};
      const message = ((last.error && last.error.message) || "").replace(/\u001b\[[0-9;]*m/g, "");
      failures.push({
        where: `${spec.file}:${spec.line}`,
        title: [...here.slice(1), spec.title].join(" › "),
        project: test.projectName,
        message: message.split("\n").slice(0, 24).join("\n    "),
      });
    }
  }
  for (const child of suite.suites || []) walk(child, here);
}
for (const suite of report.suites || []) walk(suite, []);

for (const f of failures) {
  console.log(`FAILED [${f.project}] ${f.where} ${f.title}\n    ${f.message}`);
}
const s = report.stats;
console.log(`e2e: ${s.expected + s.flaky} passed, ${s.unexpected} failed, ${s.skipped} skipped`);
process.exit(s.unexpected > 0 || failures.length > 0 ? 1 : 0);
