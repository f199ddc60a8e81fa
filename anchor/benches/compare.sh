#!/usr/bin/env bash
# Ours and the reference on the same benchmark turns, in one run on this machine (BENCHMARKS.md).
#   bash anchor/benches/compare.sh REFERENCE.js [REPS] [SIZES…]
# REFERENCE.js is hermes-webui's static/assistant_turn_anchors.js (fetched, not kept here).
set -euo pipefail
cd "$(dirname "$0")/../.."
reference=$1
reps=${2:-11}
shift $(( $# > 1 ? 2 : 1 ))
sizes=${*:-1000 10000 100000}
cargo build -q --release -p anchor --features parity --example synthetic_trace --bin anchor-replay
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '| N | lines | reference apply | ours apply | ratio | reference projection | ours projection | ratio |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in $sizes; do
  target/release/examples/synthetic_trace "$n" > "$dir/turn.jsonl"
  theirs=$(node anchor/benches/reference.cjs "$reference" "$reps" "$dir/turn.jsonl")
  ours=$(target/release/anchor-replay --bench "$reps" "$dir/turn.jsonl")
  node -e '
    const [n, t, o] = [process.argv[1], JSON.parse(process.argv[2]), JSON.parse(process.argv[3])];
    const r = (a, b) => (a / b).toFixed(0) + "×";
    console.log(`| ${Number(n).toLocaleString("en")} | ${o.lines} | ${t.apply_ms_median} ms | ${o.apply_ms_median.toFixed(2)} ms | ${r(t.apply_ms_median, o.apply_ms_median)} | ${t.project_ms_median} ms | ${o.project_ms_median.toFixed(3)} ms | ${r(t.project_ms_median, o.project_ms_median)} |`);
  ' "$n" "$theirs" "$ours"
done
