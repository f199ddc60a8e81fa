#!/usr/bin/env bash
# How long a release server takes to answer a conversation's page: a fresh data directory,
# one conversation of 30 settled `/demo tools` turns (demo agent, no pause), 10 requests to
# warm up, then 200 sequential GETs of its page over loopback; prints the median and p90 of
# curl's total time, and the page's size. Two server binaries are compared by running this
# once for each, alternately, on one machine (BENCHMARKS.md).
#
#   scripts/page-bench.sh SERVER_BIN SITE_ROOT
set -euo pipefail
BIN=$1; SITE=$2; PORT=$((20000 + RANDOM % 20000)); DATA=$(mktemp -d)
LEPTOS_OUTPUT_NAME=anchorage LEPTOS_SITE_ROOT=$SITE LEPTOS_SITE_PKG_DIR=pkg ANCHORAGE_DEMO_DELAY_MS=0 RUST_LOG=warn \
  $BIN --addr 127.0.0.1:$PORT --data-dir $DATA >/dev/null 2>&1 &
PID=$!; trap 'kill $PID; rm -rf $DATA' EXIT
B=http://127.0.0.1:$PORT
for i in $(seq 50); do curl -sf $B/ >/dev/null 2>&1 && break; sleep 0.2; done
S=$(curl -sf -X POST $B/api/session/new -H 'content-type: application/json' -d '{}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["session"]["id"])')
for i in $(seq 30); do
  R=$(curl -sf -X POST $B/api/chat/start -H 'content-type: application/json' -d "{\"session_id\":\"$S\",\"message\":\"/demo tools\"}" | python3 -c 'import sys,json;print(json.load(sys.stdin)["run_id"])')
  for j in $(seq 200); do
    curl -sf "$B/api/chat/stream/status?run_id=$R" | python3 -c 'import sys,json;d=json.load(sys.stdin);sys.exit(0 if d["terminal_state"] is not None and not d["active"] else 1)' && break
    sleep 0.1
  done
done
for i in $(seq 10); do curl -sf -o /dev/null $B/s/$S; done
for i in $(seq 200); do curl -sf -o /dev/null -w '%{time_total}\n' $B/s/$S; done | sort -n | awk '{a[NR]=$1} END {printf "median %.2f ms  p90 %.2f ms  (n=%d)\n", a[int(NR/2)]*1000, a[int(NR*0.9)]*1000, NR}'
curl -sf $B/s/$S | wc -c
