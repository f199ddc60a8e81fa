// Times the reference implementation (hermes-webui's static/assistant_turn_anchors.js, fetched
// by the caller and never kept in this repository) on a trace, the way `anchor-replay --bench`
// times ours: the trace is read and parsed first, then each repetition makes a fresh registry,
// applies every line in order, and projects the scene reading what a list of rows shows.
//
//   node anchor/benches/reference.cjs REFERENCE.js REPS TRACE.jsonl
//
// It prints the same JSON as anchor-replay: {apply_ms_median, project_ms_median, lines, applied}.
"use strict";
const fs = require("fs");
const path = require("path");
const { performance } = require("perf_hooks");

const [reference, repsText, tracePath] = process.argv.slice(2);
const reps = Number(repsText);
if (!reference || !tracePath || !(reps > 0)) {
  console.error("usage: node reference.cjs REFERENCE.js REPS TRACE.jsonl");
  process.exit(2);
}
require(path.resolve(reference));
const A = globalThis.HermesAssistantTurnAnchors;

const lines = fs
  .readFileSync(tracePath, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));
const config = lines[0].config;
const events = lines.slice(1).map((l) => [l.event, l.context ?? config.context]);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const apply = [];
const project = [];
let applied = 0;
let sink = 0;
for (let r = 0; r < reps; r++) {
  let start = performance.now();
  const registry = A.createAssistantTurnAnchorRegistry(config.anchor);
  for (const [event, context] of events) {
    A.applyAssistantTurnAnchorSourceEvent(registry, event, context);
  }
  apply.push(performance.now() - start);
  applied = registry.stats.applied;

  start = performance.now();
  const scene = A.projectAssistantTurnAnchorActivityScene(registry.anchor, { mode: config.mode });
  for (const row of scene.activity_rows) {
    sink += (row.row_id ? 1 : 0) + (row.group ? 1 : 0) + (row.role ? 1 : 0) + (row.status ? 1 : 0) + (row.text ? 1 : 0);
  }
  project.push(performance.now() - start);
}
console.log(
  JSON.stringify({
    apply_ms_median: Number(median(apply).toFixed(2)),
    project_ms_median: Number(median(project).toFixed(3)),
    lines: events.length,
    applied,
    rows_read: sink > 0,
  }),
);
