#!/usr/bin/env bash
# Runs a command with a real model server of its own, then stops it:
#
#   scripts/with-model.sh COMMAND [ARGS...]
#
# The server is llama.cpp's (llama-cpp-python) serving Gemma 3 270M, both installed by
# `scripts/setup.sh test` under target/. It listens on a free loopback port; the command sees
# ANCHORAGE_TEST_LLAMA_URL (its `/v1` base URL) and ANCHORAGE_TEST_LLAMA_LOG (its log). It runs
# one request at a time and is started with --interrupt_requests False, so that a generation
# still going holds the next request back (the tests use this to see that Stop really ended
# one). The command's exit status is this script's.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$#" -gt 0 ] || { echo "usage: scripts/with-model.sh COMMAND [ARGS...]" >&2; exit 2; }

say() { printf '\033[1mmodel:\033[0m %s\n' "$*"; }

VENV=target/model-venv
MODEL="$PWD/target/model/gemma-3-270m-q4_k_m.gguf"
if [ ! -x "$VENV/bin/python" ] || [ ! -s "$MODEL" ]; then
  echo "model: llama.cpp's server or the model is missing; run scripts/setup.sh test" >&2
  exit 2
fi

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
LOG="$PWD/target/model-server.log"
: >"$LOG"
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --n_ctx 4096 --chat_format gemma --interrupt_requests False >>"$LOG" 2>&1 &
SERVER=$!

finish() {
  status=$?
  trap - EXIT INT TERM
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  exit "$status"
}
trap finish EXIT INT TERM

for _ in $(seq 1 120); do
  if python3 -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "model: the model server did not start:" >&2
    tail -20 "$LOG" >&2
    exit 1
  fi
  sleep 0.5
done
python3 -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=5)" "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 || { echo "model: no answer on port $PORT" >&2; exit 1; }
say "Gemma 3 270M on http://127.0.0.1:$PORT/v1 (log: $LOG)"

export ANCHORAGE_TEST_LLAMA_URL="http://127.0.0.1:$PORT/v1"
export ANCHORAGE_TEST_LLAMA_LOG="$LOG"
"$@"
